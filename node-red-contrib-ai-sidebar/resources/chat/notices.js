/**
 * What a `notice` stream event says, as the sidebar shows it under the answer (README "Stream events": `notice`
 * has `code`, `message` in the request's language and the code's own fields; the answer stands).
 *
 * `unknown_node_types` (the service checked the node types of a flow export in the answer against the installed
 * ones) carries `types[{type, closest?, module?}]`: each type is listed with the module that provides it (to be
 * installed from the palette manager) or the closest installed type. Any other code is shown as its message.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.notices`) and in Node.js by the package's
 * tests (`require`). Nothing here touches the DOM; notice-view.js shows it.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.notices = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const UNKNOWN_NODE_TYPES = "unknown_node_types";
    const MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable";
    // A notice is the service's text; a runaway one is cut rather than filling the sidebar.
    const MAX_MESSAGE_CHARS = 2000;
    const MAX_TYPES = 50;

    function text(value) {
        return typeof value === "string" && value.trim() ? value.trim() : null;
    }

    /**
     * One unknown type as the sidebar lists it.
     *
     * @param {{type: string, closest: ?string, module: ?string}} entry
     * @returns {{key: string, args: object}} the catalog key under `notice.` and its arguments: `module` (install
     *     it), `closest` (did you mean) or `unknown` (neither is known)
     */
    function typeHint(entry) {
        if (entry.module) {
            return { key: "module", args: { type: entry.type, module: entry.module } };
        }
        if (entry.closest) {
            return { key: "closest", args: { type: entry.type, closest: entry.closest } };
        }
        return { key: "unknown", args: { type: entry.type } };
    }

    /**
     * The view of a `notice` event, or null when it has nothing to show.
     *
     * @param {object} event a stream event of type `notice`
     * @returns {?{code: string, message: ?string, types: {type: string, closest: ?string, module: ?string}[],
     *     modules: string[], server: ?string}} `types` only for `unknown_node_types` (each type once, in the
     *     event's order, at most 50), `modules` the distinct modules to install; `message` the service's sentence
     *     (null when it sent none); `server` the external MCP server an `mcp_server_unavailable` notice names
     */
    function noticeView(event) {
        if (!event || typeof event !== "object") {
            return null;
        }
        const code = text(event.code) || "notice";
        let message = text(event.message);
        if (message && message.length > MAX_MESSAGE_CHARS) {
            message = message.slice(0, MAX_MESSAGE_CHARS) + "\u2026";
        }
        const types = [];
        const modules = [];
        if (code === UNKNOWN_NODE_TYPES && Array.isArray(event.types)) {
            const seen = {};
            event.types.forEach(function (item) {
                const type = item && text(item.type);
                if (!type || Object.prototype.hasOwnProperty.call(seen, type) || types.length >= MAX_TYPES) {
                    return;
                }
                seen[type] = true;
                const module = text(item.module);
                types.push({ type: type, closest: module ? null : text(item.closest), module: module });
                if (module && modules.indexOf(module) === -1) {
                    modules.push(module);
                }
            });
        }
        const server = code === MCP_SERVER_UNAVAILABLE ? text(event.server) : null;
        if (server && !message) {
            // The service always words it; a bare server name is still worth showing.
            message = server;
        }
        if (!message && !types.length) {
            return null;
        }
        return { code: code, message: message, types: types, modules: modules, server: server };
    }

    /**
     * Which of a notice's unknown `types` a flow uses, in the notice's order.
     *
     * @param {object[]} nodes a flow export's nodes (flowJson.parseFlow)
     * @param {{type: string}[]} types a notice view's `types`
     * @returns {string[]}
     */
    function typesInFlow(nodes, types) {
        const used = {};
        (Array.isArray(nodes) ? nodes : []).forEach(function (node) {
            if (node && typeof node.type === "string") {
                used[node.type] = true;
            }
        });
        return types.map(function (entry) {
            return entry.type;
        }).filter(function (type) {
            return Object.prototype.hasOwnProperty.call(used, type);
        });
    }

    return { UNKNOWN_NODE_TYPES: UNKNOWN_NODE_TYPES, MCP_SERVER_UNAVAILABLE: MCP_SERVER_UNAVAILABLE, noticeView: noticeView, typeHint: typeHint,
        typesInFlow: typesInFlow };
}));
