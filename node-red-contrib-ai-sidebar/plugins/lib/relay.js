/**
 * Forwarding of editor requests to the node-red-ai-sidebar service.
 *
 * The Node-RED runtime never talks to a language model itself: each `/ai-sidebar/*` admin route hands its
 * request to the Python service (DESIGN.md, "HTTP API") and relays the answer. This module holds that relay so
 * the sidebar plugin and the `ai-chat` / `ai-config` nodes share one implementation of the rules below.
 *
 * Headers sent to the service:
 * - `Authorization: Bearer <serviceToken>` when a service token (AI_SIDEBAR_TOKEN) is configured. This is the
 *   shared secret between Node-RED and the service; it is never taken from the browser.
 * - `X-Node-RED-Token: <token>` when the editor request carried `Authorization: Bearer <token>` (adminAuth on),
 *   so the service reads Node-RED with the rights of the user who asked, never more.
 * - `X-Node-RED-User: <username>` when Node-RED authenticated the request (`req.user`), the exact username
 *   (not trimmed, not shortened) percent-encoded with `encodeURIComponent`, because HTTP header values cannot carry
 *   every character a username may hold. Absent when adminAuth is off.
 * - `X-AI-Sidebar-Permission: read|write`, as the plugin's route computed it with Node-RED's own permission check.
 * - `Accept-Language` as the browser sent it (the language of the service's JSON error sentences).
 * - `Content-Type: application/json` and `Accept`.
 * No other header of the browser is passed on: the relay builds the header set itself, so a browser cannot set
 * `X-Node-RED-*` or `X-AI-Sidebar-*` headers (the service trusts them because the caller holds the service token).
 *
 * Requests of an `ai-chat` node (`request`) carry `X-AI-Sidebar-Flow-Node`, `X-AI-Sidebar-Flow-Grants`,
 * `X-AI-Sidebar-Permission: read` (`write` only when the node's deployed config allows flow changes: grant
 * `flows`; each write then still waits for an approval) and, for a conversation the flow named,
 * `X-AI-Sidebar-Conversation`; never `X-Node-RED-User`.
 *
 * Bodies: before a body is serialised again for the service, `checkBody` bounds its nesting depth and the length of
 * its arrays and objects; Node-RED's body parser (V8's JSON.parse) reads deeply nested JSON without recursion, but
 * `JSON.stringify` recurses and would throw a RangeError. A body over the bounds is answered with 400
 * `invalid_request`. Every fault inside `forward` ends in a JSON answer; `forward` never rejects.
 *
 * Answers:
 * - Streams (`stream: true`) are written to the browser chunk by chunk as they arrive, with buffering and
 *   compression disabled; when the browser goes away the upstream request is destroyed, so the service sees the
 *   disconnect and can stop generating.
 * - Other routes relay the upstream status and JSON body.
 * - A service that cannot be reached (refused, unresolvable, no connection within `connectTimeout`) yields
 *   502 `{"error": {"code": "service_unreachable", "message", "serviceUrl", "restarting"?}}` (`serviceUrl` lets
 *   the editor translate the message; `restarting: true` while a supervisor starts the service again); a service answer that is not JSON yields 502 `service_bad_answer`; a service that
 *   drops the connection yields 502 `service_disconnected`, or mid-stream an `error` event with that code
 *   followed by `done`. No stack trace and no token ever reaches the browser or the log.
 *
 * Nodes that ask the service themselves (`ai-chat`) use `request`, which applies the same URL, token and
 * connection-timeout rules and hands back the service's answer for the caller to read.
 */
"use strict";

const serviceTokenLib = require("./service-token");
const http = require("http");
const https = require("https");

const DEFAULT_SERVICE_URL = "http://127.0.0.1:8765";
const DEFAULT_CONNECT_TIMEOUT_MS = 10000;
// The deepest nesting the service's own bodies need is a flow node inside flowData (about ten levels); 64 leaves
// room for nodes with nested configuration while keeping every recursive walk (JSON.stringify here, json.loads and
// pydantic in the service) far from a stack limit.
const MAX_BODY_DEPTH = 64;
// The service's longest list is flowData (at most 20,000 nodes, service/models.py); no object needs more keys.
const MAX_BODY_ITEMS = 20000;
// An Accept-Language header longer than this is not a browser's; it is dropped rather than forwarded.
const MAX_ACCEPT_LANGUAGE = 256;

