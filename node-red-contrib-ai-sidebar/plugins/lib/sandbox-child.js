/**
 * The sandbox process of `function-sandbox.js`: reads one request `{code, msg, outputs, timeoutMs, memoryBytes}`
 * (JSON) from stdin, runs the code once on the message inside a QuickJS WebAssembly isolate
 * (quickjs-emscripten-core with the release-sync variant) and writes one answer `{outputs, logs, status?, error?}`
 * (JSON, one line) to stdout, then exits.
 *
 * This process is started by Node-RED with Node's permission model (no file system beyond its own files, no child
 * processes, workers or addons) and an empty environment; it is the outer wall. The inner one is the isolate: a
 * separate QuickJS heap in WebAssembly memory with no host bindings except `bridge` (see `sandbox-stubs.js`), which
 * takes strings and numbers and returns nothing, and which never throws. QuickJS copies every value that crosses,
 * so no object of this Node.js realm (`process`, `require`, an Error of this realm) can reach the code, whatever
 * the code does to its own stack. The isolate has a memory limit (`setMemoryLimit`), a stack limit and an
 * interrupt handler at the deadline; the parent kills this process group if it outlives the deadline anyway.
 */
"use strict";

const { newQuickJSWASMModuleFromVariant, newVariant, shouldInterruptAfterDeadline } = require("quickjs-emscripten-core");
const releaseSync = require("@jitl/quickjs-wasmfile-release-sync");
const { STUBS } = require("./sandbox-stubs");

const MAX_TIMER_MS = 500;   // the longest delay the stub setTimeout honours
const MAX_LOGS = 50;
const MAX_LOG_CHARS = 2000;
// QuickJS's own stack check; beyond about 300 KB the WebAssembly frames exhaust V8's native stack first.
const STACK_BYTES = 256 * 1024;
const PAGE_BYTES = 65536;
const INITIAL_PAGES = 256;  // the 16 MB the release build's memory layout starts with (its INITIAL_MEMORY)
const TEXT_KINDS = new Set(["send", "returned", "status", "done", "threw"]);

const state = { outputs: [], logs: [], status: undefined, timers: new Map(), returned: false, done: false,
    usesDone: false, error: null, errorCode: "sandbox_error", finished: false };
let request = null;

/** Node-RED's rule for what a function returns or sends: one message, or an array with one entry per output. */
function perOutput(value, outputs) {
    if (value === null || value === undefined) {
        return null;
    }
    const list = Array.isArray(value) ? value : [value];
    const row = [];
    for (let i = 0; i < Math.max(outputs, 1); i++) {
        row.push(list[i] === undefined ? null : list[i]);
    }
    return row;
}

/** Write the answer once and end the process (which also ends every timer and pending job of the isolate). */
function finish() {
    if (state.finished) {
        return;
    }
    state.finished = true;
    const answer = { outputs: state.outputs, logs: state.logs };
    if (state.status !== undefined) {
        answer.status = state.status;
    }
    if (state.error) {
        answer.error = { code: state.errorCode, message: state.error };
    }
    process.stdout.write(JSON.stringify(answer) + "\n", function () {
        process.exit(0);
    });
}

function fail(code, message) {
    if (!state.error) {
        state.error = message;
        state.errorCode = code;
    }
    finish();
}

function settleIfIdle() {
    if (state.error || (state.returned && state.timers.size === 0 && (!state.usesDone || state.done))) {
        finish();
    }
}

/** What the isolate threw, as `[code, text]`: QuickJS names a hit memory limit `InternalError: out of memory`. */
function classify(text) {
    if (/\bout of memory\b/.test(text)) {
        return ["sandbox_memory", "The code used more than " + Math.round(request.memoryBytes / 1048576) +
            " MB and was stopped."];
    }
    if (/\binterrupted\b/.test(text) && Date.now() >= state.deadline) {
        return ["sandbox_timeout", "The code did not finish within " + request.timeoutMs + " ms and was stopped."];
    }
    return ["sandbox_error", text];
}

function failWith(text) {
    const [code, message] = classify(String(text));
    fail(code, message);
}

function receive(kind, first, second) {
    if (state.finished) {
        return;
    }
    if (TEXT_KINDS.has(kind) && typeof first !== "string") {
        // The code replaced what the stubs rely on (JSON.stringify): nothing it sends can be trusted.
        throw new TypeError("not text");
    }
    if (kind === "send") {
        const row = perOutput(JSON.parse(first), request.outputs);
        if (row) {
            state.outputs.push(row);
        }
    } else if (kind === "returned") {
        state.returned = true;
        const row = first ? perOutput(JSON.parse(first), request.outputs) : null;
        if (row) {
            state.outputs.push(row);
        }
        settleIfIdle();
    } else if (kind === "done") {
        state.done = true;
        if (first) {
            failWith(first);
        }
        settleIfIdle();
    } else if (kind === "threw") {
        failWith(first);
    } else if (kind === "log") {
        if (state.logs.length < MAX_LOGS) {
            state.logs.push({ level: String(first), text: String(second).slice(0, MAX_LOG_CHARS) });
        }
    } else if (kind === "status") {
        state.status = JSON.parse(first);
    } else if (kind === "timer") {
        startTimer(Number(first), Number(second));
    } else if (kind === "cleared") {
        clearTimeout(state.timers.get(Number(first)));
        state.timers.delete(Number(first));
        settleIfIdle();
    }
}

