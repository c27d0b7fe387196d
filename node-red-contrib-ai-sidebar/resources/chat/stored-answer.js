/**
 * Answers stored in the service's memory, shown when a conversation is opened again: `replayStoredAnswer` draws an
 * answer that kept what the sidebar showed besides its text through answer.js's own Answer, `renderStoredAnswer`
 * one stored before the service kept its events, and `renderMissingAnswer` the line for a stored question that has
 * no answer.
 *
 * Editor-only script (after answer.js): registers those three on `NodeRedAiSidebar`. Answer text goes in only
 * through the sidebar's sanitising renderer; everything else as text.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function sidebarLib() {
        return window.NodeRedAiSidebar;
    }

    function parts() {
        return sidebarLib().answerParts;
    }

    /** What a turn's stored error codes mean, as sentences in the UI language (error-codes.js). */
    function storedErrorText(codes) {
        return sidebarLib().errorCodes.storedErrorKeys(codes).map(function (key) {
            return t("error.stored." + key);
        }).join(" ");
    }

    /**
     * Fill a message element with an answer stored in the service's memory: the tools it used as badges, the
     * text as sanitised markdown with flow buttons, and the faults it met.
     *
     * @param {function(jQuery, string)} renderMarkdown the sidebar's sanitising renderer (or null)
     * @param {jQuery} element the message element
     * @param {{content: string, metadata: object}} message from `GET ai-sidebar/history/{sessionId}`
     */
    function renderStoredAnswer(renderMarkdown, element, message) {
        var metadata = (message.metadata && typeof message.metadata === "object") ? message.metadata : {};
        toolBadges(element, metadata);
        if (message.content) {
            parts().renderInto($('<div class="ai-sidebar-text red-ui-help"></div>').appendTo(element),
                String(message.content), renderMarkdown);
        }
        if (metadata.stopped === true) {
            parts().stoppedMark().appendTo(element);
        }
        if (Array.isArray(metadata.errors) && metadata.errors.length) {
            $('<div class="ai-sidebar-note"></div>')
                .text(t("history.hadErrors", { reasons: storedErrorText(metadata.errors) }))
                .attr("data-codes", metadata.errors.join(" "))
                .appendTo(element);
        }
        sidebarLib().flowBlocks.decorate(element);
        sidebarLib().answerLinks.decorate(element);
        if (message.content && String(message.content).trim()) {
            parts().actionRow(element).append(parts().copyAnswerButton(String(message.content)));
        }
    }

    /**
     * Fill a message element with a stored answer that kept what the sidebar showed besides its text
     * (`message.events`, service/chat/view.py): the events go through the live stream's own Answer, in their order,
     * the text cut at each event's `at` (the characters sent before it), so the tool cards with their sources, the
     * approval cards, notices, errors and usage look as they did, and finish() links node names and adds flow
     * buttons as it did. Nothing is applied to the editor again (a stored flow_change has no changes) and nothing
     * is read out to screen readers.
     *
     * @param {object} sidebar the AiSidebar: `renderMarkdown`, `approvals`, `send` (a checkpoint's restore)
     * @param {jQuery} element the message element (that of the run's card for an answer that continued a run)
     * @param {{content: string, metadata: object, events: object[]}} message from `GET ai-sidebar/history/{id}`
     * @param {object} restoring the approval cards' restoring context (ApprovalCards.restoring)
     * @returns {Answer}
     */
    function replayStoredAnswer(sidebar, element, message, restoring) {
        var metadata = (message.metadata && typeof message.metadata === "object") ? message.metadata : {};
        var Answer = sidebarLib().Answer;
        var answer = new Answer({
            renderMarkdown: sidebar.renderMarkdown,
            approvals: sidebar.approvals,
            send: function (text) {
                return sidebar.send(text);
            },
            withScroll: function (change) {
                change();
            }
        }, element);
        answer.restoring = restoring;
        answer.runId = typeof metadata.resumed === "string" ? metadata.resumed : null;
        var text = typeof message.content === "string" ? message.content : "";
        var sent = 0;
        function textUpTo(at) {
            var end = Math.min(Math.max(sent, at), text.length);
            if (end > sent) {
                answer.handleEvent({ type: "token", content: text.slice(sent, end) });
                sent = end;
            }
        }
        message.events.forEach(function (event) {
            if (event && typeof event === "object") {
                textUpTo(typeof event.at === "number" ? event.at : 0);
                answer.handleEvent(event);
            }
        });
        textUpTo(text.length);
        if (metadata.stopped === true) {
            answer.stopped();
        }
        answer.finish();
        return answer;
    }

    /**
     * The badges of the tools a stored turn used (`metadata.tools`, names in order), appended to `element`.
     *
     * @param {jQuery} element the message element
     * @param {object} metadata the stored turn's metadata
     * @returns {boolean} whether there were any
     */
    function toolBadges(element, metadata) {
        var tools = Array.isArray(metadata.tools) ? metadata.tools : [];
        if (!tools.length) {
            return false;
        }
        var badges = $('<div class="ai-sidebar-badges"></div>').appendTo(element);
        tools.forEach(function (tool) {
            $('<span class="ai-sidebar-badge"></span>')
                .attr("title", t("tool.used"))
                .append($('<i class="fa fa-wrench"></i>'))
                .append(document.createTextNode(" " + String(tool)))
                .appendTo(badges);
        });
        return true;
    }

    /**
     * Fill a message element for a stored question that has no answer: the service saves the question of a turn
     * whose answer failed (`metadata.errors`, e.g. ["llm_error"]) or was stopped before any text, with the tools
     * the turn ran before that (shown as badges, as under a stored answer).
     *
     * @param {jQuery} element the message element
     * @param {object} metadata the stored question's metadata
     * @returns {boolean} whether there was anything to show (false: the element is left empty)
     */
    function renderMissingAnswer(element, metadata) {
        metadata = (metadata && typeof metadata === "object") ? metadata : {};
        var shown = toolBadges(element, metadata);
        var errors = Array.isArray(metadata.errors) ? metadata.errors.map(String) : [];
        if (errors.length) {
            sidebarLib().errorLine(t("history.noAnswer", { reasons: storedErrorText(errors) }))
                .attr("data-codes", errors.join(" ")).appendTo(element);
            return true;
        }
        if (metadata.stopped === true) {
            parts().stoppedMark().appendTo(element);
            return true;
        }
        return shown;
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.renderStoredAnswer = renderStoredAnswer;
    window.NodeRedAiSidebar.replayStoredAnswer = replayStoredAnswer;
    window.NodeRedAiSidebar.renderMissingAnswer = renderMissingAnswer;
}());
