/**
 * Follow-up suggestions under the last answer (issue 31, the chat habit of Copilot users): the service puts up to
 * three next questions on the stream's `done` event (`suggestions: [{text, kind}]`, chosen by rules from what the
 * turn did, in the request's language: service/chat/followups.py); each is a button that asks it at once. Only the
 * newest answer keeps its suggestions: they go when another question is asked.
 *
 * Editor-only script: registers `NodeRedAiSidebar.followups`. The service's text goes in as text.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var LIMIT = 3;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /**
     * The usable items of a `done` event's `suggestions`: at most three, each with non-empty text.
     *
     * @param {*} suggestions
     * @returns {Array<{text: string, kind: string}>}
     */
    function items(suggestions) {
        if (!Array.isArray(suggestions)) {
            return [];
        }
        return suggestions.filter(function (item) {
            return item && typeof item.text === "string" && item.text.trim();
        }).slice(0, LIMIT).map(function (item) {
            return { text: item.text.trim(), kind: typeof item.kind === "string" ? item.kind : "" };
        });
    }

    /** Remove every suggestion list of the sidebar's messages (a new question is on its way). */
    function clear(messages) {
        messages.find(".ai-sidebar-followups").remove();
    }

    /**
     * Show `suggestions` under `answer` (an answer.js Answer) as buttons that ask them (`sidebar.send(text)`);
     * the sidebar's older lists go first. Nothing is shown for an empty list.
     */
    function render(answer, suggestions) {
        var list = items(suggestions);
        var sidebar = answer.sidebar;
        clear(sidebar.messages);
        if (!list.length) {
            return null;
        }
        var box = $('<div class="ai-sidebar-followups" role="group"></div>').attr("aria-label", t("followups.label"));
        list.forEach(function (item) {
            $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-followup"></button>')
                .attr("data-kind", item.kind)
                .append($('<i class="fa fa-share" aria-hidden="true"></i>'))
                .append(document.createTextNode(" " + item.text))
                .on("click", function (event) {
                    event.preventDefault();
                    if (sidebar.send(item.text)) {
                        box.remove();
                    }
                })
                .appendTo(box);
        });
        sidebar.withScroll(function () {
            box.appendTo(answer.element);
        });
        return box;
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.followups = { items: items, render: render, clear: clear };
}());
