"use strict";

const assert = require("assert");
const { createSseParser } = require("../resources/shared/sse-parser");

function collect() {
    const result = { events: [], invalid: [] };
    result.parser = createSseParser(function (event) {
        result.events.push(event);
    }, function (data) {
        result.invalid.push(data);
    });
    return result;
}

describe("SSE parser used by the sidebar", function () {
    it("emits one event per data frame, in order", function () {
        const r = collect();
        r.parser.push("data: {\"type\":\"token\",\"content\":\"a\"}\n\ndata: {\"type\":\"done\",\"sessionId\":\"s\"}\n\n");
        assert.deepStrictEqual(r.events, [{ type: "token", content: "a" }, { type: "done", sessionId: "s" }]);
    });

    it("waits for the blank line before emitting a frame split across pieces", function () {
        const r = collect();
        r.parser.push("data: {\"type\":\"tok");
        r.parser.push("en\",\"content\":\"x\"}\n");
        assert.deepStrictEqual(r.events, []);
        r.parser.push("\n");
        assert.deepStrictEqual(r.events, [{ type: "token", content: "x" }]);
    });

    it("ignores comment lines such as the keep-alive ping", function () {
        const r = collect();
        r.parser.push(": ping\n\n: ping\ndata: {\"type\":\"done\"}\n\n");
        assert.deepStrictEqual(r.events, [{ type: "done" }]);
        assert.deepStrictEqual(r.invalid, []);
    });

    it("accepts CRLF line endings, even with a CRLF pair split between pieces", function () {
        const r = collect();
        r.parser.push("data: {\"type\":\"token\",\"content\":\"1\"}\r\n\r");
        r.parser.push("\ndata: {\"type\":\"token\",\"content\":\"2\"}\r\n\r\n");
        assert.deepStrictEqual(r.events.map(function (e) { return e.content; }), ["1", "2"]);
    });

    it("joins multi-line data and keeps newlines inside JSON strings", function () {
        const r = collect();
        r.parser.push("data: {\"type\":\"token\",\ndata: \"content\":\"a\\n\\nb\"}\n\n");
        assert.deepStrictEqual(r.events, [{ type: "token", content: "a\n\nb" }]);
    });

    it("reports a frame that is not JSON instead of throwing", function () {
        const r = collect();
        r.parser.push("data: not json\n\ndata: {\"type\":\"done\"}\n\n");
        assert.deepStrictEqual(r.invalid, ["not json"]);
        assert.deepStrictEqual(r.events, [{ type: "done" }]);
    });

    it("flushes a last frame that lacks its blank line at the end of the stream", function () {
        const r = collect();
        r.parser.push("data: {\"type\":\"done\"}");
        assert.deepStrictEqual(r.events, []);
        r.parser.end();
        assert.deepStrictEqual(r.events, [{ type: "done" }]);
    });
});
