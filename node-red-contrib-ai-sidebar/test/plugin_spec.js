"use strict";

/**
 * The plugin inside a real Node-RED: the package is symlinked into a temporary user directory (as the project's
 * Makefile installs it) and Node-RED runs as a child process in front of a scripted fake AI service.
 */

const assert = require("assert");
const fs = require("fs");
const http = require("http");
const path = require("path");
const helpers = require("./helpers");
const relayLib = require("../plugins/lib/relay");
const { startNodeRed: sharedStartNodeRed, START_TIMEOUT } = require("./nodered");

const REPOSITORY_FLOWS = path.join(__dirname, "..", "..", "examples", "flows.json");

/** Node-RED with this package installed (test/nodered.js), settings, environment and flows as this spec passes them. */
function startNodeRed(settings, env, flows) {
    return sharedStartNodeRed({ settings: settings, env: env, flows: flows });
}

function postJson(url, body, headers) {
    return sendJson("POST", url, body, headers);
}

function sendJson(method, url, body, headers) {
    return helpers.request(url, {
        method: method,
        headers: Object.assign({ "Content-Type": "application/json" }, headers),
        body: typeof body === "string" ? body : JSON.stringify(body)
    });
}

/**
 * Call a plugin route as the editor does: GET and DELETE without a body, the others with a JSON body.
 *
 * @param {string} base Node-RED's admin URL, ending in "/"
 * @param {[string, string]} route method and path below base
 * @param {object} [headers]
 */
function callRoute(base, route, headers) {
    const [method, path] = route;
    if (method === "GET" || method === "DELETE") {
        return helpers.request(base + path, { method: method, headers: headers || {} });
    }
    return sendJson(method, base + path, {}, headers);
}

// Every plugin route, split by the permission it needs (DESIGN.md "HTTP API", issue 4's session routes).
const READ_ROUTES = [
    ["POST", "ai-sidebar/stream-chat"],
    ["POST", "ai-sidebar/assist"],
    ["GET", "ai-sidebar/scenarios"],
    ["GET", "ai-sidebar/memory-stats"],
    ["GET", "ai-sidebar/history/s"],
    ["POST", "ai-sidebar/search"],
    ["GET", "ai-sidebar/templates"],
    ["GET", "ai-sidebar/sessions"],
    ["GET", "ai-sidebar/knowledge"],
    ["GET", "ai-sidebar/knowledge/documents"],
    ["GET", "ai-sidebar/knowledge/documents/search?q=pump"],
    ["POST", "ai-sidebar/knowledge/documents"],
    ["DELETE", "ai-sidebar/knowledge/documents/7"],
    ["GET", "ai-sidebar/approvals"],
    ["GET", "ai-sidebar/usage"],
    ["GET", "ai-sidebar/mcp-grants"],
    ["POST", "ai-sidebar/mcp-grants/7/revoke"],
    ["GET", "ai-sidebar/flow-history"],
    ["GET", "ai-sidebar/flow-history/diff?from=now"]
];
const WRITE_ROUTES = [
    ["POST", "ai-sidebar/templates"],
    ["POST", "ai-sidebar/sessions"],
    ["PATCH", "ai-sidebar/sessions/s"],
    ["DELETE", "ai-sidebar/sessions/s"],
    ["POST", "ai-sidebar/sessions/s/fork"],
    ["POST", "ai-sidebar/execute-tool"],
    ["POST", "ai-sidebar/knowledge/reindex"],
    ["POST", "ai-sidebar/resume"],
    ["POST", "ai-sidebar/approvals/r1/token"],
    ["PATCH", "ai-sidebar/flow-history/r1"]
];

/**
 * Send a request whose path goes out exactly as written: a URL string would have `..` segments resolved by the
 * client before they reach Node-RED.
 *
 * @param {string} base Node-RED's admin URL, ending in "/"
 * @param {string} method
 * @param {string} rawPath appended to base's path as it is
 * @param {object} [headers]
 * @returns {Promise<{req: http.ClientRequest, res: http.IncomingMessage}>}
 */
function rawRequest(base, method, rawPath, headers) {
    const url = new URL(base);
    return new Promise(function (resolve, reject) {
        const req = http.request({
            hostname: url.hostname, port: url.port, method: method, path: url.pathname + rawPath,
            headers: headers || {}
        });
        req.on("response", function (res) {
            resolve({ req: req, res: res });
        });
        req.on("error", reject);
        req.end();
    });
}

async function json(response) {
    const text = await helpers.readBody(response.res);
    return { status: response.res.statusCode, type: response.res.headers["content-type"], body: JSON.parse(text) };
}

function sseAnswer(req, res) {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end("data: {\"type\":\"token\",\"content\":\"ok\"}\n\ndata: {\"type\":\"done\",\"sessionId\":\"s\"}\n\n");
}

/** The service's answer to any route: a stream for stream-chat, else the request echoed as JSON. */
function anyAnswer(req, res) {
    if (req.url === "/ai-sidebar/stream-chat") {
        sseAnswer(req, res);
        return;
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ method: req.method, path: req.url }));
}

