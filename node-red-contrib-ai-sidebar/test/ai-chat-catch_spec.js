"use strict";

/**
 * The ai-chat node in a flow's catch path (issue 19): the request it builds from a caught `msg.error`, in Node-RED's
 * test runtime (node-red-node-test-helper) against a small real HTTP server that speaks the service's stream-chat
 * protocol, and the pure part (`nodes/lib/caught-error.js`).
 */

const assert = require("assert");
const path = require("path");
const { helper, aiChatNode, frame, nextMessage, runtimeAndService } = require("./ai-chat-harness");
const caughtError = require("../nodes/lib/caught-error");

const SECRET = "hunter2-never-to-the-model-5521";

function answer(text) {
    return function (req, res) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.end(frame({ type: "token", content: text }) + frame({ type: "done", sessionId: "s" }));
    };
}

/** Resolve with the first call of `method` (`warn`, `error`) on the node. */
function nextCall(node, method) {
    return new Promise(function (resolve) {
        node.once("call:" + method, resolve);
    });
}

/**
 * A flow: ai-chat `explain` (in a catch path) → helper `out`, and one catch node (the test helper registers a core
 * node once per node of its type, so a flow holds one) for the nodes in `catchScope` → `catchTarget`.
 * No node is named like an id: Node-RED would take the name for a reference to that node.
 */
function explainFlow(explain, catchScope, catchTarget, extra) {
    return [
        { id: "f1", type: "tab", label: "catch path" },
        Object.assign({ id: "explain", z: "f1", type: "ai-chat", name: "explain the error", config: "",
            scenario: "", language: "", concurrency: 1, queueLimit: 10, outputs: 1, wires: [["out"]] }, explain),
        { id: "out", z: "f1", type: "helper" },
        { id: "c1", z: "f1", type: "catch", scope: catchScope, uncaught: false, wires: [[catchTarget]] },
        { id: "caught", z: "f1", type: "helper" }
    ].concat(extra || []);
}

