/**
 * What of a streamed answer screen readers are told next. The answer's text is rendered again on every frame,
 * which a live region over it would read again and again; instead its text is handed to a separate polite live
 * region in whole sentences, each once, and the rest when the answer ends.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.liveReading`) and in Node.js by the
 * package's tests (`require`). Nothing here touches `RED` or the page.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.liveReading = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /**
     * The end of a sentence: a Latin full stop, question or exclamation mark before white space (not "4.1" or a
     * stop that more text may follow), a CJK one, or a line break that more text follows (rendered markup has one
     * after every paragraph, also the one still streaming).
     */
    const SENTENCE_END = /[.!?](?=\s)|[\u3002\uff01\uff1f]|\n(?=\s*\S)/g;

    /**
     * The next part of `text` to read out.
     *
     * @param {string} text the answer's text so far, as shown (the rendered block's text)
     * @param {number} readUpTo how many characters of it were already read out
     * @param {boolean} final the answer has ended: the rest is read, sentence or not
     * @returns {{say: string, upTo: number}} `say` is "" when nothing new is complete yet; `upTo` the new
     *     `readUpTo`
     */
    function nextReading(text, readUpTo, final) {
        text = String(text || "");
        const start = Math.min(Math.max(0, readUpTo || 0), text.length);
        let end = start;
        if (final) {
            end = text.length;
        } else {
            SENTENCE_END.lastIndex = start;
            let match;
            while ((match = SENTENCE_END.exec(text)) !== null) {
                end = match.index + match[0].length;
            }
        }
        return { say: text.slice(start, end).replace(/\s+/g, " ").trim(), upTo: end };
    }

    return { nextReading: nextReading };
}));
