/**
 * "Ask the assistant" in the JSON editor of typed inputs (RED.editor.editJSON: an inject node's payload, a change
 * node's value): the proposal's text is offered only once `JSON.parse` accepts it; Accept puts it into the editor
 * as one undoable edit.
 *
 * Editor-only script: registers `NodeRedAiSidebar.assistJson`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var BUTTON_CLASS = "ai-assist-json-button";
    // The JSON editor's raw-text editor and its "format JSON" button (editor-client editors/json.js, 4.1 and 5.x).
    var EDITOR = "#node-input-json";
    var REFORMAT = "#node-input-json-reformat";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function editor(tray) {
        return lib().assistEditors.codeEditorIn(tray.find(EDITOR));
    }

    function onProposal(tray, proposal, panel) {
        var checked = lib().assistRequest.jsonProposal(proposal);
        if (!checked.ok) {
            panel.refuse(t("assist.json.invalid", { message: checked.message }));
            return;
        }
        var box = $('<div class="ai-assist-json-result"></div>').appendTo(panel.result);
        $('<div class="ai-assist-section-label"></div>').text(t("assist.json.proposal")).appendTo(box);
        $('<pre class="ai-assist-json-text"></pre>').text(checked.text).appendTo(box);
        panel.offer(function () {
            var found = editor(tray);
            if (found) {
                lib().assistEditors.replaceText(found, checked.text);
            }
        });
    }

    function open(tray) {
        if ($(".ai-assist-dialog:visible").length) {
            return;
        }
        var AssistPanel = lib().AssistPanel;
        new AssistPanel({
            kind: "json",
            title: t("assist.json.title"),
            context: function () {
                var found = editor(tray);
                return $.extend({}, lib().assistEditors.editedNodeContext(), { value: found ? found.getValue() : "" });
            },
            onProposal: function (proposal, panel) { return onProposal(tray, proposal, panel); }
        }).open();
    }

    /** The watcher of assist-editors.js: the button beside the JSON editor's "format JSON". */
    function addButton(tray) {
        var reformat = tray.find(REFORMAT);
        if (!reformat.length || tray.find("." + BUTTON_CLASS).length) {
            return;
        }
        lib().assistEditors.assistButton(BUTTON_CLASS, t("assist.json.buttonTooltip"), function () {
            open(tray);
        }).insertBefore(reformat);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.assistJson = { addButton: addButton };
}());
