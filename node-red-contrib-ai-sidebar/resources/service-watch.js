/**
 * Whether the assistant service is reachable, as the sidebar's requests find out: the first request that finds
 * it down (an error whose `serviceUnreachable()` is true, admin-api.js) turns the banner on and starts asking
 * again every `retryMs`; the first that reaches it turns the banner off and lets the sidebar load what it missed.
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

    // How often the sidebar asks again while the service is down (milliseconds).
    const RETRY_MS = 30000;

    /**
     * @param {object} options
     * @param {function()} options.check ask the service again (the Retry button does the same)
     * @param {function(Error)} options.onDown the service was found down (again): show the banner
     * @param {function()} options.onUp it answers again: hide the banner, load what could not be loaded
     * @param {number} [options.retryMs=RETRY_MS]
     * @param {{setInterval: function, clearInterval: function}} [options.timers] the global ones by default
     */
    function ServiceWatch(options) {
        this.options = options;
        // Wrapped: a browser refuses window.setInterval called as a method of another object (Illegal invocation).
        this.timers = options.timers || {
            setInterval: function (fn, ms) {
                return setInterval(fn, ms);
            },
            clearInterval: function (id) {
                clearInterval(id);
            }
        };
        this.down = false;
        this.timer = null;
    }

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
        this.down = true;
        this.options.onDown(err);
        if (!this.timer) {
            const check = this.options.check;
            this.timer = this.timers.setInterval(function () {
                check();
            }, this.options.retryMs || RETRY_MS);
        }
        return true;
    };

    /**
     * A request reached the service.
     *
     * @returns {boolean} whether it had been down until now
     */
    ServiceWatch.prototype.reached = function () {
        this.stop();
        if (!this.down) {
            return false;
        }
        this.down = false;
        this.options.onUp();
        return true;
    };

    /** Stop asking again (the sidebar closes, or the service answered). */
    ServiceWatch.prototype.stop = function () {
        if (this.timer) {
            this.timers.clearInterval(this.timer);
            this.timer = null;
        }
    };

    return { RETRY_MS: RETRY_MS, ServiceWatch: ServiceWatch };
}));
