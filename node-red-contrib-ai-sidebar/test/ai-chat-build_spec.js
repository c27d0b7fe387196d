"use strict";

/**
 * The ai-chat node and the build loop (issue 34): a run that waits for a plan's approval or for an answer to a
 * clarifying question leaves on the approval output with `msg.plan` / `msg.clarification`; `msg.resume` answers it
 * (`decisions` for a plan, `answer` for a question); a build's `check` and `verdict` events reach the answer as
 * `msg.checks` and `msg.verdict`. The node asks a small real HTTP server that speaks the service's protocol; each
 * test waits on messages, never on timers.
 */

const assert = require("assert");
const { helper, aiChatNode, streamAnswer, nextMessage, never, runtimeAndService } = require("./ai-chat-harness");
const aiConfigNode = require("../nodes/ai-config.js");

const SERVICE_TOKEN = "service-token-for-ai-chat-build-tests";
const STEPS = [{ title: "Convert Fahrenheit to Celsius", changes: [{ tool: "add_nodes", target: "t1", summary: "" }],
    test: "inject 100, debug shows 37.78", check: { inject: "fahrenheit", debug: "celsius", expect: 37.78 } }];
const PLAN = { type: "plan", runId: "run-1", resumeToken: "plan-token", steps: STEPS, assumptions: ["tab t1"] };
const QUESTION = { type: "question", runId: "run-2", resumeToken: "question-token", question: "Which broker?",
    choices: ["localhost:1883", "test.mosquitto.org:1883"], free: true };
const EVIDENCE = [{ kind: "debug", node: "celsius", value: 37.78 }];

function chatFlow() {
    return [
        { id: "f1", type: "tab", label: "build" },
        { id: "n1", z: "f1", type: "ai-chat", config: "", scenario: "", language: "", tools: true, flows: true,
            concurrency: 2, queueLimit: 100, outputs: 2, wires: [["answer"], ["approval"]] },
        { id: "c1", z: "f1", type: "catch", scope: ["n1"], uncaught: false, wires: [["caught"]] },
        { id: "caught", z: "f1", type: "helper" },
        { id: "answer", z: "f1", type: "helper" },
        { id: "approval", z: "f1", type: "helper" }
    ];
}


describe("ai-chat node building with a plan", function () {
    this.timeout(10000);
    const stack = runtimeAndService(SERVICE_TOKEN);

    it("sends a plan that waits on the approval output with msg.plan and a one-line payload", async function () {
        stack.service.handler = streamAnswer([PLAN], { sessionId: "s-1", status: "awaiting_approval" });
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        never("answer");
        const waiting = nextMessage("approval");
        helper.getNode("n1").receive({ payload: "/plan build a converter", sessionId: "s-1" });
        const msg = await waiting;
        assert.deepStrictEqual(msg.plan, { runId: "run-1", resumeToken: "plan-token", steps: STEPS,
            assumptions: ["tab t1"] });
        assert.strictEqual(msg.payload, "Waiting for approval of a plan of 1 step(s): Convert Fahrenheit to Celsius");
        assert.strictEqual(msg.sessionId, "s-1");
        assert.strictEqual(JSON.parse(stack.service.requests[0].body).message, "/plan build a converter");
    });

    it("sends a clarifying question as msg.clarification and resumes with msg.resume.answer", async function () {
        stack.service.handler = streamAnswer([QUESTION], { sessionId: "s-2", status: "awaiting_answer" });
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const waiting = nextMessage("approval");
        helper.getNode("n1").receive({ payload: "read temperatures from MQTT", sessionId: "s-2" });
        const msg = await waiting;
        assert.deepStrictEqual(msg.clarification, { runId: "run-2", resumeToken: "question-token",
            question: "Which broker?", choices: QUESTION.choices, free: true });
        assert.strictEqual(msg.payload, "Waiting for an answer: Which broker?");

        stack.service.handler = streamAnswer([{ type: "token", content: "Using localhost." }], { sessionId: "s-2" });
        const answered = nextMessage("answer");
        helper.getNode("n1").receive({ resume: { resumeToken: "question-token", answer: { choice: "localhost:1883" } },
            sessionId: "s-2" });
        assert.strictEqual((await answered).payload, "Using localhost.");
        const sent = stack.service.requests[1];
        assert.strictEqual(sent.url, "/ai-sidebar/resume");
        assert.deepStrictEqual(JSON.parse(sent.body), { resumeToken: "question-token",
            answer: { choice: "localhost:1883" } });
    });

    it("hands the build's checks and verdict to the answer", async function () {
        stack.service.handler = streamAnswer([
            { type: "check", runId: "run-1", round: 1, passed: false,
                evidence: [{ kind: "mismatch", node: "celsius", value: 82.22, expected: 37.78 }] },
            { type: "check", runId: "run-1", round: 2, passed: true, evidence: EVIDENCE },
            { type: "verdict", runId: "run-1", status: "done", summary: "Done: celsius showed 37.78.",
                evidence: EVIDENCE },
            { type: "token", content: "100 °F is 37.78 °C." }
        ], { sessionId: "s-1" });
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        never("approval");
        const answered = nextMessage("answer");
        helper.getNode("n1").receive({ resume: { resumeToken: "plan-token",
            decisions: [{ type: "approve", planChanges: true }] }, sessionId: "s-1" });
        const msg = await answered;
        assert.strictEqual(msg.payload, "100 °F is 37.78 °C.");
        assert.deepStrictEqual(msg.checks.map(function (c) {
            return [c.round, c.passed];
        }), [[1, false], [2, true]]);
        assert.deepStrictEqual(msg.verdict, { status: "done", summary: "Done: celsius showed 37.78.",
            evidence: EVIDENCE });
    });

    it("refuses a msg.resume with both decisions and an answer, or an answer that is not an object", async function () {
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        for (const resume of [{ resumeToken: "t", decisions: [{ type: "approve" }], answer: { text: "x" } },
            { resumeToken: "t", answer: "localhost" }]) {
            const caught = nextMessage("caught");
            helper.getNode("n1").receive({ resume: resume });
            assert.strictEqual((await caught).error.code, "invalid_resume");
        }
        assert.deepStrictEqual(stack.service.requests, []);
    });
});