/**
 * Read the relay configuration from environment variables (DESIGN.md, "Processes, ports, configuration"), and,
 * given Node-RED's settings, the token generated for a service the plugin starts itself (lib/service-token.js).
 *
 * @param {object} [env=process.env] the environment to read
 * @param {object} [settings] Node-RED's runtime settings (`RED.settings`)
 * @returns {{serviceUrl: string, serviceToken: (string|undefined), tokenGenerated: boolean}}
 * @throws {Error} when the generated token's file cannot be written or read
 */
function configFromEnvironment(env, settings) {
    env = env || process.env;
    const token = serviceTokenLib.serviceToken(env, settings);
    return {
        serviceUrl: env.AI_SIDEBAR_SERVICE_URL || DEFAULT_SERVICE_URL,
        serviceToken: token.token,
        tokenGenerated: token.generated
    };
}

/**
 * Build an error body in the design's JSON error shape.
 *
 * @param {string} code stable snake_case code
 * @param {string} message a human sentence naming what failed and what to do next
 * @returns {{error: {code: string, message: string}}}
 */
function errorBody(code, message) {
    return { error: { code: code, message: message } };
}

/**
 * Check that a parsed JSON body is small enough in shape to be handled: nesting at most `MAX_BODY_DEPTH` levels,
 * no array or object with more than `MAX_BODY_ITEMS` entries.
 *
 * The walk is iterative (an explicit stack), so a body nested a million levels deep cannot exhaust the call stack
 * here; it stops at the first value beyond the bounds.
 *
 * @param {*} body the parsed body (`req.body`)
 * @returns {?{error: {code: string, message: string}}} null when the body is within bounds, else the design's
 *     JSON error (code `invalid_request`) naming the bound
 */
function checkBody(body) {
    const stack = [[body, 0]];
    while (stack.length) {
        const [value, depth] = stack.pop();
        if (value === null || typeof value !== "object") {
            continue;
        }
        if (depth >= MAX_BODY_DEPTH) {
            return errorBody("invalid_request", "The request body is nested more than " + MAX_BODY_DEPTH +
                " levels deep; the AI assistant accepts no deeper JSON.");
        }
        const items = Array.isArray(value) ? value : Object.values(value);
        if (items.length > MAX_BODY_ITEMS) {
            return errorBody("invalid_request", "The request body holds a list or object with " + items.length +
                " entries; the AI assistant accepts at most " + MAX_BODY_ITEMS + ".");
        }
        for (const item of items) {
            if (item !== null && typeof item === "object") {
                stack.push([item, depth + 1]);
            }
        }
    }
    return null;
}

/**
 * Take the bearer token the editor sent, if any.
 *
 * Node-RED's editor sends its access token as `Authorization: Bearer`; passport-http-bearer also accepts an
 * `access_token` query parameter, so that is honoured too (and removed from the forwarded query string, so the
 * token never lands in the service's access log).
 *
 * @param {import("http").IncomingMessage} req the editor request
 * @returns {string|undefined}
 */
function editorToken(req) {
    const header = req.headers && req.headers.authorization;
    if (typeof header === "string") {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
        if (match) {
            return match[1];
        }
    }
    const query = new URLSearchParams(querySuffix(req).slice(1));
    return query.get("access_token") || undefined;
}

/**
 * The query string of a request including its leading `?`, or "".
 *
 * @param {import("http").IncomingMessage} req
 * @returns {string}
 */
function querySuffix(req) {
    const url = req.originalUrl || req.url || "";
    const index = url.indexOf("?");
    return index === -1 ? "" : url.slice(index);
}

/**
 * The query string to forward: the editor's, less any `access_token`.
 *
 * @param {import("http").IncomingMessage} req
 * @returns {string} "" or a string starting with "?"
 */
