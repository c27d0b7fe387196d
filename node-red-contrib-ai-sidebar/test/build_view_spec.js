"use strict";

const assert = require("assert");
const buildView = require("../resources/approval/build-view");

describe("the build loop's cards", function () {
    it("read a question event with at most four quick replies and whether a free answer is allowed", function () {
        const question = buildView.questionOf({ type: "question", runId: "r1", resumeToken: "secret",
            question: "Which broker?", choices: ["a", "b", "c", "d", "e"], free: false });
        assert.deepStrictEqual(question, { runId: "r1", question: "Which broker?", choices: ["a", "b", "c", "d"],
            free: false });
        assert.strictEqual(buildView.questionOf({ type: "question", runId: "r1", question: "Q?" }).free, true);
    });

    it("read a waiting run's ask_user and propose_plan actions as the events would show them", function () {
        const question = buildView.questionOf({ runId: "r2", actions: [{ tool: "ask_user",
            args: { question: "Which topic?", choices: ["sensors/#"], free: true } }] });
        assert.deepStrictEqual(question, { runId: "r2", question: "Which topic?", choices: ["sensors/#"], free: true });
        const plan = buildView.planOf({ runId: "r3", actions: [{ tool: "propose_plan", args: {
            steps: [{ title: "Convert", changes: [{ tool: "add_nodes", target: "t1", summary: "inject, function" }],
                test: "inject 212, expect 100" }], assumptions: ["Fahrenheit in msg.payload"] } }] });
        assert.deepStrictEqual(plan, { runId: "r3", steps: [{ title: "Convert", changes: ["inject, function"],
            test: "inject 212, expect 100", testInject: null }], assumptions: ["Fahrenheit in msg.payload"] });
        assert.strictEqual(buildView.planOf({ runId: "r4", actions: [{ tool: "add_nodes", args: {} }] }), null);
        assert.strictEqual(buildView.questionOf({ runId: "r4", actions: [{ tool: "propose_plan", args: {} }] }),
            null);
    });

    it("keep a plan's steps in order and name a change by its tool when it has no summary", function () {
        const plan = buildView.planOf({ type: "plan", runId: "r5", steps: [
            { title: "one", changes: [{ tool: "create_tab" }], test: "" }, null, { title: "two" }] });
        assert.deepStrictEqual(plan.steps.map(function (step) { return [step.title, step.changes]; }),
            [["one", ["create_tab"]], ["two", []]]);
        assert.deepStrictEqual(plan.assumptions, []);
    });

    it("answer a question with the quick reply as a choice and the user's words as text", function () {
        assert.deepStrictEqual(buildView.answerBody({ choice: "localhost:1883" }),
            { answer: { choice: "localhost:1883" } });
        assert.deepStrictEqual(buildView.answerBody({ text: "  mqtt.local:1883 " }),
            { answer: { text: "mqtt.local:1883" } });
        assert.strictEqual(buildView.answerBody({ text: "   " }), null);
    });

    it("send a plan's decisions as the service's resume route takes them", function () {
        assert.deepStrictEqual(buildView.planBody("approve"), { decisions: [{ type: "approve" }] });
        assert.deepStrictEqual(buildView.planBody("approveAll"),
            { decisions: [{ type: "approve", planChanges: true }] });
        assert.deepStrictEqual(buildView.planBody("edit", " round to one decimal "),
            { decisions: [{ type: "edit", message: "round to one decimal" }] });
        assert.strictEqual(buildView.planBody("edit", "  "), null);
        assert.deepStrictEqual(buildView.planBody("reject", ""), { decisions: [{ type: "reject" }] });
        assert.deepStrictEqual(buildView.planBody("reject", "not now"),
            { decisions: [{ type: "reject", message: "not now" }] });
    });

    it("say each kind of evidence with the value seen and the one expected", function () {
        assert.deepStrictEqual(buildView.evidenceLine({ kind: "mismatch", node: "show", value: 212,
            expected: 100 }), { key: "build.evidence.mismatch", params: { node: "show", value: "212",
            expected: "100", message: "", from: "", kind: "mismatch" } });
        assert.strictEqual(buildView.evidenceLine({ kind: "debug", node: "show", value: "ok" }).params.value, "ok");
        assert.strictEqual(buildView.evidenceLine({ kind: "new-kind", node: "x" }).key, "build.evidence.other");
        const long = buildView.evidenceLine({ kind: "debug", node: "n", value: { text: "x".repeat(500) } });
        assert.strictEqual(long.params.value.length, 120);
        assert.ok(long.params.value.endsWith("\u2026"));
    });

    it("read a deploy_test event or a waiting deploy_and_test run, and say deployed or not", function () {
        assert.deepStrictEqual(buildView.deployTestOf({ type: "deploy_test", runId: "r4", resumeToken: "secret",
            note: "the converter" }), { runId: "r4", note: "the converter" });
        assert.deepStrictEqual(buildView.deployTestOf({ runId: "r5", actions: [{ tool: "deploy_and_test",
            args: { note: "" } }] }), { runId: "r5", note: "" });
        assert.strictEqual(buildView.deployTestOf({ runId: "r6", actions: [{ tool: "add_nodes", args: {} }] }), null);
        assert.strictEqual(buildView.deployTestOf({ type: "plan", runId: "r7" }), null);
        assert.deepStrictEqual(buildView.deployTestBody(true), { decisions: [{ type: "approve" }] });
        assert.strictEqual(buildView.deployTestBody(false).decisions[0].type, "reject");
    });

    it("show a check's test inject, added on a temporary test tab", function () {
        const plan = buildView.planOf({ type: "plan", runId: "r8", steps: [
            { title: "Convert", check: { inject: null, debug: "d", expect: 37.78,
                test_inject: { to: "to celsius", payload: 100, payloadType: "num" } } },
            { title: "Store", check: { inject: "tick", debug: "d" } }] });
        assert.deepStrictEqual(plan.steps[0].testInject, { to: "to celsius", payload: "100" });
        assert.strictEqual(plan.steps[1].testInject, null);
    });
});
