/**
 * One question to the service's `POST /ai-sidebar/stream-chat` (or the continuation of a run that waited for
 * approval, `POST /ai-sidebar/resume`), read to its end (DESIGN.md, "Stream events").
 *
 * The `ai-chat` node does not relay the stream to a browser: it collects the answer text, the tool calls with their
 * results, the usage and the session, and hands them back in one result. The request goes through the plugin's
 * relay (`plugins/lib/relay.js`), so the service URL, the service token and the connection timeout follow the same
 * rules as the sidebar's; the stream is parsed by the sidebar's own parser (`resources/shared/sse-parser.js`).
 */
"use strict";

const { createSseParser } = require("../../resources/shared/sse-parser");

/**
 * An Error with a stable snake_case `code` (Node-RED copies it to `msg.error.code` for a Catch node).
 *
 * @param {string} code
 * @param {string} message a sentence naming what failed and what to do next
 * @param {object} [extra] more properties for the error (e.g. `status`)
 * @returns {Error}
 */
function chatError(code, message, extra) {
    const err = new Error(message);
    err.code = code;
    return Object.assign(err, extra);
}

/**
 * Read a whole (non-stream) answer body as text.
 *
 * @param {import("http").IncomingMessage} res
 * @returns {Promise<string>}
 */
function readText(res) {
    return new Promise(function (resolve, reject) {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", function (chunk) {
            text += chunk;
        });
        res.on("end", function () {
            resolve(text);
        });
        res.on("error", reject);
        res.on("aborted", function () {
            reject(chatError("aborted", "The request to the AI assistant service was cancelled."));
        });
    });
}

/**
 * The error a service answer outside the stream stands for: the design's JSON error, or a generic one.
 *
 * @param {import("http").IncomingMessage} res
 * @returns {Promise<Error>}
 */
async function answerError(res) {
    const text = await readText(res);
    let body = null;
    try {
        body = JSON.parse(text);
    } catch {
        // Not JSON: the generic error below.
    }
    if (body && body.error && typeof body.error.code === "string") {
        const detail = String(body.error.message || "");
        return chatError(body.error.code, "The AI assistant service refused the question (HTTP " + res.statusCode +
            " " + body.error.code + "): " + detail, { status: res.statusCode, detail: detail, refused: true });
    }
    return chatError("service_bad_answer", "The AI assistant service answered with HTTP " + res.statusCode +
        " and no event stream. Check that AI_SIDEBAR_SERVICE_URL points at the AI assistant service.",
        { status: res.statusCode });
}

/**
 * Ask the service one question and read its answer stream to the end.
 *
 * @param {{request: function(object): Promise<import("http").IncomingMessage>}} relay from `relay.createRelay`
 * @param {object} body the stream-chat body (`message`, `sessionId`, `provider`, ...)
 * @param {object} [options]
 * @param {{id: string, grants?: string[], conversation?: string}} [options.flowNode] the asking `ai-chat` node,
 *     sent as the `X-AI-Sidebar-Flow-*` headers (relay.js `flowNodeHeaders`)
 * @param {AbortSignal} [options.signal] cancels the request; the promise then rejects with code `aborted`
 * @param {function(string)} [options.onToken] called with each text chunk, in order
 * @param {function(object)} [options.onEvent] called with every event of the stream, in order
 * @returns {Promise<{answer: string, tools: object[], usage: (object|undefined), sessionId: (string|undefined),
 *     errors: Error[], approval: ({runId: string, resumeToken: string, actions: object[]}|undefined),
 *     status: (string|undefined), question: (object|undefined), plan: (object|undefined), checks: object[],
 *     verdict: (object|undefined)}>} `errors` holds each `error` event of the stream (the stream still ran to
 *     `done`); `approval` is the run's `approval_required` event when it waits for a decision on writes (`status`
 *     `awaiting_approval`), `question` its `question` event (`{runId, resumeToken, question, choices, free}`,
 *     `status` `awaiting_answer`), `plan` its `plan` event (`{runId, resumeToken, steps, assumptions}`);
 *     `checks` the build's `check` events (`{round, passed, evidence}`) and `verdict` its `verdict` (`{status,
 *     summary, evidence}`); rejects with a coded Error when there is no stream to read (refused, unreachable, cut
 *     off, aborted), and with the exception of `onToken` or `onEvent` if one throws (the answer is then abandoned)
 */
async function ask(relay, body, options) {
    return post(relay, "/ai-sidebar/stream-chat", body, options || {});
}

/**
 * Continue a run that waits for approval with the decisions on its actions, and read the rest of its stream.
 *
 * @param {{request: function(object): Promise<import("http").IncomingMessage>}} relay from `relay.createRelay`
 * @param {{resumeToken: string, decisions?: object[], answer?: object, provider?: object}} body the resume body
 *     (DESIGN.md, HTTP API): `decisions` for writes or a plan, `answer` (`{choice}` or `{text}`) for a question
 * @param {object} [options] as for `ask`; `flowNode` must name the node (and conversation) that started the run,
 *     the owner of the token
 * @returns {Promise<object>} as for `ask`
 */