function forwardedQuery(req) {
    const suffix = querySuffix(req);
    if (!suffix) {
        return "";
    }
    const query = new URLSearchParams(suffix.slice(1));
    if (!query.has("access_token")) {
        return suffix;
    }
    query.delete("access_token");
    const rest = query.toString();
    return rest ? "?" + rest : "";
}

/**
 * The headers sent to the service for one editor request. See the module comment for the rules.
 *
 * @param {import("http").IncomingMessage} req the editor request (`req.user` set by Node-RED when adminAuth is on)
 * @param {string|undefined} serviceToken the shared secret for the service
 * @param {("read"|"write")} [permission] what Node-RED's permission check granted the editor user for
 *     `ai-sidebar.write`; no `X-AI-Sidebar-Permission` header without it
 * @returns {Object<string, string>}
 * @throws {URIError} when the username is not well-formed Unicode (a lone surrogate cannot be percent-encoded)
 */
function serviceHeaders(req, serviceToken, permission) {
    const headers = baseHeaders(serviceToken);
    const token = editorToken(req);
    if (token) {
        headers["X-Node-RED-Token"] = token;
    }
    if (req.user && typeof req.user.username === "string" && req.user.username) {
        headers["X-Node-RED-User"] = encodeURIComponent(req.user.username);
    }
    if (permission === "read" || permission === "write") {
        headers["X-AI-Sidebar-Permission"] = permission;
    }
    const language = req.headers && req.headers["accept-language"];
    // Only printable ASCII (what browsers send) is passed on, so the value can never be refused by Node's header
    // validation on the way out.
    if (typeof language === "string" && language.length <= MAX_ACCEPT_LANGUAGE &&
            /^[\x20-\x7e]+$/.test(language)) {
        headers["Accept-Language"] = language;
    }
    return headers;
}

/**
 * The headers for a request of an `ai-chat` node (see the module comment).
 *
 * @param {string|undefined} serviceToken
 * @param {{id: string, grants?: string[], conversation?: string}} flowNode the node's id, what its configuration
 *     turned on (`"tools"`, `"memory"`, `"flows"`), and the conversation the flow named (`msg.sessionId`), if any
 * @returns {Object<string, string>}
 * @throws {URIError} when the id or the conversation is not well-formed Unicode
 */
function flowNodeHeaders(serviceToken, flowNode) {
    const headers = baseHeaders(serviceToken);
    headers["X-AI-Sidebar-Flow-Node"] = encodeURIComponent(flowNode.id);
    headers["X-AI-Sidebar-Flow-Grants"] = (flowNode.grants || []).join(",");
    // A flow node never acts for an editor user: read, unless the flow author allowed it flow changes (each of which
    // the service still holds for an approval bound to this node).
    headers["X-AI-Sidebar-Permission"] = (flowNode.grants || []).indexOf("flows") >= 0 ? "write" : "read";
    if (typeof flowNode.conversation === "string") {
        headers["X-AI-Sidebar-Conversation"] = encodeURIComponent(flowNode.conversation);
    }
    return headers;
}

/**
 * @param {string|undefined} serviceToken
 * @returns {Object<string, string>} the headers every request to the service carries
 */
function baseHeaders(serviceToken) {
    const headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream, application/json"
    };
    if (serviceToken) {
        headers["Authorization"] = "Bearer " + serviceToken;
    }
    return headers;
}

/**
 * Join the service base URL (which may carry a path prefix) and a route path.
 *
 * @param {string} serviceUrl e.g. "http://127.0.0.1:8765" or "https://proxy.example/ai"
 * @param {string} path e.g. "/ai-sidebar/scenarios"
 * @param {string} query "" or "?..."
 * @returns {URL}
 */
function targetUrl(serviceUrl, path, query) {
    const base = new URL(serviceUrl);
    const prefix = base.pathname.replace(/\/+$/, "");
    base.pathname = prefix + path;
    base.search = query;
    return base;
}

