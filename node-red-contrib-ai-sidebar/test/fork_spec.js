"use strict";

const assert = require("assert");
const fork = require("../resources/conversations/fork");
const chatRequest = require("../resources/chat/chat-request");

function user(id, content, metadata) {
    return { id: id, role: "user", content: content, metadata: metadata || {} };
}

function answer(id, content, metadata) {
    return { id: id, role: "assistant", content: content, metadata: metadata || {} };
}

describe("edit and resend: which stored question an edited one is", function () {
    const messages = [user(1, "first"), answer(2, "one"), user(3, "second"), answer(4, "two"), user(5, "third"),
        answer(6, "three")];

    it("counts the questions shown from the last one", function () {
        assert.strictEqual(fork.questionId(messages, new Set(), 0, "third"), 5);
        assert.strictEqual(fork.questionId(messages, new Set(), 2, " first "), 1);
        // A history read cut at its start still ends with the same questions.
        assert.strictEqual(fork.questionId(messages.slice(2), new Set(), 1, "second"), 3);
    });

    it("skips the tries a Retry replaced, as the sidebar does", function () {
        const retried = [user(1, "first"), answer(2, "", { errors: ["llm_timeout"] }), user(3, "first"),
            answer(4, "one"), user(5, "second"), answer(6, "two")];
        const replaced = chatRequest.replacedTries(retried);
        assert.strictEqual(fork.questionId(retried, replaced, 1, "first"), 3);
    });

    it("answers null when the question is not there or not the one shown", function () {
        assert.strictEqual(fork.questionId(messages, new Set(), 3, "first"), null);
        assert.strictEqual(fork.questionId(messages, new Set(), 0, "something else"), null);
        assert.strictEqual(fork.questionId([], new Set(), 0, "first"), null);
    });

    it("names the new conversation after the edited question's first line", function () {
        assert.strictEqual(fork.sessionName("  why?\nmore  "), "why?");
        assert.strictEqual(fork.sessionName("x".repeat(70)), "x".repeat(60) + "…");
    });

    it("restores a checkpoint to the time its question was asked", function () {
        assert.strictEqual(fork.checkpointTime(1764662400.1234), "2025-12-02T08:00:00.123Z");
        assert.strictEqual(fork.checkpointTime(undefined), null);
        assert.strictEqual(fork.checkpointTime(0), null);
    });
});
