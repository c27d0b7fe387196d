/**
 * Runtime half of the AI sidebar: the `/ai-sidebar/*` admin routes the editor calls.
 *
 * Each route checks the editor user's permission, then relays the request to the node-red-ai-sidebar service
 * (AI_SIDEBAR_SERVICE_URL, default http://127.0.0.1:8765) through `lib/relay.js`, which also forwards the user's
 * identity. The editor half is `ai-sidebar.html`.
 */
"use strict";

const relayLib = require("./lib/relay");
const providerLib = require("./lib/provider");

module.exports = function (RED) {
    const config = relayLib.configFromEnvironment(process.env);
    let relay = null;
    let configError = null;
    try {
        relay = relayLib.createRelay({
            serviceUrl: config.serviceUrl,
            serviceToken: config.serviceToken,
            log: RED.log
        });
    } catch (err) {
        configError = "AI_SIDEBAR_SERVICE_URL is not a valid http(s) URL: " + err.message;
        RED.log.error("[ai-sidebar] " + configError);
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
        next();
    }

    function forwardTo(path, options) {
        return function (req, res) {
            if (!relay) {
                relayLib.sendJson(res, 500, relayLib.errorBody("service_url_invalid", configError));
                return;
            }
            const target = typeof path === "function" ? path(req) : path;
            relay.forward(req, res, { path: target, stream: !!(options && options.stream) });
        };
    }

    installBodyErrorHandler(RED);

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
        providerLib.configMiddleware(RED), forwardTo("/ai-sidebar/stream-chat", { stream: true }));
    RED.httpAdmin.get("/ai-sidebar/configs", RED.auth.needsPermission("ai-sidebar.read"),
        providerLib.configsRoute(RED));
    RED.httpAdmin.get("/ai-sidebar/scenarios", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/scenarios"));
    RED.httpAdmin.get("/ai-sidebar/memory-stats", RED.auth.needsPermission("ai-sidebar.read"),
        forwardTo("/ai-sidebar/memory-stats"));
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
    RED.httpAdmin.post("/ai-sidebar/execute-tool", RED.auth.needsPermission("ai-sidebar.write"), requireJsonBody,
        forwardTo("/ai-sidebar/execute-tool"));
    // Registered last, so it only sees what no route above took: Node-RED would answer those with its HTML
    // "Cannot GET" page. Behind the read permission, so it tells an anonymous caller nothing about the routes.
    RED.httpAdmin.all(["/ai-sidebar", "/ai-sidebar/*"], RED.auth.needsPermission("ai-sidebar.read"), notFound);
};

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