/**
 * Create a relay to the service.
 *
 * @param {object} options
 * @param {string} options.serviceUrl base URL of the service
 * @param {string} [options.serviceToken] shared secret sent as `Authorization: Bearer`
 * @param {number} [options.connectTimeout=10000] milliseconds to wait for the TCP (and TLS) connection
 * @param {{warn: function(string), info: function(string)=, debug: function(string)=}} [options.log] where to report
 *     faults (never given a token). A service that cannot be reached is warned of once, not per request: Node-RED's
 *     Debug sidebar shows every warning (21-debug.js logs WARN and ERROR there), and the editor asks the service
 *     every few seconds while it is down; the next ones go to `debug`, and `info` says when it answers again
 * @param {function(): boolean} [options.restartExpected] whether a supervisor starts the service again (the
 *     plugin's own, or `make run`): then a refused connection is answered as a restart (`restarting: true`, "try
 *     again in a moment") rather than with the advice to start it
 * @returns {{forward: function, serviceUrl: string}}
 * @throws {TypeError} when serviceUrl is not an http(s) URL
 */
function createRelay(options) {
    const serviceUrl = options.serviceUrl;
    const serviceToken = options.serviceToken;
    const connectTimeout = options.connectTimeout || DEFAULT_CONNECT_TIMEOUT_MS;
    const log = options.log || { warn: function () {} };
    const restartExpected = options.restartExpected || function () {
        return false;
    };
    const parsed = new URL(serviceUrl);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        throw new TypeError("AI_SIDEBAR_SERVICE_URL must be an http:// or https:// URL, got " + parsed.protocol);
    }
    // Shown to the user, so it must not carry credentials embedded in the URL.
    const displayUrl = parsed.origin + parsed.pathname.replace(/\/+$/, "");
    const transport = parsed.protocol === "https:" ? https : http;
    // Whether the last request that reached for the service could not connect (see options.log).
    let down = false;

    function connectFailed(method, path, err) {
        const line = "[ai-sidebar] service request " + method + " " + path + " failed: " + (err.code || err.message);
        if (!down) {
            down = true;
            log.warn(line + " (said once until the service answers again)");
        } else if (log.debug) {
            log.debug(line);
        }
    }

    function connected() {
        if (down) {
            down = false;
            const line = "[ai-sidebar] the service at " + displayUrl + " answers again";
            if (log.info) {
                log.info(line);
            } else {
                log.warn(line);
            }
        }
    }

    function unreachable(res) {
        const restarting = restartExpected();
        const body = errorBody("service_unreachable", restarting
            ? "The AI assistant service at " + displayUrl + " does not answer; it is being started again. " +
                "Try again in a moment."
            : "The AI assistant service at " + displayUrl + " is not reachable. " +
                "Start it (the AI sidebar in the editor shows how) or check AI_SIDEBAR_SERVICE_URL.");
        // Lets the editor translate the message and still name the URL.
        body.error.serviceUrl = displayUrl;
        if (restarting) {
            body.error.restarting = true;
        }
        sendJson(res, 502, body);
    }

    /**
     * Start a request to the service, destroyed with code ETIMEDOUT when no connection is made in time.
     *
     * @param {URL} url
     * @param {string} method
     * @param {Object<string, string>} headers
     * @returns {import("http").ClientRequest}
     */
    function openUpstream(url, method, headers) {
        const upstream = transport.request(url, { method: method, headers: headers });
        const connectTimer = setTimeout(function () {
            upstream.destroy(Object.assign(new Error("connect timeout"), { code: "ETIMEDOUT" }));
        }, connectTimeout);
        upstream.on("socket", function (socket) {
            // A kept-alive socket is connected already; a fresh one reports "connect" (or
            // "secureConnect" for TLS, which includes the handshake in the limit).
            if (!socket.connecting && !socket.pending) {
                clearTimeout(connectTimer);
            } else {
                socket.once(transport === https ? "secureConnect" : "connect", function () {
                    clearTimeout(connectTimer);
                });
            }
        });
        upstream.on("response", function () {
            clearTimeout(connectTimer);
        });
        upstream.on("close", function () {
            clearTimeout(connectTimer);
        });
        return upstream;
    }

    /**
     * Send one request of the runtime itself (an `ai-chat` node), not on behalf of an editor request.
     *
     * The same service token and URL rules apply as for `forward`; there is no editor token to pass on.
     *
     * @param {object} route
     * @param {string} route.path the service path, e.g. "/ai-sidebar/stream-chat"
     * @param {string} [route.method="POST"]
     * @param {object} [route.body] sent as JSON (not for GET)
     * @param {{id: string, grants?: string[], conversation?: string}} [route.flowNode] the `ai-chat` node asking
     *     (see `flowNodeHeaders`); without it only the service token identifies the request
     * @param {AbortSignal} [route.signal] aborting destroys the request, so the service sees the disconnect;
     *     this also holds after the answer started
     * @param {number} [route.answerTimeout] milliseconds to wait for the answer's headers, from the request's start
     *     (connecting included; the connection's own limit still applies): a service that accepts connections but
     *     does not answer (stopped, its event loop blocked) fails as `service_unreachable` then (logged as
     *     ESILENT); without it the wait is unbounded (a chat's answer may be slow to start)
     * @returns {Promise<import("http").IncomingMessage>} the service's answer once its headers arrived; rejects
     *     with an Error whose `code` is `aborted`, or `service_unreachable` (with `serviceUrl`), or with the
     *     TypeError/URIError/RangeError of a body or header value that cannot be sent
     */
    function request(route) {
        return new Promise(function (resolve, reject) {
            const method = (route.method || "POST").toUpperCase();
            const headers = route.flowNode ? flowNodeHeaders(serviceToken, route.flowNode) : baseHeaders(serviceToken);
            let payload = null;
            if (method !== "GET" && method !== "HEAD") {
                payload = Buffer.from(JSON.stringify(route.body === undefined ? {} : route.body), "utf8");
                headers["Content-Length"] = String(payload.length);
            }
            const signal = route.signal;
            if (signal && signal.aborted) {
                reject(abortedError());
                return;
            }
            const upstream = openUpstream(targetUrl(serviceUrl, route.path, ""), method, headers);
            let answered = false;
            if (route.answerTimeout) {
                const answerTimer = setTimeout(function () {
                    upstream.destroy(Object.assign(new Error("no answer within " + route.answerTimeout + " ms"),
                        { code: "ESILENT" }));
                }, route.answerTimeout);
                upstream.on("response", function () {
                    clearTimeout(answerTimer);
                });
                upstream.on("close", function () {
                    clearTimeout(answerTimer);
                });
            }
            function onAbort() {
                upstream.destroy(abortedError());
            }
            if (signal) {
                signal.addEventListener("abort", onAbort, { once: true });
                upstream.on("close", function () {
                    signal.removeEventListener("abort", onAbort);
                });
            }
            upstream.on("error", function (err) {
                if (answered) {
                    // Reported to whoever reads the answer, as an "aborted" or incomplete body.
                    return;
                }
                if (signal && signal.aborted) {
                    reject(abortedError());
                    return;
                }
                connectFailed(method, route.path, err);
                const failure = new Error("The AI assistant service at " + displayUrl + " is not reachable. " +
                    "Start it (the AI sidebar in the editor shows how) or check AI_SIDEBAR_SERVICE_URL.");
                failure.code = "service_unreachable";
                failure.serviceUrl = displayUrl;
                reject(failure);
            });
            upstream.on("response", function (upstreamRes) {
                answered = true;
                connected();
                resolve(upstreamRes);
            });
            upstream.end(payload || undefined);
        });
    }

    /**
     * Forward one editor request to the service and relay the answer into `res`.
     *
     * @param {import("http").IncomingMessage} req the editor request; `req.body` (parsed JSON) is sent unless the
     *     method is GET or HEAD, after `checkBody` found it within bounds (else 400 `invalid_request`)
     * @param {import("http").ServerResponse} res the editor response
     * @param {object} route
     * @param {string} route.path the service path, e.g. "/ai-sidebar/stream-chat" (already URL-encoded)
     * @param {string} [route.method] defaults to `req.method`
     * @param {boolean} [route.stream=false] relay chunk by chunk (Server-Sent Events)
     * @param {("read"|"write")} [route.permission] sent as `X-AI-Sidebar-Permission`
     * @returns {Promise<void>} settles when the editor response has ended or closed; never rejects: a fault of
     *     the relay itself is logged and answered with 500 `internal_error`
     */
    function forward(req, res, route) {
        return new Promise(function (resolve) {
            let settled = false;
            function finish() {
                if (!settled) {
                    settled = true;
                    resolve();
                }
            }
            function internalError(err) {
                log.warn("[ai-sidebar] relaying " + route.path + " failed: " + (err && err.message));
                sendJson(res, 500, errorBody("internal_error",
                    "The AI sidebar could not relay this request; see the Node-RED log."));
                finish();
            }
            try {
                start(finish, internalError);
            } catch (err) {
                internalError(err);
            }
        });

        function start(finish, internalError) {
            const method = (route.method || req.method || "GET").toUpperCase();
            const headers = serviceHeaders(req, serviceToken, route.permission);
            let payload = null;
            if (method !== "GET" && method !== "HEAD") {
                const body = req.body === undefined ? {} : req.body;
                const problem = checkBody(body);
                if (problem) {
                    sendJson(res, 400, problem);
                    finish();
                    return;
                }
                payload = Buffer.from(JSON.stringify(body), "utf8");
                headers["Content-Length"] = String(payload.length);
            }
            const url = targetUrl(serviceUrl, route.path, forwardedQuery(req));
            let browserGone = false;

            const upstream = openUpstream(url, method, headers);

            // The browser went away (Stop button, closed tab): abort the upstream request so the service sees
            // the disconnect and stops generating. "close" fires after "finish" too, hence the check.
            res.on("close", function () {
                if (!res.writableFinished) {
                    browserGone = true;
                    upstream.destroy();
                }
                finish();
            });

            upstream.on("error", function (err) {
                if (browserGone || res.headersSent) {
                    // A browser that left is normal, not a fault; a failure after the answer started is
                    // handled where the answer is relayed.
                    finish();
                    return;
                }
                connectFailed(method, route.path, err);
                unreachable(res);
                finish();
            });

            upstream.on("response", function (upstreamRes) {
                connected();
                // An exception in an event listener would be uncaught and end the Node-RED process.
                try {
                    if (res.destroyed) {
                        upstreamRes.resume();
                        upstream.destroy();
                        return;
                    }
                    const contentType = String(upstreamRes.headers["content-type"] || "");
                    if (route.stream && /^text\/event-stream\b/i.test(contentType)) {
                        relayStream(req, res, upstream, upstreamRes, finish);
                    } else {
                        relayJson(res, upstreamRes, route, log, finish);
                    }
                } catch (err) {
                    upstream.destroy();
                    internalError(err);
                }
            });

            upstream.end(payload || undefined);
        }
    }

    return { forward: forward, request: request, serviceUrl: displayUrl };
}

