"use strict";

const assert = require("assert");
const serviceWatch = require("../resources/service-status/service-watch");

/** Timers of the test's own: timeouts are recorded, and the test fires the next one due (in order of time). */
function manualTimers() {
    const timers = { active: new Map(), next: 1, now: 0, fired: [] };
    timers.setTimeout = function (fn, ms) {
        const id = timers.next++;
        timers.active.set(id, { fn: fn, ms: ms, due: timers.now + ms });
        return id;
    };
    timers.clearTimeout = function (id) {
        timers.active.delete(id);
    };
    /** Fire the timer due first; returns its delay. */
    timers.fireNext = function () {
        const [id, timer] = Array.from(timers.active.entries()).sort(function (a, b) { return a[1].due - b[1].due; })[0];
        timers.active.delete(id);
        timers.now = timer.due;
        timers.fired.push(timer.ms);
        timer.fn();
        return timer.ms;
    };
    return timers;
}

function unreachable(message) {
    return { message: message, serviceUnreachable: function () { return true; } };
}

/** A watch whose checks find the service down until `service.up` is set, as the sidebar's would. */
function watch(timers, seen) {
    const service = { up: false };
    service.watch = new serviceWatch.ServiceWatch({
        check: function () {
            seen.push("check at " + timers.now);
            if (service.up) {
                service.watch.reached();
            } else {
                service.watch.failed(unreachable("down at " + timers.now));
            }
        },
        onReconnecting: function (err) { seen.push("reconnecting: " + err.message); },
        onDown: function (err) { seen.push("down: " + err.message); },
        onUp: function () { seen.push("up"); },
        timers: timers
    });
    return service;
}

