/**
 * "Ask the assistant about this node" (issue 37): an entry of the canvas context menu (right click, or the menu key
 * on a selection) that opens the AI tab with the selected nodes as mention chips and the focus in the input; the
 * same as an editor action (the action list, Ctrl/Cmd+Shift+P, and Settings > Keyboard) and as a button in the Info
 * sidebar's header.
 *
 * Node-RED 4.1 and 5 give plugins no hook into that menu: RED.contextMenu.show (editor-client red.js) builds its
 * entries and hands them to RED.menu.init in one call. `install` wraps show so that, for the workspace menu of a
 * selection with nodes, the entry is added to those entries before RED.menu.init builds them, as one of its own
 * (same markup, same keyboard handling, the action's shortcut shown). Any other menu is left alone, and so is an
 * editor whose RED.contextMenu is not there.
 *
 * Editor-only script: registers `NodeRedAiSidebar.nodeMenu`.
 */
(function () {
    "use strict";

    var ACTION = "ai-sidebar:ask-about-node";
    var original = null;

    /** The selected nodes the entry mentions (groups and junctions are not nodes one asks about). */
    function selectedNodes() {
        var selection = RED.view.selection() || {};
        return (selection.nodes || []).filter(function (node) {
            return node.type !== "group" && node.type !== "junction";
        });
    }

    /**
     * @param {object} options
     * @param {string} options.label the entry's words (the action's label key)
     * @param {function(object[])} options.ask open the AI tab with these nodes as chips
     */
    function install(options) {
        RED.actions.add(ACTION, function () {
            var nodes = selectedNodes();
            if (nodes.length) {
                options.ask(nodes);
            }
        }, { label: options.label });
        installInfoButton(RED._(options.label));
        if (!RED.contextMenu || typeof RED.contextMenu.show !== "function" || original) {
            return;
        }
        original = RED.contextMenu.show;
        RED.contextMenu.show = function (menuOptions) {
            if (!menuOptions || menuOptions.options || menuOptions.type !== "workspace" || !selectedNodes().length) {
                return original.apply(this, arguments);
            }
            var init = RED.menu.init;
            RED.menu.init = function (built) {
                RED.menu.init = init;
                if (built && Array.isArray(built.options)) {
                    built.options.push(null, { onselect: ACTION, icon: "fa fa-magic" });
                }
                return init.apply(this, arguments);
            };
            try {
                return original.apply(this, arguments);
            } finally {
                RED.menu.init = init;
            }
        };
    }

    var infoButton = null;

    /**
     * The same as a button in the Info sidebar's header of the selected node, beside its own (help, copy link,
     * reveal): found by the help button's book icon, in a button group on Node-RED 5 and placed like those buttons
     * (absolutely, from the right) on 4.1. Shown while nodes are selected.
     *
     * @param {string} label the button's name
     */
    function installInfoButton(label) {
        var help = $(".red-ui-sidebar-info-stack button").filter(function () {
            return $(this).children(".fa-book").length > 0;
        }).first();
        if (!help.length || infoButton) {
            return;
        }
        infoButton = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-info-ask"></button>')
            .attr("aria-label", label).attr("title", label)
            .append($('<i class="fa fa-magic" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                event.stopPropagation();
                RED.actions.invoke(ACTION);
            });
        if (help.css("position") === "absolute") {
            var right = parseInt(help.css("right"), 10) || 56;
            infoButton.css({ position: "absolute", top: help.css("top"), right: (right + 24) + "px" });
        }
        infoButton.insertBefore(help);
        function toggle() {
            infoButton.toggle(selectedNodes().length > 0);
        }
        RED.events.on("view:selection-changed", toggle);
        infoButton.data("toggle", toggle);
        toggle();
    }

    /** Undo install (the plugin is removed). */
    function uninstall() {
        if (infoButton) {
            RED.events.off("view:selection-changed", infoButton.data("toggle"));
            infoButton.remove();
            infoButton = null;
        }
        if (original && RED.contextMenu) {
            RED.contextMenu.show = original;
        }
        original = null;
        RED.actions.remove(ACTION);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.nodeMenu = { ACTION: ACTION, install: install, uninstall: uninstall };
}());