/**
 * Copy an event stream to the browser as it arrives.
 *
 * @param {import("http").IncomingMessage} req the editor request (its body names the session for a final event)
 * @param {import("http").ServerResponse} res
 * @param {import("http").ClientRequest} upstream
 * @param {import("http").IncomingMessage} upstreamRes
 * @param {function()} finish
 */
function relayStream(req, res, upstream, upstreamRes, finish) {
    res.statusCode = upstreamRes.statusCode;
    res.setHeader("Content-Type", upstreamRes.headers["content-type"]);
    // no-transform makes the `compression` middleware (if a user added it via httpAdminMiddleware) and
    // transforming proxies leave the stream alone; X-Accel-Buffering turns off nginx buffering.
    res.setHeader("Cache-Control", "no-cache, no-transform");
    res.setHeader("X-Accel-Buffering", "no");
    res.setHeader("Connection", "keep-alive");
    if (res.socket && typeof res.socket.setNoDelay === "function") {
        res.socket.setNoDelay(true);
    }
    res.flushHeaders();

    upstreamRes.on("data", function (chunk) {
        if (!res.write(chunk)) {
            upstreamRes.pause();
            res.once("drain", function () {
                upstreamRes.resume();
            });
        }
    });
    upstreamRes.on("end", function () {
        res.end();
    });
    // The service dropped the connection mid-answer. DESIGN.md promises that every stream ends with `done`,
    // so the relay closes the stream on the service's behalf.
    upstreamRes.on("close", function () {
        if (upstreamRes.complete || res.writableEnded || res.destroyed) {
            return;
        }
        const sessionId = req.body && typeof req.body.sessionId === "string" ? req.body.sessionId : undefined;
        res.write("\n\n" + sseFrame({
            type: "error",
            code: "service_disconnected",
            message: "The AI assistant service closed the connection before the answer was complete. Try again."
        }));
        res.end(sseFrame({ type: "done", sessionId: sessionId }));
        finish();
    });
    upstreamRes.on("error", function () {
        // Reported through "close" above; the listener keeps the error from becoming uncaught.
    });
}