async function resume(relay, body, options) {
    return post(relay, "/ai-sidebar/resume", body, options || {});
}

async function post(relay, path, body, options) {
    const res = await relay.request({
        path: path, method: "POST", body: body, flowNode: options.flowNode, signal: options.signal
    });
    const contentType = String(res.headers["content-type"] || "");
    if (res.statusCode < 200 || res.statusCode > 299 || !/^text\/event-stream\b/i.test(contentType)) {
        throw await answerError(res);
    }
    return readStream(res, options);
}

/**
 * Collect the events of an answer stream.
 *
 * @param {import("http").IncomingMessage} res
 * @param {{onToken?: function(string), onEvent?: function(object), signal?: AbortSignal}} options
 * @returns {Promise<object>} see `ask`
 */
function readStream(res, options) {
    return new Promise(function (resolve, reject) {
        const result = {
            answer: "", tools: [], usage: undefined, sessionId: undefined, errors: [], approval: undefined,
            status: undefined, question: undefined, plan: undefined, checks: [], verdict: undefined
        };
        let finished = false;
        const parser = createSseParser(function (event) {
            if (finished || !event || typeof event !== "object") {
                return;
            }
            try {
                handle(event);
            } catch (err) {
                // This runs inside a "data" listener, where an exception would be uncaught and end the Node-RED
                // process: the caller's callback failed, so the answer is abandoned and the failure handed back.
                finished = true;
                res.destroy();
                reject(err);
            }
        });

        function handle(event) {
            if (options.onEvent) {
                options.onEvent(event);
            }
            switch (event.type) {
                case "token":
                    if (typeof event.content === "string" && event.content) {
                        result.answer += event.content;
                        if (options.onToken) {
                            options.onToken(event.content);
                        }
                    }
                    break;
                case "tool_call":
                    result.tools.push({ tool: event.tool, params: event.params, result: undefined, ok: undefined });
                    break;
                case "tool_result":
                    recordToolResult(result.tools, event);
                    break;
                case "error": {
                    const detail = String(event.message || "");
                    result.errors.push(chatError(String(event.code || "service_error"),
                        "The AI assistant service reported " + (event.code || "an error") + ": " + detail,
                        { detail: detail, reported: true }));
                    break;
                }
                case "approval_required":
                    result.approval = {
                        runId: event.runId, resumeToken: event.resumeToken,
                        actions: Array.isArray(event.actions) ? event.actions : []
                    };
                    break;
                case "question":
                    result.question = {
                        runId: event.runId, resumeToken: event.resumeToken, question: String(event.question || ""),
                        choices: Array.isArray(event.choices) ? event.choices : [], free: event.free !== false
                    };
                    break;
                case "plan":
                    result.plan = {
                        runId: event.runId, resumeToken: event.resumeToken,
                        steps: Array.isArray(event.steps) ? event.steps : [],
                        assumptions: Array.isArray(event.assumptions) ? event.assumptions : []
                    };
                    break;
                case "check":
                    result.checks.push({ round: event.round, passed: event.passed === true,
                        evidence: Array.isArray(event.evidence) ? event.evidence : [] });
                    break;
                case "verdict":
                    result.verdict = { status: event.status, summary: String(event.summary || ""),
                        evidence: Array.isArray(event.evidence) ? event.evidence : [] };
                    break;
                case "done":
                    finished = true;
                    result.status = typeof event.status === "string" ? event.status : undefined;
                    result.sessionId = typeof event.sessionId === "string" ? event.sessionId : undefined;
                    if (event.usage && typeof event.usage === "object") {
                        result.usage = event.usage;
                    }
                    resolve(result);
                    break;
                default:
                    // Event types added to the design later are not this node's business.
                    break;
            }
        }

        res.setEncoding("utf8");
        res.on("data", function (chunk) {
            parser.push(chunk);
        });
        res.on("end", function () {
            parser.end();
            if (!finished) {
                finished = true;
                reject(chatError("service_disconnected", "The AI assistant service ended the answer without " +
                    "its final event. Try again; if it keeps happening, see the service's log."));
            }
        });
        res.on("error", function () {
            // Reported through "close" below.
        });
        res.on("close", function () {
            if (finished) {
                return;
            }
            finished = true;
            if (options.signal && options.signal.aborted) {
                reject(chatError("aborted", "The request to the AI assistant service was cancelled."));
            } else {
                reject(chatError("service_disconnected", "The AI assistant service closed the connection before " +
                    "the answer was complete. Try again."));
            }
        });
    });
}

/**
 * Attach a `tool_result` to the earliest call of that tool still waiting for one (or record it alone).
 *
 * @param {object[]} tools
 * @param {object} event
 */
function recordToolResult(tools, event) {
    const call = tools.find(function (entry) {
        return entry.tool === event.tool && entry.result === undefined && entry.ok === undefined;
    });
    const target = call || { tool: event.tool, params: undefined };
    target.result = event.result;
    target.ok = event.ok !== false;
    if (!call) {
        tools.push(target);
    }
}

module.exports = { ask: ask, resume: resume, chatError: chatError };
