/**
 * `ai-chat`: asks the AI assistant service a question from inside a flow.
 *
 * `msg.payload` (a string) is the question; the answer comes back in `msg.payload`, with the tools the assistant
 * ran in `msg.tools`, the token usage in `msg.usage` and the conversation in `msg.sessionId`. The request goes to
 * the service named by AI_SIDEBAR_SERVICE_URL through the plugin's relay (`plugins/lib/relay.js`), with the
 * settings and key of the chosen `ai-config` node, or with the service's own provider when none is chosen.
 *
 * At most `concurrency` questions are open at once; the others wait in a first-in first-out queue of at most
 * `queueLimit` messages. Closing the node (redeploy, stop) cancels the open requests, so the service sees the
 * disconnect and stops generating, and drops the queue.
 *
 * Least privilege: a flow may be reachable by anyone (an http-in endpoint has no login, even with adminAuth on), so
 * a request of this node carries `X-AI-Sidebar-Permission: read` (no tool by name, `@tools:`), the node's own
 * grants (`X-AI-Sidebar-Flow-Grants`: `tools` and `memory`, both off unless its configuration turns them on) and its
 * id (`X-AI-Sidebar-Flow-Node`); never an editor user. Memory is kept per conversation: only a `msg.sessionId` set
 * by the flow names one (`X-AI-Sidebar-Conversation`), so callers that do not share an id share no words.
 *
 * Flow changes (the "Allow flow changes" switch, off by default, with Tools on): the node's requests carry the grant
 * `flows`, so the service offers the write tools, and each write waits for a decision. Such a run ends on the
 * approval output (the last one) with `msg.approval = {runId, resumeToken, actions: [{tool, args, summary, diff}]}`
 * and a one-line `msg.payload`; nothing is written. A later message with `msg.resume = {resumeToken, decisions}`
 * (and the same `msg.sessionId` as the question, the token being bound to this node and conversation) continues
 * the run (`POST /ai-sidebar/resume`): approved writes are deployed through the Admin API with the flows revision
 * checked, and the rest of the answer goes out like any answer.
 *
 * Plan, ask, build, check (issue 34): a message starting with `/plan ` asks for a plan first. A run that waits for
 * the plan's approval leaves on the approval output with `msg.plan = {runId, resumeToken, steps, assumptions}`, one
 * that waits for an answer with `msg.clarification = {runId, resumeToken, question, choices, free}` (not
 * `msg.question`, which a catch path reads); `msg.resume =
 * {resumeToken, decisions}` answers a plan (`[{type: "approve", planChanges?}]`, `[{type: "edit", message}]`,
 * `[{type: "reject", message?}]`), `msg.resume = {resumeToken, answer: {choice} | {text}}` a question. A build's
 * checks on the running flow come with the answer as `msg.checks = [{round, passed, evidence}]` and its end as
 * `msg.verdict = {status: "done" | "not_done", summary, evidence}`.
 *
 * In a catch path (`msg.error` set by a `catch` node) the node asks about the caught error: the error goes to the
 * service as data (`lib/caught-error.js`), the question is `msg.question` or a default one in the node's language,
 * and `msg.payload` (the data of the message that failed) is not sent. With tools on, the service also reads the
 * node that raised the error.
 */
"use strict";

const relayLib = require("../plugins/lib/relay");
const chatClient = require("./lib/chat-client");
const caughtError = require("./lib/caught-error");

const DEFAULT_CONCURRENCY = 2;
const DEFAULT_QUEUE_LIMIT = 100;

/**
 * A whole number property within bounds, or the default.
 *
 * @param {*} value
 * @param {number} fallback
 * @param {number} min
 * @returns {number}
 */
function wholeNumber(value, fallback, min) {
    const number = Number(value);
    if (value === undefined || value === null || String(value).trim() === "" || !Number.isInteger(number) ||
        number < min) {
        return fallback;
    }
    return number;
}

/**
 * @param {string} text
 * @returns {boolean} whether text is well-formed UTF-16 (no lone surrogate), so it can be percent-encoded for a
 *     header and sent as JSON the service reads
 */
