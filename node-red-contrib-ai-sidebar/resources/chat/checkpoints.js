/**
 * Checkpoints in the conversation (issue 35): an answer that changed the flows (a `flow_change` event, live or
 * stored: an approved write applied in the editor) gets "Restore flows to before this". It asks for the restore
 * the way the History panel does (history.js restoreMessage: the direct trigger of `restore_flows`, scope
 * `whole`, `to` the time its question was asked), so the approval card shows the diff and nothing is written
 * without Approve. Not offered when the flow history is off or unreadable (`GET ai-sidebar/flow-history`: 503
 * `history_unavailable`, 403 without `flows.read`) nor to users without `ai-sidebar.write`.
 *
 * Editor-only script: registers `NodeRedAiSidebar.checkpoints` (`offer(sidebar, element)`), called by answer.js
 * when an answer that changed flows finished. The question's time is its element's `data-asked-at` (sidebar.js
 * appendUserMessage).
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var RESTORE_PERMISSION = "ai-sidebar.write";
    // Whether the history answers is asked again after this long (it can be turned on or off with a restart).
    var AVAILABLE_FOR_MS = 60000;
    var available = null;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    /** Whether the flow history can be read (one request per minute at most, shared by every answer). */
    function historyOn() {
        var now = Date.now();
        if (!available || now - available.at > AVAILABLE_FOR_MS) {
            available = {
                at: now,
                answer: lib().adminApi.requestJson("GET", "ai-sidebar/flow-history?limit=1").then(function () {
                    return true;
                }, function () {
                    return false;
                })
            };
        }
        return available.answer;
    }

    /**
     * Add "Restore flows to before this" under an answer's element (once) when the flow history is on.
     *
     * @param {{send: function(string): boolean}} sidebar sends the restore's chat message (false while busy)
     * @param {jQuery} element the answer's message element
     */
    function offer(sidebar, element) {
        if (!RED.user.hasPermission(RESTORE_PERMISSION) || element.data("aiSidebarCheckpoint")) {
            return;
        }
        var to = element.prevAll(".ai-sidebar-message-user").first().attr("data-asked-at");
        if (!to || typeof sidebar.send !== "function") {
            return;
        }
        element.data("aiSidebarCheckpoint", true);
        historyOn().then(function (on) {
            if (!on || !element.closest("body").length) {
                return;
            }
            var button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-checkpoint">' +
                '</button>')
                .attr("data-to", to)
                .attr("title", t("checkpoint.label"))
                .attr("aria-label", t("checkpoint.label"))
                .append($('<i class="fa fa-history" aria-hidden="true"></i>'))
                .append($("<span></span>").text(" " + t("checkpoint.restore")))
                .on("click", function (event) {
                    event.preventDefault();
                    if (!sidebar.send(lib().history.restoreMessage(to, "whole"))) {
                        button.attr("title", t("checkpoint.busy"));
                        RED.notify(t("checkpoint.busy"), { type: "warning", timeout: 4000 });
                    }
                });
            // At the end of the answer: a run continued after its card has an earlier row, above the change.
            var row = element.children().last();
            if (!row.hasClass("ai-sidebar-answer-actions")) {
                row = $('<div class="ai-sidebar-answer-actions"></div>').appendTo(element);
            }
            row.append(button);
        });
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.checkpoints = { offer: offer };
}());
