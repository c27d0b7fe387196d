/**
 * Copying a text for the user: the editor's own helper (RED.clipboard.copyText, which shows its "copied" tooltip
 * on the button), else the browser's asynchronous clipboard with a notification.
 *
 * Editor-only script: registers `NodeRedAiSidebar.clipboard`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    /**
     * @param {string} text
     * @param {jQuery} button the button that was clicked (the tooltip shows on it)
     * @param {string} messageKey the sidebar catalog's key of the "copied" message, e.g. "flow.copied"
     */
    function copyText(text, button, messageKey) {
        var copied = false;
        try {
            copied = RED.clipboard.copyText(text, button, NS + messageKey);
        } catch {
            // The editor's clipboard helper failed: the browser's clipboard below is tried instead.
        }
        if (!copied && navigator.clipboard && window.isSecureContext) {
            navigator.clipboard.writeText(text).then(function () {
                RED.notify($("<p></p>").text(RED._(NS + messageKey)), { type: "success", timeout: 2000 });
            });
        }
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.clipboard = { copyText: copyText };
}());