describe("ai-chat node in a catch path", function () {
    this.timeout(10000);
    const stack = runtimeAndService("service-token-for-catch-tests");
    let service;

    beforeEach(function () {
        service = stack.service;
    });

    it("sends the caught error as data with the default question in the node's language, never the rest of msg",
        async function () {
            service.handler = answer("The function throws because the reading is missing.");
            await helper.load([aiChatNode], explainFlow({ language: "de" }, ["explain"], "caught"));
            const answered = nextMessage("out");
            helper.getNode("explain").receive({
                payload: { reading: null, password: SECRET },
                headers: { authorization: "Bearer " + SECRET },
                topic: "sensors/1",
                error: {
                    message: "boom 7",
                    code: "E_BOOM",
                    source: { id: "fn0000000000007a", type: "function", name: "to Celsius", count: 1 },
                    stack: "Error: boom 7\n    at Function node:fn0000000000007a:3:11"
                }
            });
            const msg = await answered;
            assert.strictEqual(msg.payload, "The function throws because the reading is missing.");
            assert.strictEqual(msg.error.message, "boom 7", "the caught error stays on the message");
            const sent = service.requests[0];
            assert.deepStrictEqual(JSON.parse(sent.body), {
                message: "Erkläre diesen Fehler und wie ich ihn behebe.",
                language: "de",
                error: {
                    message: "boom 7",
                    code: "E_BOOM",
                    source: { id: "fn0000000000007a", type: "function", name: "to Celsius" },
                    stack: "Error: boom 7\n    at Function node:fn0000000000007a:3:11"
                }
            });
            assert.ok(!sent.body.includes(SECRET));
        });

    it("asks msg.question about the error when the flow sets one, and refuses a question that is not text",
        async function () {
            service.handler = answer("ok");
            await helper.load([aiChatNode], explainFlow({}, ["explain"], "caught"));
            const error = { message: "Unexpected token } in JSON", source: { id: "json1", type: "json" } };
            const answered = nextMessage("out");
            helper.getNode("explain").receive({ payload: "{\"a\":1}}", question: "Why does my parser fail?",
                language: "fr", error: error });
            await answered;
            assert.deepStrictEqual(JSON.parse(service.requests[0].body), {
                message: "Why does my parser fail?", language: "fr",
                error: { message: "Unexpected token } in JSON", source: { id: "json1", type: "json" } }
            });

            const refused = nextMessage("caught");
            helper.getNode("explain").receive({ payload: "x", question: { text: "why?" }, error: error });
            const caught = await refused;
            assert.strictEqual(caught.error.code, "invalid_payload");
            assert.match(caught.error.message, /msg\.question must be a string .* object/);
            assert.strictEqual(service.requests.length, 1);
        });

    it("explains the real msg.error a catch node makes of another node's failure", async function () {
        // The first question fails at the service; its error, caught, is what the second node asks about.
        service.handler = function (req, res, body) {
            if (JSON.parse(body).error) {
                answer("The key was refused: set a valid one in the ai-config node.")(req, res);
                return;
            }
            res.writeHead(401, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ error: { code: "invalid_api_key", message: "The provider refused the key." } }));
        };
        await helper.load([aiChatNode], explainFlow({ language: "en-US" }, ["ask"], "explain", [
            { id: "ask", z: "f1", type: "ai-chat", name: "ask the model", config: "", concurrency: 1, queueLimit: 10,
                outputs: 1, wires: [[]] }
        ]));
        const answered = nextMessage("out");
        helper.getNode("ask").receive({ payload: "What is a flow?", apiKey: SECRET });
        const msg = await answered;
        assert.strictEqual(msg.payload, "The key was refused: set a valid one in the ai-config node.");
        const body = JSON.parse(service.requests[1].body);
        assert.strictEqual(body.message, "Explain this error and how to fix it.");
        assert.deepStrictEqual(body.error.source, { id: "ask", type: "ai-chat", name: "ask the model" });
        assert.match(body.error.message, /invalid_api_key.*The provider refused the key\./);
        assert.strictEqual(body.error.code, "invalid_api_key");
        assert.ok(!service.requests[1].body.includes(SECRET));
        assert.ok(!service.requests[1].body.includes("What is a flow?"), "the failed message's payload stays home");
    });

    it("does not ask about its own error coming back through a catch node for every node", async function () {
        service.handler = function (req, res) {
            res.writeHead(503, { "Content-Type": "application/json" });
            res.end(JSON.stringify({ error: { code: "llm_unavailable", message: "The model is down." } }));
        };
        await helper.load([aiChatNode], [
            { id: "f1", type: "tab", label: "loop" },
            { id: "explain", z: "f1", type: "ai-chat", concurrency: 1, queueLimit: 10, outputs: 1, wires: [[]] },
            // scope null: a catch node for every node of the tab, the ai-chat node included.
            { id: "c-all", z: "f1", type: "catch", scope: null, uncaught: false, wires: [["explain"]] }
        ]);
        const node = helper.getNode("explain");
        const warned = nextCall(node, "warn");
        node.receive({ payload: "ignored", error: { message: "boom 7", source: { id: "fn1", type: "function" } } });
        const warning = await warned;
        assert.match(String(warning.args[0]), /^Not asked: msg\.error is this node's own error \(.*llm_unavailable/);
        assert.strictEqual(service.requests.length, 1);
    });

    it("cuts the error to the service's limits, keeps only a valid source id and mends broken text", function () {
        const caught = caughtError.fromMessage({
            error: { message: "x".repeat(5000) + "\ud800", stack: "s".repeat(9000), code: 42,
                source: { id: "not an id!", type: "function", name: "" } }
        });
        assert.strictEqual(caught.message, "x".repeat(4000));
        assert.strictEqual(caught.stack.length, 8000);
        assert.strictEqual(caught.code, "42");
        assert.deepStrictEqual(caught.source, { type: "function" });
        assert.strictEqual(caughtError.fromMessage({ error: { message: "a\ud800b" } }).message, "a\ufffdb");
        assert.strictEqual(caughtError.fromMessage({ payload: "q" }), null);
        assert.strictEqual(caughtError.fromMessage({ error: "boom" }), null);
        assert.strictEqual(caughtError.fromMessage({ error: { source: { id: "n1" } } }), null);
    });

    it("has the default question in the service's ten languages, English for an unknown one", function () {
        assert.strictEqual(Object.keys(caughtError.DEFAULT_QUESTIONS).length, 10);
        const locales = path.join(__dirname, "..", "..", "locales");
        const shipped = require("fs").readdirSync(locales, { withFileTypes: true })
            .filter(function (entry) { return entry.isDirectory(); }).map(function (entry) { return entry.name; });
        assert.deepStrictEqual(Object.keys(caughtError.DEFAULT_QUESTIONS).sort(), shipped.sort());
        assert.strictEqual(caughtError.defaultQuestion("zh-Hant-TW"), caughtError.DEFAULT_QUESTIONS["zh-TW"]);
        assert.strictEqual(caughtError.defaultQuestion("zh"), caughtError.DEFAULT_QUESTIONS["zh-CN"]);
        assert.strictEqual(caughtError.defaultQuestion("pt-PT"), caughtError.DEFAULT_QUESTIONS["pt-BR"]);
        assert.strictEqual(caughtError.defaultQuestion("es"), "Explica este error y cómo solucionarlo.");
        assert.strictEqual(caughtError.defaultQuestion("tlh"), "Explain this error and how to fix it.");
        assert.strictEqual(caughtError.defaultQuestion(""), "Explain this error and how to fix it.");
    });
});