/**
 * Relay a complete (non-stream) answer as JSON.
 *
 * @param {import("http").ServerResponse} res
 * @param {import("http").IncomingMessage} upstreamRes
 * @param {{path: string}} route
 * @param {{warn: function(string)}} log
 * @param {function()} finish
 */
function relayJson(res, upstreamRes, route, log, finish) {
    const chunks = [];
    upstreamRes.on("data", function (chunk) {
        chunks.push(chunk);
    });
    upstreamRes.on("error", function () {});
    upstreamRes.on("close", function () {
        if (res.writableEnded || res.destroyed) {
            return;
        }
        if (!upstreamRes.complete) {
            log.warn("[ai-sidebar] service closed the connection during " + route.path);
            sendJson(res, 502, errorBody("service_disconnected",
                "The AI assistant service closed the connection before answering. Try again."));
            finish();
            return;
        }
        const body = Buffer.concat(chunks);
        const contentType = String(upstreamRes.headers["content-type"] || "");
        if (!/\bjson\b/i.test(contentType) || !isJson(body)) {
            log.warn("[ai-sidebar] service answered " + route.path + " with status " + upstreamRes.statusCode +
                " and no JSON body");
            sendJson(res, 502, errorBody("service_bad_answer",
                "The AI assistant service answered with status " + upstreamRes.statusCode +
                " but no JSON. Check that AI_SIDEBAR_SERVICE_URL points at the AI assistant service."));
            finish();
            return;
        }
        res.statusCode = upstreamRes.statusCode;
        res.setHeader("Content-Type", "application/json; charset=utf-8");
        res.setHeader("Cache-Control", "no-store");
        res.end(body);
        finish();
    });
}

