"use strict";

const assert = require("assert");
const searchHits = require("../resources/chat/search-hits");

describe("conversation search hits", function () {
    const body = { query: "catch", results: [
        { category: "message", sessionId: "s2", role: "assistant", snippet: "…the [catch] node sends…", score: 3,
            createdAt: 1700000010.5 },
        { category: "message", sessionId: "s1", role: "user", snippet: "what does [catch] do", score: 2,
            createdAt: 1700000001 },
        { category: "message", sessionId: "s2", role: "user", snippet: "[catch]?", score: 1, createdAt: 1700000009 },
        { category: "template", key: "t", snippet: "[catch] all", score: 1 }
    ] };

    it("keeps one row per conversation, best first, with the matched words marked", function () {
        const rows = searchHits.rows(body);
        assert.deepStrictEqual(rows.map((r) => [r.sessionId, r.role, r.createdAt]),
            [["s2", "assistant", 1700000010.5], ["s1", "user", 1700000001]]);
        assert.deepStrictEqual(rows[0].parts, [{ text: "…the ", mark: false }, { text: "catch", mark: true },
            { text: " node sends…", mark: false }]);
        assert.deepStrictEqual(searchHits.rows({}), []);
    });

    it("finds the message a row stands for by role and time, else by its matched words", function () {
        const history = [
            { role: "user", content: "What does Catch do?", createdAt: 1700000009 },
            { role: "assistant", content: "The catch node sends the error on.", createdAt: 1700000010.5 }
        ];
        const rows = searchHits.rows(body);
        assert.strictEqual(searchHits.messageIndex(history, rows[0]), 1);
        assert.strictEqual(searchHits.messageIndex(history, { role: "user", createdAt: 1, parts:
            searchHits.snippetParts("does [catch]") }), 0);
        assert.strictEqual(searchHits.messageIndex(history, { role: "user", createdAt: null, parts:
            searchHits.snippetParts("[switch]") }), -1);
    });

    it("sends a query only with a word of three or more characters", function () {
        assert.strictEqual(searchHits.searchable("a b"), false);
        assert.strictEqual(searchHits.searchable("  "), false);
        assert.strictEqual(searchHits.searchable("is mqtt"), true);
        assert.strictEqual(searchHits.searchable("报错了"), true);
    });
});
