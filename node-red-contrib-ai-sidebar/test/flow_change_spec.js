"use strict";

const assert = require("assert");
const flowChange = require("../resources/approval/flow-change");

// The `changes` of flow_change events as the service sends them (write_tools.apply with apply "editor").
const ADD_ON_NEW_TAB = {
    added: [{ id: "t9", type: "tab", label: "Scratch" }, { id: "n1", type: "inject", z: "t9", wires: [["n2"]] },
        { id: "n2", type: "debug", z: "t9", wires: [] }],
    removed: [], changed: [], wires: { added: [["n1", 0, "n2"]], removed: [] },
    nodes: [{ id: "t9", type: "tab", label: "Scratch" }, { id: "n1", type: "inject", z: "t9", wires: [["n2"]] },
        { id: "n2", type: "debug", z: "t9", wires: [] }]
};
const UPDATE_AND_DELETE = {
    added: [], nodes: [], removed: ["a3"],
    changed: [{ id: "a2", type: "function", name: "parse", properties: {
        func: { before: "return msg;", after: "return null;" }, wires: { before: [["a3"]], after: [[]] } } }],
    wires: { added: [], removed: [["a2", 0, "a3"]] }
};

function editor(nodes, containers, zs) {
    return {
        exists: function (id) { return nodes.indexOf(id) !== -1 || id in containers; },
        container: function (id) { return containers[id] || null; },
        zOf: function (id) { return (zs || {})[id] || null; }
    };
}

