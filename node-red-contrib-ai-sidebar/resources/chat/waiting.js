/**
 * What a streamed answer is waiting for while no text arrives, so the sidebar can say it in words with the time
 * waited (a slow model can take 40 s to its first token; a blinking dot alone looked broken).
 *
 * A wait starts with the question and again with a tool call that comes after text; it ends with the next
 * non-empty `token`, and for good with `error` or `done` (stream events: DESIGN.md "Stream events"). While a
 * `tool_call` has no `tool_result` yet the answer waits for that tool, otherwise for the model.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.waiting`) and in Node.js by the package's
 * tests (`require`). Nothing here touches the DOM; answer.js shows the state.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.waiting = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** Screen readers hear the wait when it starts or changes, and then once per this many seconds. */
    const ANNOUNCE_EVERY_SECONDS = 10;

    /**
     * The wait of one answer.
     *
     * @param {number} now when the question was sent, in milliseconds (`Date.now()`)
     */
    function WaitState(now) {
        // Tool names of tool_call events without their tool_result yet, oldest first.
        this.pendingTools = [];
        // When the current wait began (milliseconds), or null while text is arriving or after the end.
        this.since = now;
        this.ended = false;
    }

    /**
     * Take one stream event into account.
     *
     * @param {{type: string, tool: (string|undefined), content: (string|undefined)}} event
     * @param {number} now the time it arrived, in milliseconds
     */
    WaitState.prototype.handle = function (event, now) {
        if (!event || typeof event !== "object" || this.ended) {
            return;
        }
        const tool = String(event.tool || "");
        switch (event.type) {
        case "token":
            if (typeof event.content === "string" && event.content !== "") {
                this.since = null;
            }
            break;
        case "tool_call":
            this.pendingTools.push(tool);
            this.startWaiting(now);
            break;
        case "tool_result": {
            const index = this.pendingTools.indexOf(tool);
            this.pendingTools.splice(index === -1 ? 0 : index, 1);
            // After a tool the model is asked again.
            this.startWaiting(now);
            break;
        }
        case "error":
        case "done":
            this.stop();
            break;
        default:
            break;
        }
    };

    WaitState.prototype.startWaiting = function (now) {
        if (this.since === null) {
            this.since = now;
        }
    };

    /** The answer ended (done, an error, stopped, the connection lost): no more waiting. */
    WaitState.prototype.stop = function () {
        this.ended = true;
        this.since = null;
        this.pendingTools = [];
    };

    /**
     * What the answer waits for now.
     *
     * @param {number} now in milliseconds
     * @returns {?{phase: ("tool"|"model"), tool: (string|undefined), seconds: number, announcedSeconds: number}}
     *     null when it waits for nothing; `tool` is the latest tool still running; `seconds` the whole seconds
     *     since this wait began; `announcedSeconds` the same rounded down to ANNOUNCE_EVERY_SECONDS (0 below it),
     *     so that what screen readers are told changes at most that often
     */
    WaitState.prototype.current = function (now) {
        if (this.ended || this.since === null) {
            return null;
        }
        const seconds = Math.max(0, Math.floor((now - this.since) / 1000));
        const running = this.pendingTools.length > 0;
        return {
            phase: running ? "tool" : "model",
            tool: running ? this.pendingTools[this.pendingTools.length - 1] : undefined,
            seconds: seconds,
            announcedSeconds: seconds - seconds % ANNOUNCE_EVERY_SECONDS
        };
    };

    return {
        ANNOUNCE_EVERY_SECONDS: ANNOUNCE_EVERY_SECONDS,
        WaitState: WaitState
    };
}));
