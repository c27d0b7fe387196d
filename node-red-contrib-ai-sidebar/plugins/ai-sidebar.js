/**
 * Runtime half of the AI sidebar: the `/ai-sidebar/*` admin routes the editor calls.
 *
 * Each route checks the editor user's permission, then relays the request to the node-red-ai-sidebar service
 * (AI_SIDEBAR_SERVICE_URL, default http://127.0.0.1:8765) through `lib/relay.js`, which also forwards the user's
 * identity and what Node-RED's permission check grants them (`X-AI-Sidebar-Permission`). The editor half is
 * `ai-sidebar.html`.
 *
 * No fault of a route may escape as an uncaught exception or unhandled rejection: Node-RED ends its process on
 * one, stopping every flow. Handlers are wrapped (`guarded`), bodies are bounded before anything recursive reads
 * them (`requireJsonBody`, `relay.checkBody`), and the relay's own event listeners catch their faults.
 */
"use strict";

const fs = require("fs");
const path = require("path");
const relayLib = require("./lib/relay");
const providerLib = require("./lib/provider");
const supervisorLib = require("./lib/supervisor");
const serviceTokenLib = require("./lib/service-token");
const serviceStatusLib = require("./lib/service-status");
const functionRoutes = require("./lib/function-routes");
const contextRoute = require("./lib/context-route");

// Where `npm pack` puts the service's wheel (the package's prepack script).
const WHEEL_DIR = path.join(__dirname, "..", "python");
// How long the service-status route waits for the service's /healthz (ms): it answers at once from its event loop,
// so a service that accepts the connection but stays silent this long (stopped, its loop blocked) is reported down.
const HEALTH_ANSWER_MS = 5000;

