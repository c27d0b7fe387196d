"use strict";

const assert = require("assert");
const notices = require("../resources/chat/notices");

describe("notices under an answer", function () {
    it("lists each unknown node type once with the module to install or the closest installed type", function () {
        const view = notices.noticeView({
            type: "notice", code: "unknown_node_types",
            message: "The flow in this answer uses node types that are not installed in this Node-RED: ...",
            types: [
                { type: "functon", closest: "function" },
                { type: "influxdb out", module: "node-red-contrib-influxdb" },
                { type: "functon", closest: "function" },
                { type: "zz-sensor" },
                { type: "ui_gauge", module: "node-red-dashboard", closest: "ui_base" },
                { type: 42 }, null
            ]
        });
        assert.deepStrictEqual(view.types, [
            { type: "functon", closest: "function", module: null },
            { type: "influxdb out", closest: null, module: "node-red-contrib-influxdb" },
            { type: "zz-sensor", closest: null, module: null },
            { type: "ui_gauge", closest: null, module: "node-red-dashboard" }
        ]);
        assert.deepStrictEqual(view.modules, ["node-red-contrib-influxdb", "node-red-dashboard"]);
        assert.deepStrictEqual(view.types.map(notices.typeHint), [
            { key: "closest", args: { type: "functon", closest: "function" } },
            { key: "module", args: { type: "influxdb out", module: "node-red-contrib-influxdb" } },
            { key: "unknown", args: { type: "zz-sensor" } },
            { key: "module", args: { type: "ui_gauge", module: "node-red-dashboard" } }
        ]);
    });

    it("shows a possible_injection notice as the service's sentence naming the nodes", function () {
        const message = "Some of your flow content looks like instructions to the assistant (\"Note\" (comment c1)).";
        assert.deepStrictEqual(notices.noticeView({
            type: "notice", code: "possible_injection", message: message,
            nodes: [{ id: "c1", type: "comment", name: "Note" }]
        }), { code: "possible_injection", message: message, types: [], modules: [], server: null });
    });

    it("names the server of an mcp_server_unavailable notice, in the service's sentence of the user's language",
        function () {
            const message = "Der MCP-Server tracker ist nicht verfügbar (no answer in 2 s); seine Werkzeuge fehlen " +
                "in dieser Antwort.";
            assert.deepStrictEqual(notices.noticeView({
                type: "notice", code: "mcp_server_unavailable", message: message, server: " tracker ", reason: "x"
            }), { code: "mcp_server_unavailable", message: message, types: [], modules: [], server: "tracker" });
            assert.deepStrictEqual(notices.noticeView({ type: "notice", code: "mcp_server_unavailable",
                server: "docs" }), { code: "mcp_server_unavailable", message: "docs", types: [], modules: [],
                server: "docs" });
            assert.strictEqual(notices.noticeView({ type: "notice", code: "no_model", message: "m", server: "docs" })
                .server, null);
        });

    it("shows another code's message as the service wrote it, and nothing for a notice without words", function () {
        assert.deepStrictEqual(notices.noticeView({ type: "notice", code: "no_model", message: "  A model is needed. " }),
            { code: "no_model", message: "A model is needed.", types: [], modules: [], server: null });
        assert.strictEqual(notices.noticeView({ type: "notice", code: "no_model" }), null);
        assert.strictEqual(notices.noticeView({ type: "notice", code: "unknown_node_types", types: [] }), null);
        assert.strictEqual(notices.noticeView(null), null);
        assert.strictEqual(notices.noticeView({ type: "notice", message: "x".repeat(2500) }).message.length, 2001);
    });

    it("finds which of a notice's types a flow block uses, in the notice's order", function () {
        const types = [{ type: "functon" }, { type: "influxdb out" }, { type: "zz-sensor" }];
        const flow = [{ id: "a", type: "inject" }, { id: "b", type: "influxdb out" }, { id: "c", type: "functon" }];
        assert.deepStrictEqual(notices.typesInFlow(flow, types), ["functon", "influxdb out"]);
        assert.deepStrictEqual(notices.typesInFlow([{ id: "a", type: "inject" }], types), []);
        assert.deepStrictEqual(notices.typesInFlow(null, types), []);
    });
});