/**
 * Bodies an attacker may send to any route, as raw JSON text: nesting far deeper than any recursive reader
 * survives (about 100 KB each), lists and objects far longer than the service accepts, and every wrong type.
 *
 * @returns {Object<string, {text: string, refused: boolean}>} `refused`: every route that reads a body must
 *     answer it with a 400 `invalid_json` or `invalid_request` before the service sees it
 */
function hostileBodies() {
    const depth = 50000;
    const keys = {};
    for (let i = 0; i < 100000; i++) {
        keys["k" + i] = i;
    }
    return {
        "deeply nested arrays": { text: "[".repeat(depth) + "]".repeat(depth), refused: true },
        "deeply nested arrays in a field": {
            text: "{\"message\":\"hi\",\"flowData\":" + "[".repeat(depth) + "]".repeat(depth) + "}", refused: true
        },
        "deeply nested objects in a field": {
            text: "{\"message\":\"hi\",\"history\":" + "{\"a\":".repeat(depth / 2) + "1" + "}".repeat(depth / 2) +
                "}", refused: true
        },
        "a list of a million items": {
            text: JSON.stringify({ message: "hi", flowData: new Array(1000000).fill(0) }), refused: true
        },
        "an object of 100,000 keys": { text: JSON.stringify({ message: "hi", dynamicData: keys }), refused: true },
        "a string": { text: "\"hello\"", refused: true },
        "a number": { text: "42", refused: true },
        "null": { text: "null", refused: true },
        "true": { text: "true", refused: true },
        "an array at the top": { text: "[{\"message\":\"hi\"}]", refused: false },
        "wrong types in every field": {
            text: JSON.stringify({ message: { text: "hi" }, sessionId: [], configId: {}, history: "x", flowData: 7,
                selectedFlow: "t", selectedNodes: {}, query: [], tool: {}, params: "p", name: [], flow: {} }),
            refused: false
        }
    };
}

