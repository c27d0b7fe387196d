/**
 * A reasoning model's thoughts in an answer (`thinking` stream events, issue 38): a collapsible "Thinking" block
 * before the text they lead to, open while the model thinks, closed (and titled "Thoughts") once the answer's text
 * begins; the user can open it again. Each run of thinking events between texts is one block. The thoughts are
 * plain text (never markdown, never HTML) and are not part of the answer: Copy and the stored conversation leave
 * them out (the service never stores them).
 *
 * Editor-only script: registers `NodeRedAiSidebar.thinkingView` with `append(answer, text)` (answer.js calls it for
 * each event) and `settle(answer)` (answer.js calls it when the answer's text goes on).
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /**
     * Add `text` to the answer's open thinking block, or to a new one after what the answer shows so far.
     *
     * @param {object} answer an Answer of answer.js (its `element`, `sidebar`, `render`, `readOut`)
     * @param {string} text
     */
    function append(answer, text) {
        if (typeof text !== "string" || !text) {
            return;
        }
        var block = answer.thinkingBlock;
        // A tool card or a notice came after it (the waiting line moves below each new event): these thoughts
        // are the next step's.
        if (block && !block.is(answer.element.children().not(".ai-sidebar-waiting").last())) {
            settle(answer);
            block = null;
        }
        if (!block) {
            // The text shown so far ends here: thoughts after it come in their own block, text after them anew.
            answer.render();
            answer.readOut(true);
            answer.textElement = null;
            block = $('<details class="ai-sidebar-thinking" open></details>');
            var summary = $("<summary></summary>").attr("title", t("thinking.tooltip")).appendTo(block);
            $('<i class="fa fa-lightbulb-o" aria-hidden="true"></i>').appendTo(summary);
            $('<span class="ai-sidebar-thinking-label"></span>').text(" " + t("thinking.active")).appendTo(summary);
            $('<div class="ai-sidebar-thinking-text"></div>').appendTo(block);
            answer.thinkingBlock = block;
            answer.sidebar.withScroll(function () {
                block.appendTo(answer.element);
            });
        }
        var body = block.children(".ai-sidebar-thinking-text");
        answer.sidebar.withScroll(function () {
            body.text(body.text() + text);
        });
    }

    /**
     * The answer's text goes on: its thinking block, if one is open, closes and says it is done.
     *
     * @param {object} answer
     */
    function settle(answer) {
        var block = answer.thinkingBlock;
        if (!block) {
            return;
        }
        answer.thinkingBlock = null;
        block.prop("open", false);
        block.find(".ai-sidebar-thinking-label").text(" " + t("thinking.done"));
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.thinkingView = { append: append, settle: settle };
})();
