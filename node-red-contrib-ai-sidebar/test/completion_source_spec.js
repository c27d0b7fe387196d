"use strict";

const assert = require("assert");
const { CompletionSource } = require("../resources/completion/completion-source.js");

/** Timers driven by the test: `run()` fires the pending ones. */
function manualTimers() {
    const pending = new Map();
    let next = 1;
    return {
        setTimeout: function (fn) { const id = next++; pending.set(id, fn); return id; },
        clearTimeout: function (id) { pending.delete(id); },
        run: function () {
            const due = Array.from(pending.values());
            pending.clear();
            due.forEach(function (fn) { fn(); });
        },
        get size() { return pending.size; }
    };
}

/** An `ask` whose answers the test settles; aborting rejects, as fetch does. */
function scriptedAsk() {
    const calls = [];
    function ask(body, signal) {
        return new Promise(function (resolve, reject) {
            const call = { body: body, signal: signal, resolve: resolve };
            signal.addEventListener("abort", function () { reject(new Error("aborted")); });
            calls.push(call);
        });
    }
    return { ask: ask, calls: calls };
}

function body(before) {
    return { kind: "function", part: "onMessage", before: before, after: "\nreturn msg;" };
}

describe("completion source", function () {
    it("asks once the typing has paused and hands back the answer", async function () {
        const timers = manualTimers();
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: timers.setTimeout,
            clearTimeout: timers.clearTimeout });
        const answer = source.complete(body("msg.payload."));
        assert.strictEqual(model.calls.length, 0);
        timers.run();
        assert.strictEqual(model.calls.length, 1);
        model.calls[0].resolve("temperature");
        assert.strictEqual(await answer, "temperature");
    });

    it("sends nothing for keystrokes that come before the pause, and only the last after it", async function () {
        const timers = manualTimers();
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: timers.setTimeout,
            clearTimeout: timers.clearTimeout });
        const superseded = [];
        for (const text of ["m", "ms", "msg", "msg."]) {
            superseded.push(source.complete(body(text)).catch(function (err) { return err; }));
        }
        assert.strictEqual(timers.size, 1);
        timers.run();
        assert.deepStrictEqual(model.calls.map(function (call) { return call.body.before; }), ["msg."]);
        const refused = await Promise.all(superseded.slice(0, 3));
        assert.ok(refused.every(function (err) { return err.cancelled; }));
    });

    it("aborts the request in flight when the user types on, and never hands back its answer", async function () {
        const timers = manualTimers();
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: timers.setTimeout,
            clearTimeout: timers.clearTimeout });
        const first = source.complete(body("msg.")).catch(function (err) { return err; });
        timers.run();
        const next = source.complete(body("msg.p"));
        assert.strictEqual(model.calls[0].signal.aborted, true);
        assert.strictEqual((await first).cancelled, true);
        timers.run();
        model.calls[1].resolve("ayload");
        assert.strictEqual(await next, "ayload");
    });

    it("aborts when the editor cancels (Monaco's cancellation token)", async function () {
        const timers = manualTimers();
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: timers.setTimeout,
            clearTimeout: timers.clearTimeout });
        let cancel = null;
        const answer = source.complete(body("msg."), function (fn) { cancel = fn; }).catch(function (err) {
            return err;
        });
        timers.run();
        cancel();
        assert.strictEqual(model.calls[0].signal.aborted, true);
        assert.strictEqual((await answer).cancelled, true);
    });

    it("answers the same text around the cursor from its cache", async function () {
        const timers = manualTimers();
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: timers.setTimeout,
            clearTimeout: timers.clearTimeout });
        const first = source.complete(body("msg."));
        timers.run();
        model.calls[0].resolve("payload");
        await first;
        assert.strictEqual(await source.complete(body("msg.")), "payload");
        assert.strictEqual(model.calls.length, 1);
        assert.strictEqual(source.requests, 1);
    });
});

describe("completion source while typing at 8 keys per second", function () {
    it("sends at most 10 requests for 100 keystrokes (issue 39's budget)", async function () {
        // A clock the test moves: each keystroke 125 ms after the last, then the pause after the last one.
        let now = 0;
        const timers = [];
        const clock = {
            setTimeout: function (fn, ms) { const timer = { at: now + ms, fn: fn }; timers.push(timer); return timer; },
            clearTimeout: function (timer) { timer.cleared = true; },
            advance: function (ms) {
                now += ms;
                timers.filter(function (t) { return !t.cleared && !t.fired && t.at <= now; }).forEach(function (t) {
                    t.fired = true;
                    t.fn();
                });
            }
        };
        const model = scriptedAsk();
        const source = new CompletionSource({ ask: model.ask, setTimeout: clock.setTimeout,
            clearTimeout: clock.clearTimeout });
        let text = "";
        for (let key = 0; key < 100; key++) {
            text += "abcdefghij"[key % 10];
            source.complete(body(text)).catch(function () {});
            clock.advance(125);
        }
        clock.advance(1000);
        assert.ok(source.requests <= 10, source.requests + " requests");
        assert.strictEqual(model.calls[model.calls.length - 1].body.before, text);
    });
});