/**
 * @param {Buffer} body
 * @returns {boolean} whether body parses as JSON
 */
function isJson(body) {
    try {
        JSON.parse(body.toString("utf8"));
        return true;
    } catch {
        return false;
    }
}

/**
 * @returns {Error} the rejection of a request its caller aborted (code `aborted`)
 */
function abortedError() {
    const err = new Error("The request to the AI assistant service was cancelled.");
    err.code = "aborted";
    return err;
}

/**
 * One Server-Sent Events frame carrying `event` as JSON.
 *
 * @param {object} event
 * @returns {string}
 */
function sseFrame(event) {
    return "data: " + JSON.stringify(event) + "\n\n";
}

/**
 * Send a JSON answer (used for the relay's own errors).
 *
 * @param {import("http").ServerResponse} res
 * @param {number} status
 * @param {object} body
 */
function sendJson(res, status, body) {
    if (res.headersSent) {
        res.end();
        return;
    }
    const text = JSON.stringify(body);
    res.statusCode = status;
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("Content-Length", String(Buffer.byteLength(text)));
    res.end(text);
}

module.exports = {
    DEFAULT_SERVICE_URL: DEFAULT_SERVICE_URL,
    DEFAULT_CONNECT_TIMEOUT_MS: DEFAULT_CONNECT_TIMEOUT_MS,
    MAX_BODY_DEPTH: MAX_BODY_DEPTH,
    MAX_BODY_ITEMS: MAX_BODY_ITEMS,
    checkBody: checkBody,
    configFromEnvironment: configFromEnvironment,
    createRelay: createRelay,
    errorBody: errorBody,
    flowNodeHeaders: flowNodeHeaders,
    sendJson: sendJson,
    serviceHeaders: serviceHeaders
};
