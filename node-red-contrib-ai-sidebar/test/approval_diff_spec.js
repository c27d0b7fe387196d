"use strict";

const assert = require("assert");
const Diff = require("diff");
const approvalDiff = require("../resources/approval/approval-diff");

// Previews as the service sends them (service/nodered/write_tools.py), ids as Node-RED makes them.
const ADD = {
    tool: "add_nodes", args: { flow_id: "t1", nodes: [] },
    summary: "Add 2 nodes (debug, inject) to tab \"Sensors\" [t1].",
    diff: {
        added: [
            { id: "n1", type: "inject", name: "tick", z: "t1", wires: [["n2"]] },
            { id: "n2", type: "debug", z: "t1", wires: [] }
        ],
        removed: [], changed: [],
        wires: { added: [["n1", 0, "n2"], ["n2", 0, "a9"]], removed: [] }
    }
};

function names(id) {
    return { a9: "log", a2: "parse" }[id] || null;
}

describe("the approval card's view of an action", function () {
    it("lists new nodes with type and name and names both ends of each new wire", function () {
        const view = approvalDiff.describeAction(ADD, names, Diff);
        assert.strictEqual(view.summary, ADD.summary);
        assert.deepStrictEqual(view.added, [
            { id: "n1", type: "inject", name: "tick", tab: false },
            { id: "n2", type: "debug", name: "", tab: false }
        ]);
        assert.deepStrictEqual(view.wires, {
            added: ["tick [n1] [1] \u2192 [n2]", "[n2] [1] \u2192 log [a9]"], removed: []
        });
    });

    it("shows a new tab as a tab with its label", function () {
        const view = approvalDiff.describeAction({ tool: "create_tab", summary: "Create a new tab \"Scratch\".",
            diff: { added: [{ id: "t9", type: "tab", label: "Scratch" }], removed: [], changed: [],
                wires: { added: [], removed: [] } } }, names, Diff);
        assert.deepStrictEqual(view.added, [{ id: "t9", type: "tab", name: "Scratch", tab: true }]);
    });

    it("diffs code line by line and other properties as before and after", function () {
        const view = approvalDiff.describeAction({ tool: "update_node", summary: "Change func, outputs",
            diff: { added: [], removed: ["a3"], wires: { added: [], removed: [["a2", 1, "a3"]] }, changed: [{
                id: "a2", type: "function", name: "parse", properties: {
                    func: { before: "const v = msg.payload;\nreturn msg;", after: "const v = msg.payload;\n" +
                        "msg.payload = v * 2;\nreturn msg;" },
                    outputs: { before: 2, after: 1 },
                    topic: { before: undefined, after: "x".repeat(400) }
                } }] } }, names, Diff);
        const [func, outputs, topic] = view.changed[0].properties;
        assert.deepStrictEqual(func, { name: "func", omitted: 0, lines: [
            { kind: " ", text: "const v = msg.payload;" },
            { kind: "+", text: "msg.payload = v * 2;" },
            { kind: " ", text: "return msg;" }
        ] });
        assert.deepStrictEqual(outputs, { name: "outputs", before: "2", after: "1" });
        assert.strictEqual(topic.before, "");
        assert.strictEqual(topic.after, "x".repeat(approvalDiff.MAX_VALUE_CHARS) + "\u2026");
        assert.deepStrictEqual(view.removed, [{ id: "a3", name: "" }]);
        assert.deepStrictEqual(view.wires.removed, ["parse [a2] [2] \u2192 [a3]"]);
    });

    it("cuts a long line diff and says how many lines were left out", function () {
        const after = Array.from({ length: 250 }, function (_, i) { return "line " + i; }).join("\n");
        const shown = approvalDiff.lineDiff("", after, Diff);
        assert.strictEqual(shown.lines.length, approvalDiff.MAX_DIFF_LINES);
        assert.strictEqual(shown.omitted, 250 - approvalDiff.MAX_DIFF_LINES);
    });

    it("shows an action without a diff (trigger_inject) with nothing to list", function () {
        const view = approvalDiff.describeAction({ tool: "trigger_inject", summary: "Trigger inject [i1] once.",
            diff: { added: [], removed: [], changed: [], wires: { added: [], removed: [] } } }, names, Diff);
        assert.deepStrictEqual([view.added, view.removed, view.changed, view.wires],
            [[], [], [], { added: [], removed: [] }]);
    });

    it("names a node's group by its name, \"new group\" for a new unnamed one, never by its id", function () {
        function labels(id) {
            return { g1: "Sensor inputs" }[id] || null;
        }
        const action = { tool: "create_group", summary: "Group 2 nodes on tab \"Sensors\".", diff: {
            added: [{ id: "g9", type: "group", z: "t1", nodes: ["a2", "a9"] }], removed: [],
            changed: [
                { id: "a2", type: "json", name: "parse", properties: { g: { before: "g1", after: "g9" } } },
                { id: "a9", type: "debug", name: "log", properties: { g: { before: null, after: "g9" } } }],
            wires: { added: [], removed: [] } } };
        let view = approvalDiff.describeAction(action, labels, Diff, { newGroup: "neue Gruppe" });
        assert.deepStrictEqual(view.changed.map(function (entry) { return entry.properties[0]; }), [
            { name: "g", before: "\u201cSensor inputs\u201d", after: "neue Gruppe" },
            { name: "g", before: "", after: "neue Gruppe" }]);
        action.diff.added[0].name = "Scaling";
        view = approvalDiff.describeAction(action, labels, Diff);
        assert.strictEqual(view.changed[0].properties[0].after, "\u201cScaling\u201d");
    });

    it("shows a set_context value with its key, scope, tab and store, the value in full", function () {
        const value = { limit: 30, note: "x".repeat(400) };
        const view = approvalDiff.describeAction({ tool: "set_context", summary: "Set flow context ...", diff: {
            added: [], removed: [], changed: [], wires: { added: [], removed: [] },
            context: { scope: "flow", flow: "t1", flowLabel: "Sensors", store: "default", key: "settings",
                value: value } } }, names, Diff);
        assert.deepStrictEqual(view.context, { scope: "flow", flow: "t1", flowName: "Sensors", store: "default",
            key: "settings", value: JSON.stringify(value, null, 2) });
        assert.strictEqual(approvalDiff.describeAction(ADD, names, Diff).context, null);
    });
});

