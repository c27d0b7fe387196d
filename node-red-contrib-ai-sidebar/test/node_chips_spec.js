"use strict";

const assert = require("assert");
const nodeChips = require("../resources/chat/node-chips");

const SELECTION = [
    { id: "4f9c2a1b3d5e6f70", type: "debug", name: "ai-alarms" },
    { id: "a1b2c3d4e5f60718", type: "function", name: "" },
    { id: "0011223344556677", type: "inject", name: "" }
];

describe("the selected nodes' chips", function () {
    it("name a node by its name, else by its type and the start of its id", function () {
        assert.deepStrictEqual(SELECTION.map(nodeChips.label), ["ai-alarms", "function \u00b7 a1b2c3",
            "inject \u00b7 001122"]);
    });

    it("leave a removed node out of what is sent until the selection changes", function () {
        const chips = new nodeChips.NodeChips();
        assert.deepStrictEqual(chips.sent(SELECTION), SELECTION);
        chips.remove("a1b2c3d4e5f60718");
        assert.deepStrictEqual(chips.sent(SELECTION).map((node) => node.id), ["4f9c2a1b3d5e6f70",
            "0011223344556677"]);
        chips.reset();
        assert.deepStrictEqual(chips.sent(SELECTION), SELECTION);
    });
});
