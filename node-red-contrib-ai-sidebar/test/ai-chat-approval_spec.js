"use strict";

/**
 * The ai-chat node with "Allow flow changes" (issue 18): a run that waits for approval leaves on the approval output
 * (the last one) with `msg.approval`, and a later `msg.resume` continues it through `POST /ai-sidebar/resume`. The
 * node asks a small real HTTP server that speaks the service's protocol (node-red-node-test-helper); each test
 * waits on messages, never on timers.
 */

const assert = require("assert");
const { helper, aiChatNode, streamAnswer, nextMessage, never, runtimeAndService } = require("./ai-chat-harness");
const aiConfigNode = require("../nodes/ai-config.js");

const SERVICE_TOKEN = "service-token-for-ai-chat-approval-tests";

const ACTION = {
    tool: "add_nodes", args: { flow_id: "t1", nodes: [{ id: "a", type: "inject" }] },
    summary: "Add 1 node (inject) to tab \"Flow 1\"", diff: { added: [{ id: "a", type: "inject" }] }
};
const APPROVAL = { type: "approval_required", runId: "run-1", resumeToken: "token-1", actions: [ACTION] };

/** A flow with the node under test wired to helper nodes named after its outputs. */
function chatFlow(chat, outputs) {
    const wires = outputs.map(function (id) {
        return [id];
    });
    return [
        { id: "f1", type: "tab", label: "approvals" },
        Object.assign({ id: "n1", z: "f1", type: "ai-chat", config: "", scenario: "", language: "", tools: true,
            flows: true, concurrency: 2, queueLimit: 100, outputs: outputs.length, wires: wires }, chat),
        { id: "c1", z: "f1", type: "catch", scope: ["n1"], uncaught: false, wires: [["caught"]] },
        { id: "caught", z: "f1", type: "helper" }
    ].concat(outputs.map(function (id) {
        return { id: id, z: "f1", type: "helper" };
    }));
}


