/**
 * Edit and resend (issues 31 and 35), the pure part: which stored question an edited one is, the new
 * conversation's name, and the time a checkpoint restores the flows to.
 *
 * A question on screen has no id of its own (a live one was asked before the service stored it), so the sidebar
 * counts from the end: the edited question is the `fromEnd`-th question shown before the last one, and the
 * history's shown questions (`chatRequest.replacedTries` leaves out tries a Retry replaced, as the sidebar does)
 * are counted the same way. Counting from the end holds also when the history read is cut at its start.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.fork`) and in Node.js by the package's tests
 * (`require`). Nothing here touches the DOM or `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.fork = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // As the service names a session after its first question (service/memory/store.py _session_name).
    const NAME_CHARS = 60;

    /**
     * The id of the stored question the sidebar shows `fromEnd` places before its last question, or null when the
     * history has no such question or it is not the text shown (`text`: the history changed meanwhile).
     *
     * @param {{id: number, role: string, content: string}[]} messages `GET ai-sidebar/history/{id}`'s, in order
     * @param {Set<number>} replaced indexes of messages the sidebar does not show (chatRequest.replacedTries)
     * @param {number} fromEnd 0 for the last question shown, 1 for the one before, …
     * @param {string} text the question as shown
     * @returns {?number}
     */
    function questionId(messages, replaced, fromEnd, text) {
        const shown = messages.filter(function (message, index) {
            return message && message.role === "user" && !replaced.has(index);
        });
        const question = shown[shown.length - 1 - fromEnd];
        if (!question || typeof question.id !== "number" || String(question.content).trim() !== String(text).trim()) {
            return null;
        }
        return question.id;
    }

    /** The name of a conversation that starts from `text`: its first line, at most 60 characters. */
    function sessionName(text) {
        const line = String(text).trim().split(/\r?\n/)[0] || "";
        return line.length > NAME_CHARS ? line.slice(0, NAME_CHARS) + "…" : line;
    }

    /**
     * The ISO 8601 time a checkpoint restores the flows to: when its question was asked (a stored question's
     * `createdAt`, Unix seconds; a live one's `Date.now()`, milliseconds), or null when unknown.
     *
     * @param {number} seconds
     * @returns {?string}
     */
    function checkpointTime(seconds) {
        return typeof seconds === "number" && isFinite(seconds) && seconds > 0 ?
            new Date(Math.floor(seconds * 1000)).toISOString() : null;
    }

    return { questionId: questionId, sessionName: sessionName, checkpointTime: checkpointTime };
}));
