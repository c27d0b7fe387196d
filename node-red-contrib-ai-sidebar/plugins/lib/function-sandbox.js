/**
 * One run of function node code on one message, outside the Node-RED process (issue 20, contracts20
 * `function-sandbox`; the boundary of issue 29).
 *
 * Code the check (`function-check.js`) flags with `sandbox_escape` or `require_not_in_setup` (a `require`, which
 * the sandbox has no more than a function node) is not run at all (`sandbox_refused`). Other code runs in a
 * separate OS process (`sandbox-child.js`, started from `process.execPath`) under Node's permission model: it may
 * read only its own files and those of QuickJS, and has no child processes, workers, addons or environment. Inside
 * it the code runs in a QuickJS WebAssembly isolate with no host bindings but the function node stubs
 * (`sandbox-stubs.js`), which also keeps it off the network (Node's permission model does not cover the network on
 * Node 20 and 22). Limits: the isolate's heap (`sandbox_memory`), the time limit (`sandbox_timeout`, enforced by the
 * isolate's interrupt handler and, should the process outlive it, by killing its process group), and the V8 heap
 * of the process (`--max-old-space-size`). Node-RED's own event loop never waits on the code.
 *
 * Sources: Node.js "Permissions" (`--permission` since 22.13 / 23.5, `--experimental-permission` before;
 * `--allow-fs-read` repeated once per path; "does not restrict network access" on 20 and 22), quickjs-emscripten
 * README ("Safely evaluate untrusted Javascript", `setMemoryLimit`, `shouldInterruptAfterDeadline`).
 */
"use strict";

const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");
const { checkFunction } = require("./function-check");

const REFUSED = new Set(["sandbox_escape", "require_not_in_setup"]);
const DEFAULT_TIMEOUT_MS = 1000;
const MAX_TIMEOUT_MS = 2000;
// What the process may take to start Node.js and compile QuickJS before the code's own time starts; beyond
// timeoutMs + this the process group is killed (a busy Raspberry Pi needs well under a second).
const STARTUP_ALLOWANCE_MS = 5000;
// The isolate's WebAssembly memory (QuickJS's heap, stack and data): 16 MB of it are the engine's own.
const ISOLATE_MEMORY_BYTES = 64 * 1024 * 1024;
const PROCESS_HEAP_MB = 48;
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
const MAX_STDERR_CHARS = 4000;
const CHILD = require.resolve("./sandbox-child");

/** The directory of an installed package as `from` resolves it (wherever npm hoisted it). */
function packageDirectory(name, from) {
    let directory = path.dirname(require.resolve(name, from ? { paths: [from] } : undefined));
    while (!fs.existsSync(path.join(directory, "package.json"))) {
        directory = path.dirname(directory);
    }
    return directory;
}

let cachedArguments = null;

/**
 * The command-line arguments of the sandbox process: the permission flag the running Node.js accepts, read access
 * to this folder and the QuickJS packages only, a small V8 heap, no code generation from strings, the script.
 *
 * @returns {string[]}
 */
function childArguments() {
    if (!cachedArguments) {
        // --permission is the stable name from Node 22.13; Node 20 knows only --experimental-permission.
        const permission = process.allowedNodeEnvironmentFlags.has("--permission") ? "--permission" :
            "--experimental-permission";
        const core = packageDirectory("quickjs-emscripten-core");
        const readable = [__dirname, core, packageDirectory("@jitl/quickjs-wasmfile-release-sync"),
            packageDirectory("@jitl/quickjs-ffi-types", core)];
        cachedArguments = [permission].concat(readable.map(function (directory) {
            return "--allow-fs-read=" + path.join(directory, "*");
        }), ["--max-old-space-size=" + PROCESS_HEAP_MB, "--disallow-code-generation-from-strings",
            "--no-warnings", CHILD]);
    }
    return cachedArguments;
}

function errorAnswer(code, message) {
    return { outputs: [], logs: [], error: { code: code, message: message } };
}

/** Kill the sandbox's process group (it leads one: spawned detached), or the process alone where groups fail. */
function killGroup(child) {
    try {
        process.kill(-child.pid, "SIGKILL");
    } catch {
        child.kill("SIGKILL");
    }
}