let vm = null;
let runtime = null;
let hooks = null;

/** The text of a value the isolate threw (copied out with `dump`; nothing goes back in). */
function thrownText(handle) {
    let value;
    try {
        value = vm.dump(handle);
    } catch {
        value = "an error the sandbox could not read";
    } finally {
        handle.dispose();
    }
    if (value && typeof value === "object" && typeof value.message === "string") {
        return (typeof value.name === "string" ? value.name + ": " : "") + value.message;
    }
    return String(value);
}

/** Run the isolate's pending promise jobs; a job that throws (or is interrupted) ends the run. */
function drainJobs() {
    const result = runtime.executePendingJobs();
    if (result.error) {
        failWith(thrownText(result.error));
    }
}

function startTimer(id, delay) {
    state.timers.set(id, setTimeout(function () {
        state.timers.delete(id);
        if (state.finished) {
            return;
        }
        const idHandle = vm.newNumber(id);
        const result = vm.callFunction(hooks.fire, vm.undefined, idHandle);
        idHandle.dispose();
        if (result.error) {
            failWith(thrownText(result.error));
            return;
        }
        result.value.dispose();
        drainJobs();
        settleIfIdle();
    }, Math.min(Math.max(delay || 0, 0), MAX_TIMER_MS)));
}

/** A value of the isolate as a string or number of this realm; anything else as undefined. */
function readArgument(handle) {
    if (!handle) {
        return undefined;
    }
    const kind = vm.typeof(handle);
    if (kind === "string") {
        return vm.getString(handle);
    }
    return kind === "number" ? vm.getNumber(handle) : undefined;
}

/** The one host function the isolate gets: it returns nothing and never throws into the isolate. */
function bridge(kindHandle, firstHandle, secondHandle) {
    try {
        receive(readArgument(kindHandle), readArgument(firstHandle), readArgument(secondHandle));
    } catch {
        fail("sandbox_error", "The sandbox could not read what the code sent.");
    }
}

function evaluate(code, filename) {
    const result = vm.evalCode(code, filename);
    if (result.error) {
        failWith(thrownText(result.error));
        return null;
    }
    return result.value;
}

async function run() {
    // setMemoryLimit alone does not bound the total in the prebuilt WebAssembly build (QuickJS cannot measure its
    // allocations there: quickjs-emscripten issues 255 and 271); a WebAssembly memory with a maximum does: past it
    // malloc fails and QuickJS throws "out of memory". The limit still refuses any single larger allocation.
    const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES,
        maximum: Math.max(INITIAL_PAGES, Math.floor(request.memoryBytes / PAGE_BYTES)) });
    const module = await newQuickJSWASMModuleFromVariant(newVariant(releaseSync.default || releaseSync,
        { wasmMemory: memory }));
    runtime = module.newRuntime();
    runtime.setMemoryLimit(request.memoryBytes);
    runtime.setMaxStackSize(STACK_BYTES);
    vm = runtime.newContext();
    state.usesDone = /\bnode\s*\.\s*done\b/.test(request.code);
    state.deadline = Date.now() + request.timeoutMs;
    runtime.setInterruptHandler(shouldInterruptAfterDeadline(state.deadline));
    setTimeout(function () {
        fail("sandbox_timeout", "The code did not finish within " + request.timeoutMs + " ms and was stopped.");
    }, request.timeoutMs);

    const setup = evaluate(STUBS, "sandbox-stubs.js");
    if (!setup) {
        return;
    }
    const bridgeHandle = vm.newFunction("bridge", bridge);
    const msgHandle = vm.newString(JSON.stringify(request.msg === undefined ? {} : request.msg));
    const outputsHandle = vm.newNumber(request.outputs);
    const made = vm.callFunction(setup, vm.undefined, bridgeHandle, msgHandle, outputsHandle);
    [setup, bridgeHandle, msgHandle, outputsHandle].forEach(function (handle) { handle.dispose(); });
    if (made.error) {
        failWith(thrownText(made.error));
        return;
    }
    hooks = { fire: vm.getProp(made.value, "fire"), run: vm.getProp(made.value, "run") };
    made.value.dispose();
    // Line 1 of the user's code is line 1 of the file: the wrapper's opening stays on line 0.
    const body = evaluate("(async function (msg) {\n" + request.code + "\n})", "function-node.js");
    if (!body) {
        return;
    }
    const started = vm.callFunction(hooks.run, vm.undefined, body);
    body.dispose();
    if (started.error) {
        failWith(thrownText(started.error));
        return;
    }
    started.value.dispose();
    drainJobs();
    settleIfIdle();
}

function main() {
    // A fault of this process's own code (the WebAssembly frames overflowing V8's stack, say) still answers.
    process.on("uncaughtException", function (err) {
        failWith(String(err && err.message || err));
    });
    const chunks = [];
    process.stdin.on("data", function (chunk) { chunks.push(chunk); });
    process.stdin.on("end", function () {
        try {
            request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
            process.exit(2);
        }
        run().catch(function (err) {
            fail("sandbox_error", "The sandbox could not start: " + String(err && err.message || err));
        });
    });
}

main();
