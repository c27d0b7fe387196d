"use strict";

/**
 * The ai-chat node in Node-RED's test runtime (node-red-node-test-helper), asking a small real HTTP server that
 * speaks the service's stream-chat protocol. Each test waits on events (messages, requests, disconnects), never
 * on timers.
 */

const assert = require("assert");
const { EventEmitter, once } = require("events");
const { helper, aiChatNode, streamAnswer, frame, nextMessage, runtimeAndService } = require("./ai-chat-harness");
const aiConfigNode = require("../nodes/ai-config.js");
const helpers = require("./helpers");


/**
 * An object nested `levels` deep (`{a: {a: ...}}`), built without recursion.
 *
 * @param {number} levels
 * @returns {object}
 */
function nested(levels) {
    const top = {};
    let level = top;
    for (let i = 0; i < levels; i++) {
        level.a = {};
        level = level.a;
    }
    return top;
}

const SERVICE_TOKEN = "service-token-for-ai-chat-tests";
const CONFIG_KEY = "sk-ai-config-key-that-must-never-be-logged-0042";

/** Every text the helper's runtime logged, and every error a node reported, as one string. */
function loggedText() {
    const calls = helper.log().getCalls().map(function (call) {
        return call.args.map(function (arg) {
            return typeof arg === "string" ? arg : JSON.stringify(arg, Object.getOwnPropertyNames(arg || {}));
        }).join(" ");
    });
    return calls.join("\n");
}

function chatFlow(chat, extra) {
    return [
        { id: "f1", type: "tab", label: "ai-chat test" },
        Object.assign({ id: "n1", z: "f1", type: "ai-chat", name: "ask", config: "", scenario: "", language: "",
            concurrency: 2, queueLimit: 100, outputs: 1, wires: [["out"]] }, chat),
        { id: "out", z: "f1", type: "helper" },
        { id: "c1", z: "f1", type: "catch", scope: ["n1"], uncaught: false, wires: [["caught"]] },
        { id: "caught", z: "f1", type: "helper" }
    ].concat(extra || []);
}

/** Resolve once the node shows the status with this text (an i18n key). */
function statusShown(node, text) {
    return new Promise(function (resolve) {
        node.on("call:status", function listener(call) {
            if (call.args[0] && call.args[0].text === text) {
                node.removeListener("call:status", listener);
                resolve();
            }
        });
    });
}