describe("the user's decisions", function () {
    it("accepts edited arguments only as a JSON object", function () {
        assert.deepStrictEqual(approvalDiff.parseEditedArgs("{\"label\": \"Other\"}"), { args: { label: "Other" } });
        assert.deepStrictEqual(approvalDiff.parseEditedArgs("[1]"), { error: "notObject" });
        assert.deepStrictEqual(approvalDiff.parseEditedArgs("null"), { error: "notObject" });
        const broken = approvalDiff.parseEditedArgs("{\"label\": ");
        assert.strictEqual(broken.error, "invalidJson");
        assert.ok(broken.detail);
    });

    it("sends nothing until every action has a decision, and no empty reason", function () {
        assert.strictEqual(approvalDiff.decisionsToSend([{ type: "approve" }, null]), null);
        assert.strictEqual(approvalDiff.decisionsToSend([]), null);
        assert.deepStrictEqual(approvalDiff.decisionsToSend([
            { type: "approve" }, { type: "reject", message: "  " }, { type: "reject", message: " not here " },
            { type: "edit", args: { label: "B" } }
        ]), [{ type: "approve" }, { type: "reject" }, { type: "reject", message: "not here" },
            { type: "edit", args: { label: "B" } }]);
    });

    it("reports what the editor applied as counts, or its problem within the service's limits", function () {
        assert.deepStrictEqual(approvalDiff.reportedOutcome({ added: 2, tabs: 0, changed: 1, removed: 0, tab: "t1" }),
            { added: 2, tabs: 0, changed: 1, removed: 0, tab: "t1" });
        const ids = Array.from({ length: 150 }, function (_, i) { return "n" + i; });
        const problem = approvalDiff.reportedOutcome({ problem: { reason: "missing", ids: ids,
            message: "x".repeat(600) } }).problem;
        assert.strictEqual(problem.reason, "missing");
        assert.strictEqual(problem.ids.length, 100);
        assert.strictEqual(problem.message.length, 500);
        assert.deepStrictEqual(approvalDiff.reportedOutcome({ problem: { reason: "locked", ids: ["t1"] } }),
            { problem: { reason: "locked", ids: ["t1"] } });
    });

    it("keeps resume tokens per Node-RED user and run", function () {
        assert.notStrictEqual(approvalDiff.tokenKey("r1", "alice"), approvalDiff.tokenKey("r1", "bob"));
        assert.notStrictEqual(approvalDiff.tokenKey("r1"), approvalDiff.tokenKey("r2"));
        assert.ok(approvalDiff.tokenKey("r1", "alice").indexOf("r1") !== -1);
    });
});
