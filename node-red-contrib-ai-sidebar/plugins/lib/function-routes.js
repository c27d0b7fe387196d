/**
 * The plugin's own routes for function node proposals (contracts20): `POST /ai-sidebar/function-check` and
 * `POST /ai-sidebar/function-sandbox`. They run in the Node-RED runtime and never reach the service.
 *
 * Bodies are validated here (400 `invalid_request` naming the field); the sandbox runs at most
 * `MAX_CONCURRENT_SANDBOXES` at once (429 `too_many_requests` beyond), so a burst of requests cannot start a
 * crowd of sandbox processes.
 */
"use strict";

const relayLib = require("./relay");
const { checkFunction, PARTS } = require("./function-check");
const { runSandbox, MAX_TIMEOUT_MS } = require("./function-sandbox");

const CODE_LIMIT = 100000;  // characters of one code part, as the service's assist request
const MAX_LIBS = 50;
const MAX_OUTPUTS = 100;
const MAX_CONCURRENT_SANDBOXES = 2;

function invalid(res, field, detail) {
    relayLib.sendJson(res, 400, relayLib.errorBody("invalid_request",
        "The request field " + field + " " + detail + "."));
}

/** The body's problem as `[field, detail]`, or null. */
function codeProblem(body, parts) {
    const code = body.code;
    if (code === null || typeof code !== "object" || Array.isArray(code)) {
        return ["code", "must be an object with the code parts " + parts.join(", ")];
    }
    for (const key of Object.keys(code)) {
        if (!PARTS.includes(key)) {
            return ["code." + key, "is not a code part (" + PARTS.join(", ") + ")"];
        }
        if (typeof code[key] !== "string" || code[key].length > CODE_LIMIT) {
            return ["code." + key, "must be a string of at most " + CODE_LIMIT + " characters"];
        }
    }
    if (typeof code[parts[0]] !== "string") {
        return ["code." + parts[0], "is required"];
    }
    if (body.outputs !== undefined && !(Number.isInteger(body.outputs) && body.outputs >= 0 &&
            body.outputs <= MAX_OUTPUTS)) {
        return ["outputs", "must be an integer from 0 to " + MAX_OUTPUTS];
    }
    return null;
}

function libsProblem(libs) {
    if (libs === undefined) {
        return null;
    }
    if (!Array.isArray(libs) || libs.length > MAX_LIBS || !libs.every(function (lib) {
        return lib && typeof lib === "object" && typeof lib.var === "string" && typeof lib.module === "string";
    })) {
        return ["libs", "must be a list of at most " + MAX_LIBS + " objects {var, module} of strings"];
    }
    return null;
}

/**
 * `POST /ai-sidebar/function-check`: `{code{onMessage, onStart?, onStop?}, libs?, outputs?}` → 200 `{problems}`.
 */
function checkRoute(req, res) {
    const body = req.body;
    const problem = codeProblem(body, ["onMessage"]) || libsProblem(body.libs);
    if (problem) {
        invalid(res, problem[0], problem[1]);
        return;
    }
    relayLib.sendJson(res, 200, { problems: checkFunction(body.code, body.libs || []) });
}

/**
 * The `POST /ai-sidebar/function-sandbox` handler: `{code{onMessage}, msg, outputs?, timeoutMs?}` → 200
 * `{outputs, logs, status?}` or 200 `{outputs, logs, error{code, message}}` (see function-sandbox.js).
 *
 * @returns {function(object, object): Promise<void>}
 */
function sandboxRoute() {
    let running = 0;
    return async function (req, res) {
        const body = req.body;
        const problem = codeProblem(body, ["onMessage"]);
        if (problem) {
            invalid(res, problem[0], problem[1]);
            return;
        }
        if (body.msg === null || typeof body.msg !== "object" || Array.isArray(body.msg)) {
            invalid(res, "msg", "must be a message object");
            return;
        }
        if (body.timeoutMs !== undefined && !(Number.isInteger(body.timeoutMs) && body.timeoutMs >= 1 &&
                body.timeoutMs <= MAX_TIMEOUT_MS)) {
            invalid(res, "timeoutMs", "must be an integer from 1 to " + MAX_TIMEOUT_MS);
            return;
        }
        if (running >= MAX_CONCURRENT_SANDBOXES) {
            relayLib.sendJson(res, 429, relayLib.errorBody("too_many_requests",
                "Already running " + running + " sandboxed functions; try again when they have finished."));
            return;
        }
        running += 1;
        try {
            const answer = await runSandbox({ code: body.code.onMessage, msg: body.msg,
                outputs: body.outputs === undefined ? 1 : body.outputs, timeoutMs: body.timeoutMs });
            relayLib.sendJson(res, 200, answer);
        } finally {
            running -= 1;
        }
    };
}

module.exports = { checkRoute: checkRoute, sandboxRoute: sandboxRoute, MAX_CONCURRENT_SANDBOXES: MAX_CONCURRENT_SANDBOXES };
