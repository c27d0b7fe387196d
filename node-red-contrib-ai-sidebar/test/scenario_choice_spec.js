"use strict";

const assert = require("assert");
const scenarioChoice = require("../resources/chat/scenario-choice");

const SCENARIOS = {
    general: { name: "Allgemein", description: "Fragen aller Art", prompts: ["a", "b", "c", "d"] },
    debug: { name: "Fehlersuche", prompts: "not a list" },
    bare: null
};

describe("the scenario picker", function () {
    it("lists the service's scenarios in its order and selects the remembered one the service still has", function () {
        assert.deepStrictEqual(scenarioChoice.options(SCENARIOS, "debug"), {
            options: [
                { key: "general", name: "Allgemein", title: "Fragen aller Art" },
                { key: "debug", name: "Fehlersuche", title: "" },
                { key: "bare", name: "bare", title: "" }
            ],
            selected: "debug"
        });
        assert.strictEqual(scenarioChoice.options(SCENARIOS, "removed-since").selected, null);
        assert.strictEqual(scenarioChoice.options(SCENARIOS, "toString").selected, null);
    });

    it("stays hidden when the answer has no scenario", function () {
        [undefined, null, {}, "general"].forEach(function (scenarios) {
            assert.strictEqual(scenarioChoice.options(scenarios, null), null, JSON.stringify(scenarios));
        });
    });

    it("offers the first three quick prompts of the chosen scenario, none for others", function () {
        assert.deepStrictEqual(scenarioChoice.quickPrompts(SCENARIOS, "general"), ["a", "b", "c"]);
        assert.deepStrictEqual(scenarioChoice.quickPrompts(SCENARIOS, "debug"), []);
        assert.deepStrictEqual(scenarioChoice.quickPrompts(SCENARIOS, "bare"), []);
        assert.deepStrictEqual(scenarioChoice.quickPrompts(SCENARIOS, null), []);
        assert.deepStrictEqual(scenarioChoice.quickPrompts({}, "constructor"), []);
    });
});