describe("watching the service", function () {
    it("waits 2, 4, 8 and 16 s between checks, then 30 s for every later one", function () {
        assert.deepStrictEqual([0, 1, 2, 3, 4, 5, 9].map(serviceWatch.retryDelay),
            [2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    });

    it("gives the advice at once for a service that has not answered since the sidebar opened", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        assert.strictEqual(service.watch.failed(unreachable("not reachable")), true);
        assert.strictEqual(service.watch.failed(unreachable("still not reachable")), true);
        // One check waits, however many requests failed.
        assert.strictEqual(timers.active.size, 1);
        timers.fireNext();
        timers.fireNext();
        service.up = true;
        timers.fireNext();
        assert.deepStrictEqual(seen, ["down: not reachable", "down: still not reachable",
            "check at 2000", "down: down at 2000", "check at 6000", "down: down at 6000", "check at 14000", "up"]);
        assert.deepStrictEqual(timers.fired, [2000, 4000, 8000]);
        assert.strictEqual(timers.active.size, 0);
        assert.strictEqual(service.watch.reached(), false);
        assert.strictEqual(seen.length, 8);
    });

    it("says it reconnects to a service that answered before, and hides it when a check reaches it, unasked",
        function () {
            const timers = manualTimers();
            const seen = [];
            const service = watch(timers, seen);
            service.watch.reached();
            service.watch.failed(unreachable("restarting"));
            service.watch.failed(unreachable("the usage could not be read either"));
            timers.fireNext();
            service.up = true;
            timers.fireNext();
            // Every second while it reconnects: the line goes within a second of the service answering again.
            assert.deepStrictEqual(seen, ["reconnecting: restarting", "check at 1000", "check at 2000", "up"]);
            // The advice that was due later is not given.
            assert.strictEqual(timers.active.size, 0);
        });

    it("gives the advice when a service that answered before stays down for 15 s, and keeps checking", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        service.watch.reached();
        service.watch.failed(unreachable("restarting"));
        while (timers.now < 30000) {
            timers.fireNext();
        }
        const checks = seen.filter(function (line) { return line.indexOf("check at") === 0; });
        // A check a second until the advice at 15 s, then 2, 4, 8 s apart.
        assert.deepStrictEqual(checks.slice(0, 15), Array.from({ length: 15 }, function (_, i) {
            return "check at " + (i + 1) * 1000;
        }));
        assert.deepStrictEqual(seen.slice(seen.indexOf("check at 14000")), ["check at 14000", "down: down at 14000",
            "check at 15000", "down: down at 15000", "check at 17000", "down: down at 17000", "check at 21000",
            "down: down at 21000", "check at 29000", "down: down at 29000", "check at 45000", "down: down at 45000"]);
        service.up = true;
        timers.fireNext();
        assert.strictEqual(timers.now, 75000);
        assert.deepStrictEqual(seen.slice(-2), ["check at 75000", "up"]);
        // Down again later: it reconnects first again, checking every second.
        service.up = false;
        service.watch.failed(unreachable("restarting again"));
        assert.deepStrictEqual(seen.slice(-1), ["reconnecting: restarting again"]);
        assert.strictEqual(timers.fireNext(), 1000);
    });

    it("keeps checking every second after the advice while a supervisor restarts the service", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        service.watch.reached();
        service.watch.supervised(true);
        service.watch.failed(unreachable("restarting"));
        while (timers.now < 40000) {
            timers.fireNext();
        }
        // The advice is given (what restarts it, no commands: service-banner.js), and the checks stay a second apart.
        assert.ok(seen.indexOf("down: down at 14000") !== -1);
        const checks = seen.filter(function (line) { return line.indexOf("check at") === 0; });
        assert.deepStrictEqual(checks, Array.from({ length: 40 }, function (_, i) { return "check at " + (i + 1) * 1000; }));
        service.up = true;
        timers.fireNext();
        assert.deepStrictEqual(seen.slice(-2), ["check at 41000", "up"]);
        // Nothing restarts it any more (the supervisor gave up): the checks back off again.
        service.up = false;
        service.watch.supervised(false);
        service.watch.failed(unreachable("gone"));
        while (timers.now < 80000) {
            timers.fireNext();
        }
        assert.ok(timers.fired.slice(-3).every(function (ms) { return ms > 1000; }), timers.fired.slice(-3));
    });

    it("starts no check while the one before still waits (a silent service holds it 5 s)", async function () {
        const timers = manualTimers();
        const asked = [];
        const answers = [];
        const watch = new serviceWatch.ServiceWatch({
            check: function () {
                asked.push(timers.now);
                return new Promise(function (resolve) { answers.push(resolve); });
            },
            onDown: function () {},
            onUp: function () {},
            timers: timers
        });
        watch.supervised(true);
        watch.failed(unreachable("silent"));
        while (timers.now < 5000) {
            timers.fireNext();
        }
        // Five seconds of one check a second: the first is still waiting, so no other was sent.
        assert.deepStrictEqual(asked, [1000]);
        answers[0]();
        await Promise.resolve();
        timers.fireNext();
        assert.deepStrictEqual(asked, [1000, 6000]);
    });

    it("ignores failures that are not the service being down", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        assert.strictEqual(service.watch.failed({ message: "401", serviceUnreachable: function () { return false; } }),
            false);
        assert.strictEqual(service.watch.failed(new Error("network")), false);
        assert.strictEqual(service.watch.failed(null), false);
        assert.deepStrictEqual(seen, []);
        assert.strictEqual(timers.active.size, 0);
    });

    it("stops asking when the sidebar closes, also after an answer that was on its way", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        service.watch.reached();
        service.watch.failed(unreachable("down"));
        service.watch.stop();
        assert.strictEqual(timers.active.size, 0);
        assert.strictEqual(service.watch.failed(unreachable("the check's late answer")), true);
        service.watch.reached();
        assert.strictEqual(timers.active.size, 0);
        assert.deepStrictEqual(seen, ["reconnecting: down"]);
    });
});

describe("watching the service with the global timers", function () {
    it("calls setTimeout and clearTimeout as plain functions, as browsers require", function () {
        const seen = [];
        const service = new serviceWatch.ServiceWatch({
            check: function () {},
            onDown: function () { seen.push("down"); },
            onUp: function () { seen.push("up"); }
        });
        const original = global.setTimeout;
        global.setTimeout = function (fn, ms) {
            // Like window.setTimeout: refuses to run as a method of another object.
            if (this !== undefined && this !== global) {
                throw new TypeError("Illegal invocation");
            }
            return original(fn, ms);
        };
        try {
            service.failed(unreachable("down"));
        } finally {
            global.setTimeout = original;
        }
        service.reached();
        assert.deepStrictEqual(seen, ["down", "up"]);
        assert.strictEqual(service.timer, null);
    });
});
