/**
 * The node edit dialogs as the assist buttons see them: which dialog the editor's tray stack shows, the code
 * editor inside an element, and a change of its text as one undoable edit.
 *
 * Editor-only script: registers `NodeRedAiSidebar.assistEditors`.
 *
 * How the buttons get into Node-RED's dialogs without patching Node-RED: `RED.events` "editor:open" fires before a
 * tray's content exists (editor-client tray.js emits it before showTray; the node form and its oneditprepare are
 * built asynchronously after), no event carries the dialog's content, and wrapping `RED.editor.registerTypeEditor`
 * definitions would replace Node-RED's own `show` functions, whose inner editors are closure variables we could not
 * reach anyway. So a MutationObserver watches the tray stack (#red-ui-editor-stack) while a tray is open, and a
 * dialog is recognised by the ids Node-RED's own templates give its parts (10-function.html: #func-tabs,
 * #node-input-func-editor; the expression editor: #red-ui-editor-type-expression; the JSON editor:
 * #node-input-json), the same in 4.1 and 5.x. A watcher only adds a button next to those parts; nothing of
 * Node-RED is replaced.
 */
(function () {
    "use strict";

    var STACK = "#red-ui-editor-stack";
    var watchers = [];
    var observer = null;
    var scheduled = false;

    /**
     * The code editor Node-RED built inside `element` (RED.editor.createEditor): the Monaco editor itself (the
     * default in 4.1 and 5.x; Node-RED adds its own methods to it), or the Ace editor when the user chose Ace.
     *
     * @param {Element|jQuery} element the editor's container, e.g. #node-input-json
     * @returns {?object} null when there is none (yet)
     */
    function codeEditorIn(element) {
        var container = $(element)[0];
        if (!container) {
            return null;
        }
        var monaco = window.monaco;
        if (monaco && monaco.editor && typeof monaco.editor.getEditors === "function") {
            var found = monaco.editor.getEditors().filter(function (editor) {
                return container.contains(editor.getContainerDomNode());
            });
            if (found.length) {
                return found[0];
            }
        }
        return (container.env && container.env.editor) || null;
    }

    /**
     * Replace the whole text of a code editor as ONE undoable edit: Ctrl-Z in that editor brings the old text back.
     *
     * @param {object} editor a Monaco editor (or Ace's, when the user chose Ace)
     * @param {string} value the new text
     */
    function replaceText(editor, value) {
        if (typeof editor.executeEdits === "function" && editor.getModel) {
            var model = editor.getModel();
            // Undo stops on both sides keep the replacement apart from what the user typed before and after.
            editor.pushUndoStop();
            editor.executeEdits("node-red-contrib-ai-sidebar", [{
                range: model.getFullModelRange(), text: value, forceMoveMarkers: true
            }]);
            editor.pushUndoStop();
            editor.setPosition({ lineNumber: 1, column: 1 });
            return;
        }
        // Ace: one document change is one undo step.
        editor.getSession().getDocument().setValue(value);
    }

    /** The edit stack's top entry: the node being edited, or `{type: "_expression"}` etc. for a type editor. */
    function topOfEditStack() {
        var stack = RED.editor.getEditStack ? RED.editor.getEditStack() : [];
        return stack.length ? stack[stack.length - 1] : null;
    }

    /**
     * The node whose dialog the type editor on top was opened from (a change node for its JSONata expression, an
     * inject node for its JSON payload), as the request's context names it.
     *
     * @returns {{nodeId: string, nodeType: string, name: string, tabId: string}|{}} {} when there is none
     */
    function editedNodeContext() {
        var stack = RED.editor.getEditStack ? RED.editor.getEditStack() : [];
        for (var i = stack.length - 1; i >= 0; i--) {
            var node = stack[i];
            if (node && typeof node.id === "string") {
                return { nodeId: node.id, nodeType: node.type, name: node.name || "", tabId: node.z || "" };
            }
        }
        return {};
    }

    /**
     * The "Ask the assistant" button of a type editor's toolbar.
     *
     * @param {string} className marks the button (and tells a watcher it is there already)
     * @param {string} tooltip
     * @param {function()} open what a click does
     * @param {boolean} [iconOnly] only the icon (the label is its accessible name): where a label would squeeze
     *     Node-RED's own controls, as beside the function dialog's code tabs
     * @returns {jQuery}
     */
    function assistButton(className, tooltip, open, iconOnly) {
        var label = RED._("node-red-contrib-ai-sidebar/ai-sidebar:assist.button");
        var button = $('<button type="button" class="red-ui-button red-ui-button-small ai-assist-button"></button>')
            .addClass(className).attr("title", iconOnly ? label + ": " + tooltip : tooltip)
            .append($('<i class="fa fa-magic" aria-hidden="true"></i>'));
        if (iconOnly) {
            button.attr("aria-label", label);
        } else {
            button.append($("<span></span>").text(" " + label));
        }
        return button
            .on("click", function (event) {
                event.preventDefault();
                open();
            });
    }

    function runWatchers() {
        scheduled = false;
        var tray = $(STACK).children(".red-ui-tray").last();
        if (!tray.length) {
            return;
        }
        watchers.forEach(function (watcher) {
            try {
                watcher(tray);
            } catch (err) {
                // One integration failing must not break the dialog or the others.
                console.warn("ai-sidebar assist:", err);
            }
        });
    }

    function schedule() {
        if (!scheduled) {
            scheduled = true;
            window.requestAnimationFrame(runWatchers);
        }
    }

    function startObserving() {
        var stack = $(STACK)[0];
        if (!observer && stack) {
            observer = new MutationObserver(schedule);
            observer.observe(stack, { childList: true, subtree: true });
        }
        schedule();
    }

    function stopObserving() {
        if (observer) {
            observer.disconnect();
            observer = null;
        }
    }

    /**
     * Call `watcher(tray)` with the top tray (jQuery) whenever the tray stack's content changes while a tray is
     * open; the watcher adds its button when it finds its dialog and none is there yet.
     *
     * @param {function(jQuery)} watcher
     */
    function watch(watcher) {
        watchers.push(watcher);
        if (watchers.length === 1) {
            RED.events.on("editor:open", startObserving);
            RED.events.on("editor:change", startObserving);
            RED.events.on("editor:close", stopObserving);
        }
        if ($(STACK).children(".red-ui-tray").length) {
            startObserving();
        }
    }

    /** Stop all watchers (the plugin is removed). */
    function unwatchAll() {
        watchers = [];
        RED.events.off("editor:open", startObserving);
        RED.events.off("editor:change", startObserving);
        RED.events.off("editor:close", stopObserving);
        stopObserving();
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.assistEditors = {
        codeEditorIn: codeEditorIn,
        replaceText: replaceText,
        topOfEditStack: topOfEditStack,
        editedNodeContext: editedNodeContext,
        assistButton: assistButton,
        watch: watch,
        unwatchAll: unwatchAll
    };
}());