function wellFormed(text) {
    try {
        encodeURIComponent(text);
        return true;
    } catch {
        return false;
    }
}

module.exports = function (RED) {
    let sharedRelay = null;
    let relayProblem = null;
    try {
        // The plugin's token, generated and kept in the user directory when the plugin starts the service.
        const environment = relayLib.configFromEnvironment(process.env, RED.settings);
        sharedRelay = relayLib.createRelay({
            serviceUrl: environment.serviceUrl,
            serviceToken: environment.serviceToken,
            log: RED.log
        });
    } catch (err) {
        relayProblem = err.message;
    }

    /**
     * A coded Error with a translated message.
     *
     * @param {string} code
     * @param {string} key message key below `ai-chat.errors.`
     * @param {object} [values] interpolation values
     * @returns {Error}
     */
    function nodeError(code, key, values) {
        const err = new Error(RED._("ai-chat.errors." + key, values || {}));
        err.code = code;
        return err;
    }

    /**
     * The error to report for a failure of the service or the link to it, in the runtime's language.
     *
     * @param {Error} err a coded error from `chat-client`, relay or `ai-config`
     * @returns {Error}
     */
    function describe(err) {
        let described;
        if (err.reported) {
            described = nodeError(err.code, "reported", { code: err.code, message: err.detail });
        } else if (err.refused) {
            described = nodeError(err.code, "refused", { status: err.status, code: err.code, message: err.detail });
        } else if (err.code === "service_unreachable") {
            described = nodeError(err.code, "service_unreachable", { url: err.serviceUrl });
        } else if (err.code === "service_disconnected" || err.code === "service_bad_answer") {
            described = nodeError(err.code, err.code, { status: err.status });
        } else if (err.code === "invalid_config") {
            described = nodeError(err.code, "invalid_config", { message: err.message });
        } else {
            described = nodeError(err.code || "internal_error", "unexpected", { message: err.message });
        }
        if (err.status) {
            described.status = err.status;
        }
        return described;
    }

    function AiChatNode(config) {
        RED.nodes.createNode(this, config);
        const node = this;
        node.name = config.name;
        node.configId = config.config || "";
        // The service's scenario keys (its edit dialog lists them); one the service lacks makes it use its default.
        node.scenario = typeof config.scenario === "string" ? config.scenario.trim() : "";
        node.language = typeof config.language === "string" ? config.language.trim() : "";
        node.concurrency = wholeNumber(config.concurrency, DEFAULT_CONCURRENCY, 1);
        node.queueLimit = wholeNumber(config.queueLimit, DEFAULT_QUEUE_LIMIT, 0);
        // Only `true` turns a switch on: a node saved before these switches existed has none.
        node.allowFlows = config.flows === true;
        // Outputs: the answer, the streamed pieces (when on), the approvals (when flow changes are allowed).
        node.streamOutput = Number(config.outputs) === (node.allowFlows ? 3 : 2);
        node.outputCount = 1 + (node.streamOutput ? 1 : 0) + (node.allowFlows ? 1 : 0);
        node.grants = [];
        if (config.tools === true) {
            node.grants.push("tools");
        }
        if (config.memory === true) {
            node.grants.push("memory");
        }
        if (node.allowFlows && config.tools === true) {
            // Write tools are tools: without Tools the agent offers none, so the grant would only let a message
            // resume runs this node cannot start.
            node.grants.push("flows");
        }
        // node.id, not _alias: each instance of a subflow gets its own stable id (instance id + node id), so two
        // instances never share a memory.
        node.flowNodeId = node.id;

        const relay = sharedRelay;
        const queue = [];
        const active = new Set();
        let closing = false;
        let lastOutcome = null;
        let shownStatus = null;

        function showStatus(key) {
            if (key === shownStatus) {
                return;
            }
            shownStatus = key;
            const look = {
                waiting: { fill: "yellow", shape: "ring" },
                approval: { fill: "yellow", shape: "dot" },
                streaming: { fill: "blue", shape: "dot" },
                done: { fill: "green", shape: "dot" },
                error: { fill: "red", shape: "ring" },
                "missing-config": { fill: "red", shape: "ring" },
                "service-url-invalid": { fill: "red", shape: "ring" }
            }[key];
            node.status(Object.assign({ text: "ai-chat.status." + key }, look));
        }

        function refreshStatus() {
            if (closing) {
                return;
            }
            if (active.size === 0) {
                if (lastOutcome) {
                    showStatus(lastOutcome);
                }
                return;
            }
            let streaming = false;
            active.forEach(function (job) {
                streaming = streaming || job.streaming;
            });
            showStatus(streaming ? "streaming" : "waiting");
        }

        function configNode() {
            if (!node.configId) {
                return null;
            }
            return RED.nodes.getNode(node.configId);
        }

        if (!relay) {
            node.error(RED._("ai-chat.errors.service_url_invalid", { message: relayProblem }));
            showStatus("service-url-invalid");
        } else if (node.configId && !configNode()) {
            showStatus("missing-config");
        }

        /**
         * The stream-chat body for a message, or a coded Error naming the bad input.
         *
         * @param {object} msg
         * @returns {object|Error}
         */
        function requestBody(msg) {
            const caught = caughtError.fromMessage(msg);
            const language = msg.language ? String(msg.language) : node.language;
            let question = msg.payload;
            if (caught) {
                // The payload of a caught message is the data that failed, not a question (and may hold anything).
                question = msg.question;
                if (question === undefined || question === null || question === "") {
                    question = caughtError.defaultQuestion(language);
                } else if (typeof question !== "string") {
                    return nodeError("invalid_payload", "question_not_string", { type: typeof question });
                }
            } else if (typeof question !== "string") {
                return nodeError("invalid_payload", "payload_not_string", { type: typeof question });
            }
            if (!question.trim()) {
                return nodeError("invalid_payload", caught ? "question_empty" : "payload_empty");
            }
            const body = { message: question };
            if (caught) {
                body.error = caught;
            }
            for (const property of ["sessionId", "scenario", "language", "flowId"]) {
                const value = msg[property];
                if (value === undefined || value === null || value === "") {
                    continue;
                }
                if (typeof value !== "string" && typeof value !== "number") {
                    // invalid_session_id, invalid_scenario, invalid_language, invalid_flow_id
                    const code = "invalid_" + property.replace(/Id$/, "_id").toLowerCase();
                    return nodeError(code, "property_not_string", { property: "msg." + property, type: typeof value });
                }
            }
            const sessionId = sessionIdOf(msg);
            if (sessionId instanceof Error) {
                return sessionId;
            }
            if (sessionId) {
                body.sessionId = sessionId;
            }
            const scenario = msg.scenario ? String(msg.scenario) : node.scenario;
            if (scenario) {
                body.scenario = scenario;
            }
            if (language) {
                body.language = language;
            }
            if (msg.flowId !== undefined && msg.flowId !== null && msg.flowId !== "") {
                body.selectedFlow = { id: String(msg.flowId) };
            }
            return withProvider(body);
        }

        /**
         * `msg.sessionId` as the conversation's name: "" when the flow set none, a coded Error when it is not one
         * the service accepts (the caller has checked it is a string or a number).
         *
         * @param {object} msg
         * @returns {string|Error}
         */
        function sessionIdOf(msg) {
            if (msg.sessionId === undefined || msg.sessionId === null || msg.sessionId === "") {
                return "";
            }
            const sessionId = String(msg.sessionId);
            return wellFormed(sessionId) ? sessionId : nodeError("invalid_session_id", "session_id_malformed");
        }

        /**
         * `body` with the chosen config node's provider settings, or a coded Error when that node is not deployed
         * or its settings are refused.
         *
         * @param {object} body
         * @returns {object|Error}
         */
        function withProvider(body) {
            if (!node.configId) {
                return body;
            }
            const settingsNode = configNode();
            if (!settingsNode || typeof settingsNode.providerSettings !== "function") {
                return nodeError("config_not_found", "config_not_found", { id: node.configId });
            }
            try {
                body.provider = settingsNode.providerSettings();
            } catch (err) {
                return describe(err);
            }
            return body;
        }

        /**
         * The resume body for a message with `msg.resume`, or a coded Error naming the bad input.
         *
         * @param {object} msg
         * @returns {object|Error}
         */
        function resumeBody(msg) {
            if (!node.allowFlows) {
                return nodeError("flows_not_allowed", "flows_not_allowed");
            }
            const resume = msg.resume;
            const decided = Boolean(resume && Array.isArray(resume.decisions) && resume.decisions.length > 0);
            const answered = Boolean(resume && resume.answer && typeof resume.answer === "object" &&
                !Array.isArray(resume.answer));
            if (!resume || typeof resume !== "object" || typeof resume.resumeToken !== "string" ||
                !resume.resumeToken || decided === answered) {
                return nodeError("invalid_resume", "invalid_resume");
            }
            const body = decided ? { resumeToken: resume.resumeToken, decisions: resume.decisions }
                : { resumeToken: resume.resumeToken, answer: resume.answer };
            if (msg.sessionId !== undefined && msg.sessionId !== null && msg.sessionId !== "" &&
                typeof msg.sessionId !== "string" && typeof msg.sessionId !== "number") {
                return nodeError("invalid_session_id", "property_not_string",
                    { property: "msg.sessionId", type: typeof msg.sessionId });
            }
            // Not sent in the body: it names the conversation header, part of the identity owning the token.
            const sessionId = sessionIdOf(msg);
            if (sessionId instanceof Error) {
                return sessionId;
            }
            if (sessionId) {
                body.sessionId = sessionId;
            }
            return withProvider(body);
        }

        /**
         * The one-line `msg.payload` of an approval message.
         *
         * @param {object[]} actions
         * @returns {string}
         */
        function approvalLine(actions) {
            const summaries = actions.map(function (action) {
                return String((action && (action.summary || action.tool)) || "");
            }).filter(Boolean).join("; ");
            return RED._("ai-chat.approval.payload", { count: actions.length, summary: summaries });
        }

        /**
         * The array for `send` with `msg` on output `index` (a single message when the node has one output).
         *
         * @param {number} index
         * @param {object} msg
         * @returns {object|object[]}
         */
        function onOutput(index, msg) {
            if (node.outputCount === 1) {
                return msg;
            }
            const messages = new Array(node.outputCount).fill(null);
            messages[index] = msg;
            return messages;
        }

        /**
         * Finish a message with an error (`done(err)`), so that a Catch node receives it, without letting a failure
         * of that report escape.
         *
         * Node-RED hands Catch nodes a copy of the message; a message it cannot copy (nested deeper than the call
         * stack allows, as an http in node makes of a hostile JSON body) makes `done(err)` throw, and out of an
         * input handler or a promise callback that exception would end the Node-RED process. The error is then
         * logged without the message.
         *
         * @param {function(Error=)} done
         * @param {Error} err
         */
        function finishWithError(done, err) {
            try {
                done(err);
            } catch {
                node.error(err);
            }
        }

        function fail(job, err) {
            lastOutcome = "error";
            finishWithError(job.done, err);
        }

        /** Report a message that was not asked at all (bad input, no config node, full queue). */
        function refuse(done, err) {
            lastOutcome = err.code === "config_not_found" ? "missing-config" : "error";
            refreshStatus();
            finishWithError(done, err);
        }

        function start(job) {
            const controller = new AbortController();
            job.controller = controller;
            job.streaming = false;
            active.add(job);
            refreshStatus();
            const msg = job.msg;
            const call = job.resume ? chatClient.resume : chatClient.ask;
            let body = job.body;
            const conversation = body.sessionId;
            if (job.resume) {
                body = Object.assign({}, body);
                delete body.sessionId;
            }
            job.settled = call(relay, body, {
                flowNode: { id: node.flowNodeId, grants: node.grants, conversation: conversation },
                signal: controller.signal,
                onEvent: function (event) {
                    if (!job.streaming && (event.type === "token" || event.type === "tool_call")) {
                        job.streaming = true;
                        refreshStatus();
                    }
                },
                onToken: node.streamOutput ? function (chunk) {
                    const part = RED.util.cloneMessage(msg);
                    part.payload = chunk;
                    job.send(onOutput(1, part));
                } : undefined
            }).then(function (result) {
                if (closing) {
                    job.done();
                    return;
                }
                msg.tools = result.tools;
                if (result.usage) {
                    msg.usage = result.usage;
                }
                const waiting = result.approval || result.plan || result.question;
                if (result.sessionId && !waiting) {
                    // An approval keeps msg.sessionId as the flow set it: a resume must name the same conversation.
                    msg.sessionId = result.sessionId;
                }
                if (job.resume) {
                    // Consumed: the message may go on, and a token is single-use anyway.
                    delete msg.resume;
                }
                if (result.errors.length) {
                    fail(job, describe(result.errors[0]));
                    return;
                }
                if (result.checks.length) {
                    msg.checks = result.checks;
                }
                if (result.verdict) {
                    msg.verdict = result.verdict;
                }
                if (waiting && node.allowFlows) {
                    if (result.approval) {
                        msg.approval = result.approval;
                        msg.payload = approvalLine(result.approval.actions);
                    } else if (result.plan) {
                        msg.plan = result.plan;
                        msg.payload = RED._("ai-chat.approval.plan", { count: result.plan.steps.length,
                            titles: result.plan.steps.map(function (step) {
                                return String((step && step.title) || "");
                            }).join("; ") });
                    } else {
                        msg.clarification = result.question;
                        msg.payload = RED._("ai-chat.approval.question", { question: result.question.question });
                    }
                    lastOutcome = "approval";
                    job.send(onOutput(node.outputCount - 1, msg));
                    job.done();
                    return;
                }
                msg.payload = result.answer;
                lastOutcome = "done";
                job.send(onOutput(0, msg));
                job.done();
            }, function (err) {
                if (closing) {
                    // Cancelled by close: not a fault of the message, and nothing to send.
                    job.done();
                    return;
                }
                fail(job, describe(err));
            }).catch(function (err) {
                // A fault in a node downstream of send() must not leave an unhandled rejection behind.
                node.error(err, msg);
            }).finally(function () {
                active.delete(job);
                next();
            }).catch(function (err) {
                // Nor a fault while starting the next queued question: Node-RED ends its process on either.
                node.error(err);
            });
        }

        function next() {
            while (!closing && active.size < node.concurrency && queue.length) {
                start(queue.shift());
            }
            refreshStatus();
        }

        node.on("input", function (msg, send, done) {
            if (closing) {
                done();
                return;
            }
            if (!relay) {
                finishWithError(done, nodeError("service_url_invalid", "service_url_invalid",
                    { message: relayProblem }));
                return;
            }
            const source = msg.error && typeof msg.error === "object" ? msg.error.source : null;
            if (source && typeof source === "object" && source.id === node.id) {
                // Its own error, back through a catch node (scope "all"): asking again would fail again, once per
                // round until Node-RED's limit of catches per message, each time at the cost of the model.
                node.warn(RED._("ai-chat.errors.own_error", { message: String(msg.error.message) }));
                done();
                return;
            }
            const resuming = msg.resume !== undefined && msg.resume !== null;
            const body = resuming ? resumeBody(msg) : requestBody(msg);
            if (body instanceof Error) {
                refuse(done, body);
                return;
            }
            const job = { msg: msg, body: body, send: send, done: done, resume: resuming };
            if (active.size < node.concurrency) {
                start(job);
                return;
            }
            if (queue.length >= node.queueLimit) {
                refuse(done, nodeError("queue_full", "queue_full",
                    { limit: node.queueLimit, concurrency: node.concurrency }));
                return;
            }
            queue.push(job);
            refreshStatus();
        });

        node.on("close", function (removed, done) {
            closing = true;
            // Dropped messages are finished without being sent: Complete nodes see them, nothing downstream runs.
            queue.splice(0).forEach(function (job) {
                job.done();
            });
            const pending = [];
            active.forEach(function (job) {
                job.controller.abort();
                pending.push(job.settled);
            });
            Promise.allSettled(pending).then(function () {
                node.status({});
                done();
            });
        });
    }

    RED.nodes.registerType("ai-chat", AiChatNode);
};
