/**
 * Notices under an answer (`notice` stream events, notices.js says what each shows) and the mark they leave on
 * the answer's Import buttons.
 *
 * An `unknown_node_types` notice lists each type with the module to install, in the palette manager's own words
 * (its menu entry, `menu.label.editPalette` of the editor's catalog) and a button that opens it on its Install
 * view filtered to those modules (the action Node-RED's own import offers for missing modules, 4.1 and 5.x:
 * `core:manage-palette` with `{view: "install", filter}`), or with the closest installed type. The Import button
 * of a flow block that uses one of them says so with the sentence its refusal uses ("this flow uses node types
 * that are not installed"); the editor's registry still decides at the click (flow-blocks.js).
 *
 * Editor-only script: registers `NodeRedAiSidebar.noticeView`. Every text from the service goes in as text.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    /** Whether this user may open the palette manager to install a module. */
    function mayInstall() {
        var palette = RED.settings.theme ? RED.settings.theme("palette", {}) : {};
        return (!palette || palette.editable !== false) && RED.user.hasPermission("nodes.write");
    }

    function hintItem(entry) {
        var hint = lib().notices.typeHint(entry);
        var args = Object.assign({ palette: RED._("menu.label.editPalette") }, hint.args);
        var item = $("<li></li>").attr("data-type", entry.type).append($("<code></code>").text(entry.type));
        $('<span class="ai-sidebar-notice-hint"></span>').text(" " + t("notice." + hint.key, args)).appendTo(item);
        return item;
    }

    /**
     * Show a notice event under `answer` (an answer.js Answer). Returns the notice's view (notices.noticeView),
     * or null when it had nothing to show.
     */
    function render(answer, event) {
        var view = lib().notices.noticeView(event);
        if (!view) {
            return null;
        }
        var box = $('<div class="ai-sidebar-notice" role="note"></div>').attr("data-code", view.code)
            .append($('<i class="fa fa-info-circle" aria-hidden="true"></i>'));
        var heading = $('<div class="ai-sidebar-notice-text"></div>').appendTo(box);
        if (view.types.length) {
            heading.text(t("notice.unknownTypes", { count: view.types.length }));
            var list = $('<ul class="ai-sidebar-notice-types"></ul>').appendTo(box);
            view.types.forEach(function (entry) {
                hintItem(entry).appendTo(list);
            });
            if (view.modules.length && mayInstall()) {
                $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-notice-palette">' +
                    '</button>')
                    .append($('<i class="fa fa-download" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + RED._("menu.label.editPalette")))
                    .attr("title", t("notice.paletteTooltip", { modules: view.modules.join(", ") }))
                    .on("click", function (click) {
                        click.preventDefault();
                        RED.actions.invoke("core:manage-palette", {
                            view: "install",
                            filter: "\"" + view.modules.join("\", \"") + "\""
                        });
                    })
                    .appendTo(box);
            }
        } else if (view.server) {
            // Which server is out, at a glance: its name first, then the service's sentence (which says why).
            box.attr("data-server", view.server).find(".fa").removeClass("fa-info-circle").addClass("fa-plug");
            $('<strong class="ai-sidebar-notice-server"></strong>').text(view.server).appendTo(heading);
            heading.append(document.createTextNode(" \u2014 " + view.message));
        } else {
            heading.text(view.message);
        }
        if (lib().modeChoice.offersSwitch(event) && answer.question && answer.sidebar.resendInAgentMode) {
            // Ask mode answered a request to change: one click switches to Agent and sends the question again.
            $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-notice-agent"></button>')
                .append($('<i class="fa fa-magic" aria-hidden="true"></i>'))
                .append(document.createTextNode(" " + t("mode.switchAndResend")))
                .on("click", function (click) {
                    click.preventDefault();
                    if (answer.sidebar.resendInAgentMode(answer.question)) {
                        $(this).prop("disabled", true);
                    }
                })
                .appendTo(box);
        }
        answer.addNotice(box, view);
        return view;
    }

    /**
     * Mark the Import buttons in `element` whose flow uses a type one of `views` (unknown_node_types notices)
     * named: a warning icon and the sentence with the types as tooltip and accessible description.
     */
    function markImports(element, views) {
        var types = [];
        views.forEach(function (view) {
            types = types.concat(view.types);
        });
        if (!types.length) {
            return;
        }
        element.find("pre[data-ai-sidebar-flow='yes']").each(function () {
            var pre = $(this);
            var used = lib().notices.typesInFlow(lib().flowJson.parseFlow(pre.text()), types);
            var importButton = pre.prev(".ai-sidebar-flow-bar").find(".ai-sidebar-flow-import");
            if (!used.length || !importButton.length || importButton.hasClass("ai-sidebar-flow-import-warned")) {
                return;
            }
            var sentence = t("notice.unknownTypes", { count: used.length }) + " " + used.join(", ");
            importButton.addClass("ai-sidebar-flow-import-warned").attr("title", sentence)
                .attr("aria-description", sentence)
                .prepend(document.createTextNode(" "))
                .prepend($('<i class="fa fa-exclamation-triangle ai-sidebar-flow-import-warning" ' +
                    'aria-hidden="true"></i>'));
        });
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.noticeView = { render: render, markImports: markImports };
}());
