/**
 * The worker thread of `function-sandbox.js`: runs one function node body on one message inside a `vm` context and
 * posts `{outputs, logs, status?, error?}` to its parent.
 *
 * Everything the code can touch is created inside the context (its own Object, Function, JSON, Promise): the
 * stubs of what a function node offers are defined by a setup script evaluated there. The one function of this
 * realm they call (`bridge`) is captured by that script and removed from the context's globals before the user's
 * code runs, and it only takes and returns strings and numbers, so no object of this realm (whose `constructor`
 * would lead to this realm's `Function`, and so to `process`) reaches the code. Code generation from strings is off
 * in the context (`eval`, `new Function`). The parent terminates this worker at the time limit.
 */
"use strict";

const vm = require("vm");
const { parentPort, workerData } = require("worker_threads");

const MAX_TIMER_MS = 500;   // the longest delay the stub setTimeout honours
const MAX_LOGS = 50;
const MAX_LOG_CHARS = 2000;

const SETUP = `(function (bridge, msgText, outputs) {
    "use strict";
    const toText = function (value) {
        if (typeof value === "string") { return value; }
        if (value instanceof Error) { return value.name + ": " + value.message; }
        try { return JSON.stringify(value); } catch (err) { return String(value); }
    };
    const clone = function (value) { return value === undefined ? undefined : JSON.parse(JSON.stringify(value)); };
    const store = function () {
        const values = new Map();
        return {
            get: function (key) { return clone(values.get(String(key))); },
            set: function (key, value) { values.set(String(key), clone(value)); },
            keys: function () { return Array.from(values.keys()); }
        };
    };
    const sendText = function (value) {
        try { return JSON.stringify(value === undefined ? null : value); }
        catch (err) { throw new TypeError("node.send: the message cannot be copied (" + err.message + ")"); }
    };
    const timers = new Map();
    let nextTimer = 1;
    const node = {
        id: "sandbox", name: "sandbox", outputCount: outputs,
        send: function (value) { bridge("send", sendText(value)); },
        done: function (err) { bridge("done", err === undefined ? "" : toText(err)); },
        log: function (value) { bridge("log", "info", toText(value)); },
        warn: function (value) { bridge("log", "warn", toText(value)); },
        error: function (value) { bridge("log", "error", toText(value)); },
        debug: function (value) { bridge("log", "debug", toText(value)); },
        trace: function (value) { bridge("log", "trace", toText(value)); },
        status: function (value) { bridge("status", sendText(value || {})); },
        on: function () {}
    };
    const sandbox = {
        node: node,
        context: store(), flow: store(), global: store(),
        env: { get: function () { return undefined; } },
        RED: { util: { cloneMessage: clone } },
        setTimeout: function (callback, delay) {
            const id = nextTimer++;
            timers.set(id, callback);
            bridge("timer", id, Number(delay) || 0);
            return id;
        },
        clearTimeout: function (id) { if (timers.delete(id)) { bridge("cleared", id); } }
    };
    Object.keys(sandbox).forEach(function (key) {
        Object.defineProperty(globalThis, key, { value: sandbox[key], writable: false, configurable: false });
    });
    const fire = function (id) {
        const callback = timers.get(id);
        timers.delete(id);
        if (typeof callback === "function") {
            try { callback(); } catch (err) { bridge("threw", toText(err)); }
        }
    };
    const run = function (body) {
        const msg = JSON.parse(msgText);
        let result;
        try {
            result = body(msg);
        } catch (err) {
            bridge("threw", toText(err));
            return;
        }
        Promise.resolve(result).then(function (value) {
            bridge("returned", value === undefined ? "" : sendText(value));
        }, function (err) {
            bridge("threw", toText(err));
        });
    };
    return { fire: fire, run: run };
})`;

const state = { outputs: [], logs: [], status: undefined, timers: new Map(), returned: false, done: false,
    usesDone: false, error: null, finished: false };

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
        answer.error = { code: "sandbox_error", message: state.error };
    }
    parentPort.postMessage(answer);
}

function settleIfIdle() {
    if (state.error || (state.returned && state.timers.size === 0 && (!state.usesDone || state.done))) {
        finish();
    }
}

function addLog(level, text) {
    if (state.logs.length < MAX_LOGS) {
        state.logs.push({ level: level, text: String(text).slice(0, MAX_LOG_CHARS) });
    }
}

let hooks = null;

/**
 * The only function of this realm the context reaches (through the setup script's closure): strings and numbers
 * in, nothing out, and it never throws (an error object of this realm would hand the code this realm's Function).
 */
function bridge(kind, first, second) {
    try {
        receive(kind, first, second);
    } catch {
        state.error = state.error || "The sandbox could not read what the code sent.";
        settleIfIdle();
    }
}

const TEXT_KINDS = new Set(["send", "returned", "status", "done", "threw"]);

function receive(kind, first, second) {
    if (state.finished) {
        return;
    }
    if (TEXT_KINDS.has(kind) && typeof first !== "string") {
        // The code replaced what the stubs rely on (JSON.stringify): nothing it sends can be trusted.
        throw new TypeError("not text");
    }
    if (kind === "send") {
        const row = perOutput(JSON.parse(first), workerData.outputs);
        if (row) {
            state.outputs.push(row);
        }
    } else if (kind === "returned") {
        state.returned = true;
        const row = first ? perOutput(JSON.parse(first), workerData.outputs) : null;
        if (row) {
            state.outputs.push(row);
        }
        settleIfIdle();
    } else if (kind === "done") {
        state.done = true;
        if (first) {
            state.error = String(first);
        }
        settleIfIdle();
    } else if (kind === "threw") {
        state.error = String(first);
        settleIfIdle();
    } else if (kind === "log") {
        addLog(String(first), second);
    } else if (kind === "status") {
        state.status = JSON.parse(first);
    } else if (kind === "timer") {
        const id = Number(first);
        state.timers.set(id, setTimeout(function () {
            state.timers.delete(id);
            hooks.fire(id);
            settleIfIdle();
        }, Math.min(Math.max(Number(second) || 0, 0), MAX_TIMER_MS)));
    } else if (kind === "cleared") {
        clearTimeout(state.timers.get(Number(first)));
        state.timers.delete(Number(first));
        settleIfIdle();
    }
}

function main() {
    const context = vm.createContext(Object.create(null), {
        name: "ai-sidebar function sandbox",
        codeGeneration: { strings: false, wasm: false }
    });
    state.usesDone = /\bnode\s*\.\s*done\b/.test(workerData.code);
    hooks = vm.runInContext(SETUP, context)(bridge, JSON.stringify(workerData.msg === undefined ? {} :
        workerData.msg), workerData.outputs);
    let body;
    try {
        body = vm.runInContext("(async function (msg) {\n" + workerData.code + "\n})", context,
            { filename: "function-node.js", lineOffset: -1 });
    } catch (err) {
        state.error = String(err && err.message);
        finish();
        return;
    }
    hooks.run(body);
    settleIfIdle();
}

main();
