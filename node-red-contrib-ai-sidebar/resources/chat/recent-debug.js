/**
 * The recent Debug sidebar messages of each node, so that a question can take those of the selected nodes (or of
 * the open flow) along: the sidebar records every message the editor's Debug sidebar receives (its
 * `debugPostProcessMessage` hook), whether or not the Debug sidebar's filter shows it.
 *
 * The editor receives them over Node-RED's comms websocket as the logged-in user, so this works for read-only users
 * and with adminAuth alike; what the page received before it was opened is not known here.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.recentDebug`) and in Node.js by the package's
 * tests (`require`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.recentDebug = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // A question takes at most 5 (editorContext.MAX_DEBUG_MESSAGES), so no node needs more kept.
    const PER_NODE = 5;
    // Nodes remembered; the one whose latest message is oldest goes first.
    const MAX_NODES = 500;

    /** A bounded record of the latest messages of each node. */
    function RecentDebug(options) {
        this.perNode = (options && options.perNode) || PER_NODE;
        this.maxNodes = (options && options.maxNodes) || MAX_NODES;
        this.byNode = new Map();
        this.seq = 0;
    }

    /**
     * Record a message.
     *
     * @param {{nodeId: ?string}} item the message as it would go out (editorContext.debugAttachment)
     * @param {?string} tab the id of the tab (flow or subflow) of the node that sent it (`_source.z`)
     */
    RecentDebug.prototype.add = function (item, tab) {
        if (!item || typeof item.nodeId !== "string" || !item.nodeId) {
            return;
        }
        const list = this.byNode.get(item.nodeId) || [];
        // Re-inserted so that the map's order is the order of the latest messages.
        this.byNode.delete(item.nodeId);
        list.push({ item: item, tab: typeof tab === "string" ? tab : null, seq: ++this.seq });
        this.byNode.set(item.nodeId, list.slice(-this.perNode));
        if (this.byNode.size > this.maxNodes) {
            this.byNode.delete(this.byNode.keys().next().value);
        }
    };

    /**
     * The latest messages of the given nodes, or, with none given, of the nodes on `tab`.
     *
     * @param {{nodeIds: string[], tab: ?string}} of
     * @param {number} [limit] default PER_NODE
     * @returns {object[]} the items, oldest first
     */
    RecentDebug.prototype.recent = function (of, limit) {
        const ids = of && Array.isArray(of.nodeIds) ? of.nodeIds : [];
        const tab = of && of.tab;
        const entries = [];
        if (ids.length) {
            ids.forEach((id) => {
                (this.byNode.get(id) || []).forEach(function (entry) {
                    entries.push(entry);
                });
            });
        } else if (tab) {
            this.byNode.forEach(function (list) {
                list.forEach(function (entry) {
                    if (entry.tab === tab) {
                        entries.push(entry);
                    }
                });
            });
        }
        entries.sort(function (a, b) {
            return a.seq - b.seq;
        });
        return entries.slice(-(limit || PER_NODE)).map(function (entry) {
            return entry.item;
        });
    };

    /**
     * The latest messages of any node, newest first (what `@` offers).
     *
     * @param {number} limit how many at most
     * @returns {object[]} the items
     */
    RecentDebug.prototype.latest = function (limit) {
        const entries = [];
        this.byNode.forEach(function (list) {
            list.forEach(function (entry) {
                entries.push(entry);
            });
        });
        entries.sort(function (a, b) {
            return b.seq - a.seq;
        });
        return entries.slice(0, limit).map(function (entry) {
            return entry.item;
        });
    };

    return { PER_NODE: PER_NODE, MAX_NODES: MAX_NODES, RecentDebug: RecentDebug };
}));
