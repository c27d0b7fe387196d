"use strict";

const assert = require("assert");
const serviceWatch = require("../resources/service-watch");

/** Timers of the test's own: intervals are recorded and fired by the test. */
function manualTimers() {
    const timers = { active: new Map(), next: 1 };
    timers.setInterval = function (fn, ms) {
        const id = timers.next++;
        timers.active.set(id, { fn: fn, ms: ms });
        return id;
    };
    timers.clearInterval = function (id) {
        timers.active.delete(id);
    };
    timers.fire = function () {
        Array.from(timers.active.values()).forEach(function (timer) { timer.fn(); });
    };
    return timers;
}

function unreachable(message) {
    return { message: message, serviceUnreachable: function () { return true; } };
}

function watch(timers, seen) {
    return new serviceWatch.ServiceWatch({
        check: function () { seen.push("check"); },
        onDown: function (err) { seen.push("down: " + err.message); },
        onUp: function () { seen.push("up"); },
        timers: timers
    });
}

describe("watching the service", function () {
    it("shows the banner when the service is down and asks again every 30 s until it answers", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        assert.strictEqual(service.failed(unreachable("not reachable")), true);
        assert.strictEqual(service.failed(unreachable("still not reachable")), true);
        assert.strictEqual(timers.active.size, 1);
        assert.strictEqual(Array.from(timers.active.values())[0].ms, 30000);
        timers.fire();
        assert.strictEqual(service.reached(), true);
        assert.deepStrictEqual(seen, ["down: not reachable", "down: still not reachable", "check", "up"]);
        assert.strictEqual(timers.active.size, 0);
        assert.strictEqual(service.reached(), false);
        assert.deepStrictEqual(seen.slice(4), []);
    });

    it("ignores failures that are not the service being down", function () {
        const timers = manualTimers();
        const seen = [];
        const service = watch(timers, seen);
        assert.strictEqual(service.failed({ message: "401", serviceUnreachable: function () { return false; } }), false);
        assert.strictEqual(service.failed(new Error("network")), false);
        assert.strictEqual(service.failed(null), false);
        assert.deepStrictEqual(seen, []);
        assert.strictEqual(timers.active.size, 0);
    });

    it("stops asking when the sidebar closes", function () {
        const timers = manualTimers();
        const service = watch(timers, []);
        service.failed(unreachable("down"));
        service.stop();
        assert.strictEqual(timers.active.size, 0);
    });
});

describe("watching the service with the global timers", function () {
    it("calls setInterval and clearInterval as plain functions, as browsers require", function () {
        const seen = [];
        const service = new serviceWatch.ServiceWatch({
            check: function () {},
            onDown: function () { seen.push("down"); },
            onUp: function () { seen.push("up"); },
            retryMs: 60000
        });
        const original = global.setInterval;
        global.setInterval = function (fn, ms) {
            // Like window.setInterval: refuses to run as a method of another object.
            if (this !== undefined && this !== global) {
                throw new TypeError("Illegal invocation");
            }
            return original(fn, ms);
        };
        try {
            service.failed(unreachable("down"));
        } finally {
            global.setInterval = original;
        }
        service.reached();
        assert.deepStrictEqual(seen, ["down", "up"]);
        assert.strictEqual(service.timer, null);
    });
});
