"use strict";

const assert = require("assert");
const relayLib = require("../plugins/lib/relay");
const helpers = require("./helpers");

const SERVICE_TOKEN = "service-secret-0123456789";
const EDITOR_TOKEN = "editor-access-token-abcdef";

describe("relay to the AI service", function () {
    // Each test awaits events, never sleeps: a relay that buffers or hangs fails by timing out here.
    this.timeout(5000);
    let service;
    let app;
    let warnings;

    function makeRelay(options) {
        warnings = [];
        return relayLib.createRelay(Object.assign({
            serviceUrl: service.url,
            serviceToken: SERVICE_TOKEN,
            log: { warn: function (text) { warnings.push(text); } }
        }, options));
    }

    beforeEach(async function () {
        service = await helpers.fakeService();
    });

    afterEach(async function () {
        if (app) {
            await helpers.close(app.server);
            app = null;
        }
        await helpers.close(service.server);
    });

    describe("streams", function () {
        it("delivers the first event to the browser before the service has finished the answer", async function () {
            let finishAnswer;
            const answerFinished = new Promise(function (resolve) { finishAnswer = resolve; });
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "text/event-stream" });
                res.write("data: {\"type\":\"token\",\"content\":\"Hel\"}\n\n");
                answerFinished.then(function () {
                    res.end("data: {\"type\":\"done\",\"sessionId\":\"s1\"}\n\n");
                });
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });

            const { res } = await helpers.request(app.url + "/ai-sidebar/stream-chat", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: "{\"message\":\"hi\"}"
            });
            const reader = helpers.chunkReader(res);
            const first = await reader.next();
            assert.strictEqual(first, "data: {\"type\":\"token\",\"content\":\"Hel\"}\n\n");
            finishAnswer();
            let rest = "";
            for (let chunk = await reader.next(); chunk !== null; chunk = await reader.next()) {
                rest += chunk;
            }
            assert.strictEqual(rest, "data: {\"type\":\"done\",\"sessionId\":\"s1\"}\n\n");
        });

        it("copies the status and content type and turns off caching, buffering and transforms", async function () {
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "X-Internal": "no" });
                res.end("data: {\"type\":\"done\"}\n\n");
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: "{}"
            });
            await helpers.readBody(res);
            assert.strictEqual(res.statusCode, 200);
            assert.strictEqual(res.headers["content-type"], "text/event-stream; charset=utf-8");
            assert.strictEqual(res.headers["cache-control"], "no-cache, no-transform");
            assert.strictEqual(res.headers["x-accel-buffering"], "no");
            assert.strictEqual(res.headers["x-internal"], undefined);
        });

        it("destroys the upstream request when the browser disconnects mid-answer", async function () {
            let serviceSawClose;
            const closed = new Promise(function (resolve) { serviceSawClose = resolve; });
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "text/event-stream" });
                res.write("data: {\"type\":\"token\",\"content\":\"a\"}\n\n");
                res.on("close", function () {
                    serviceSawClose(res.writableEnded);
                });
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });

            const { req, res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: "{}"
            });
            await helpers.chunkReader(res).next();
            req.destroy();
            const endedNormally = await closed;
            assert.strictEqual(endedNormally, false, "the service answer should have been cut off, not finished");
            await Promise.all(app.done);
            assert.deepStrictEqual(warnings, [], "a browser leaving is not a fault to log");
        });

        it("ends the stream with an error event and done when the service drops the connection", async function () {
            service.handler = function (req, res) {
                res.writeHead(200, { "Content-Type": "text/event-stream" });
                res.write("data: {\"type\":\"token\",\"content\":\"a\"}\n\n", function () {
                    res.destroy();
                });
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: "{\"sessionId\":\"s9\"}"
            });
            const text = await helpers.readBody(res);
            const events = text.split("\n\n").filter(Boolean).map(function (frame) {
                return JSON.parse(frame.replace(/^data: /, ""));
            });
            assert.deepStrictEqual(events.map(function (e) { return e.type; }), ["token", "error", "done"]);
            assert.strictEqual(events[1].code, "service_disconnected");
            assert.strictEqual(events[2].sessionId, "s9");
        });

        it("relays a JSON error answer from the stream route as JSON", async function () {
            service.handler = function (req, res) {
                res.writeHead(400, { "Content-Type": "application/json" });
                res.end(JSON.stringify(relayLib.errorBody("message_too_long", "The message is too long.")));
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: "{}"
            });
            const body = JSON.parse(await helpers.readBody(res));
            assert.strictEqual(res.statusCode, 400);
            assert.strictEqual(body.error.code, "message_too_long");
        });
    });

    describe("headers sent to the service", function () {
        function answerJson(req, res) {
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end("{}");
        }

        it("sends the service token as Authorization and the editor's token only as X-Node-RED-Token", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/scenarios" },
                { user: { username: "admin", permissions: "*" } });

            const { res } = await helpers.request(app.url + "/ai-sidebar/scenarios?lang=de", {
                headers: { "Authorization": "Bearer " + EDITOR_TOKEN, "Cookie": "session=browser-secret" }
            });
            await helpers.readBody(res);
            const headers = service.requests[0].headers;
            assert.strictEqual(headers["authorization"], "Bearer " + SERVICE_TOKEN);
            assert.strictEqual(headers["x-node-red-token"], EDITOR_TOKEN);
            assert.strictEqual(headers["x-node-red-user"], "admin");
            assert.strictEqual(headers["content-type"], "application/json");
            assert.strictEqual(headers["cookie"], undefined, "browser cookies must not reach the service");
            const otherHeaders = Object.keys(headers).filter(function (name) {
                return name !== "x-node-red-token";
            }).map(function (name) { return headers[name]; }).join("\n");
            assert.ok(otherHeaders.indexOf(EDITOR_TOKEN) === -1, "the editor token leaked into another header");
        });

        it("sends no Authorization header when no service token is configured", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay({ serviceToken: undefined }), { path: "/ai-sidebar/templates" });

            const { res } = await helpers.request(app.url + "/", {
                headers: { "Authorization": "Bearer " + EDITOR_TOKEN }
            });
            await helpers.readBody(res);
            const headers = service.requests[0].headers;
            assert.strictEqual(headers["authorization"], undefined);
            assert.strictEqual(headers["x-node-red-token"], EDITOR_TOKEN);
            assert.strictEqual(headers["x-node-red-user"], undefined);
        });

        it("percent-encodes a username that a header cannot carry", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/memory-stats" },
                { user: { username: "José 管理员" } });

            const { res } = await helpers.request(app.url + "/");
            await helpers.readBody(res);
            assert.strictEqual(decodeURIComponent(service.requests[0].headers["x-node-red-user"]), "José 管理员");
        });

        it("forwards the path and query string, moving an access_token out of the URL", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/history/abc" });

            const { res } = await helpers.request(app.url + "/x?limit=5&access_token=" + EDITOR_TOKEN);
            await helpers.readBody(res);
            assert.strictEqual(service.requests[0].url, "/ai-sidebar/history/abc?limit=5");
            assert.strictEqual(service.requests[0].headers["x-node-red-token"], EDITOR_TOKEN);
        });

        it("keeps a path prefix of the service URL", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay({ serviceUrl: service.url + "/prefix/" }),
                { path: "/ai-sidebar/templates" });

            const { res } = await helpers.request(app.url + "/");
            await helpers.readBody(res);
            assert.strictEqual(service.requests[0].url, "/prefix/ai-sidebar/templates");
        });

        it("forwards the parsed body of a POST as JSON", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/search" });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" },
                body: "{\"query\":\"mqtt\",\"limit\":3}"
            });
            await helpers.readBody(res);
            assert.strictEqual(service.requests[0].method, "POST");
            assert.deepStrictEqual(JSON.parse(service.requests[0].body), { query: "mqtt", limit: 3 });
        });

        it("sends the exact username, percent-encoded: not trimmed, not cut, no namespace forged", async function () {
            service.handler = answerJson;
            const names = ["admin ", " admin", "flow:a57d52ad4061850e", "shared:templates", "a%20b",
                "x".repeat(300) + "é"];
            for (const name of names) {
                app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/sessions" },
                    { user: { username: name } });
                const { res } = await helpers.request(app.url + "/");
                await helpers.readBody(res);
                await helpers.close(app.server);
                app = null;
            }
            const sent = service.requests.map(function (request) { return request.headers["x-node-red-user"]; });
            assert.deepStrictEqual(sent, names.map(encodeURIComponent));
            assert.deepStrictEqual(sent.map(decodeURIComponent), names);
        });

        it("builds the identity headers itself: none the browser sends reaches the service", async function () {
            service.handler = answerJson;
            const relay = makeRelay();
            app = await helpers.editorApp({
                forward: function (req, res) {
                    return relay.forward(req, res, { path: "/ai-sidebar/stream-chat", permission: "read" });
                }
            }, null, { user: { username: "viewer" } });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST",
                headers: {
                    "Content-Type": "application/json",
                    "Authorization": "Bearer " + EDITOR_TOKEN,
                    "X-Node-RED-User": "admin",
                    "X-Node-RED-Token": "forged-admin-token",
                    "X-AI-Sidebar-Permission": "write",
                    "X-AI-Sidebar-Flow-Node": "a57d52ad4061850e",
                    "X-AI-Sidebar-Flow-Grants": "tools,memory",
                    "X-AI-Sidebar-Conversation": "someone-else",
                    "X-Forwarded-User": "admin"
                },
                body: "{\"message\":\"hi\"}"
            });
            await helpers.readBody(res);
            const headers = service.requests[0].headers;
            assert.strictEqual(headers["x-node-red-user"], "viewer");
            assert.strictEqual(headers["x-node-red-token"], EDITOR_TOKEN);
            assert.strictEqual(headers["x-ai-sidebar-permission"], "read");
            const identity = Object.keys(headers).filter(function (name) {
                return /^x-(node-red|ai-sidebar|forwarded)-/.test(name);
            }).sort();
            assert.deepStrictEqual(identity, ["x-ai-sidebar-permission", "x-node-red-token", "x-node-red-user"]);
        });

        it("forwards the browser's Accept-Language, and drops one that is not a browser's", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/scenarios" });
            for (const language of ["de-DE,de;q=0.9,en;q=0.8", "x".repeat(300)]) {
                const { res } = await helpers.request(app.url + "/", { headers: { "Accept-Language": language } });
                await helpers.readBody(res);
            }
            assert.strictEqual(service.requests[0].headers["accept-language"], "de-DE,de;q=0.9,en;q=0.8");
            assert.strictEqual(service.requests[1].headers["accept-language"], undefined);
        });
    });

    describe("bodies and faults", function () {
        function answerJson(req, res) {
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end("{}");
        }

        async function post(body) {
            const { res } = await helpers.request(app.url + "/", {
                method: "POST", headers: { "Content-Type": "application/json" }, body: body
            });
            return { status: res.statusCode, body: JSON.parse(await helpers.readBody(res)) };
        }

        it("refuses a body nested deeper than the bound with 400 invalid_request, before serialising it",
            async function () {
                service.handler = answerJson;
                app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/stream-chat", stream: true });
                const depth = 50000;
                const bodies = [
                    "{\"message\":\"hi\",\"flowData\":" + "[".repeat(depth) + "]".repeat(depth) + "}",
                    "{\"history\":" + "{\"a\":".repeat(depth) + "1" + "}".repeat(depth) + "}",
                    "{\"message\":\"hi\",\"flowData\":" + "[".repeat(relayLib.MAX_BODY_DEPTH) +
                        "]".repeat(relayLib.MAX_BODY_DEPTH) + "}"
                ];
                for (const body of bodies) {
                    const result = await post(body);
                    assert.strictEqual(result.status, 400);
                    assert.strictEqual(result.body.error.code, "invalid_request");
                    assert.match(result.body.error.message, /nested more than 64 levels/);
                }
                await Promise.all(app.done);
                assert.strictEqual(service.requests.length, 0);
                const within = "{\"flowData\":" + "[".repeat(relayLib.MAX_BODY_DEPTH - 1) +
                    "]".repeat(relayLib.MAX_BODY_DEPTH - 1) + "}";
                assert.strictEqual((await post(within)).status, 200);
                assert.strictEqual(service.requests[0].body, within);
            });

        it("refuses a list or object with more entries than the bound with 400 invalid_request", async function () {
            service.handler = answerJson;
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/search" });
            const many = relayLib.MAX_BODY_ITEMS + 1;
            const list = await post(JSON.stringify({ flowData: new Array(many).fill(0) }));
            const keys = {};
            for (let i = 0; i < many; i++) {
                keys["k" + i] = i;
            }
            const object = await post(JSON.stringify({ dynamicData: keys }));
            for (const result of [list, object]) {
                assert.strictEqual(result.status, 400);
                assert.strictEqual(result.body.error.code, "invalid_request");
                assert.match(result.body.error.message, /at most 20000/);
            }
            assert.strictEqual(service.requests.length, 0);
            assert.strictEqual((await post(JSON.stringify({ flowData: new Array(many - 1).fill(0) }))).status, 200);
        });

        it("answers a fault of the relay itself with a JSON 500, and forward() still settles", async function () {
            service.handler = answerJson;
            // A lone surrogate cannot be percent-encoded: encodeURIComponent throws a URIError.
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/sessions" },
                { user: { username: "broken\ud800" } });
            const { res } = await helpers.request(app.url + "/");
            const body = JSON.parse(await helpers.readBody(res));
            assert.strictEqual(res.statusCode, 500);
            assert.strictEqual(body.error.code, "internal_error");
            await Promise.all(app.done);
            assert.strictEqual(service.requests.length, 0);
            assert.match(warnings.join("\n"), /URI malformed/);
        });
    });

    describe("answers that are not streams", function () {
        it("relays the status and JSON body", async function () {
            service.handler = function (req, res) {
                res.writeHead(404, { "Content-Type": "application/json" });
                res.end(JSON.stringify(relayLib.errorBody("session_not_found", "No such session.")));
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/history/nope" });

            const { res } = await helpers.request(app.url + "/");
            const body = JSON.parse(await helpers.readBody(res));
            assert.strictEqual(res.statusCode, 404);
            assert.match(res.headers["content-type"], /^application\/json/);
            assert.deepStrictEqual(body, { error: { code: "session_not_found", message: "No such session." } });
        });

        it("answers 502 service_bad_answer when the service answers with something other than JSON", async function () {
            service.handler = function (req, res) {
                res.writeHead(500, { "Content-Type": "text/html" });
                res.end("<html><body>Traceback (most recent call last): secret</body></html>");
            };
            app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/templates" });

            const { res } = await helpers.request(app.url + "/");
            const text = await helpers.readBody(res);
            assert.strictEqual(res.statusCode, 502);
            assert.strictEqual(JSON.parse(text).error.code, "service_bad_answer");
            assert.ok(text.indexOf("Traceback") === -1);
        });
    });

    describe("when the service is down", function () {
        it("answers 502 service_unreachable as JSON naming the service URL, and logs no token", async function () {
            const downUrl = await helpers.unusedUrl();
            const relay = makeRelay({ serviceUrl: downUrl });
            app = await helpers.editorApp(relay, { path: "/ai-sidebar/stream-chat", stream: true },
                { user: { username: "admin" } });

            const { res } = await helpers.request(app.url + "/", {
                method: "POST",
                headers: { "Content-Type": "application/json", "Authorization": "Bearer " + EDITOR_TOKEN },
                body: "{\"message\":\"hi\"}"
            });
            const text = await helpers.readBody(res);
            const body = JSON.parse(text);
            assert.strictEqual(res.statusCode, 502);
            assert.match(res.headers["content-type"], /^application\/json/);
            assert.strictEqual(body.error.code, "service_unreachable");
            assert.strictEqual(body.error.message, "The AI assistant service at " + downUrl +
                " is not reachable. Start it (the AI sidebar in the editor shows how) or check AI_SIDEBAR_SERVICE_URL.");
            assert.strictEqual(body.error.serviceUrl, downUrl);
            assert.strictEqual(warnings.length, 1);
            const everything = text + warnings.join("\n");
            assert.ok(everything.indexOf(SERVICE_TOKEN) === -1 && everything.indexOf(EDITOR_TOKEN) === -1);
            assert.ok(!/\n\s+at /.test(everything), "no stack trace");
        });

        it("says the service is being started again while a supervisor restarts it (make run, the plugin's own)",
            async function () {
                const downUrl = await helpers.unusedUrl();
                let supervised = true;
                const relay = makeRelay({ serviceUrl: downUrl, restartExpected: function () { return supervised; } });
                app = await helpers.editorApp(relay, { path: "/ai-sidebar/stream-chat", stream: true },
                    { user: { username: "admin" } });
                async function ask() {
                    const { res } = await helpers.request(app.url + "/", {
                        method: "POST",
                        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + EDITOR_TOKEN },
                        body: "{\"message\":\"hi\"}"
                    });
                    assert.strictEqual(res.statusCode, 502);
                    return JSON.parse(await helpers.readBody(res)).error;
                }
                const restarting = await ask();
                assert.strictEqual(restarting.code, "service_unreachable");
                assert.strictEqual(restarting.restarting, true);
                assert.strictEqual(restarting.message, "The AI assistant service at " + downUrl +
                    " does not answer; it is being started again. Try again in a moment.");
                // The supervisor gave up (exited, failed): the advice to start it again.
                supervised = false;
                const down = await ask();
                assert.strictEqual(down.restarting, undefined);
                assert.match(down.message, /is not reachable\. Start it/);
            });

        it("gives up on a service that accepts the connection but does not answer, when told how long to wait",
            async function () {
                // A stopped process (SIGSTOP) or a blocked event loop: the kernel still completes the connection.
                const sockets = [];
                const silent = require("net").createServer(function (socket) { sockets.push(socket); });
                await new Promise(function (resolve) { silent.listen(0, "127.0.0.1", resolve); });
                try {
                    const relay = makeRelay({ serviceUrl: "http://127.0.0.1:" + silent.address().port });
                    const started = Date.now();
                    const failure = await relay.request({ path: "/healthz", method: "GET", answerTimeout: 300 })
                        .then(function () { return null; }, function (err) { return err; });
                    assert.ok(failure, "the request should fail");
                    assert.strictEqual(failure.code, "service_unreachable");
                    assert.ok(Date.now() - started >= 300, "not before the time given");
                    assert.strictEqual(sockets.length, 1, "it was connected, then given up on");
                    assert.match(warnings[0], /GET \/healthz failed: ESILENT/);
                } finally {
                    sockets.forEach(function (socket) { socket.destroy(); });
                    await new Promise(function (resolve) { silent.close(resolve); });
                }
            });

        it("warns once per outage, not per request, and says when the service answers again", async function () {
            // Node-RED shows every warning in the Debug sidebar, and the editor asks every few seconds while down.
            const downUrl = await helpers.unusedUrl();
            const debugs = [];
            const infos = [];
            const relay = makeRelay({ serviceUrl: downUrl, log: {
                warn: function (text) { warnings.push(text); },
                debug: function (text) { debugs.push(text); },
                info: function (text) { infos.push(text); }
            } });
            async function ask() {
                try {
                    (await relay.request({ path: "/healthz", method: "GET" })).resume();
                    return "answered";
                } catch (err) {
                    return err.code;
                }
            }
            assert.deepStrictEqual([await ask(), await ask(), await ask()],
                ["service_unreachable", "service_unreachable", "service_unreachable"]);
            assert.strictEqual(warnings.length, 1);
            assert.match(warnings[0], /GET \/healthz failed: ECONNREFUSED \(said once until the service answers again\)/);
            assert.strictEqual(debugs.length, 2);
            // The service comes back on its port.
            const back = require("http").createServer(function (req, res) {
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end("{}");
            });
            await new Promise(function (resolve) { back.listen(Number(new URL(downUrl).port), "127.0.0.1", resolve); });
            try {
                assert.strictEqual(await ask(), "answered");
                assert.strictEqual(await ask(), "answered");
                assert.deepStrictEqual(infos, ["[ai-sidebar] the service at " + downUrl.replace(/\/$/, "") +
                    " answers again"]);
            } finally {
                await helpers.close(back);
            }
            assert.strictEqual(await ask(), "service_unreachable");
            assert.strictEqual(warnings.length, 2, "a new outage is warned of again");
        });

        it("does not show credentials embedded in the service URL", async function () {
            const downUrl = await helpers.unusedUrl();
            const relay = makeRelay({ serviceUrl: downUrl.replace("http://", "http://user:pa55word@") });
            app = await helpers.editorApp(relay, { path: "/ai-sidebar/templates" });

            const { res } = await helpers.request(app.url + "/");
            const text = await helpers.readBody(res);
            assert.strictEqual(res.statusCode, 502);
            assert.ok(text.indexOf("pa55word") === -1);
        });
    });

    describe("configuration", function () {
        it("reads AI_SIDEBAR_SERVICE_URL and AI_SIDEBAR_TOKEN, defaulting to the local service", function () {
            assert.deepStrictEqual(relayLib.configFromEnvironment({}),
                { serviceUrl: "http://127.0.0.1:8765", serviceToken: undefined, tokenGenerated: false });
            assert.deepStrictEqual(relayLib.configFromEnvironment({
                AI_SIDEBAR_SERVICE_URL: "https://ai.example:9000", AI_SIDEBAR_TOKEN: "t"
            }), { serviceUrl: "https://ai.example:9000", serviceToken: "t", tokenGenerated: false });
        });

        it("refuses a service URL that is not http or https", function () {
            assert.throws(function () {
                relayLib.createRelay({ serviceUrl: "ftp://127.0.0.1:8765" });
            }, /http:\/\/ or https:\/\//);
        });
    });

    it("settles forward() once the browser response is over", async function () {
        service.handler = function (req, res) {
            res.writeHead(200, { "Content-Type": "application/json" });
            res.end("{}");
        };
        app = await helpers.editorApp(makeRelay(), { path: "/ai-sidebar/templates" });
        const { res } = await helpers.request(app.url + "/");
        await helpers.readBody(res);
        await Promise.all(app.done);
    });
});
