/**
 * What `@` in the question input offers (issue 37): the workspace's tabs, nodes, config nodes and subflows, the
 * installed node types, the Debug sidebar's latest messages and the user's earlier conversations, each with the keys the fuzzy matcher (fuzzy.js)
 * compares and a boost that puts the selected nodes, then the open tab's, first. Read from the editor when `@` is
 * typed, not on every key.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.mentionSource`) and in Node.js by the
 * package's tests; the editor API (`RED`) is passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.mentionSource = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // Boosts added to a match's points (fuzzy.rank): a selected node first, then the open tab's nodes and the open
    // tab itself; the most recent debug messages above older ones.
    const SELECTED = 40;
    const NEARBY = 12;
    const DEBUG = 6;
    // How many Debug sidebar messages are offered.
    const DEBUG_OFFERED = 10;
    // The kinds, with the Font Awesome icon their rows and chips show.
    const ICONS = { node: "fa-cube", config: "fa-cog", tab: "fa-sitemap", subflow: "fa-object-group",
        type: "fa-th-large", debug: "fa-bug", conversation: "fa-comments-o" };

    // How much of an unnamed node's id its row and chip show (as node-chips.js's chips of the selection).
    const SHORT_ID = 6;

    /**
     * A node's name on its row and chip.
     *
     * @param {{id: string, type: string, name: (string|undefined)}} node
     * @returns {string} the name, else "type · short id"
     */
    function nodeLabel(node) {
        return node.name || node.type + " \u00b7 " + String(node.id).slice(0, SHORT_ID);
    }

    function lower(values) {
        return values.filter(function (value) {
            return typeof value === "string" && value;
        }).map(function (value) {
            return value.toLowerCase();
        });
    }

    /**
     * Everything `@` can offer now.
     *
     * @param {object} RED the editor API (`nodes.eachWorkspace`, `eachSubflow`, `eachNode`, `eachConfig`,
     *     `nodes.registry.getNodeTypes`, `view.selection`, `workspaces.active`)
     * @param {{latest: function(number): object[]}} [recentDebug] the Debug sidebar's messages (recent-debug.js)
     * @param {{id: string, name: string}[]} [conversations] the user's saved conversations (GET
     *     ai-sidebar/sessions), the open one left out
     * @returns {{kind: string, id: string, label: string, detail: string, icon: string, keys: string[],
     *     ids: (string[]|undefined), boost: number, debug: (object|undefined)}[]} `kind` as StreamChatRequest.mentions has it, or "debug"
     *     (`debug`: the message, attached as the Debug sidebar's "+" attaches it)
     */
    function candidates(RED, recentDebug, conversations) {
        const items = [];
        const active = RED.workspaces.active();
        const selection = (RED.view.selection() || {}).nodes || [];
        const selected = new Set(selection.map(function (node) {
            return node.id;
        }));
        const places = {};
        RED.nodes.eachWorkspace(function (tab) {
            places[tab.id] = tab.label || tab.id;
            items.push({ kind: "tab", id: tab.id, label: tab.label || tab.id, detail: "", icon: ICONS.tab,
                keys: lower([tab.label]), ids: lower([tab.id]), boost: tab.id === active ? NEARBY : 0 });
        });
        RED.nodes.eachSubflow(function (subflow) {
            places[subflow.id] = subflow.name || subflow.id;
            items.push({ kind: "subflow", id: subflow.id, label: subflow.name || subflow.id, detail: "",
                icon: ICONS.subflow, keys: lower([subflow.name]), ids: lower([subflow.id]),
                boost: subflow.id === active ? NEARBY : 0 });
        });
        RED.nodes.eachNode(function (node) {
            if (node.type === "group" || node.type === "junction") {
                return;
            }
            const boost = selected.has(node.id) ? SELECTED : (node.z === active ? NEARBY : 0);
            items.push({ kind: "node", id: node.id, label: nodeLabel(node), icon: ICONS.node,
                detail: (node.name ? node.type + " \u00b7 " : "") + (places[node.z] || ""),
                keys: lower([node.name, node.type]), ids: lower([node.id]), boost: boost });
        });
        RED.nodes.eachConfig(function (node) {
            items.push({ kind: "config", id: node.id, label: node.name || node.label || node.type,
                detail: node.type, icon: ICONS.config, keys: lower([node.name, node.type]), ids: lower([node.id]), boost: 0 });
        });
        const types = RED.nodes.registry && RED.nodes.registry.getNodeTypes ? RED.nodes.registry.getNodeTypes() : [];
        types.forEach(function (type) {
            items.push({ kind: "type", id: type, label: type, detail: "", icon: ICONS.type, keys: lower([type]),
                boost: 0 });
        });
        (recentDebug ? recentDebug.latest(DEBUG_OFFERED) : []).forEach(function (message, index) {
            const name = message.name || message.nodeId || "debug";
            items.push({ kind: "debug", id: "debug-" + index, label: name, detail: String(message.msg).slice(0, 80),
                icon: ICONS.debug, keys: lower([name, message.topic, message.msg.slice(0, 200)]),
                boost: DEBUG - index / DEBUG_OFFERED, debug: message });
        });
        (conversations || []).forEach(function (session) {
            const name = session.name || session.id;
            items.push({ kind: "conversation", id: session.id, label: name, detail: "", icon: ICONS.conversation,
                keys: lower([session.name]), ids: lower([session.id]), boost: 0 });
        });
        return items;
    }

    return { ICONS: ICONS, SELECTED: SELECTED, NEARBY: NEARBY, DEBUG_OFFERED: DEBUG_OFFERED, nodeLabel: nodeLabel,
        candidates: candidates };
}));
