"use strict";

const assert = require("assert");
const { RecentDebug } = require("../resources/chat/recent-debug");

function item(nodeId, msg) {
    return { nodeId: nodeId, name: "", topic: "", property: "payload", format: "string", msg: msg };
}

describe("recent debug messages", function () {
    it("gives the latest messages of the selected nodes, oldest first, at most five", function () {
        const recent = new RecentDebug();
        for (let i = 1; i <= 7; i++) {
            recent.add(item("a", "a" + i), "t1");
            recent.add(item("b", "b" + i), "t1");
        }
        recent.add(item("c", "c1"), "t2");
        assert.deepStrictEqual(recent.recent({ nodeIds: ["a"], tab: "t1" }).map((i) => i.msg),
            ["a3", "a4", "a5", "a6", "a7"]);
        assert.deepStrictEqual(recent.recent({ nodeIds: ["a", "c"], tab: "t1" }).map((i) => i.msg),
            ["a4", "a5", "a6", "a7", "c1"]);
    });

    it("gives those of the open flow's nodes when none is selected", function () {
        const recent = new RecentDebug();
        recent.add(item("a", "a1"), "t1");
        recent.add(item("c", "c1"), "t2");
        recent.add(item("b", "b1"), "t1");
        assert.deepStrictEqual(recent.recent({ nodeIds: [], tab: "t1" }).map((i) => i.msg), ["a1", "b1"]);
        assert.deepStrictEqual(recent.recent({ nodeIds: [], tab: "t3" }), []);
        assert.deepStrictEqual(recent.recent({ nodeIds: [], tab: null }), []);
    });

    it("keeps a bounded number of nodes and skips messages of no node", function () {
        const recent = new RecentDebug({ maxNodes: 2 });
        recent.add(item(null, "x"), "t1");
        recent.add(item("a", "a1"), "t1");
        recent.add(item("b", "b1"), "t1");
        recent.add(item("a", "a2"), "t1");
        recent.add(item("c", "c1"), "t1");
        assert.deepStrictEqual(Array.from(recent.byNode.keys()), ["a", "c"]);
        assert.deepStrictEqual(recent.recent({ tab: "t1" }).map((i) => i.msg), ["a1", "a2", "c1"]);
    });
});
