/**
 * The user's inline completion switch (issue 39) where Node-RED keeps each user's own settings: a pane "AI
 * assistant" in the editor's User Settings dialog (`RED.userSettings.add`, the dialog of the main menu's
 * Settings; Node-RED 4.1 and 5) with one checkbox. It reads and writes the same per-user setting as the action
 * `ai-sidebar:toggle-inline-completion` (completion-provider.js `isOn`/`setOn`), so the two always agree.
 *
 * Editor-only script: registers `NodeRedAiSidebar.completionSetting`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var PANE = "ai-sidebar";
    var added = false; // Node-RED's User Settings have no way to remove a pane: it is added once per page

    function provider() {
        return window.NodeRedAiSidebar.completionProvider;
    }

    /**
     * The pane's content, built each time the dialog opens (so it shows the setting as it is then); the dialog
     * shows a tab's content by the id `red-ui-settings-tab-<pane id>` (Node-RED's userSettings.js).
     */
    function pane() {
        var body = $('<div class="red-ui-settings-section ai-sidebar-settings"></div>')
            .attr("id", "red-ui-settings-tab-" + PANE);
        $('<div class="red-ui-settings-section-description"></div>').text(RED._(NS + "completion.setting.title"))
            .appendTo(body);
        var row = $('<div class="red-ui-settings-row"></div>').appendTo(body);
        var label = $("<label></label>").appendTo(row);
        $('<input type="checkbox" class="ai-sidebar-completion-setting">').prop("checked", provider().isOn())
            .on("change", function () {
                provider().setOn(this.checked);
            })
            .appendTo(label);
        label.append(document.createTextNode(" " + RED._(NS + "completion.setting.label")));
        return body;
    }

    /** Add the pane (once; Node-RED without `RED.userSettings` gets none). */
    function register() {
        if (added || !RED.userSettings || typeof RED.userSettings.add !== "function") {
            return;
        }
        added = true;
        RED.userSettings.add({ id: PANE, title: RED._(NS + "completion.setting.title"), get: pane });
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.completionSetting = { register: register, PANE: PANE };
}());