/** The parent's reading of how the process ended without an answer. */
function exitAnswer(code, signal, stderr, timeoutMs) {
    if (/heap out of memory|Allocation failed|out of memory/i.test(stderr)) {
        return errorAnswer("sandbox_memory", "The code used more memory than the sandbox allows and was stopped.");
    }
    if (signal === "SIGKILL") {
        return errorAnswer("sandbox_timeout", "The code did not finish within " + timeoutMs + " ms and was stopped.");
    }
    // Why, from what Node.js printed: an uncaught error's "Name: message" line (before its stack and properties).
    const thrown = /^(?:[A-Za-z]*Error|Error \[[A-Z_]+\]): .+$/m.exec(stderr);
    const why = thrown ? ": " + thrown[0].trim().slice(0, 300) : ".";
    return errorAnswer("sandbox_error", "The sandbox ended (" + (signal || "exit code " + code) +
        ") before the code finished" + why);
}

/**
 * Run `code` once on `msg` in a sandbox process.
 *
 * @param {object} options
 * @param {string} options.code On Message code
 * @param {*} options.msg the message (JSON)
 * @param {number} [options.outputs=1] the node's outputs
 * @param {number} [options.timeoutMs=1000] at most 2000: the code's own time, after the sandbox has started
 * @returns {Promise<{outputs: Array<Array<?object>>, logs: Array<{level: string, text: string}>, status?: object,
 *     error?: {code: string, message: string}}>} never rejects: every fault is an `error` in the answer, with code
 *     `sandbox_refused`, `sandbox_timeout`, `sandbox_memory` or `sandbox_error`
 */
function runSandbox(options) {
    const outputs = Number.isInteger(options.outputs) && options.outputs >= 0 ? options.outputs : 1;
    const timeoutMs = Math.min(Number.isInteger(options.timeoutMs) && options.timeoutMs > 0 ? options.timeoutMs :
        DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
    const escapes = checkFunction({ onMessage: options.code }, []).filter(function (problem) {
        return REFUSED.has(problem.code);
    });
    if (escapes.length) {
        return Promise.resolve(errorAnswer("sandbox_refused",
            "Not run: " + escapes.map(function (p) { return p.message; }).join(" ")));
    }
    return new Promise(function (resolve) {
        let settled = false;
        let exited = false;
        let stdout = "";
        let stderr = "";
        const child = spawn(process.execPath, childArguments(), {
            cwd: __dirname, env: {}, stdio: ["pipe", "pipe", "pipe"], detached: true, windowsHide: true
        });
        function settle(answer) {
            if (!settled) {
                settled = true;
                clearTimeout(timer);
                resolve(answer);
            }
            // Nothing the code left behind (a timer, a promise) outlives its answer.
            if (!exited) {
                killGroup(child);
            }
        }
        const timer = setTimeout(function () {
            settle(errorAnswer("sandbox_timeout",
                "The code did not finish within " + timeoutMs + " ms and was stopped."));
        }, timeoutMs + STARTUP_ALLOWANCE_MS);
        child.on("error", function (err) {
            settle(errorAnswer("sandbox_error", "The sandbox could not start: " + err.message));
        });
        child.stdout.setEncoding("utf8");
        child.stdout.on("data", function (chunk) {
            stdout += chunk;
            if (stdout.length > MAX_ANSWER_BYTES) {
                settle(errorAnswer("sandbox_error", "The code's outputs exceed " + MAX_ANSWER_BYTES + " bytes."));
                return;
            }
            const end = stdout.indexOf("\n");
            if (end >= 0) {
                try {
                    settle(JSON.parse(stdout.slice(0, end)));
                } catch {
                    settle(errorAnswer("sandbox_error", "The sandbox's answer could not be read."));
                }
            }
        });
        child.stderr.setEncoding("utf8");
        child.stderr.on("data", function (chunk) {
            stderr = (stderr + chunk).slice(-MAX_STDERR_CHARS);
        });
        child.on("close", function (code, signal) {
            exited = true;
            settle(exitAnswer(code, signal, stderr, timeoutMs));
        });
        child.stdin.on("error", function () {});
        child.stdin.end(JSON.stringify({ code: options.code, msg: options.msg, outputs: outputs,
            timeoutMs: timeoutMs, memoryBytes: ISOLATE_MEMORY_BYTES }));
    });
}

module.exports = { runSandbox: runSandbox, exitAnswer: exitAnswer, DEFAULT_TIMEOUT_MS: DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS: MAX_TIMEOUT_MS };
