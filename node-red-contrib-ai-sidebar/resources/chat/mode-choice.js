/**
 * The sidebar's mode (issue 31): "agent" lets the assistant propose changes (write tools, each behind an approval
 * card), "ask" only answers (read tools and knowledge), "plan" (issue 34) has it read first and propose a plan card
 * before any change (README "Plan, ask, build, check"; `/plan ` at the start of a message does the same). Sent as `mode` with each chat request
 * (StreamChatRequest.mode); remembered per Node-RED user in the browser, like the chosen AI configuration.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.modeChoice`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.modeChoice = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const STORAGE_KEY = "node-red-contrib-ai-sidebar.mode";
    const MODES = ["ask", "agent", "plan"];
    // The service's notice on an answer given in Ask mode to a request to change (service/chat/mode_notice.py).
    const SWITCH_NOTICE = "change_needs_agent";

    /**
     * Where the mode is remembered: per Node-RED user, since several may share one browser.
     *
     * @param {string} [username] the editor user (`RED.settings.user.username`); none without adminAuth
     * @returns {string} the localStorage key
     */
    function storageKey(username) {
        return username ? STORAGE_KEY + ":" + username : STORAGE_KEY;
    }

    /**
     * The mode the sidebar opens in: the remembered one, else Agent for a user who may change flows (Node-RED's
     * `ai-sidebar.write`) and Ask for a read-only one (who could not approve a change).
     *
     * @param {?string} saved the remembered mode (anything else is ignored)
     * @param {boolean} mayWrite
     * @returns {"ask"|"agent"}
     */
    function initialMode(saved, mayWrite) {
        if (MODES.indexOf(saved) !== -1) {
            return saved;
        }
        return mayWrite ? "agent" : "ask";
    }

    /**
     * Whether a notice event offers "switch to Agent mode and send again".
     *
     * @param {?object} event a `notice` stream event
     * @returns {boolean}
     */
    function offersSwitch(event) {
        return !!event && event.code === SWITCH_NOTICE;
    }

    /**
     * The mode an arrow key moves to in the radio group: Right and Down the next, Left and Up the previous, round
     * the ends (WAI-ARIA radio group pattern).
     *
     * @param {string} mode the mode chosen now
     * @param {string} key the `KeyboardEvent.key`
     * @returns {?string} the mode to choose, or null for any other key
     */
    function nextMode(mode, key) {
        var step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[key];
        if (!step) {
            return null;
        }
        var index = Math.max(0, MODES.indexOf(mode));
        return MODES[(index + step + MODES.length) % MODES.length];
    }

    return {
        nextMode: nextMode,
        STORAGE_KEY: STORAGE_KEY,
        MODES: MODES,
        storageKey: storageKey,
        initialMode: initialMode,
        offersSwitch: offersSwitch
    };
}));