describe("ai-chat node with flow changes allowed", function () {
    this.timeout(10000);
    const stack = runtimeAndService(SERVICE_TOKEN);
    let service;

    beforeEach(function () {
        service = stack.service;
    });

    it("sends a run that waits for approval on the second output, with msg.approval and a one-line payload",
        async function () {
            service.handler = streamAnswer([APPROVAL], { sessionId: "s-1", status: "awaiting_approval" });
            await helper.load([aiChatNode, aiConfigNode], chatFlow({}, ["answer", "approval"]));
            never("answer");
            const waiting = nextMessage("approval");
            helper.getNode("n1").receive({ payload: "add an inject", sessionId: "s-1", topic: "kept" });
            const msg = await waiting;
            assert.deepStrictEqual(msg.approval, { runId: "run-1", resumeToken: "token-1", actions: [ACTION] });
            assert.strictEqual(msg.payload,
                "Waiting for approval of 1 change(s): Add 1 node (inject) to tab \"Flow 1\"");
            assert.strictEqual(msg.sessionId, "s-1");
            assert.strictEqual(msg.topic, "kept");
            const sent = service.requests[0];
            assert.strictEqual(sent.url, "/ai-sidebar/stream-chat");
            assert.strictEqual(sent.headers["x-ai-sidebar-flow-grants"], "tools,flows");
            assert.strictEqual(sent.headers["x-ai-sidebar-permission"], "write");
            assert.strictEqual(sent.headers["x-ai-sidebar-flow-node"], "n1");
        });

    it("keeps the approval output last when the answer is also streamed, and the flow's sessionId on it",
        async function () {
            service.handler = streamAnswer([{ type: "token", content: "Let me add it." }, APPROVAL],
                { sessionId: "service-made", status: "awaiting_approval" });
            await helper.load([aiChatNode, aiConfigNode], chatFlow({ outputs: 3 }, ["answer", "pieces", "approval"]));
            never("answer");
            const piece = nextMessage("pieces");
            const waiting = nextMessage("approval");
            helper.getNode("n1").receive({ payload: "add an inject" });
            assert.strictEqual((await piece).payload, "Let me add it.");
            const msg = await waiting;
            assert.strictEqual(msg.approval.resumeToken, "token-1");
            assert.strictEqual(msg.sessionId, undefined, "a resume must name the conversation the question named");
        });

    it("resumes with msg.resume: POST /ai-sidebar/resume as the same node and conversation, the answer on output 1",
        async function () {
            service.handler = streamAnswer([
                { type: "tool_call", tool: "add_nodes", params: ACTION.args },
                { type: "tool_result", tool: "add_nodes", result: "Deployed: Add 1 node", ok: true },
                { type: "token", content: "Added." }
            ], { sessionId: "s-1" });
            await helper.load([aiChatNode, aiConfigNode], chatFlow({}, ["answer", "approval"]));
            never("approval");
            const answered = nextMessage("answer");
            const decisions = [{ type: "approve" }];
            helper.getNode("n1").receive({ resume: { resumeToken: "token-1", decisions: decisions }, sessionId: "s-1",
                payload: "not read" });
            const msg = await answered;
            assert.strictEqual(msg.payload, "Added.");
            assert.strictEqual(msg.resume, undefined);
            assert.deepStrictEqual(msg.tools.map(function (t) {
                return [t.tool, t.ok];
            }), [["add_nodes", true]]);
            const sent = service.requests[0];
            assert.strictEqual(sent.url, "/ai-sidebar/resume");
            assert.deepStrictEqual(JSON.parse(sent.body), { resumeToken: "token-1", decisions: decisions });
            assert.strictEqual(sent.headers["x-ai-sidebar-flow-node"], "n1");
            assert.strictEqual(sent.headers["x-ai-sidebar-conversation"], "s-1");
            assert.strictEqual(sent.headers["x-ai-sidebar-permission"], "write");
            assert.strictEqual(sent.headers.authorization, "Bearer " + SERVICE_TOKEN);
        });

    it("reports a token the service refuses to a Catch node with its code", async function () {
        service.handler = function (req, res) {
            res.writeHead(404, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ error: { code: "approval_not_found", message: "No such approval." } }));
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow({}, ["answer", "approval"]));
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ resume: { resumeToken: "someone-elses", decisions: [{ type: "approve" }] } });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "approval_not_found");
        assert.strictEqual(service.requests[0].headers["x-ai-sidebar-conversation"], undefined);
    });

    it("refuses a malformed msg.resume without asking the service", async function () {
        await helper.load([aiChatNode, aiConfigNode], chatFlow({}, ["answer", "approval"]));
        for (const resume of [{ decisions: [{ type: "approve" }] }, { resumeToken: "t", decisions: [] }, "token"]) {
            const caught = nextMessage("caught");
            helper.getNode("n1").receive({ resume: resume });
            const msg = await caught;
            assert.strictEqual(msg.error.code, "invalid_resume");
            assert.match(msg.error.message, /resumeToken/);
        }
        assert.deepStrictEqual(service.requests, []);
    });

    it("without the switch: read permission, no flows grant, one output, and msg.resume refused", async function () {
        service.handler = streamAnswer([{ type: "token", content: "I only read." }], { sessionId: "s" });
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ flows: false }, ["answer"]));
        const answered = nextMessage("answer");
        helper.getNode("n1").receive({ payload: "add an inject" });
        assert.strictEqual((await answered).payload, "I only read.");
        assert.strictEqual(service.requests[0].headers["x-ai-sidebar-permission"], "read");
        assert.strictEqual(service.requests[0].headers["x-ai-sidebar-flow-grants"], "tools");
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ resume: { resumeToken: "t", decisions: [{ type: "approve" }] } });
        assert.strictEqual((await caught).error.code, "flows_not_allowed");
        assert.strictEqual(service.requests.length, 1);
    });

    it("does not grant flow changes without Tools, whatever the flows switch says", async function () {
        service.handler = streamAnswer([{ type: "token", content: "ok" }], {});
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ tools: false }, ["answer", "approval"]));
        const answered = nextMessage("answer");
        helper.getNode("n1").receive({ payload: "hi" });
        await answered;
        assert.strictEqual(service.requests[0].headers["x-ai-sidebar-permission"], "read");
        assert.strictEqual(service.requests[0].headers["x-ai-sidebar-flow-grants"], "");
    });
});
