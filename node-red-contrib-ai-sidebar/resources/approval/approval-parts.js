/**
 * Review part by part (issue 36), the pure half: what each part of a write's card says and the decision the ticked
 * parts make. An action of an `approval_required` event lists its `parts` (README "Changing flows, only after the
 * user approves": `{id, kind: add|remove|prop|wire+|wire-, node, property?, source?, port?, target?}`); `ticked`,
 * when the service showed the card again after an adjustment, names the parts to show ticked.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.approvalParts`) and in Node.js by the
 * package's tests (`require`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.approvalParts = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    var KEYS = { add: "approval.part.add", remove: "approval.part.remove", prop: "approval.part.prop",
        "wire+": "approval.part.wireAdded", "wire-": "approval.part.wireRemoved" };

    /**
     * The parts of one action as the card lists them.
     *
     * @param {object} action an action of an approval_required event (`parts`, `ticked`, `diff`)
     * @param {function(string): ?string} nameOf a node's label in the editor, or null when it has no such node
     * @returns {{id: string, key: string, params: object, ticked: boolean}[]} `key` and `params`: the sidebar's
     *     locale sentence; empty when the action has fewer than two parts (nothing to choose)
     */
    function describeParts(action, nameOf) {
        var parts = action && Array.isArray(action.parts) ? action.parts.filter(function (part) {
            return part && typeof part.id === "string" && KEYS[part.kind];
        }) : [];
        if (parts.length < 2) {
            return [];
        }
        var added = {};
        ((action.diff && action.diff.added) || []).forEach(function (node) {
            if (node && typeof node.id === "string") {
                added[node.id] = node;
            }
        });
        var ticked = Array.isArray(action.ticked) ? action.ticked : null;

        function label(id) {
            var node = added[id];
            if (node) {
                var name = node.type === "tab" ? node.label : node.name;
                return node.type + (name ? " \u201c" + name + "\u201d" : "");
            }
            return (nameOf && nameOf(id)) || id;
        }
        return parts.map(function (part) {
            var params = { node: label(part.node) };
            if (part.kind === "prop") {
                params.property = part.property;
            } else if (part.kind === "wire+" || part.kind === "wire-") {
                params = { from: label(part.source), port: Number(part.port) + 1, to: label(part.target) };
            }
            return { id: part.id, key: KEYS[part.kind], params: params,
                ticked: ticked ? ticked.indexOf(part.id) !== -1 : true };
        });
    }

    /**
     * The decision the ticked parts make: `{type: "approve"}` when every part is ticked ("Approve all": no list),
     * `{type: "approve", parts}` when some are, null when none is (nothing to approve).
     *
     * @param {{id: string}[]} parts from describeParts
     * @param {string[]} tickedIds the ids ticked now
     */
    function decisionFor(parts, tickedIds) {
        var ticked = parts.filter(function (part) { return tickedIds.indexOf(part.id) !== -1; });
        if (!ticked.length) {
            return null;
        }
        if (ticked.length === parts.length) {
            return { type: "approve" };
        }
        return { type: "approve", parts: ticked.map(function (part) { return part.id; }) };
    }

    return { describeParts: describeParts, decisionFor: decisionFor };
}));
