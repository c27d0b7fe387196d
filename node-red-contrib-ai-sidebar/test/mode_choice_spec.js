"use strict";

const assert = require("assert");
const modeChoice = require("../resources/chat/mode-choice");

describe("the sidebar's mode", function () {
    it("opens in Agent mode for a user who may change flows and in Ask mode for a read-only one", function () {
        assert.strictEqual(modeChoice.initialMode(null, true), "agent");
        assert.strictEqual(modeChoice.initialMode(null, false), "ask");
        assert.strictEqual(modeChoice.initialMode("build", true), "agent");
    });

    it("opens in the mode the user chose last", function () {
        assert.strictEqual(modeChoice.initialMode("ask", true), "ask");
        assert.strictEqual(modeChoice.initialMode("agent", false), "agent");
    });

    it("offers Plan beside Ask and Agent, remembered like them", function () {
        assert.deepStrictEqual(modeChoice.MODES, ["ask", "agent", "plan"]);
        assert.strictEqual(modeChoice.initialMode("plan", true), "plan");
    });

    it("moves through the three modes with the arrow keys, round the ends", function () {
        assert.strictEqual(modeChoice.nextMode("ask", "ArrowRight"), "agent");
        assert.strictEqual(modeChoice.nextMode("agent", "ArrowDown"), "plan");
        assert.strictEqual(modeChoice.nextMode("plan", "ArrowRight"), "ask");
        assert.strictEqual(modeChoice.nextMode("ask", "ArrowLeft"), "plan");
        assert.strictEqual(modeChoice.nextMode("plan", "ArrowUp"), "agent");
        assert.strictEqual(modeChoice.nextMode("plan", "Enter"), null);
    });

    it("is remembered per Node-RED user", function () {
        assert.notStrictEqual(modeChoice.storageKey("alice"), modeChoice.storageKey("bob"));
        assert.strictEqual(modeChoice.storageKey(), modeChoice.STORAGE_KEY);
    });

    it("offers the switch on the service's Ask mode notice only", function () {
        assert.strictEqual(modeChoice.offersSwitch({ type: "notice", code: "change_needs_agent" }), true);
        assert.strictEqual(modeChoice.offersSwitch({ type: "notice", code: "change_needs_tools" }), false);
        assert.strictEqual(modeChoice.offersSwitch(null), false);
    });
});
