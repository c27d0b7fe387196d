"use strict";

const assert = require("assert");
const history = require("../resources/history/history");

const DEPLOYS = [
    { rev: "c3", time: "2026-12-02T10:42:00.500Z", user: "alice", origin: "assistant", pinned: true,
        counts: { added: 1, removed: 0, changed: 2 }, detail: { tool: "update_node", summary: "Change the topic" } },
    { rev: "b2", time: "2026-12-02T10:40:00.000Z", user: null, origin: "editor", pinned: false,
        counts: { added: 0, removed: 0, changed: 1 }, detail: {} }
];

// The diff route's shape (service/history/diff.py), as the service sends it: values redacted.
const DIFF = {
    from: { rev: "b2", time: "2026-12-02T10:40:00.000Z" }, to: { rev: "c3", time: "2026-12-02T10:42:00.500Z" },
    tabs: [{
        id: "t1", type: "tab", label: "Kitchen", status: "changed",
        properties: { disabled: { before: false, after: true } },
        added: [{ id: "n9", type: "debug", name: "" }],
        removed: [],
        changed: [{ id: "n1", type: "inject", name: "tick", properties: {
            topic: { before: "second", after: "third" }, payload: { before: null, after: "***" } } }],
        moved: [{ id: "n2", type: "function", name: "", before: [1, 2], after: [3, 4] }],
        renamed: [{ id: "n3", type: "change", before: "old", after: "new" }],
        wires: { added: [["n1", 0, "n9"]], removed: [["n1", 1, "n2"]] }
    }, {
        id: null, type: "global", label: "", status: "changed", properties: {}, added: [], removed: [],
        changed: [], moved: [], renamed: [], wires: { added: [], removed: [] }
    }],
    counts: { added: 1, removed: 0, changed: 1, moved: 1, renamed: 1, wires: 2 }
};

describe("the flow history panel's view", function () {
    it("asks for one page of deploys, then the page before the last one shown", function () {
        assert.strictEqual(history.listPath(null), "ai-sidebar/flow-history?limit=20");
        assert.strictEqual(history.listPath("2026-12-02T10:40:00.000Z"),
            "ai-sidebar/flow-history?limit=20&before=2026-12-02T10%3A40%3A00.000Z");
    });

    it("compares a deploy with the one listed after it, the last one with the deploy in force a moment before", function () {
        assert.strictEqual(history.diffPath(DEPLOYS, 0), "ai-sidebar/flow-history/diff?from=b2&to=c3");
        assert.strictEqual(history.diffPath(DEPLOYS, 1),
            "ai-sidebar/flow-history/diff?from=2026-12-02T10%3A39%3A59.999Z&to=b2");
        assert.strictEqual(history.diffPath(DEPLOYS, 1, true), "ai-sidebar/flow-history/diff?from=b2&to=now");
    });

    it("shows a deploy's time in the user's locale, who and what kind, its counts and the assistant's summary", function () {
        const row = history.deployRow(DEPLOYS[0], "de");
        assert.deepStrictEqual(row.counts, { added: 1, removed: 0, changed: 2 });
        assert.strictEqual(row.origin, "assistant");
        assert.strictEqual(row.user, "alice");
        assert.strictEqual(row.summary, "Change the topic");
        assert.strictEqual(row.pinned, true);
        assert.strictEqual(row.when, new Intl.DateTimeFormat("de", { dateStyle: "medium", timeStyle: "medium" })
            .format(new Date("2026-12-02T10:42:00.500Z")));
        assert.notStrictEqual(row.when, history.deployRow(DEPLOYS[0], "en-US").when);
        assert.strictEqual(row.first, false);
        const unknown = history.deployRow({ rev: 1, time: "x", origin: "someone", counts: { changed: -1 } }, "en-US");
        assert.deepStrictEqual([unknown.origin, unknown.user, unknown.when, unknown.counts.changed],
            ["editor", null, "x", 0]);
    });

    it("marks the first state the history captured, which has no counts", function () {
        const first = history.deployRow({ rev: "a1", time: "2026-12-02T10:00:00.000Z", origin: "editor",
            first: true, counts: null }, "en-US");
        assert.deepStrictEqual([first.first, first.counts], [true, null]);
    });

    it("formats a restore's time short, without seconds", function () {
        const iso = "2026-12-02T10:42:31.000Z";
        assert.strictEqual(history.formatTime(iso, "en-US", "short"),
            new Intl.DateTimeFormat("en-US", { dateStyle: "short", timeStyle: "short" }).format(new Date(iso)));
        assert.notStrictEqual(history.formatTime(iso, "en-US", "short"), history.formatTime(iso, "en-US"));
    });

    it("names the nodes of a diff, with each changed property before and after, and leaves empty tabs", function () {
        const names = { n2: "Parse", n9: "Show it", t1: "Kitchen" };
        const view = history.diffView(DIFF, function (id) { return names[id] || null; });
        assert.strictEqual(view.empty, false);
        const tab = view.tabs[0];
        assert.deepStrictEqual([tab.id, tab.label], ["t1", "Kitchen"]);
        const lines = tab.lines.map(function (line) { return [line.kind, line.node, line.text]; });
        assert.deepStrictEqual(lines, [
            ["property", null, "disabled"],
            ["added", "n9", "Show it"],
            ["changed", "n1", "tick"],
            ["renamed", "n3", "\"old\" → \"new\""],
            ["moved", "n2", "Parse"],
            ["wire-added", null, "n1 (1) → Show it"],
            ["wire-removed", null, "n1 (2) → Parse"]
        ]);
        assert.deepStrictEqual(tab.lines[2].properties, [{ name: "topic", before: "\"second\"", after: "\"third\"" },
            { name: "payload", before: "—", after: "\"***\"" }]);
        assert.strictEqual(view.tabs[1].id, null);
        assert.strictEqual(history.diffView({ tabs: [] }, function () { return null; }).empty, true);
    });

    it("cuts a long value", function () {
        const long = { tabs: [{ id: "t", type: "tab", label: "", status: "changed", properties: {},
            changed: [{ id: "f", type: "function", name: "", properties: { func: { before: "a".repeat(1000),
                after: "b" } } }] }] };
        const shown = history.diffView(long, function () { return null; }).tabs[0].lines[0].properties[0];
        assert.strictEqual(shown.before.length, 300);
        assert.ok(shown.before.endsWith("…"));
    });

    it("asks for a restore with the chat's direct trigger of restore_flows", function () {
        assert.strictEqual(history.restoreMessage("b2", "tab", "t1"),
            "@tools:restore_flows|{\"to\":\"b2\",\"scope\":\"tab\",\"target_id\":\"t1\"}");
        assert.strictEqual(history.restoreMessage("b2", "whole"), "@tools:restore_flows|{\"to\":\"b2\",\"scope\":\"whole\"}");
    });

    it("tells the history being off from other failures", function () {
        assert.ok(history.unavailable({ code: "history_unavailable" }));
        assert.ok(history.unavailable({ code: "memory_unavailable" }));
        assert.ok(!history.unavailable({ code: "snapshot_not_found" }));
    });
});
