/**
 * Whether the assistant service is reachable, as the sidebar's requests find out, and asking it again while it is
 * not. The first request that finds it down (an error whose `serviceUnreachable()` is true, admin-api.js) starts
 * the checks, after RETRY_DELAYS_MS (2, 4, 8, 16 s, then every 30 s); the first that reaches it ends them and lets
 * the sidebar load what it missed.
 *
 * A service that answered a moment ago is usually being restarted (a supervisor, `make run`): the sidebar first
 * says it reconnects (`onReconnecting`) and gives the full advice on starting it (`onDown`) only when it is still
 * down ADVICE_AFTER_MS later. A service that has not answered since the sidebar opened gets the advice at once.
 * While it reconnects, and while the service is known to be restarted by a supervisor (`supervised(true)`: the
 * plugin's own, or `make run`'s), it is checked every RESTART_CHECK_MS, so that the banner goes within about a
 * second of the service answering again (issue 31).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.serviceWatch`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`; timers are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.serviceWatch = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // The waits before each check while the service is down (milliseconds); the last one repeats.
    const RETRY_DELAYS_MS = [2000, 4000, 8000, 16000, 30000];
    // How long a service that answered before may stay down before the sidebar says how to start it (ms).
    const ADVICE_AFTER_MS = 15000;
    // The wait between checks while a restart is expected (ms): one relayed /healthz per second and open sidebar.
    const RESTART_CHECK_MS = 1000;

    /**
     * The wait before check number `attempt`.
     *
     * @param {number} attempt 0 for the first check after the service was found down
     * @returns {number} milliseconds: 2000, 4000, 8000, 16000, then 30000 for every later attempt
     */
    function retryDelay(attempt) {
        return RETRY_DELAYS_MS[Math.min(Math.max(attempt, 0), RETRY_DELAYS_MS.length - 1)];
    }

    /**
     * @param {object} options
     * @param {function(): (Promise|undefined)} options.check ask the service again (the Retry button does the
     *     same); its answer comes back as `failed` or `reached`; while the promise it returns is pending, no other
     *     check is started
     * @param {function(Error)} options.onDown the service is down and did not come back within ADVICE_AFTER_MS (or
     *     never answered): show the banner with the advice; called again with each later error, for its message
     * @param {function(Error)} [options.onReconnecting] a service that answered before is down: say it reconnects
     *     (`onDown` when not given)
     * @param {function()} options.onUp it answers again: hide the banner, load what could not be loaded
     * @param {number} [options.adviceAfterMs=ADVICE_AFTER_MS]
     * @param {{setTimeout: function, clearTimeout: function}} [options.timers] the global ones by default
     */
    function ServiceWatch(options) {
        this.options = options;
        // Wrapped: a browser refuses window.setTimeout called as a method of another object (Illegal invocation).
        this.timers = options.timers || {
            setTimeout: function (fn, ms) {
                return setTimeout(fn, ms);
            },
            clearTimeout: function (id) {
                clearTimeout(id);
            }
        };
        this.down = false;
        // Whether onDown was called for this outage (else it is still "reconnecting").
        this.advised = false;
        // Whether a request has reached the service since the sidebar opened.
        this.answeredBefore = false;
        this.attempt = 0;
        this.timer = null;
        this.adviceTimer = null;
        this.lastError = null;
        this.closed = false;
        // Whether a supervisor is known to start the service again (see supervised).
        this.restartExpected = false;
        // Whether a check's promise is still pending (see schedule).
        this.checking = false;
    }

    /**
     * What the service-status route says of who starts the service: `expected` true while a supervisor runs it or
     * restarts it (the checks stay at RESTART_CHECK_MS), false when nothing will (they back off).
     *
     * @param {boolean} expected
     */
    ServiceWatch.prototype.supervised = function (expected) {
        this.restartExpected = !!expected;
    };

    /**
     * A request failed.
     *
     * @param {*} err
     * @returns {boolean} whether it failed because the service is down
     */
    ServiceWatch.prototype.failed = function (err) {
        if (!err || typeof err.serviceUnreachable !== "function" || !err.serviceUnreachable()) {
            return false;
        }
        if (this.closed) {
            return true;
        }
        this.lastError = err;
        if (!this.down) {
            this.down = true;
            this.attempt = 0;
            if (this.answeredBefore) {
                this.startAdviceTimer();
                (this.options.onReconnecting || this.options.onDown)(err);
            } else {
                this.advise();
            }
        } else if (this.advised) {
            this.options.onDown(err);
        }
        this.schedule();
        return true;
    };

    ServiceWatch.prototype.advise = function () {
        this.advised = true;
        // The backoff starts when the advice is given: until then a restart was expected.
        this.attempt = 0;
        this.options.onDown(this.lastError);
    };

    ServiceWatch.prototype.startAdviceTimer = function () {
        const self = this;
        this.adviceTimer = this.timers.setTimeout(function () {
            self.adviceTimer = null;
            if (self.down && !self.advised) {
                self.advise();
            }
        }, this.options.adviceAfterMs || ADVICE_AFTER_MS);
    };

    /** Check again after the next delay, unless a check is waiting already; each check plans the next one. */
    ServiceWatch.prototype.schedule = function () {
        const self = this;
        if (this.timer || this.closed) {
            return;
        }
        const restarting = this.restartExpected || (this.answeredBefore && !this.advised);
        const delay = restarting ? RESTART_CHECK_MS : retryDelay(this.attempt);
        if (!restarting) {
            this.attempt += 1;
        }
        this.timer = this.timers.setTimeout(function () {
            self.timer = null;
            self.schedule();
            // A check still waiting (the service-status route waits up to 5 s for a silent service) is not doubled:
            // at one a second they would pile up and take the browser's connections to Node-RED.
            if (self.checking) {
                return;
            }
            const pending = self.options.check();
            if (pending && typeof pending.then === "function") {
                self.checking = true;
                const done = function () {
                    self.checking = false;
                };
                pending.then(done, done);
            }
        }, delay);
    };

    /**
     * A request reached the service.
     *
     * @returns {boolean} whether it had been down until now
     */
    ServiceWatch.prototype.reached = function () {
        this.answeredBefore = true;
        this.clearTimers();
        if (!this.down) {
            return false;
        }
        this.down = false;
        this.advised = false;
        this.attempt = 0;
        if (!this.closed) {
            this.options.onUp();
        }
        return true;
    };

    ServiceWatch.prototype.clearTimers = function () {
        if (this.timer) {
            this.timers.clearTimeout(this.timer);
            this.timer = null;
        }
        if (this.adviceTimer) {
            this.timers.clearTimeout(this.adviceTimer);
            this.adviceTimer = null;
        }
    };

    /** The sidebar closes: stop asking, now and after any answer still on its way. */
    ServiceWatch.prototype.stop = function () {
        this.closed = true;
        this.clearTimers();
    };

    return {
        ADVICE_AFTER_MS: ADVICE_AFTER_MS,
        RESTART_CHECK_MS: RESTART_CHECK_MS,
        RETRY_DELAYS_MS: RETRY_DELAYS_MS,
        retryDelay: retryDelay,
        ServiceWatch: ServiceWatch
    };
}));
