"use strict";

const assert = require("assert");
const parts = require("../resources/approval/approval-parts.js");

// An add_nodes card as the service sends it: two new nodes, a wire between them, an existing link in's links.
const ACTION = {
    tool: "add_nodes",
    diff: {
        added: [{ id: "n1", type: "inject", name: "tick", wires: [["n2"]] }, { id: "n2", type: "debug", wires: [] },
            { id: "t9", type: "tab", label: "New" }],
        removed: ["old"], changed: [], wires: { added: [["n1", 0, "n2"]], removed: [] }
    },
    parts: [{ id: "add:n1", kind: "add", node: "n1" }, { id: "add:n2", kind: "add", node: "n2" },
        { id: "add:t9", kind: "add", node: "t9" },
        { id: "prop:lin:links", kind: "prop", node: "lin", property: "links" },
        { id: "wire+:n1:0:n2", kind: "wire+", node: "n1", source: "n1", port: 0, target: "n2" },
        { id: "remove:old", kind: "remove", node: "old" }]
};

describe("approval parts (issue 36)", function () {
    it("describes each part with the editor's labels and the new nodes' types and names", function () {
        const described = parts.describeParts(ACTION, (id) => (id === "lin" ? "from MQTT" : null));
        assert.deepStrictEqual(described.map((p) => [p.key, p.params]), [
            ["approval.part.add", { node: "inject \u201ctick\u201d" }],
            ["approval.part.add", { node: "debug" }],
            ["approval.part.add", { node: "tab \u201cNew\u201d" }],
            ["approval.part.prop", { node: "from MQTT", property: "links" }],
            ["approval.part.wireAdded", { from: "inject \u201ctick\u201d", port: 1, to: "debug" }],
            ["approval.part.remove", { node: "old" }]]);
        assert.ok(described.every((p) => p.ticked));
    });

    it("ticks what the service adjusted when it shows a card again", function () {
        const described = parts.describeParts(Object.assign({}, ACTION, { ticked: ["add:n1", "add:t9"] }), null);
        assert.deepStrictEqual(described.filter((p) => p.ticked).map((p) => p.id), ["add:n1", "add:t9"]);
    });

    it("lists nothing to choose for fewer than two parts or unknown kinds", function () {
        assert.deepStrictEqual(parts.describeParts({ parts: [ACTION.parts[0]] }, null), []);
        assert.deepStrictEqual(parts.describeParts({ parts: [{ id: "x", kind: "move" }, ACTION.parts[0]] }, null), []);
        assert.deepStrictEqual(parts.describeParts({}, null), []);
    });

    it("approves all without a list, some with their ids, none not at all", function () {
        const described = parts.describeParts(ACTION, null);
        const all = described.map((p) => p.id);
        assert.deepStrictEqual(parts.decisionFor(described, all), { type: "approve" });
        assert.deepStrictEqual(parts.decisionFor(described, ["remove:old", "add:n1", "gone"]),
            { type: "approve", parts: ["add:n1", "remove:old"] });
        assert.strictEqual(parts.decisionFor(described, []), null);
    });
});

describe("approval decisions with parts", function () {
    const diff = require("../resources/approval/approval-diff.js");
    it("sends the ticked parts of an approval and no list for Approve all", function () {
        assert.deepStrictEqual(diff.decisionsToSend([{ type: "approve", parts: ["add:n1"] }, { type: "approve" }]),
            [{ type: "approve", parts: ["add:n1"] }, { type: "approve" }]);
    });
});
