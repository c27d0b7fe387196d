/**
 * The sentence for an error code the service stored with a turn (the `errors` of a history message's metadata):
 * the history shows what went wrong in the user's language, never a raw code such as `llm_error`. The codes are
 * the service's (README "Error codes"); they are grouped by what the user can do about them.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.errorCodes`) and in Node.js by the
 * package's tests (`require`). Nothing here touches `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.errorCodes = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** Catalog key (under `error.stored.`) -> the codes it explains; a code not listed is "other". */
    const GROUPS = {
        setup: ["provider_not_configured", "invalid_api_key", "config_not_found"],
        busy: ["rate_limited", "too_many_requests"],
        model: ["llm_timeout", "llm_unreachable", "llm_error"],
        limit: ["agent_limit", "agent_timeout"],
        nodered: ["nodered_unreachable", "nodered_timeout", "nodered_unauthorized", "nodered_login_failed",
            "nodered_error", "not_found", "diagnostics_disabled"],
        connection: ["service_unreachable", "service_disconnected"],
        request: ["message_too_long", "request_too_large", "invalid_json", "invalid_request", "bad_request"]
    };

    /**
     * The catalog keys (under `error.stored.`) for a turn's stored error codes, without repeats, in order.
     *
     * @param {string[]} codes e.g. ["llm_error"]
     * @returns {string[]} e.g. ["model"]; "other" for codes of no group
     */
    function storedErrorKeys(codes) {
        const keys = [];
        (Array.isArray(codes) ? codes : []).forEach(function (code) {
            let key = "other";
            Object.keys(GROUPS).forEach(function (group) {
                if (GROUPS[group].indexOf(String(code)) !== -1) {
                    key = group;
                }
            });
            if (keys.indexOf(key) === -1) {
                keys.push(key);
            }
        });
        return keys;
    }

    return { GROUPS: GROUPS, storedErrorKeys: storedErrorKeys };
}));