describe("ai-chat node", function () {
    this.timeout(10000);
    const stack = runtimeAndService(SERVICE_TOKEN);
    let service;

    beforeEach(function () {
        service = stack.service;
        service.events = new EventEmitter();
    });

    it("answers with the service's text, tool results, usage and session", async function () {
        service.handler = streamAnswer([
            { type: "tool_call", tool: "get_flow", params: { id: "t1" } },
            { type: "tool_result", tool: "get_flow", result: "{\"nodes\":3}", ok: true },
            { type: "token", content: "The flow " },
            { type: "token", content: "has 3 nodes." }
        ], { sessionId: "s-42", usage: { inputTokens: 12, outputTokens: 5 } });
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const answered = nextMessage("out");
        helper.getNode("n1").receive({ payload: "explain the current flow", flowId: "t1", sessionId: "s-42",
            scenario: "learning", language: "de", topic: "kept" });
        const msg = await answered;
        assert.strictEqual(msg.payload, "The flow has 3 nodes.");
        assert.deepStrictEqual(msg.tools,
            [{ tool: "get_flow", params: { id: "t1" }, result: "{\"nodes\":3}", ok: true }]);
        assert.deepStrictEqual(msg.usage, { inputTokens: 12, outputTokens: 5 });
        assert.strictEqual(msg.sessionId, "s-42");
        assert.strictEqual(msg.topic, "kept");
        const sent = service.requests[0];
        assert.strictEqual(sent.url, "/ai-sidebar/stream-chat");
        assert.strictEqual(sent.headers.authorization, "Bearer " + SERVICE_TOKEN);
        assert.strictEqual(sent.headers["x-node-red-user"], undefined);
        assert.strictEqual(sent.headers["x-ai-sidebar-flow-node"], "n1");
        assert.strictEqual(sent.headers["x-ai-sidebar-permission"], "read");
        assert.strictEqual(sent.headers["x-ai-sidebar-conversation"], "s-42");
        assert.deepStrictEqual(JSON.parse(sent.body), { message: "explain the current flow", sessionId: "s-42",
            scenario: "learning", language: "de", selectedFlow: { id: "t1" } });
    });

    it("asks as a flow node with read permission and only the grants its own configuration turned on",
        async function () {
            service.handler = streamAnswer([{ type: "token", content: "ok" }], { sessionId: "s" });
            const flow = chatFlow({}, [
                { id: "n2", z: "f1", type: "ai-chat", tools: true, memory: false, wires: [["out"]] },
                { id: "n3", z: "f1", type: "ai-chat", tools: true, memory: true, wires: [["out"]] },
                // Saved by an older version, or edited by hand: only a real `true` grants.
                { id: "n4", z: "f1", type: "ai-chat", tools: "true", memory: 1, wires: [["out"]] }
            ]);
            await helper.load([aiChatNode, aiConfigNode], flow);
            for (const id of ["n1", "n2", "n3", "n4"]) {
                const answered = nextMessage("out");
                helper.getNode(id).receive({ payload: "@tools:get_flows" });
                await answered;
            }
            const sent = service.requests.map(function (request) {
                const headers = request.headers;
                return [headers["x-ai-sidebar-flow-node"], headers["x-ai-sidebar-flow-grants"],
                    headers["x-ai-sidebar-permission"], headers["x-node-red-user"], headers["x-node-red-token"],
                    JSON.parse(request.body).message];
            });
            assert.deepStrictEqual(sent, [
                ["n1", "", "read", undefined, undefined, "@tools:get_flows"],
                ["n2", "tools", "read", undefined, undefined, "@tools:get_flows"],
                ["n3", "tools,memory", "read", undefined, undefined, "@tools:get_flows"],
                ["n4", "", "read", undefined, undefined, "@tools:get_flows"]
            ]);
        });

    it("names a conversation only when the flow set msg.sessionId, exactly and percent-encoded", async function () {
        service.handler = streamAnswer([{ type: "token", content: "ok" }], {});
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ memory: true }));
        const node = helper.getNode("n1");
        for (const sessionId of [undefined, "", "caller-a", " caller-a", "caller b/ü", 42]) {
            const answered = nextMessage("out");
            node.receive({ payload: "what did I say?", sessionId: sessionId });
            await answered;
        }
        assert.deepStrictEqual(service.requests.map(function (request) {
            return request.headers["x-ai-sidebar-conversation"];
        }), [undefined, undefined, "caller-a", "%20caller-a", "caller%20b%2F%C3%BC", "42"]);
        assert.deepStrictEqual(service.requests.map(function (request) {
            return JSON.parse(request.body).sessionId;
        }), [undefined, undefined, "caller-a", " caller-a", "caller b/ü", "42"]);
        const caught = nextMessage("caught");
        node.receive({ payload: "hi", sessionId: "broken\ud800" });
        assert.strictEqual((await caught).error.code, "invalid_session_id");
        assert.strictEqual(service.requests.length, 6);
    });

    it("reports a fault while sending answer pieces as the node's error instead of ending Node-RED, and keeps working",
        async function () {
            service.handler = streamAnswer([{ type: "token", content: "Hel" }, { type: "token", content: "lo" }],
                { sessionId: "s" });
            const flow = chatFlow({ outputs: 2, wires: [["out"], ["pieces"]] },
                [{ id: "pieces", z: "f1", type: "helper" }]);
            await helper.load([aiChatNode, aiConfigNode], flow);
            const node = helper.getNode("n1");
            // Each answer piece is a copy of the input message; copying this one exhausts the call stack (and so
            // does the copy Node-RED makes for a Catch node, so the error is only logged).
            const deep = nested(100000);
            const reported = new Promise(function (resolve) {
                node.on("call:error", function (call) {
                    resolve(call.args[0]);
                });
            });
            node.receive({ payload: "hi", body: deep });
            const error = await reported;
            assert.match(String(error && error.message), /call stack/);
            const answered = nextMessage("out");
            node.receive({ payload: "hi again" });
            assert.strictEqual((await answered).payload, "Hello");
        });

    it("logs a refusal Node-RED cannot hand to a Catch node (a message too deep to copy) instead of throwing",
        async function () {
            service.handler = streamAnswer([{ type: "token", content: "fine" }], { sessionId: "s" });
            await helper.load([aiChatNode, aiConfigNode], chatFlow());
            const node = helper.getNode("n1");
            // What an http in node makes of a hostile JSON body: msg.payload nested 100,000 levels deep. Node-RED
            // copies the message for the Catch node, and that copy exhausts the call stack.
            const deep = nested(100000);
            const logged = new Promise(function (resolve) {
                node.on("call:error", function (call) {
                    if (call.args[0] && call.args[0].code === "invalid_payload") {
                        resolve(call.args);
                    }
                });
            });
            node.receive({ payload: deep });
            const [error, msg] = await logged;
            assert.match(error.message, /msg\.payload must be a string/);
            assert.strictEqual(msg, undefined, "logged without the message it cannot copy");
            assert.strictEqual(service.requests.length, 0);
            const answered = nextMessage("out");
            node.receive({ payload: "hi" });
            assert.strictEqual((await answered).payload, "fine");
        });

    it("without a config node sends no provider, so the service's own environment provider answers", async function () {
        service.handler = streamAnswer([{ type: "token", content: "hi" }], { sessionId: "new-session" });
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ scenario: "general", language: "fr" }));
        const answered = nextMessage("out");
        helper.getNode("n1").receive({ payload: "hello" });
        const msg = await answered;
        assert.strictEqual(msg.payload, "hi");
        assert.strictEqual(msg.sessionId, "new-session");
        assert.deepStrictEqual(msg.tools, []);
        assert.strictEqual(msg.usage, undefined);
        assert.deepStrictEqual(JSON.parse(service.requests[0].body),
            { message: "hello", scenario: "general", language: "fr" });
    });

    it("sends the config node's provider settings with its key, and never logs the key", async function () {
        service.handler = streamAnswer([{ type: "token", content: "ok" }], { sessionId: "s" });
        const flow = chatFlow({ config: "cfg" }, [{ id: "cfg", type: "ai-config", name: "local", provider:
            "openai-compatible", model: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1", temperature: "0.2",
            maxTokens: "300", memory: false, tools: true, scenarios: "learning,development" }]);
        await helper.load([aiChatNode, aiConfigNode], flow, { cfg: { apiKey: CONFIG_KEY } });
        const answered = nextMessage("out");
        helper.getNode("n1").receive({ payload: "hello" });
        await answered;
        assert.deepStrictEqual(JSON.parse(service.requests[0].body).provider, {
            provider: "openai-compatible", model: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1",
            temperature: 0.2, maxTokens: 300, apiKey: CONFIG_KEY, memory: false, tools: true,
            scenarios: ["learning", "development"]
        });
        assert.ok(helper.log().called, "the runtime logged nothing at all, so the check below proves nothing");
        assert.ok(!loggedText().includes(CONFIG_KEY), "the key appears in the log");
    });

    it("reports the service's error event for a wrong key to a Catch node, with msg.error.code", async function () {
        service.handler = function (req, res, body) {
            const provider = JSON.parse(body).provider || {};
            const events = provider.apiKey === "sk-right" ? [{ type: "token", content: "fine" }] : [{
                type: "error", code: "invalid_api_key",
                message: "The provider refused the API key. Check the key of the ai-config node."
            }];
            streamAnswer(events, { sessionId: "s-wrong" })(req, res);
        };
        const flow = chatFlow({ config: "cfg" }, [{ id: "cfg", type: "ai-config", provider: "openai" }]);
        await helper.load([aiChatNode, aiConfigNode], flow, { cfg: { apiKey: CONFIG_KEY } });
        const caught = nextMessage("caught");
        let answered = false;
        helper.getNode("out").on("input", function () {
            answered = true;
        });
        helper.getNode("n1").receive({ payload: "hello" });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "invalid_api_key");
        assert.match(msg.error.message, /invalid_api_key/);
        assert.strictEqual(msg.error.source.id, "n1");
        assert.strictEqual(msg.payload, "hello", "the question stays in msg.payload for a retry");
        assert.strictEqual(msg.sessionId, "s-wrong");
        assert.strictEqual(answered, false);
        assert.ok(!loggedText().includes(CONFIG_KEY), "the key appears in the log");
    });

    it("reports a refusal of the service (non-2xx) with the service's error code", async function () {
        service.handler = function (req, res) {
            res.writeHead(400, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ error: { code: "invalid_request", message: "Field 'sessionId': bad." } }));
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ payload: "hello", sessionId: "not valid!" });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "invalid_request");
        assert.match(msg.error.message, /400/);
    });

    it("leaves the message limit to the service: a long question is sent and its 413 reported", async function () {
        const limit = "The message has 10001 characters; the limit is 10000.";
        service.handler = function (req, res) {
            res.writeHead(413, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ error: { code: "message_too_long", message: limit } }));
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ scenario: "sales" }));
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ payload: "x".repeat(10001) });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "message_too_long");
        assert.ok(msg.error.message.includes("413") && msg.error.message.includes(limit), msg.error.message);
        const body = JSON.parse(service.requests[0].body);
        // A saved scenario goes to the service as it is: the service, not a list in the node, knows its scenarios.
        assert.strictEqual(body.message.length, 10001);
        assert.strictEqual(body.scenario, "sales");
    });

    it("reports an unreachable service as service_unreachable", async function () {
        process.env.AI_SIDEBAR_SERVICE_URL = await helpers.unusedUrl();
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ payload: "hello" });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "service_unreachable");
        assert.ok(!loggedText().includes(SERVICE_TOKEN), "the service token appears in the log");
    });

    it("reports a stream cut off before done as service_disconnected", async function () {
        service.handler = function (req, res) {
            res.writeHead(200, { "Content-Type": "text/event-stream" });
            res.write(frame({ type: "token", content: "half" }));
            service.events.once("cut", function () {
                res.destroy();
            });
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const node = helper.getNode("n1");
        const streaming = statusShown(node, "ai-chat.status.streaming");
        const caught = nextMessage("caught");
        node.receive({ payload: "hello" });
        await streaming;
        service.events.emit("cut");
        const msg = await caught;
        assert.strictEqual(msg.error.code, "service_disconnected");
        assert.match(msg.error.message, /closed the connection/);
    });

    it("reports a stream that ends without its done event as service_disconnected", async function () {
        service.handler = function (req, res) {
            res.writeHead(200, { "Content-Type": "text/event-stream" });
            res.end(frame({ type: "token", content: "half" }));
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ payload: "hello" });
        assert.strictEqual((await caught).error.code, "service_disconnected");
    });

    it("refuses a payload that is not a string and a bad msg.sessionId, without asking",
        async function () {
            await helper.load([aiChatNode, aiConfigNode], chatFlow());
            const node = helper.getNode("n1");
            let caught = nextMessage("caught");
            node.receive({ payload: { question: "hi" } });
            assert.strictEqual((await caught).error.code, "invalid_payload");
            caught = nextMessage("caught");
            node.receive({ payload: "   " });
            assert.strictEqual((await caught).error.code, "invalid_payload");
            caught = nextMessage("caught");
            node.receive({ payload: "hi", sessionId: { id: "s" } });
            const msg = await caught;
            assert.strictEqual(msg.error.code, "invalid_session_id");
            assert.match(msg.error.message, /msg\.sessionId/);
            assert.strictEqual(service.requests.length, 0);
        });

    it("reports a chosen config node that is not deployed as config_not_found", async function () {
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ config: "gone" }));
        const caught = nextMessage("caught");
        helper.getNode("n1").receive({ payload: "hello" });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "config_not_found");
        assert.strictEqual(service.requests.length, 0);
    });

    it("asks one question at a time with limit 1: the second starts only after the first is answered",
        async function () {
            const open = [];
            const finished = [];
            service.handler = function (req, res, body) {
                const question = JSON.parse(body).message;
                open.push({ question: question, res: res });
                service.events.emit("request", question);
            };
            function answer(question) {
                const entry = open.find(function (item) { return item.question === question; });
                streamAnswer([{ type: "token", content: "answer to " + question }], { sessionId: "s" })(null, entry.res);
                finished.push(question);
            }
            await helper.load([aiChatNode, aiConfigNode], chatFlow({ concurrency: 1 }));
            const node = helper.getNode("n1");
            const answers = [];
            helper.getNode("out").on("input", function (msg) {
                answers.push(msg.payload);
                service.events.emit("answer", msg.payload);
            });
            const first = once(service.events, "request");
            node.receive({ payload: "one" });
            node.receive({ payload: "two" });
            node.receive({ payload: "three" });
            assert.deepStrictEqual(await first, ["one"]);
            assert.strictEqual(service.requests.length, 1, "a second question was asked before the first was answered");

            for (const [current, following] of [["one", "two"], ["two", "three"]]) {
                const nextRequest = once(service.events, "request");
                answer(current);
                assert.deepStrictEqual(await nextRequest, [following]);
                assert.deepStrictEqual(finished, open.map(function (item) { return item.question; }).slice(0, -1));
            }
            const last = once(service.events, "answer");
            answer("three");
            await last;
            assert.deepStrictEqual(answers, ["answer to one", "answer to two", "answer to three"]);
        });

    it("refuses a message with queue_full when the queue is at its limit", async function () {
        const open = [];
        service.handler = function (req, res) {
            open.push(res);
            service.events.emit("request");
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow({ concurrency: 1, queueLimit: 1 }));
        const node = helper.getNode("n1");
        const asked = once(service.events, "request");
        node.receive({ payload: "one" });
        await asked;
        node.receive({ payload: "two" });
        const caught = nextMessage("caught");
        node.receive({ payload: "three" });
        const msg = await caught;
        assert.strictEqual(msg.error.code, "queue_full");
        assert.strictEqual(msg.payload, "three");
        open.forEach(function (res) {
            streamAnswer([], {})(null, res);
        });
    });

    it("cancels the open request when the node is closed, so the service sees the disconnect, and sends nothing",
        async function () {
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "text/event-stream" });
                res.write(frame({ type: "token", content: "still thinking" }));
                res.on("close", function () {
                    service.events.emit("disconnect", res.writableEnded);
                });
                service.events.emit("request");
            };
            await helper.load([aiChatNode, aiConfigNode], chatFlow({ concurrency: 1 }));
            const node = helper.getNode("n1");
            let sent = 0;
            let caught = 0;
            helper.getNode("out").on("input", function () { sent++; });
            helper.getNode("caught").on("input", function () { caught++; });
            const streaming = statusShown(node, "ai-chat.status.streaming");
            const asked = once(service.events, "request");
            node.receive({ payload: "one" });
            node.receive({ payload: "queued" });
            await asked;
            await streaming;
            const disconnected = once(service.events, "disconnect");
            await helper.unload();
            const [endedByService] = await disconnected;
            assert.strictEqual(endedByService, false, "the service finished the answer instead of seeing a disconnect");
            assert.strictEqual(service.requests.length, 1, "the queued message was asked after close");
            assert.strictEqual(sent, 0);
            assert.strictEqual(caught, 0);
        });

    it("streams each piece of the answer on the second output, then the whole answer on the first", async function () {
        service.handler = streamAnswer([
            { type: "token", content: "Hel" }, { type: "token", content: "lo" }, { type: "token", content: "!" }
        ], { sessionId: "s" });
        const flow = chatFlow({ outputs: 2, wires: [["out"], ["pieces"]] }, [{ id: "pieces", z: "f1", type: "helper" }]);
        await helper.load([aiChatNode, aiConfigNode], flow);
        const pieces = [];
        helper.getNode("pieces").on("input", function (msg) {
            pieces.push([msg.payload, msg.topic]);
        });
        const answered = nextMessage("out");
        helper.getNode("n1").receive({ payload: "hi", topic: "greeting" });
        const msg = await answered;
        assert.deepStrictEqual(pieces, [["Hel", "greeting"], ["lo", "greeting"], ["!", "greeting"]]);
        assert.strictEqual(msg.payload, "Hello!");
    });

    it("shows waiting, then streaming, then done; and error after a failure", async function () {
        let release;
        service.handler = function (req, res) {
            res.writeHead(200, { "Content-Type": "text/event-stream" });
            res.write(frame({ type: "token", content: "a" }));
            release = function (events) {
                res.end(events.map(frame).join("") + frame({ type: "done", sessionId: "s" }));
            };
            service.events.emit("request");
        };
        await helper.load([aiChatNode, aiConfigNode], chatFlow());
        const node = helper.getNode("n1");
        const statuses = [];
        node.on("call:status", function (call) {
            statuses.push(call.args[0].text);
        });
        const streaming = statusShown(node, "ai-chat.status.streaming");
        node.receive({ payload: "hi" });
        await streaming;
        const done = statusShown(node, "ai-chat.status.done");
        release([]);
        await done;
        assert.deepStrictEqual(statuses, ["ai-chat.status.waiting", "ai-chat.status.streaming", "ai-chat.status.done"]);

        const failed = statusShown(node, "ai-chat.status.error");
        const asked = once(service.events, "request");
        node.receive({ payload: "again" });
        await asked;
        release([{ type: "error", code: "llm_timeout", message: "The model did not answer in time." }]);
        await failed;
    });
});
