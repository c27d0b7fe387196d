/**
 * The script that `sandbox-child.js` evaluates inside the QuickJS isolate before the user's code: stubs of what a
 * function node offers (`node.send/done/log/warn/error/debug/trace/status`, `context`/`flow`/`global` in memory,
 * `env.get`, `RED.util.cloneMessage`, `setTimeout`/`clearTimeout`), written in the isolate's own JavaScript.
 *
 * It evaluates to a function `(bridge, msgText, outputs) → {fire(id), run(body)}`. `bridge` is the one host
 * function the isolate gets; it takes and returns only strings and numbers (QuickJS copies them; no host object
 * can cross the WASM boundary). The stubs hold it in a closure and never put it on the global object.
 */
"use strict";

const STUBS = `(function (bridge, msgText, outputs) {
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

module.exports = { STUBS: STUBS };
