"use strict";

const assert = require("assert");
const waiting = require("../resources/chat/waiting");

function feed(state, events) {
    events.forEach(function (pair) {
        state.handle(pair[1], pair[0]);
    });
    return state;
}

describe("what a streamed answer waits for", function () {
    it("waits for the model from the question on, counting whole seconds", function () {
        const state = new waiting.WaitState(1000);
        assert.deepStrictEqual(state.current(1000), { phase: "model", tool: undefined, seconds: 0,
            announcedSeconds: 0 });
        assert.deepStrictEqual(state.current(41999), { phase: "model", tool: undefined, seconds: 40,
            announcedSeconds: 40 });
        assert.strictEqual(state.current(13500).announcedSeconds, 10);
    });

    it("waits for a tool from its call to its result, then for the model again, on the same clock", function () {
        const state = feed(new waiting.WaitState(0), [[500, { type: "tool_call", tool: "get_flow", params: {} }]]);
        assert.deepStrictEqual(state.current(2400), { phase: "tool", tool: "get_flow", seconds: 2,
            announcedSeconds: 0 });
        feed(state, [[2500, { type: "tool_result", tool: "get_flow", result: "...", ok: true }]]);
        assert.deepStrictEqual(state.current(12000), { phase: "model", tool: undefined, seconds: 12,
            announcedSeconds: 10 });
    });

    it("names the latest of several running tools until each has its result", function () {
        const state = feed(new waiting.WaitState(0), [
            [10, { type: "tool_call", tool: "get_flow" }],
            [20, { type: "tool_call", tool: "get_node_info" }],
            [30, { type: "tool_result", tool: "get_node_info", ok: false, result: "No node has the id x" }]
        ]);
        assert.strictEqual(state.current(40).tool, "get_flow");
        feed(state, [[50, { type: "tool_result", tool: "get_flow", ok: true }]]);
        assert.strictEqual(state.current(60).phase, "model");
    });

    it("stops waiting at the first piece of text, but not at an empty one", function () {
        const state = feed(new waiting.WaitState(0), [[100, { type: "token", content: "" }]]);
        assert.strictEqual(state.current(200).phase, "model");
        feed(state, [[40000, { type: "token", content: "The flow" }]]);
        assert.strictEqual(state.current(41000), null);
    });

    it("waits again, on a new clock, for a tool the model calls after some text", function () {
        const state = feed(new waiting.WaitState(0), [
            [1000, { type: "token", content: "Let me look." }],
            [5000, { type: "tool_call", tool: "get_settings" }]
        ]);
        assert.deepStrictEqual(state.current(7000), { phase: "tool", tool: "get_settings", seconds: 2,
            announcedSeconds: 0 });
        feed(state, [[7100, { type: "tool_result", tool: "get_settings", ok: true }],
            [8000, { type: "token", content: "Done." }]]);
        assert.strictEqual(state.current(9000), null);
    });

    it("waits for nothing more after an error, done, or a stop, whatever comes next", function () {
        ["error", "done"].forEach(function (type) {
            const state = feed(new waiting.WaitState(0), [[100, { type: type, code: "llm_timeout" }],
                [200, { type: "tool_call", tool: "get_flow" }]]);
            assert.strictEqual(state.current(300), null, type);
        });
        const stopped = new waiting.WaitState(0);
        stopped.stop();
        assert.strictEqual(stopped.current(10), null);
    });

    it("ignores events it does not know and values that are not events", function () {
        const state = feed(new waiting.WaitState(0), [[5, { type: "approval_required" }], [6, null], [7, "token"]]);
        assert.strictEqual(state.current(1000).phase, "model");
    });
});
