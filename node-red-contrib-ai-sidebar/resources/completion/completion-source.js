/**
 * Where inline completions come from (issue 39), without Monaco or RED: a request waits `delay` ms of quiet
 * (debounce) before it asks `ai-sidebar/complete`, a newer request or a cancellation aborts the one in flight (its
 * fetch aborted, so the plugin and the service close the model request), and answers are cached per text before and
 * after the cursor. A completion is only handed back while its request is still the newest: one never arrives
 * after the text it applies to has changed.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.completionSource`) and in Node.js by the
 * package's tests (`require`). The editor part is completion-provider.js.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.completionSource = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const DELAY_MS = 300;   // quiet time before a request: typing at 8 keys per second sends none in between
    const CACHE_SIZE = 100; // answers kept, the oldest dropped first

    /** A request that was superseded, cancelled or aborted: not an error to show. */
    function cancelled() {
        return Object.assign(new Error("completion cancelled"), { cancelled: true });
    }

    /**
     * @param {object} options
     * @param {function(object, AbortSignal): Promise<string>} options.ask sends one request body and resolves to
     *     the completion text; rejects when aborted (the signal) or when the request failed
     * @param {number} [options.delay] debounce in ms ({@link DELAY_MS})
     * @param {number} [options.cacheSize] ({@link CACHE_SIZE})
     * @param {function(function(), number): *} [options.setTimeout] and `clearTimeout`: the timers (tests)
     */
    function CompletionSource(options) {
        this.ask = options.ask;
        this.delay = options.delay === undefined ? DELAY_MS : options.delay;
        this.cacheSize = options.cacheSize || CACHE_SIZE;
        // Called as plain functions: a browser's own setTimeout refuses to run as another object's method.
        this.setTimer = options.setTimeout || function (fn, ms) { return setTimeout(fn, ms); };
        this.clearTimer = options.clearTimeout || function (id) { clearTimeout(id); };
        this.cache = new Map();
        this.current = null;
        this.requests = 0; // requests sent (not cache hits, not the debounced ones)
    }

    function cacheKey(body) {
        return JSON.stringify([body.kind, body.part || "", body.nodeId || "", body.before, body.after || ""]);
    }

    /**
     * The completion for `body` (`{kind, before, after, part?, nodeId?, ...}`, sent as it is): from the cache, or
     * asked after the debounce. Starting another request, or `onCancel` (a function that takes the cancel
     * callback, such as Monaco's `token.onCancellationRequested`), cancels this one.
     *
     * @returns {Promise<string>} the completion ("" for none); rejects with `{cancelled: true}` when superseded or
     *     cancelled, or with the request's error
     */
    CompletionSource.prototype.complete = function (body, onCancel) {
        const self = this;
        const key = cacheKey(body);
        this.cancel();
        if (this.cache.has(key)) {
            const text = this.cache.get(key);
            this.cache.delete(key);
            this.cache.set(key, text); // most recently used last
            return Promise.resolve(text);
        }
        const run = { controller: new AbortController(), timer: null, reject: null };
        this.current = run;
        return new Promise(function (resolve, reject) {
            run.reject = reject;
            if (onCancel) {
                onCancel(function () {
                    self.cancelRun(run);
                });
            }
            run.timer = self.setTimer(function () {
                run.timer = null;
                self.requests += 1;
                self.ask(body, run.controller.signal).then(function (text) {
                    self.remember(key, text);
                    if (self.current !== run) {
                        reject(cancelled());
                        return;
                    }
                    self.current = null;
                    resolve(text);
                }, function (err) {
                    if (self.current === run) {
                        self.current = null;
                    }
                    reject(run.controller.signal.aborted ? cancelled() : err);
                });
            }, self.delay);
        });
    };

    CompletionSource.prototype.remember = function (key, text) {
        this.cache.set(key, text);
        while (this.cache.size > this.cacheSize) {
            this.cache.delete(this.cache.keys().next().value);
        }
    };

    CompletionSource.prototype.cancelRun = function (run) {
        if (this.current === run) {
            this.current = null;
        }
        if (run.timer !== null) {
            this.clearTimer(run.timer);
            run.timer = null;
            run.reject(cancelled());
        }
        run.controller.abort();
    };

    /** Cancel the pending or in-flight request, if any. */
    CompletionSource.prototype.cancel = function () {
        if (this.current) {
            this.cancelRun(this.current);
        }
    };

    return { CompletionSource: CompletionSource, DELAY_MS: DELAY_MS, CACHE_SIZE: CACHE_SIZE };
}));
