"use strict";

const assert = require("assert");
const editorContext = require("../resources/chat/editor-context");

/** The parts of the editor API the module reads, over a workspace of the test's own. */
function editor(active, selection) {
    return {
        workspaces: { active: function () { return active; } },
        nodes: {
            workspace: function (id) { return id === "tab1" ? { id: "tab1", label: "Main" } : null; },
            subflow: function (id) { return id === "sf1" ? { id: "sf1", name: "" } : null; }
        },
        view: { selection: function () { return selection; } }
    };
}

/** A translation that shows the key and its options, so the test sees which text was chosen. */
function t(key, options) {
    return options ? key + JSON.stringify(options) : key;
}

describe("the editor context of a question", function () {
    it("names the open flow or subflow, and nothing while no known tab is open", function () {
        assert.deepStrictEqual(editorContext.selectedFlow(editor("tab1")), { id: "tab1", label: "Main",
            subflow: false });
        assert.deepStrictEqual(editorContext.selectedFlow(editor("sf1")), { id: "sf1", label: "", subflow: true });
        assert.strictEqual(editorContext.selectedFlow(editor("")), null);
        assert.strictEqual(editorContext.selectedFlow(editor("gone")), null);
    });

    it("lists the tabs and subflows locked in the editor, whichever is open", function () {
        const flows = { tabs: [{ id: "tab1", locked: true }, { id: "tab2" }, { id: "tab3", locked: false }],
            subflows: [{ id: "sf1", locked: true }, { id: "sf2" }] };
        const RED = { nodes: {
            eachWorkspace: function (visit) { flows.tabs.forEach(visit); },
            eachSubflow: function (visit) { flows.subflows.forEach(visit); }
        } };
        assert.deepStrictEqual(editorContext.lockedFlows(RED), ["tab1", "sf1"]);
        flows.tabs[0].locked = false;
        flows.subflows = [];
        assert.deepStrictEqual(editorContext.lockedFlows(RED), []);
    });

    it("sends each selected node's id, type and name only", function () {
        const nodes = editorContext.selectedNodes(editor("tab1", { nodes: [
            { id: "n1", type: "mqtt in", name: "sensor", topic: "a/b", credentials: { password: "x" } },
            { id: "n2", type: "debug" }
        ] }));
        assert.deepStrictEqual(nodes, [{ id: "n1", type: "mqtt in", name: "sensor" },
            { id: "n2", type: "debug", name: "" }]);
        assert.deepStrictEqual(editorContext.selectedNodes(editor("tab1", undefined)), []);
    });

    it("shows the flow and the selection on the chip, with a button that removes them", function () {
        assert.deepStrictEqual(editorContext.chip({ removed: false, flow: { label: "Main", subflow: false }, count: 2 }, t),
            { icon: "fa-sitemap", text: "context.flow{\"label\":\"Main\"} \u00b7 context.nodes{\"count\":2}",
                name: "context.flow{\"label\":\"Main\"}", detail: " \u00b7 context.nodes{\"count\":2}",
                title: "context.tooltip", button: { icon: "fa-times", label: "context.remove", removes: true } });
        assert.strictEqual(editorContext.chip({ removed: false, flow: { label: "", subflow: true }, count: 0 }, t).text,
            "context.subflow{\"label\":\"context.unnamed\"} \u00b7 context.noNodes");
        assert.strictEqual(editorContext.chip({ removed: false, flow: null, count: 0 }, t).text,
            "context.noFlow \u00b7 context.noNodes");
    });

    it("says when the context is removed, with a button that brings it back", function () {
        assert.deepStrictEqual(editorContext.chip({ removed: true, flow: { label: "Main" }, count: 3 }, t),
            { icon: "fa-ban", text: "context.removed", name: "context.removed", detail: "",
                title: "context.removedTooltip", button: { icon: "fa-undo", label: "context.restore", removes: false } });
    });

    it("counts attached Debug messages in the part that is never cut", function () {
        const view = editorContext.chip({ removed: false, flow: { label: "Main" }, count: 1, debug: 2 }, t);
        assert.strictEqual(view.detail, " \u00b7 context.nodes{\"count\":1} \u00b7 context.debug{\"count\":2}");
        assert.strictEqual(view.text, view.name + view.detail);
        assert.strictEqual(editorContext.chip({ removed: true, flow: null, count: 0, debug: 1 }, t).text,
            "context.removed \u00b7 context.debug{\"count\":1}");
    });
});

describe("the context of a reloaded question", function () {
    it("says it in the chip's words from what the service stored with the question", function () {
        assert.deepStrictEqual(editorContext.sentView({ context: { flow: { id: "tab1", label: "Main" }, nodes: 2,
            debug: 0 } }, t), { icon: "fa-sitemap",
            text: "context.flow{\"label\":\"Main\"} \u00b7 context.nodes{\"count\":2}" });
        assert.strictEqual(editorContext.sentView({ context: { flow: { id: "sf1", label: "" }, nodes: 0, debug: 1 } },
            t, function (id) { return id === "sf1"; }).text,
        "context.subflow{\"label\":\"context.unnamed\"} \u00b7 context.noNodes \u00b7 context.debug{\"count\":1}");
        // Sent without flow and nodes: the chip was removed.
        assert.deepStrictEqual(editorContext.sentView({ context: { flow: null, nodes: 0, debug: 0 } }, t),
            { icon: "fa-ban", text: "context.removed" });
    });

    it("shows nothing for a question stored without its context", function () {
        assert.strictEqual(editorContext.sentView({ scenario: "general" }, t), null);
        assert.strictEqual(editorContext.sentView(null, t), null);
        assert.strictEqual(editorContext.sentView({ context: "tab1" }, t), null);
    });
});

describe("a Debug message attached to a question", function () {
    it("keeps its source, topic, property, format and text, cut to 4,000 characters", function () {
        const item = editorContext.debugAttachment({ id: "n1", name: "after parse", topic: "sensor/1",
            property: "payload", format: "Object", msg: "{\"t\":21}", _source: { id: "n1", z: "tab1", path: "tab1" } });
        assert.deepStrictEqual(item, { nodeId: "n1", name: "after parse", topic: "sensor/1", property: "payload",
            format: "Object", msg: "{\"t\":21}" });
        const long = editorContext.debugAttachment({ msg: "x".repeat(5000) });
        assert.strictEqual(long.msg.length, 4000);
        assert.ok(long.msg.endsWith("\u2026"));
        assert.deepStrictEqual([long.nodeId, long.property], [null, "payload"]);
    });

    it("is attached once, and only the latest five stay", function () {
        let list = [];
        for (let i = 0; i < 7; i++) {
            list = editorContext.attachDebug(list, { msg: String(i) });
        }
        list = editorContext.attachDebug(list, { msg: "6" });
        assert.deepStrictEqual(list.map(function (item) { return item.msg; }), ["2", "3", "4", "5", "6"]);
    });
});