module.exports = function (RED) {
    let config;
    let relay = null;
    let configError = null;
    try {
        config = relayLib.configFromEnvironment(process.env, RED.settings);
    } catch (err) {
        // The generated token's file cannot be kept: start no service (it would run without a token).
        config = Object.assign(relayLib.configFromEnvironment(process.env), { tokenless: true });
        RED.log.error("[ai-sidebar] cannot keep the service token in " + RED.settings.userDir + ": " + err.message +
            "; set AI_SIDEBAR_TOKEN in Node-RED's environment.");
    }
    try {
        relay = relayLib.createRelay({
            serviceUrl: config.serviceUrl,
            serviceToken: config.serviceToken,
            log: RED.log,
            restartExpected: function () {
                return serviceStatusLib.restartExpected(supervisorStatus(), process.env.AI_SIDEBAR_SERVICE_SUPERVISED);
            }
        });
    } catch (err) {
        configError = "AI_SIDEBAR_SERVICE_URL is not a valid http(s) URL: " + err.message;
        RED.log.error("[ai-sidebar] " + configError);
    }
    if (relay) {
        startSupervisedService(RED, config);
    }

    RED.plugins.registerPlugin("ai-sidebar", {
        type: "ai-sidebar"
    });

    /**
     * Answer a POST whose body Node-RED's JSON parser did not read as JSON.
     *
     * Node-RED's admin app parses `application/json` (and form) bodies before any route runs; any other
     * content type arrives here unparsed, so it is refused with the design's JSON error rather than relayed
     * as an empty object.
     */
    function requireJsonBody(req, res, next) {
        if (!req.is("application/json")) {
            relayLib.sendJson(res, 400, relayLib.errorBody("invalid_json",
                "The request body must be JSON sent with Content-Type: application/json."));
            return;
        }
        if (req.body === null || typeof req.body !== "object" || Array.isArray(req.body)) {
            relayLib.sendJson(res, 400, relayLib.errorBody("invalid_json",
                "The request body must be a JSON object."));
            return;
        }
        // Before any later step (the ai-config lookup, the relay's JSON.stringify) walks the body.
        const problem = relayLib.checkBody(req.body);
        if (problem) {
            relayLib.sendJson(res, 400, problem);
            return;
        }
        next();
    }

    /**
     * Wrap a route handler so that no exception of it, thrown or rejected, escapes.
     *
     * Express 4 passes on what a handler throws synchronously, but a rejected promise would become an unhandled
     * rejection, which ends the Node-RED process. Either is answered with 500 `internal_error` and logged.
     *
     * @param {function(object, object, function): (Promise|undefined)} handler
     * @returns {function(object, object, function)}
     */
    function guarded(handler) {
        return function (req, res, next) {
            function failed(err) {
                RED.log.warn("[ai-sidebar] request to " + req.path + " failed: " + (err && err.message));
                relayLib.sendJson(res, 500, relayLib.errorBody("internal_error",
                    "The AI sidebar could not handle this request; see the Node-RED log."));
            }
            try {
                const result = handler(req, res, next);
                if (result && typeof result.then === "function") {
                    result.then(null, failed);
                }
            } catch (err) {
                failed(err);
            }
        };
    }

    /**
     * What Node-RED's own permission check grants the user of `req` for `ai-sidebar.write`.
     *
     * Runs the middleware of `RED.auth.needsPermission("ai-sidebar.write")` against a stand-in response, so the
     * scope rules (`*`, `write`, `*.write`, lists, a custom `adminAuth.tokens` or default user) are Node-RED's,
     * not a copy. That middleware answers a missing permission with `res.status(401).end()` (and, with audit
     * logging on, records a `permission.fail` for `ai-sidebar.write`); it calls `next()` when granted, and
     * always when adminAuth is off (everyone may write then).
     *
     * @param {import("http").IncomingMessage} req an editor request that already passed the route's own check
     * @returns {Promise<("read"|"write")>}
     */
    function permissionOf(req) {
        return new Promise(function (resolve) {
            let decided = false;
            function decide(permission) {
                if (!decided) {
                    decided = true;
                    resolve(permission);
                }
            }
            const refused = function () {
                decide("read");
                return probe;
            };
            // Everything Node-RED's check (and passport behind it) may call on a response to refuse.
            const probe = {
                statusCode: 200,
                status: function (code) {
                    probe.statusCode = code;
                    return probe;
                },
                setHeader: function () {},
                getHeader: function () {},
                end: refused,
                send: refused,
                json: refused,
                sendStatus: refused,
                redirect: refused
            };
            try {
                RED.auth.needsPermission("ai-sidebar.write")(req, probe, function (err) {
                    decide(err ? "read" : "write");
                });
            } catch {
                decide("read");
            }
        });
    }

    function forwardTo(path, options) {
        return guarded(async function (req, res) {
            if (!relay) {
                relayLib.sendJson(res, 500, relayLib.errorBody("service_url_invalid", configError));
                return;
            }
            const target = typeof path === "function" ? path(req) : path;
            const permission = await permissionOf(req);
            await relay.forward(req, res,
                { path: target, stream: !!(options && options.stream), permission: permission });
        });
    }

    installBodyErrorHandler(RED);

    /**
     * Answer `GET /ai-sidebar/service-status`: whether the service answers its /healthz, and what starts it
     * (lib/service-status.js). Never relayed: the service is what may be missing.
     */
    async function serviceStatusRoute(req, res) {
        const reachable = relay ? await serviceAnswers(relay) : false;
        relayLib.sendJson(res, 200, serviceStatusLib.serviceStatus({
            reachable: reachable,
            serviceUrl: config.serviceUrl,
            supervisor: supervisorStatus(),
            wheel: bundledWheel(),
            venv: RED.settings.userDir ? path.join(RED.settings.userDir, "ai-sidebar", "venv") : undefined,
            nodeRedPort: Number(RED.settings.uiPort) || undefined,
            supervisedBy: process.env.AI_SIDEBAR_SERVICE_SUPERVISED
        }));
    }

    function sessionPath(req) {
        return "/ai-sidebar/sessions/" + encodeURIComponent(req.params.id);
    }

    /**
     * Pass a request whose `name` parameter is "." or ".." on to the not-found answer.
     *
     * Such an id is not a session: percent-encoding leaves dots alone, so the service URL built from it would
     * be resolved to a different route (`/ai-sidebar/history/..` to `/ai-sidebar/`).
     */
    function realSegment(name) {
        return function (req, res, next) {
            next(req.params[name] === "." || req.params[name] === ".." ? "route" : undefined);
        };
    }

    function notFound(req, res) {
        relayLib.sendJson(res, 404, relayLib.errorBody("not_found",
            "There is no AI sidebar route " + req.method + " " + req.baseUrl + req.path +
            "; the routes are listed in the package README under \"How it works\"."));
    }

    // Reading (and asking, which only reads Node-RED) needs ai-sidebar.read; anything that changes what the
    // service stores or runs a tool needs ai-sidebar.write. Node-RED grants "*.read" to read-only users.
    RED.httpAdmin.post("/ai-sidebar/stream-chat", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        guarded(providerLib.configMiddleware(RED)), forwardTo("/ai-sidebar/stream-chat", { stream: true }));
    // "Test connection" of the sidebar's setup card: one tiny request to the chosen ai-config node's provider,
    // its key put in here from `configId` as for a chat.
    RED.httpAdmin.post("/ai-sidebar/test-provider", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        guarded(providerLib.configMiddleware(RED)), forwardTo("/ai-sidebar/test-provider"));
    // Assist in the node edit dialogs (issue 20): asking the model only reads, like a chat.
    RED.httpAdmin.post("/ai-sidebar/assist", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        guarded(providerLib.configMiddleware(RED)), forwardTo("/ai-sidebar/assist", { stream: true }));
    // Inline completion in the code editors (issue 39): asking the model only reads, like an assist request.
    RED.httpAdmin.post("/ai-sidebar/complete", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        guarded(providerLib.configMiddleware(RED)), forwardTo("/ai-sidebar/complete"));
    RED.httpAdmin.post("/ai-sidebar/function-check", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        guarded(functionRoutes.checkRoute));
    // Running code in the runtime is what deploying a function node allows: Node-RED's own flows.write.
    RED.httpAdmin.post("/ai-sidebar/function-sandbox", RED.auth.needsPermission("flows.write"), requireJsonBody,
        guarded(functionRoutes.sandboxRoute()));
    // set_context (issue 36): Node-RED's own context.write, which its DELETE /context/... needs; the service calls
    // it with the editor user's token after the user approved the card.
    RED.httpAdmin.post("/ai-sidebar/context", RED.auth.needsPermission("context.write"), requireJsonBody,
        guarded(contextRoute.contextRoute(RED)));
    RED.httpAdmin.get("/ai-sidebar/configs", RED.auth.needsPermission("ai-sidebar.read"),
        guarded(providerLib.configsRoute(RED)));
    RED.httpAdmin.get("/ai-sidebar/service-status", RED.auth.needsPermission("ai-sidebar.read"),
        guarded(serviceStatusRoute));
    RED.httpAdmin.get("/ai-sidebar/scenarios", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/scenarios"));
    RED.httpAdmin.get("/ai-sidebar/memory-stats", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/memory-stats"));
    RED.httpAdmin.get("/ai-sidebar/knowledge", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/knowledge"));
    // The document library (issue 37): everyone may keep private documents; the service asks write permission
    // (forwarded as X-AI-Sidebar-Permission) for adding, replacing or deleting a shared one.
    RED.httpAdmin.get("/ai-sidebar/knowledge/documents", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/knowledge/documents"));
    RED.httpAdmin.get("/ai-sidebar/knowledge/documents/search", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/knowledge/documents/search"));
    RED.httpAdmin.post("/ai-sidebar/knowledge/documents", RED.auth.needsPermission("ai-sidebar.read"),
        requireJsonBody, forwardTo("/ai-sidebar/knowledge/documents"));
    RED.httpAdmin.delete("/ai-sidebar/knowledge/documents/:id", RED.auth.needsPermission("ai-sidebar.read"),
        realSegment("id"), forwardTo(function (req) {
            return "/ai-sidebar/knowledge/documents/" + encodeURIComponent(req.params.id);
        }));
    // Everyone may read their own token and cost totals; the service widens them to everyone's for write callers.
    RED.httpAdmin.get("/ai-sidebar/usage", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/usage"));
    // The user's own MCP sign-in grants (issue 40): the service shows and revokes only the caller's, so read is enough.
    RED.httpAdmin.get("/ai-sidebar/mcp-grants", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/mcp-grants"));
    RED.httpAdmin.post("/ai-sidebar/mcp-grants/:grantId/revoke", RED.auth.needsPermission("ai-sidebar.read"),
        realSegment("grantId"), requireJsonBody, forwardTo(function (req) {
            return "/ai-sidebar/mcp-grants/" + encodeURIComponent(req.params.grantId) + "/revoke";
        }));
    // Flow history (issue 35): as sensitive as the flows, so Node-RED's own flows permissions.
    RED.httpAdmin.get("/ai-sidebar/flow-history", RED.auth.needsPermission("flows.read"),
        forwardTo("/ai-sidebar/flow-history"));
    RED.httpAdmin.get("/ai-sidebar/flow-history/diff", RED.auth.needsPermission("flows.read"),
        forwardTo("/ai-sidebar/flow-history/diff"));
    RED.httpAdmin.patch("/ai-sidebar/flow-history/:rev", RED.auth.needsPermission("flows.write"), realSegment("rev"),
        requireJsonBody, forwardTo(function (req) {
            return "/ai-sidebar/flow-history/" + encodeURIComponent(req.params.rev);
        }));
    // Reindexing makes the service read all of Node-RED's help and flows again: a change, so write.
    RED.httpAdmin.post("/ai-sidebar/knowledge/reindex", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        forwardTo("/ai-sidebar/knowledge/reindex"));
    RED.httpAdmin.get("/ai-sidebar/history/:sessionId", RED.auth.needsPermission("ai-sidebar.read"),
        realSegment("sessionId"), forwardTo(function (req) {
            return "/ai-sidebar/history/" + encodeURIComponent(req.params.sessionId);
        }));
    RED.httpAdmin.post("/ai-sidebar/search", RED.auth.needsPermission("ai-sidebar.read"), requireJsonBody,
        forwardTo("/ai-sidebar/search"));
    RED.httpAdmin.get("/ai-sidebar/templates", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/templates"));
    RED.httpAdmin.post("/ai-sidebar/templates", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        forwardTo("/ai-sidebar/templates"));
    RED.httpAdmin.get("/ai-sidebar/sessions", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/sessions"));
    RED.httpAdmin.post("/ai-sidebar/sessions", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        forwardTo("/ai-sidebar/sessions"));
    RED.httpAdmin.patch("/ai-sidebar/sessions/:id", RED.auth.needsPermission("ai-sidebar.write"), realSegment("id"),
        requireJsonBody, forwardTo(sessionPath));
    RED.httpAdmin.delete("/ai-sidebar/sessions/:id", RED.auth.needsPermission("ai-sidebar.write"), realSegment("id"),
        forwardTo(sessionPath));
    // Edit and resend: a new conversation with the turns before a question (a change of what the service stores).
    RED.httpAdmin.post("/ai-sidebar/sessions/:id/fork", RED.auth.needsPermission("ai-sidebar.write"), realSegment("id"),
        requireJsonBody, forwardTo(function (req) {
            return sessionPath(req) + "/fork";
        }));
    RED.httpAdmin.post("/ai-sidebar/execute-tool", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        forwardTo("/ai-sidebar/execute-tool"));
    // Approving a write needs write permission (the service checks it too); resuming sends the chosen ai-config
    // node's settings again, as a chat does, since a paused run never stores a key.
    RED.httpAdmin.post("/ai-sidebar/resume", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        guarded(providerLib.configMiddleware(RED)), forwardTo("/ai-sidebar/resume", { stream: true }));
    RED.httpAdmin.get("/ai-sidebar/approvals", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/approvals"));
    RED.httpAdmin.post("/ai-sidebar/approvals/:runId/applied", RED.auth.needsPermission("ai-sidebar.write"),
        realSegment("runId"), requireJsonBody, forwardTo(function (req) {
            return "/ai-sidebar/approvals/" + encodeURIComponent(req.params.runId) + "/applied";
        }));
    RED.httpAdmin.post("/ai-sidebar/approvals/:runId/token", RED.auth.needsPermission("ai-sidebar.write"),
        realSegment("runId"), requireJsonBody, forwardTo(function (req) {
            return "/ai-sidebar/approvals/" + encodeURIComponent(req.params.runId) + "/token";
        }));
    // Registered last, so it only sees what no route above took: Node-RED would answer those with its HTML
    // "Cannot GET" page. Behind the read permission, so it tells an anonymous caller nothing about the routes.
    RED.httpAdmin.all(["/ai-sidebar", "/ai-sidebar/*"], RED.auth.needsPermission("ai-sidebar.read"), notFound);
};

/**
 * Start the companion service as a supervised child process when settings.js asks for it
 * (`aiSidebar: { startService: true, python: "python3" }`), and publish it as `supervisor.current`.
 *
 * The child runs `<python> -m service` in the user directory, listening on the port of the service URL the plugin
 * relays to, with the plugin's token and its memory database in `<userDir>/ai-sidebar/memory.db`.
 *
 * @param {object} RED the Node-RED plugin API
 * @param {{serviceUrl: string, serviceToken: (string|undefined), tokenGenerated: boolean, tokenless: (boolean|undefined)}}
 *     config the relay's configuration (`tokenless`: the generated token could not be kept, so no service starts)
 */
function startSupervisedService(RED, config) {
    const options = RED.settings.aiSidebar || {};
    if (!options.startService || config.tokenless) {
        return;
    }
    if (config.tokenGenerated) {
        RED.log.info("[ai-sidebar] the service gets the token kept in " + serviceTokenLib.tokenPath(RED.settings.userDir) +
            " (AI_SIDEBAR_TOKEN is not set)");
    }
    const env = supervisorLib.serviceEnvironment({
        env: process.env, serviceUrl: config.serviceUrl, serviceToken: config.serviceToken, settings: RED.settings
    });
    fs.mkdirSync(path.dirname(env.MEMORY_DB_PATH), { recursive: true });
    const supervisor = supervisorLib.createSupervisor({
        command: options.python || "python3", args: ["-m", "service"], env: env, cwd: RED.settings.userDir,
        log: RED.log
    });
    supervisorLib.current = supervisor;
    supervisor.start();
}

/**
 * Whether the service answers `GET /healthz` (open without the service token) with 200 within HEALTH_ANSWER_MS.
 *
 * @param {{request: function(object): Promise<import("http").IncomingMessage>}} relay
 * @returns {Promise<boolean>}
 */
async function serviceAnswers(relay) {
    try {
        const answer = await relay.request({ path: "/healthz", method: "GET", answerTimeout: HEALTH_ANSWER_MS });
        answer.resume();
        return answer.statusCode === 200;
    } catch {
        return false;
    }
}

/**
 * The `status()` of the service supervisor the plugin runs (opt-in `aiSidebar.startService`), or null.
 *
 * @returns {?object}
 */
function supervisorStatus() {
    const supervisor = supervisorLib.current;
    return supervisor ? supervisor.status() : null;
}

/**
 * The absolute path of the wheel bundled with the package, or null.
 *
 * @returns {?string}
 */
function bundledWheel() {
    let names;
    try {
        names = fs.readdirSync(WHEEL_DIR);
    } catch {
        return null;
    }
    const wheel = serviceStatusLib.chooseWheel(names);
    return wheel ? path.join(WHEEL_DIR, wheel) : null;
}

/**
 * Turn body-parser failures on `/ai-sidebar/*` into the design's JSON errors.
 *
 * Node-RED parses admin request bodies in its editor-api app, before the runtime admin app (`RED.httpAdmin`)
 * that holds plugin routes. A malformed JSON body therefore never reaches these routes: the error skips every
 * later non-error middleware and Express's final handler answers with an HTML page that includes the stack
 * trace (Node-RED 4.1, unless NODE_ENV=production). An error handler on `RED.httpAdmin` would be skipped too,
 * so this one is added to the app `RED.httpAdmin` is mounted in (`app.parent`, set by Express on mount) and
 * limited to this plugin's paths; errors on every other path pass through untouched.
 *
 * @param {object} RED the Node-RED plugin API
 */
function installBodyErrorHandler(RED) {
    const parent = RED.httpAdmin && RED.httpAdmin.parent;
    if (!parent || typeof parent.use !== "function") {
        return;
    }
    parent.use("/ai-sidebar", function (err, req, res, next) {
        if (res.headersSent) {
            next(err);
            return;
        }
        if (err && err.type === "entity.parse.failed") {
            relayLib.sendJson(res, 400, relayLib.errorBody("invalid_json",
                "The request body is not a valid JSON object: " + String(err.message).split("\n")[0]));
        } else if (err && err.type === "entity.too.large") {
            relayLib.sendJson(res, 413, relayLib.errorBody("request_too_large",
                "The request body is larger than Node-RED accepts (settings.apiMaxLength)."));
        } else if (err && err.status >= 400 && err.status < 500) {
            relayLib.sendJson(res, err.status, relayLib.errorBody("bad_request",
                "The request could not be read: " + String(err.message).split("\n")[0]));
        } else {
            RED.log.warn("[ai-sidebar] request to " + req.path + " failed: " + (err && err.message));
            relayLib.sendJson(res, 500, relayLib.errorBody("internal_error",
                "The AI sidebar could not handle this request; see the Node-RED log."));
        }
    });
}
