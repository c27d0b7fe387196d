"use strict";

/**
 * The plugin inside a real Node-RED: the package is symlinked into a temporary user directory (as the project's
 * Makefile installs it) and Node-RED runs as a child process in front of a scripted fake AI service.
 */

const assert = require("assert");
const http = require("http");
const helpers = require("./helpers");
const { startNodeRed: sharedStartNodeRed } = require("./nodered");

/** Node-RED with this package installed (test/nodered.js), settings and environment as this spec passes them. */
function startNodeRed(settings, env) {
    return sharedStartNodeRed({ settings: settings, env: env });
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
    ["GET", "ai-sidebar/scenarios"],
    ["GET", "ai-sidebar/memory-stats"],
    ["GET", "ai-sidebar/history/s"],
    ["POST", "ai-sidebar/search"],
    ["GET", "ai-sidebar/templates"],
    ["GET", "ai-sidebar/sessions"]
];
const WRITE_ROUTES = [
    ["POST", "ai-sidebar/templates"],
    ["POST", "ai-sidebar/sessions"],
    ["PATCH", "ai-sidebar/sessions/s"],
    ["DELETE", "ai-sidebar/sessions/s"],
    ["POST", "ai-sidebar/execute-tool"]
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

describe("ai-sidebar plugin in Node-RED", function () {
    this.timeout(30000);

    describe("without adminAuth", function () {
        let service;
        let nodeRed;

        before(async function () {
            service = await helpers.fakeService();
            nodeRed = await startNodeRed({}, { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "svc-token" });
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
            for (const part of ["flow-json.js", "admin-api.js", "flow-blocks.js", "markdown.js", "answer.js",
                "sessions.js", "ai-sidebar.css"]) {
                const response = await helpers.request(nodeRed.url + "resources/node-red-contrib-ai-sidebar/" + part);
                await helpers.readBody(response.res);
                assert.strictEqual(response.res.statusCode, 200, part);
            }
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
                ["POST", "ai-sidebar/execute-tool", "/ai-sidebar/execute-tool"]
            ];
            for (const [method, route, expected] of routes) {
                const result = await json(await callRoute(nodeRed.url, [method, route]));
                assert.deepStrictEqual([result.status, result.body.method, result.body.path], [200, method, expected],
                    method + " " + route);
            }
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

        async function token(username, scope) {
            const { res } = await helpers.request(nodeRed.url + "auth/token", {
                method: "POST",
                headers: { "Content-Type": "application/x-www-form-urlencoded" },
                body: "client_id=node-red-admin&grant_type=password&scope=" + scope +
                    "&username=" + username + "&password=password123"
            });
            return JSON.parse(await helpers.readBody(res)).access_token;
        }

        before(async function () {
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
                        { username: "viewer", password: hash, permissions: "read" }
                    ]
                }
            }, { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "" });
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
            for (const route of READ_ROUTES.concat(WRITE_ROUTES)) {
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

        it("keeps execute-tool for users with write permission", async function () {
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end("{\"tool\":\"get-flow\",\"result\":\"{}\"}");
            };
            const viewer = await postJson(nodeRed.url + "ai-sidebar/execute-tool", { tool: "get-flow" },
                { "Authorization": "Bearer " + await token("viewer", "read") });
            await helpers.readBody(viewer.res);
            assert.strictEqual(viewer.res.statusCode, 401);
            const admin = await json(await postJson(nodeRed.url + "ai-sidebar/execute-tool", { tool: "get-flow" },
                { "Authorization": "Bearer " + await token("admin", "*") }));
            assert.strictEqual(admin.status, 200);
            assert.strictEqual(admin.body.tool, "get-flow");
        });
    });
});
