/**
 * One run of function node code on one message, isolated from the Node-RED runtime (issue 20, contracts20
 * `function-sandbox`).
 *
 * Code the check (`function-check.js`) flags with `sandbox_escape` or `require_not_in_setup` (a `require`, which
 * the sandbox has no more than a function node) is not run at all (`sandbox_refused`). Other
 * code runs in a `worker_threads` Worker with small `resourceLimits` and an empty environment, inside a `vm`
 * context that offers only stubs of a function node's API (see `sandbox-worker.js`). The worker is terminated when
 * the time limit passes (`sandbox_timeout`), so an endless loop costs one thread for at most that long and the
 * runtime's own event loop never waits on it.
 */
"use strict";

const path = require("path");
const { Worker } = require("worker_threads");
const { checkFunction } = require("./function-check");

const REFUSED = new Set(["sandbox_escape", "require_not_in_setup"]);
const DEFAULT_TIMEOUT_MS = 1000;
const MAX_TIMEOUT_MS = 2000;
const WORKER = path.join(__dirname, "sandbox-worker.js");
// Enough for a function node's work on one message; a runaway allocation ends the worker, not Node-RED.
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, codeRangeSizeMb: 16,
    stackSizeMb: 4 };

/**
 * Run `code` once on `msg`.
 *
 * @param {object} options
 * @param {string} options.code On Message code
 * @param {*} options.msg the message (JSON)
 * @param {number} [options.outputs=1] the node's outputs
 * @param {number} [options.timeoutMs=1000] at most 2000
 * @returns {Promise<{outputs: Array<Array<?object>>, logs: Array<{level: string, text: string}>, status?: object,
 *     error?: {code: string, message: string}}>} never rejects: every fault is an `error` in the answer
 */
function runSandbox(options) {
    const outputs = Number.isInteger(options.outputs) && options.outputs >= 0 ? options.outputs : 1;
    const timeoutMs = Math.min(Number.isInteger(options.timeoutMs) && options.timeoutMs > 0 ? options.timeoutMs :
        DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
    const escapes = checkFunction({ onMessage: options.code }, []).filter(function (problem) {
        return REFUSED.has(problem.code);
    });
    if (escapes.length) {
        return Promise.resolve({ outputs: [], logs: [], error: { code: "sandbox_refused",
            message: "Not run: " + escapes.map(function (p) { return p.message; }).join(" ") } });
    }
    return new Promise(function (resolve) {
        let settled = false;
        const worker = new Worker(WORKER, {
            workerData: { code: options.code, msg: options.msg, outputs: outputs },
            resourceLimits: RESOURCE_LIMITS,
            env: {},
            stdout: true,
            stderr: true
        });
        function settle(answer) {
            if (!settled) {
                settled = true;
                clearTimeout(timer);
                resolve(answer);
                worker.terminate().catch(function () {});
            }
        }
        const timer = setTimeout(function () {
            settle({ outputs: [], logs: [], error: { code: "sandbox_timeout",
                message: "The code did not finish within " + timeoutMs + " ms and was stopped." } });
        }, timeoutMs);
        worker.on("message", settle);
        worker.on("error", function (err) {
            settle({ outputs: [], logs: [], error: { code: "sandbox_error",
                message: String(err && err.message || err) } });
        });
        worker.on("exit", function (code) {
            settle({ outputs: [], logs: [], error: { code: "sandbox_error",
                message: "The sandbox ended (exit code " + code + ") before the code finished." } });
        });
    });
}

module.exports = { runSandbox: runSandbox, DEFAULT_TIMEOUT_MS: DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS: MAX_TIMEOUT_MS };