describe("an approved change for the editor", function () {
    it("adds the new tab before its nodes", function () {
        const plan = flowChange.planChange(ADD_ON_NEW_TAB);
        assert.deepStrictEqual(plan.tabs.map(function (n) { return n.id; }), ["t9"]);
        assert.deepStrictEqual(plan.nodes.map(function (n) { return n.id; }), ["n1", "n2"]);
        assert.deepStrictEqual([plan.edits, plan.deletes], [[], []]);
        // Copies: applying never changes the event.
        plan.nodes[0].x = 5;
        assert.strictEqual(ADD_ON_NEW_TAB.nodes[1].x, undefined);
    });

    it("sets the new values of changed properties, wires included, and deletes by id", function () {
        const plan = flowChange.planChange(UPDATE_AND_DELETE);
        assert.deepStrictEqual(plan.edits, [{ id: "a2", properties: { func: "return null;", wires: [[]] } }]);
        assert.deepStrictEqual(plan.deletes, ["a3"]);
    });

    it("never sets id, type, z or credentials", function () {
        const plan = flowChange.planChange({ changed: [{ id: "a2", properties: {
            id: { after: "x" }, type: { after: "x" }, z: { after: 3 }, credentials: { after: {} },
            name: { before: "", after: "n" } } }] });
        assert.deepStrictEqual(plan.edits, [{ id: "a2", properties: { name: "n" } }]);
    });

    it("takes a new z as a move to that tab (move_nodes), with what changes with it", function () {
        const plan = flowChange.planChange({ changed: [{ id: "a2", type: "debug", properties: {
            z: { before: "t1", after: "t2" }, g: { before: "g1", after: null } } }] });
        assert.deepStrictEqual([plan.edits, plan.moves], [[], [{ id: "a2", properties: { z: "t2", g: null } }]]);
        // The tab it goes to must be there and unlocked, like the one it leaves.
        assert.deepStrictEqual(flowChange.problemWith(plan, editor(["a2"], { t1: { locked: false } }, { a2: "t1" })),
            { reason: "missing", ids: ["t2"] });
        assert.deepStrictEqual(flowChange.problemWith(plan, editor(["a2"], { t1: { locked: false },
            t2: { locked: true } }, { a2: "t1" })), { reason: "locked", ids: ["t2"] });
        assert.strictEqual(flowChange.problemWith(plan, editor(["a2"], { t1: {}, t2: {} }, { a2: "t1" })), null);
    });

    it("moves nodes into a new subflow whose instance takes their place (create_subflow), on an unlocked tab", function () {
        const subflow = { id: "sf1", type: "subflow", name: "Scale", in: [{ x: 40, y: 60, wires: [{ id: "a2" }] }],
            out: [], env: [] };
        const instance = { id: "i1", type: "subflow:sf1", z: "t1", x: 300, y: 100, wires: [] };
        const plan = flowChange.planChange({ added: [subflow, instance], removed: [], changed: [
            { id: "a1", type: "inject", properties: { wires: { before: [["a2"]], after: [["i1"]] } } },
            { id: "a2", type: "change", properties: { z: { before: "t1", after: "sf1" }, x: { before: 300,
                after: 140 } } }], wires: { added: [["a1", 0, "i1"]], removed: [["a1", 0, "a2"]] } });
        assert.deepStrictEqual(plan.nodes.map(function (n) { return n.id; }), ["sf1", "i1"]);
        assert.deepStrictEqual(plan.moves, [{ id: "a2", properties: { z: "sf1", x: 140 } }]);
        assert.deepStrictEqual(plan.edits, [{ id: "a1", properties: { wires: [["i1"]] } }]);
        // The new subflow is no missing container; the tab the nodes leave must be unlocked.
        const zs = { a1: "t1", a2: "t1" };
        assert.strictEqual(flowChange.problemWith(plan, editor(["a1", "a2"], { t1: { locked: false } }, zs)), null);
        assert.deepStrictEqual(flowChange.problemWith(plan, editor(["a1", "a2"], { t1: { locked: true } }, zs)),
            { reason: "locked", ids: ["t1"] });
    });

    it("refuses a locked tab's own edit (disable, rename) but not unlocking it", function () {
        const locked = { t1: { type: "tab", locked: true } };
        const disable = flowChange.planChange({ changed: [{ id: "t1", type: "tab", properties: {
            disabled: { before: false, after: true } } }] });
        assert.deepStrictEqual(flowChange.problemWith(disable, editor([], locked)), { reason: "locked", ids: ["t1"] });
        const unlock = flowChange.planChange({ changed: [{ id: "t1", type: "tab", properties: {
            locked: { before: true, after: false } } }] });
        assert.strictEqual(flowChange.problemWith(unlock, editor([], locked)), null);
    });

    it("lands only on the editor it was planned for", function () {
        const add = flowChange.planChange({ nodes: [{ id: "n1", type: "debug", z: "t1", wires: [] }] });
        assert.strictEqual(flowChange.problemWith(add, editor([], { t1: { locked: false } })), null);
        assert.deepStrictEqual(flowChange.problemWith(add, editor([], {})), { reason: "missing", ids: ["t1"] });
        assert.deepStrictEqual(flowChange.problemWith(add, editor([], { t1: { locked: true } })),
            { reason: "locked", ids: ["t1"] });
        assert.deepStrictEqual(flowChange.problemWith(add, editor(["n1"], { t1: { locked: false } })),
            { reason: "applied", ids: ["n1"] });
        const update = flowChange.planChange(UPDATE_AND_DELETE);
        assert.deepStrictEqual(flowChange.problemWith(update, editor(["a2"], {})), { reason: "missing", ids: ["a3"] });
        assert.strictEqual(flowChange.problemWith(update, editor(["a2", "a3"], {})), null);
        // A node to change or delete on a tab locked in the editor since the plan: the editor would refuse the edit.
        assert.deepStrictEqual(flowChange.problemWith(update, editor(["a2", "a3"], { t2: { locked: true } },
            { a2: "t2", a3: "t2" })), { reason: "locked", ids: ["t2"] });
        assert.strictEqual(flowChange.problemWith(update, editor(["a2", "a3"], { t2: { locked: false } },
            { a2: "t2", a3: "t2" })), null);
        // A new tab's own nodes need no existing tab.
        assert.strictEqual(flowChange.problemWith(flowChange.planChange(ADD_ON_NEW_TAB), editor([], {})), null);
    });
});