describe("ai-sidebar plugin in Node-RED", function () {
    this.timeout(30000);

    describe("without adminAuth", function () {
        let service;
        let nodeRed;

        before(async function () {
            this.timeout(START_TIMEOUT + 30000);
            service = await helpers.fakeService();
            // A flow endpoint that takes JSON, as a user might build one: POST /ask-json → a function node that
            // keeps the parsed body in msg.body and asks msg.req.query.q → ai-chat → answer.
            const endpoint = [
                { id: "t-json", type: "tab", label: "Ask with JSON" },
                { id: "in-json", z: "t-json", type: "http in", url: "/ask-json", method: "post",
                    wires: [["keep-json"]] },
                { id: "keep-json", z: "t-json", type: "function", name: "keep the body", outputs: 1,
                    func: "msg.body = msg.payload;\nmsg.payload = String(msg.req.query.q);\nreturn msg;",
                    wires: [["chat-json"]] },
                { id: "chat-json", z: "t-json", type: "ai-chat", name: "json asker", wires: [["out-json"]] },
                { id: "out-json", z: "t-json", type: "http response", wires: [] },
                { id: "catch-json", z: "t-json", type: "catch", scope: ["chat-json"], wires: [["out-json"]] }
            ];
            nodeRed = await startNodeRed({}, { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "svc-token" },
                endpoint);
        });

        after(async function () {
            if (nodeRed) {
                await nodeRed.stop();
            }
            await helpers.close(service.server);
        });

        it("loads the plugin without errors", async function () {
            const { res } = await helpers.request(nodeRed.url + "plugins", { headers: { "Accept": "application/json" } });
            const plugins = JSON.parse(await helpers.readBody(res));
            const plugin = plugins.find(function (p) { return p.id === "node-red-contrib-ai-sidebar/ai-sidebar"; });
            assert.ok(plugin, "plugin not listed: " + JSON.stringify(plugins));
            assert.strictEqual(plugin.enabled, true);
            assert.doesNotMatch(nodeRed.log(), /ai-sidebar[^\n]*(error|fail)/i);
        });

        it("serves the sidebar's message catalog under the plugin's namespace", async function () {
            const { res } = await helpers.request(nodeRed.url + "plugins/messages?lng=de");
            const catalogs = JSON.parse(await helpers.readBody(res));
            assert.strictEqual(catalogs["node-red-contrib-ai-sidebar/ai-sidebar"].sidebar.name, "KI-Assistent");
        });

        it("serves the editor part and its vendored scripts", async function () {
            const editor = await helpers.request(nodeRed.url + "plugins", { headers: { "Accept": "text/html" } });
            assert.match(await helpers.readBody(editor.res), /RED\.plugins\.registerPlugin\("ai-sidebar"/);
            const script = await helpers.request(nodeRed.url + "resources/node-red-contrib-ai-sidebar/vendor/purify.js");
            assert.strictEqual(script.res.statusCode, 200);
            assert.match(await helpers.readBody(script.res), /NodeRedAiSidebar\.vendor\.DOMPurify/);
            const html = fs.readFileSync(path.join(__dirname, "..", "plugins", "ai-sidebar.html"), "utf8");
            const parts = Array.from(html.matchAll(/src="resources\/node-red-contrib-ai-sidebar\/([^"]+)"/g),
                function (match) { return match[1]; }).concat(["ai-sidebar.css"]);
            assert.ok(parts.length > 20, parts.join(" "));
            for (const part of parts) {
                const response = await helpers.request(nodeRed.url + "resources/node-red-contrib-ai-sidebar/" + part);
                await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200, part);
            }
        });

        it("says whether the service answers and what starts it on its port, without the service token",
            async function () {
                const port = new URL(service.url).port;
                service.handler = function (req, res) {
                    relayLib.sendJson(res, req.url === "/healthz" ? 200 : 404, { status: "ok", version: "0.1.0" });
                };
                const up = await json(await helpers.request(nodeRed.url + "ai-sidebar/service-status"));
                assert.strictEqual(up.status, 200);
                assert.strictEqual(up.body.reachable, true);
                assert.strictEqual(up.body.serviceUrl, service.url);
                assert.strictEqual(up.body.supervisor, null);
                // package_spec's `npm pack --dry-run` runs prepack, which builds the wheel into python/ (so may the
                // Python tests, at the same time): offered first when it is there.
                const commands = {};
                up.body.commands.forEach(function (c) { commands[c.id] = c.command; });
                const ids = Object.keys(commands);
                assert.deepStrictEqual(ids[0] === "pip" ? ids.slice(1) : ids, ["run", "docker", "supervise"]);
                if (commands.pip) {
                    assert.match(commands.pip, /^python3 -m venv ".*\/ai-sidebar\/venv" && ".*\/ai-sidebar\/venv\/bin\/pip" install ".*\/python\/node_red_ai_sidebar-[^"]+\.whl"$/);
                }
                assert.match(commands.run, new RegExp("^AI_SIDEBAR_PORT=" + port + " (\"[^\"]*/venv/bin/)?ai-sidebar-service\"?$"));
                assert.strictEqual(service.requests[service.requests.length - 1].url, "/healthz");
                service.handler = function (req, res) {
                    relayLib.sendJson(res, 503, relayLib.errorBody("starting", "not yet"));
                };
                const down = await json(await helpers.request(nodeRed.url + "ai-sidebar/service-status"));
                assert.strictEqual(down.body.reachable, false);
                assert.doesNotMatch(JSON.stringify(up.body) + JSON.stringify(down.body), /svc-token/);
            });

        it("relays the chat stream from the service", async function () {
            service.handler = sseAnswer;
            const response = await postJson(nodeRed.url + "ai-sidebar/stream-chat", { message: "hi", sessionId: "s" });
            const text = await helpers.readBody(response.res);
            assert.strictEqual(response.res.statusCode, 200);
            assert.match(response.res.headers["content-type"], /^text\/event-stream/);
            assert.match(text, /"type":"done"/);
            const sent = service.requests[service.requests.length - 1];
            assert.strictEqual(sent.url, "/ai-sidebar/stream-chat");
            assert.strictEqual(sent.headers["authorization"], "Bearer svc-token");
            assert.deepStrictEqual(JSON.parse(sent.body), { message: "hi", sessionId: "s" });
        });

        it("keeps running after hostile bodies on every route, each answered with JSON, then serves the editor's API " +
            "and a chat", async function () {
            this.timeout(120000);
            service.handler = anyAnswer;
            const before = service.requests.length;
            const routes = READ_ROUTES.concat(WRITE_ROUTES, [["GET", "ai-sidebar/configs"], ["POST", "ai-sidebar/nope"],
                ["DELETE", "ai-sidebar/sessions"]]);
            const bodies = hostileBodies();
            for (const [method, route] of routes) {
                for (const [name, body] of Object.entries(bodies)) {
                    const label = method + " " + route + " with " + name;
                    // With a length, as browsers send bodies: Node's HTTP server refuses a chunked GET body itself.
                    const result = await json(await sendJson(method, nodeRed.url + route, body.text,
                        { "Content-Length": String(Buffer.byteLength(body.text)) }));
                    assert.match(result.type, /^application\/json/, label);
                    assert.ok(result.status < 500, label + ": " + result.status);
                    // GET routes send no body on; every other route must refuse what it cannot read.
                    const readsBody = method !== "GET" && !route.endsWith("nope") && route !== "ai-sidebar/sessions";
                    if (body.refused && readsBody) {
                        assert.strictEqual(result.status, 400, label);
                        assert.ok(["invalid_json", "invalid_request"].includes(result.body.error.code),
                            label + ": " + result.body.error.code);
                    }
                }
            }
            for (const request of service.requests.slice(before)) {
                assert.ok(request.body.length < 2000, request.method + " " + request.url + " reached the service");
                assert.strictEqual(relayLib.checkBody(request.body ? JSON.parse(request.body) : {}), null);
            }

            for (const route of ["flows", "settings"]) {
                const response = await helpers.request(nodeRed.url + route,
                    { headers: { "Node-RED-API-Version": "v2" } });
                const text = await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200, route);
                assert.ok(JSON.parse(text), route);
            }
            const chat = await postJson(nodeRed.url + "ai-sidebar/stream-chat", { message: "still there?" });
            assert.match(await helpers.readBody(chat.res), /"type":"done"/);
            assert.doesNotMatch(nodeRed.log(), /Uncaught|RangeError|Maximum call stack/);
        });

        it("logs the ai-chat node's own error when Node-RED cannot copy the failed message for the Catch node, and " +
            "keeps answering", async function () {
                // The service refuses the question; Node-RED's copy of the message for the Catch node then exhausts
                // the call stack inside the node's promise chain (before: only that RangeError was logged).
                service.handler = function (req, res) {
                    res.writeHead(400, { "Content-Type": "application/json" });
                    res.end(JSON.stringify(relayLib.errorBody("invalid_request", "Refused for this test.")));
                };
                const logged = nodeRed.log().length;
                const depth = 50000;
                const hostile = helpers.request(new URL("/ask-json?q=hi", nodeRed.url).href, {
                    method: "POST", headers: { "Content-Type": "application/json" },
                    body: "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)
                });
                hostile.catch(function () {});
                await nodeRed.waitForLog(/\[error\] \[ai-chat:json asker\] (Error: )?The AI assistant service refused/,
                    logged);

                service.handler = anyAnswer;
                const flows = await helpers.request(nodeRed.url + "flows");
                await helpers.readBody(flows.res);
                assert.strictEqual(flows.res.statusCode, 200);
                const asked = await helpers.request(new URL("/ask-json?q=still+there", nodeRed.url).href, {
                    method: "POST", headers: { "Content-Type": "application/json" }, body: "{}"
                });
                assert.strictEqual(await helpers.readBody(asked.res), "ok");
                assert.doesNotMatch(nodeRed.log(), /Uncaught|unhandled/i);
            });

        it("tells the service every editor request may write and names no user, without adminAuth", async function () {
            service.handler = anyAnswer;
            const response = await postJson(nodeRed.url + "ai-sidebar/stream-chat", { message: "hi" },
                { "Accept-Language": "fr-FR,fr;q=0.9", "X-Node-RED-User": "admin", "X-AI-Sidebar-Permission": "read" });
            await helpers.readBody(response.res);
            const sent = service.requests[service.requests.length - 1].headers;
            assert.strictEqual(sent["x-ai-sidebar-permission"], "write");
            assert.strictEqual(sent["x-node-red-user"], undefined);
            assert.strictEqual(sent["accept-language"], "fr-FR,fr;q=0.9");
        });

        it("answers malformed JSON with a JSON 400, not Node-RED's HTML error page", async function () {
            const result = await json(await postJson(nodeRed.url + "ai-sidebar/stream-chat", "{\"message\": "));
            assert.strictEqual(result.status, 400);
            assert.match(result.type, /^application\/json/);
            assert.strictEqual(result.body.error.code, "invalid_json");
            assert.doesNotMatch(result.body.error.message, /\n\s+at /);
        });

        it("answers a body that is not JSON with a JSON 400", async function () {
            const result = await json(await helpers.request(nodeRed.url + "ai-sidebar/search", {
                method: "POST", headers: { "Content-Type": "text/plain" }, body: "mqtt"
            }));
            assert.strictEqual(result.status, 400);
            assert.strictEqual(result.body.error.code, "invalid_json");
        });

        it("answers an unknown path under /ai-sidebar with a JSON 404, without asking the service", async function () {
            const before = service.requests.length;
            const unknown = [
                ["GET", "ai-sidebar/nope"],
                ["POST", "ai-sidebar/nope"],
                ["GET", "ai-sidebar/history/.."],
                ["GET", "ai-sidebar/history/../sessions"],
                ["GET", "ai-sidebar/history"],
                ["DELETE", "ai-sidebar/sessions"],
                ["PUT", "ai-sidebar/sessions/s1"],
                ["DELETE", "ai-sidebar/sessions/%2e%2e"],
                ["GET", "ai-sidebar/stream-chat"]
            ];
            for (const [method, rawPath] of unknown) {
                const result = await json(await rawRequest(nodeRed.url, method, rawPath,
                    { "Accept": "text/html" }));
                assert.strictEqual(result.status, 404, method + " " + rawPath);
                assert.match(result.type, /^application\/json/, method + " " + rawPath);
                assert.strictEqual(result.body.error.code, "not_found", method + " " + rawPath);
                assert.match(result.body.error.message, /ai-sidebar/);
            }
            assert.strictEqual(service.requests.length, before);
        });

        it("answers a body over Node-RED's admin body limit with a JSON 413", async function () {
            // Node-RED's default apiMaxLength is 5mb.
            const body = JSON.stringify({ message: "x".repeat(6 * 1024 * 1024) });
            const before = service.requests.length;
            const result = await json(await postJson(nodeRed.url + "ai-sidebar/stream-chat", body));
            assert.strictEqual(result.status, 413);
            assert.match(result.type, /^application\/json/);
            assert.strictEqual(result.body.error.code, "request_too_large");
            assert.strictEqual(service.requests.length, before);
        });

        it("leaves Node-RED's own error handling of other admin routes alone", async function () {
            const { res } = await postJson(nodeRed.url + "flows", "{\"broken\": ");
            await helpers.readBody(res);
            assert.strictEqual(res.statusCode, 400);
            assert.doesNotMatch(res.headers["content-type"], /json/);
        });

        it("forwards every route to the same path and method on the service", async function () {
            service.handler = function (req, res, body) {
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end(JSON.stringify({ method: req.method, path: req.url, body: body }));
            };
            const routes = [
                ["GET", "ai-sidebar/scenarios?lang=ja", "/ai-sidebar/scenarios?lang=ja"],
                ["GET", "ai-sidebar/memory-stats", "/ai-sidebar/memory-stats"],
                ["GET", "ai-sidebar/history/a%20b?limit=5", "/ai-sidebar/history/a%20b?limit=5"],
                ["POST", "ai-sidebar/search", "/ai-sidebar/search"],
                ["GET", "ai-sidebar/templates", "/ai-sidebar/templates"],
                ["POST", "ai-sidebar/templates", "/ai-sidebar/templates"],
                ["GET", "ai-sidebar/sessions", "/ai-sidebar/sessions"],
                ["POST", "ai-sidebar/sessions", "/ai-sidebar/sessions"],
                ["PATCH", "ai-sidebar/sessions/a%20b", "/ai-sidebar/sessions/a%20b"],
                ["DELETE", "ai-sidebar/sessions/a%20b", "/ai-sidebar/sessions/a%20b"],
                ["POST", "ai-sidebar/sessions/a%20b/fork", "/ai-sidebar/sessions/a%20b/fork"],
                ["POST", "ai-sidebar/execute-tool", "/ai-sidebar/execute-tool"],
                ["GET", "ai-sidebar/knowledge", "/ai-sidebar/knowledge"],
                ["POST", "ai-sidebar/knowledge/reindex", "/ai-sidebar/knowledge/reindex"],
                ["GET", "ai-sidebar/knowledge/documents", "/ai-sidebar/knowledge/documents"],
                ["POST", "ai-sidebar/knowledge/documents", "/ai-sidebar/knowledge/documents"],
                ["GET", "ai-sidebar/knowledge/documents/search?q=a%20b", "/ai-sidebar/knowledge/documents/search?q=a%20b"],
                ["DELETE", "ai-sidebar/knowledge/documents/12", "/ai-sidebar/knowledge/documents/12"],
                ["GET", "ai-sidebar/approvals?limit=5", "/ai-sidebar/approvals?limit=5"],
                ["POST", "ai-sidebar/approvals/a%20b/token", "/ai-sidebar/approvals/a%20b/token"],
                ["GET", "ai-sidebar/usage?by=day&since=2026-12-01", "/ai-sidebar/usage?by=day&since=2026-12-01"],
                ["GET", "ai-sidebar/mcp-grants", "/ai-sidebar/mcp-grants"],
                ["POST", "ai-sidebar/mcp-grants/7/revoke", "/ai-sidebar/mcp-grants/7/revoke"],
                ["GET", "ai-sidebar/flow-history?limit=5", "/ai-sidebar/flow-history?limit=5"],
                ["GET", "ai-sidebar/flow-history/diff?from=abc&to=now", "/ai-sidebar/flow-history/diff?from=abc&to=now"],
                ["PATCH", "ai-sidebar/flow-history/a%20b", "/ai-sidebar/flow-history/a%20b"]
            ];
            for (const [method, route, expected] of routes) {
                const result = await json(await callRoute(nodeRed.url, [method, route]));
                assert.deepStrictEqual([result.status, result.body.method, result.body.path], [200, method, expected],
                    method + " " + route);
            }
        });

        it("relays a resume as a stream, with the chosen ai-config node's settings instead of its id",
            async function () {
                service.handler = sseAnswer;
                const decisions = [{ type: "reject", message: "not on this tab" }];
                const response = await postJson(nodeRed.url + "ai-sidebar/resume",
                    { resumeToken: "t".repeat(43), decisions: decisions, provider: { baseUrl: "http://x.example" } });
                const text = await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200);
                assert.match(response.res.headers["content-type"], /^text\/event-stream/);
                assert.match(text, /"type":"done"/);
                const sent = service.requests[service.requests.length - 1];
                assert.deepStrictEqual([sent.method, sent.url], ["POST", "/ai-sidebar/resume"]);
                // A provider the browser sends is dropped, as for a chat.
                assert.deepStrictEqual(JSON.parse(sent.body), { resumeToken: "t".repeat(43), decisions: decisions });
                const before = service.requests.length;
                const unknown = await json(await postJson(nodeRed.url + "ai-sidebar/resume",
                    { resumeToken: "t".repeat(43), decisions: decisions, configId: "no-such-node" }));
                assert.deepStrictEqual([unknown.status, unknown.body.error.code], [400, "config_not_found"]);
                assert.strictEqual(service.requests.length, before);
            });

        it("relays an assist request as a stream, as a chat: a browser's provider dropped, an unknown configId refused",
            async function () {
                service.handler = sseAnswer;
                const body = { kind: "function", description: "add a timestamp", language: "de",
                    context: { nodeId: "n1", code: { onMessage: "return msg;" }, outputs: 1, libs: [] } };
                const response = await postJson(nodeRed.url + "ai-sidebar/assist",
                    Object.assign({ provider: { baseUrl: "http://x.example" } }, body));
                const text = await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200);
                assert.match(response.res.headers["content-type"], /^text\/event-stream/);
                assert.match(text, /"type":"done"/);
                const sent = service.requests[service.requests.length - 1];
                assert.deepStrictEqual([sent.method, sent.url], ["POST", "/ai-sidebar/assist"]);
                assert.deepStrictEqual(JSON.parse(sent.body), body);
                assert.strictEqual(sent.headers["authorization"], "Bearer svc-token");
                const before = service.requests.length;
                const unknown = await json(await postJson(nodeRed.url + "ai-sidebar/assist",
                    Object.assign({ configId: "no-such-node" }, body)));
                assert.deepStrictEqual([unknown.status, unknown.body.error.code], [400, "config_not_found"]);
                assert.strictEqual(service.requests.length, before);
            });

        it("relays a session rename with its body and the service's answer", async function () {
            service.handler = function (req, res, body) {
                const changes = JSON.parse(body);
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end(JSON.stringify({ id: "s1", name: changes.name, pinned: changes.pinned }));
            };
            const result = await json(await sendJson("PATCH", nodeRed.url + "ai-sidebar/sessions/s1",
                { name: "Wetterstation – MQTT", pinned: true }));
            assert.deepStrictEqual(result.body, { id: "s1", name: "Wetterstation – MQTT", pinned: true });
            const sent = service.requests[service.requests.length - 1];
            assert.deepStrictEqual([sent.method, sent.url], ["PATCH", "/ai-sidebar/sessions/s1"]);
        });

        it("relays the service's 404 for an unknown session as it is", async function () {
            service.handler = function (req, res) {
                res.writeHead(404, { "Content-Type": "application/json" });
                res.end("{\"error\":{\"code\":\"session_not_found\",\"message\":\"No session 'x'.\"}}");
            };
            const result = await json(await helpers.request(nodeRed.url + "ai-sidebar/history/x"));
            assert.strictEqual(result.status, 404);
            assert.strictEqual(result.body.error.code, "session_not_found");
        });

        it("refuses a session change whose body is not JSON", async function () {
            const result = await json(await helpers.request(nodeRed.url + "ai-sidebar/sessions/s1", {
                method: "PATCH", headers: { "Content-Type": "text/plain" }, body: "pin it"
            }));
            assert.strictEqual(result.status, 400);
            assert.strictEqual(result.body.error.code, "invalid_json");
        });

        it("answers 502 service_unreachable when the service is down", async function () {
            await helpers.close(service.server);
            const result = await json(await postJson(nodeRed.url + "ai-sidebar/stream-chat", { message: "hi" }));
            assert.strictEqual(result.status, 502);
            assert.strictEqual(result.body.error.code, "service_unreachable");
            assert.doesNotMatch(nodeRed.log(), /svc-token/);
        });
    });

    describe("with adminAuth and a custom httpAdminRoot", function () {
        let service;
        let nodeRed;

        function token(username, scope) {
            return helpers.adminToken(nodeRed.url, username, scope);
        }

        /** The headers the service received for one chat of the user holding `accessToken`. */
        async function chatHeaders(accessToken, extraHeaders, body) {
            const before = service.requests.length;
            const response = await postJson(nodeRed.url + "ai-sidebar/stream-chat", body || { message: "hi" },
                Object.assign({ "Authorization": "Bearer " + accessToken }, extraHeaders));
            await helpers.readBody(response.res);
            assert.strictEqual(response.res.statusCode, 200);
            assert.strictEqual(service.requests.length, before + 1);
            return service.requests[before];
        }

        function askTab() {
            const flows = JSON.parse(fs.readFileSync(REPOSITORY_FLOWS, "utf8"));
            const tab = flows.find(function (node) {
                return node.type === "tab" && node.label === "Ask the assistant";
            });
            const chat = flows.find(function (node) { return node.z === tab.id && node.type === "ai-chat"; });
            return { tab: tab, chat: chat };
        }

        /** GET a flow endpoint (httpNodeRoot is "/", outside httpAdminRoot) with no credentials at all. */
        function anonymousGet(pathAndQuery) {
            return helpers.request(new URL(pathAndQuery, nodeRed.url).href);
        }

        before(async function () {
            this.timeout(START_TIMEOUT + 30000);
            service = await helpers.fakeService();
            service.handler = sseAnswer;
            // bcrypt hash of "password123", cost 8.
            const hash = "$2b$08$csiBv0OuTq/UfZKBKMGbZuSpnadzvqMh939k1ErqcB41dXLq/cl3q";
            nodeRed = await startNodeRed({
                httpAdminRoot: "/admin",
                adminAuth: {
                    type: "credentials",
                    users: [
                        { username: "admin", password: hash, permissions: "*" },
                        { username: "viewer", password: hash, permissions: "read" },
                        // Differs from "viewer" only by a trailing space: a different user for the service too.
                        { username: "viewer ", password: hash, permissions: "read" },
                        { username: "ai-helper", password: hash, permissions: ["read", "ai-sidebar.write"] }
                    ]
                }
            }, { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "" },
            JSON.parse(fs.readFileSync(REPOSITORY_FLOWS, "utf8")));
        });

        after(async function () {
            if (nodeRed) {
                await nodeRed.stop();
            }
            await helpers.close(service.server);
        });

        afterEach(function () {
            service.handler = sseAnswer;
        });

        it("refuses every route without a token", async function () {
            for (const route of READ_ROUTES.concat(WRITE_ROUTES, [["GET", "ai-sidebar/service-status"]])) {
                const response = await callRoute(nodeRed.url, route);
                await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 401, route.join(" "));
            }
            assert.strictEqual(service.requests.length, 0);
        });

        it("refuses an unknown path under /ai-sidebar without a token, and answers it with a JSON 404 with one",
            async function () {
                const anonymous = await rawRequest(nodeRed.url, "GET", "ai-sidebar/nope");
                await helpers.readBody(anonymous.res);
                assert.strictEqual(anonymous.res.statusCode, 401);
                const result = await json(await rawRequest(nodeRed.url, "GET", "ai-sidebar/nope",
                    { "Authorization": "Bearer " + await token("viewer", "read") }));
                assert.strictEqual(result.status, 404);
                assert.strictEqual(result.body.error.code, "not_found");
                assert.strictEqual(service.requests.length, 0);
            });

        it("refuses every route that changes state to a read-only user, before the service sees it", async function () {
            const viewerToken = await token("viewer", "read");
            const before = service.requests.length;
            for (const route of WRITE_ROUTES) {
                const response = await callRoute(nodeRed.url, route, { "Authorization": "Bearer " + viewerToken });
                await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 401, route.join(" "));
            }
            assert.strictEqual(service.requests.length, before);
        });

        it("tells a read-only user whether the service is reachable", async function () {
            const result = await json(await helpers.request(nodeRed.url + "ai-sidebar/service-status",
                { headers: { "Authorization": "Bearer " + await token("viewer", "read") } }));
            assert.strictEqual(result.status, 200);
            assert.strictEqual(result.body.reachable, true);
        });

        it("relays every read route for a read-only user", async function () {
            service.handler = function (req, res) {
                if (req.url === "/ai-sidebar/stream-chat") {
                    sseAnswer(req, res);
                    return;
                }
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end(JSON.stringify({ method: req.method, path: req.url }));
            };
            const viewerToken = await token("viewer", "read");
            for (const route of READ_ROUTES) {
                const before = service.requests.length;
                const response = await callRoute(nodeRed.url, route, { "Authorization": "Bearer " + viewerToken });
                await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200, route.join(" "));
                const sent = service.requests[before];
                assert.deepStrictEqual([sent.method, sent.url], [route[0], "/" + route[1]]);
                assert.strictEqual(sent.headers["x-node-red-user"], "viewer");
            }
        });

        it("relays every route that changes state for a user with write permission", async function () {
            service.handler = function (req, res) {
                res.writeHead(req.method === "POST" ? 201 : 200, { "Content-Type": "application/json" });
                res.end(JSON.stringify({ method: req.method, path: req.url }));
            };
            const adminToken = await token("admin", "*");
            for (const route of WRITE_ROUTES) {
                const result = await json(await callRoute(nodeRed.url, route, { "Authorization": "Bearer " + adminToken }));
                assert.ok(result.status === 200 || result.status === 201, route.join(" ") + ": " + result.status);
                assert.deepStrictEqual([result.body.method, result.body.path], [route[0], "/" + route[1]]);
            }
            const sent = service.requests[service.requests.length - 1];
            assert.strictEqual(sent.headers["x-node-red-user"], "admin");
            assert.strictEqual(sent.headers["x-node-red-token"], adminToken);
        });

        it("lets a read-only user chat, forwarding who they are", async function () {
            const viewerToken = await token("viewer", "read");
            const response = await postJson(nodeRed.url + "ai-sidebar/stream-chat", { message: "hi" },
                { "Authorization": "Bearer " + viewerToken });
            await helpers.readBody(response.res);
            assert.strictEqual(response.res.statusCode, 200);
            const sent = service.requests[service.requests.length - 1];
            assert.strictEqual(sent.headers["x-node-red-token"], viewerToken);
            assert.strictEqual(sent.headers["x-node-red-user"], "viewer");
            assert.strictEqual(sent.headers["authorization"], undefined);
        });

        it("tells the service what Node-RED's own check grants for ai-sidebar.write", async function () {
            const granted = {};
            for (const [user, scope] of [["viewer", "read"], ["admin", "*"], ["ai-helper", "read ai-sidebar.write"],
                ["admin", "read"]]) {
                const sent = await chatHeaders(await token(user, scope));
                granted[user + " (" + scope + ")"] = sent.headers["x-ai-sidebar-permission"];
            }
            assert.deepStrictEqual(granted, {
                "viewer (read)": "read",
                "admin (*)": "write",
                "ai-helper (read ai-sidebar.write)": "write",
                // A token asked for with less than the user holds carries only what it was asked for.
                "admin (read)": "read"
            });
        });

        it("relays usage totals with the query, telling the service who asks and whether they may see everyone's",
            async function () {
                service.handler = function (req, res) {
                    res.writeHead(200, { "Content-Type": "application/json" });
                    res.end(JSON.stringify({ scope: req.headers["x-ai-sidebar-permission"] === "write" ? "all" : "own" }));
                };
                const answers = {};
                for (const [user, scope] of [["viewer", "read"], ["admin", "*"]]) {
                    const before = service.requests.length;
                    const result = await json(await helpers.request(nodeRed.url + "ai-sidebar/usage?by=user", {
                        method: "GET", headers: { "Authorization": "Bearer " + await token(user, scope) } }));
                    const sent = service.requests[before];
                    answers[user] = [result.status, result.body.scope, sent.url, sent.headers["x-node-red-user"],
                        sent.headers["x-ai-sidebar-permission"]];
                }
                assert.deepStrictEqual(answers, {
                    viewer: [200, "own", "/ai-sidebar/usage?by=user", "viewer", "read"],
                    admin: [200, "all", "/ai-sidebar/usage?by=user", "admin", "write"]
                });
            });

        it("names the exact editor user: a trailing space is a different user", async function () {
            const plain = await chatHeaders(await token("viewer", "read"));
            const spaced = await chatHeaders(await token("viewer ", "read"));
            assert.strictEqual(plain.headers["x-node-red-user"], "viewer");
            assert.strictEqual(spaced.headers["x-node-red-user"], "viewer%20");
        });

        it("builds every identity header itself and drops a provider the browser sends", async function () {
            const viewerToken = await token("viewer", "read");
            const sent = await chatHeaders(viewerToken, {
                "Accept-Language": "de-DE,de;q=0.9",
                "X-Node-RED-User": "admin",
                "X-Node-RED-Token": "forged",
                "X-AI-Sidebar-Permission": "write",
                "X-AI-Sidebar-Flow-Node": askTab().chat.id,
                "X-AI-Sidebar-Flow-Grants": "tools,memory",
                "X-AI-Sidebar-Conversation": "someone-else"
            }, { message: "hi", provider: { provider: "openai-compatible", baseUrl: "http://attacker.example/v1" } });
            assert.deepStrictEqual(JSON.parse(sent.body), { message: "hi" });
            const identity = {};
            for (const [name, value] of Object.entries(sent.headers)) {
                if (/^x-(node-red|ai-sidebar)-|^accept-language$/.test(name)) {
                    identity[name] = value;
                }
            }
            assert.deepStrictEqual(identity, {
                "x-node-red-user": "viewer",
                "x-node-red-token": viewerToken,
                "x-ai-sidebar-permission": "read",
                "accept-language": "de-DE,de;q=0.9"
            });
        });

        it("ships the repository's \"Ask the assistant\" endpoint disabled: an anonymous GET /ask finds nothing",
            async function () {
                const before = service.requests.length;
                const { res } = await anonymousGet("/ask?q=hello");
                await helpers.readBody(res);
                assert.strictEqual(res.statusCode, 404);
                assert.strictEqual(service.requests.length, before);
                assert.strictEqual(askTab().tab.disabled, true);
            });

        it("once an admin enables the endpoint, an anonymous caller asks as the flow node: read permission, no " +
            "tools, no memory, no conversation, no user", async function () {
            const { tab, chat } = askTab();
            // As the editor does it: the tab's Enabled toggle, then Deploy (modified flows).
            const headers = { "Authorization": "Bearer " + await token("admin", "*"), "Node-RED-API-Version": "v2" };
            const current = await json(await helpers.request(nodeRed.url + "flows", { headers: headers }));
            const flows = current.body.flows.map(function (node) {
                return node.id === tab.id ? Object.assign({}, node, { disabled: false }) : node;
            });
            const logged = nodeRed.log().length;
            const deployed = await postJson(nodeRed.url + "flows", { rev: current.body.rev, flows: flows },
                Object.assign({ "Node-RED-Deployment-Type": "flows" }, headers));
            await helpers.readBody(deployed.res);
            assert.strictEqual(deployed.res.statusCode, 200);
            await nodeRed.waitForLog(/Started modified flows/, logged);

            const before = service.requests.length;
            const { res } = await anonymousGet("/ask?q=" + encodeURIComponent("@tools:get_flows") +
                "&sessionId=someone-else");
            assert.strictEqual(await helpers.readBody(res), "ok");
            assert.strictEqual(service.requests.length, before + 1);
            const sent = service.requests[before];
            assert.strictEqual(JSON.parse(sent.body).message, "@tools:get_flows");
            const identity = {};
            for (const [name, value] of Object.entries(sent.headers)) {
                if (/^x-(node-red|ai-sidebar)-|^authorization$/.test(name)) {
                    identity[name] = value;
                }
            }
            assert.deepStrictEqual(identity, {
                "x-ai-sidebar-flow-node": chat.id,
                "x-ai-sidebar-flow-grants": "",
                "x-ai-sidebar-permission": "read"
            });
        });

        it("keeps execute-tool for users with write permission", async function () {
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end("{\"tool\":\"get_flow\",\"result\":\"{}\"}");
            };
            const viewer = await postJson(nodeRed.url + "ai-sidebar/execute-tool", { tool: "get_flow" },
                { "Authorization": "Bearer " + await token("viewer", "read") });
            await helpers.readBody(viewer.res);
            assert.strictEqual(viewer.res.statusCode, 401);
            const admin = await json(await postJson(nodeRed.url + "ai-sidebar/execute-tool", { tool: "get_flow" },
                { "Authorization": "Bearer " + await token("admin", "*") }));
            assert.strictEqual(admin.status, 200);
            assert.strictEqual(admin.body.tool, "get_flow");
        });
    });
});
