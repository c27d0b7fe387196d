"use strict";

const assert = require("assert");
const editorContext = require("../resources/editor-context");

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
                title: "context.tooltip", button: { icon: "fa-times", label: "context.remove", removes: true } });
        assert.strictEqual(editorContext.chip({ removed: false, flow: { label: "", subflow: true }, count: 0 }, t).text,
            "context.subflow{\"label\":\"context.unnamed\"} \u00b7 context.noNodes");
        assert.strictEqual(editorContext.chip({ removed: false, flow: null, count: 0 }, t).text,
            "context.noFlow \u00b7 context.noNodes");
    });

    it("says when the context is removed, with a button that brings it back", function () {
        assert.deepStrictEqual(editorContext.chip({ removed: true, flow: { label: "Main" }, count: 3 }, t),
            { icon: "fa-ban", text: "context.removed", title: "context.removedTooltip",
                button: { icon: "fa-undo", label: "context.restore", removes: false } });
    });
});
