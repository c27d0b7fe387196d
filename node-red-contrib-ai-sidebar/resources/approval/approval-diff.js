/**
 * What the approval card shows of a write the assistant waits to make (the `actions` of an `approval_required`
 * event, README "Changing flows, only after the user approves"), the arguments a user edits, and where the
 * browser keeps a run's resume token.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.approvalDiff`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM or `RED`: node names and the line differ (jsdiff,
 * vendored as `NodeRedAiSidebar.vendor.Diff`) are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.approvalDiff = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // A value longer than this is cut on the card (the whole value is in the Edit editor).
    const MAX_VALUE_CHARS = 300;
    // A line diff longer than this is cut, saying how many lines were left out.
    const MAX_DIFF_LINES = 200;
    const TOKEN_KEY = "ai-sidebar-approval-token";

    /** Whether a property value is code or multi-line text, shown as a line diff rather than before → after. */
    function isMultiline(value) {
        return typeof value === "string" && value.indexOf("\n") !== -1;
    }

    /**
     * A value as one line of text: a string as it is, anything else as JSON; cut after MAX_VALUE_CHARS.
     *
     * @param {*} value
     * @returns {string} "" for undefined and null
     */
    function formatValue(value) {
        if (value === undefined || value === null) {
            return "";
        }
        let text = typeof value === "string" ? value : JSON.stringify(value);
        if (text.length > MAX_VALUE_CHARS) {
            text = text.slice(0, MAX_VALUE_CHARS) + "\u2026";
        }
        return text;
    }

    /**
     * The line diff of two texts.
     *
     * @param {string} before
     * @param {string} after
     * @param {{diffLines: function(string, string): {value: string, added: boolean, removed: boolean}[]}} Diff
     *     jsdiff
     * @returns {{lines: {kind: ("+"|"-"|" "), text: string}[], omitted: number}} `omitted`: lines left out after
     *     MAX_DIFF_LINES
     */
    function lineDiff(before, after, Diff) {
        const lines = [];
        Diff.diffLines(String(before || ""), String(after || "")).forEach(function (part) {
            const kind = part.added ? "+" : part.removed ? "-" : " ";
            const texts = part.value.replace(/\n$/, "").split("\n");
            texts.forEach(function (text) {
                lines.push({ kind: kind, text: text });
            });
        });
        return { lines: lines.slice(0, MAX_DIFF_LINES), omitted: Math.max(0, lines.length - MAX_DIFF_LINES) };
    }

    /**
     * One action as the card lists it.
     *
     * @param {{tool: string, args: object, summary: string, diff: ?object}} action from `approval_required`
     * @param {function(string): ?string} nameOf a node's label in the editor (null when it has none or is unknown)
     * @param {object} Diff jsdiff (see lineDiff)
     * @param {{newGroup: string}} [words] the sidebar's words for what has no name yet (default English)
     * @returns {{tool: string, summary: string, added: {id: string, type: string, name: string, tab: boolean}[],
     *     removed: {id: string, name: string}[], changed: {id: string, type: string, name: string,
     *     properties: object[]}[], wires: {added: string[], removed: string[]}, context: ?{scope: string,
     *     flow: string, flowName: string, store: string, key: string, value: string}}} names are "" when unknown;
     *     `properties` entries are `{name, before, after}` (one-line texts) or `{name, lines, omitted}` (a line
     *     diff of code or multi-line text); a node's group `g` reads as the group's name (a new group without
     *     one: `words.newGroup`), never its id; wires read "source [port] → target"; `context`: the value
     *     `set_context` writes (its value as indented JSON, in full), null for other tools
     */
    function describeAction(action, nameOf, Diff, words) {
        const diff = (action && action.diff && typeof action.diff === "object") ? action.diff : {};
        const added = Array.isArray(diff.added) ? diff.added.filter(isNode) : [];
        const addedNames = {};
        added.forEach(function (node) {
            addedNames[node.id] = node.name || node.label || "";
        });
        function label(id) {
            const name = Object.prototype.hasOwnProperty.call(addedNames, id) ? addedNames[id] : nameOf(id);
            return name ? name + " [" + id + "]" : "[" + id + "]";
        }
        const addedTypes = {};
        added.forEach(function (node) {
            addedTypes[node.id] = node.type;
        });
        function groupText(id) {
            if (id === undefined || id === null || id === "") {
                return "";
            }
            if (addedTypes[String(id)] === "group") {
                return addedNames[id] ? "\u201c" + addedNames[id] + "\u201d" :
                    ((words && words.newGroup) || "new group");
            }
            const name = nameOf(String(id));
            return name ? "\u201c" + name + "\u201d" : "[" + id + "]";
        }
        function wireText(wire) {
            return label(String(wire[0])) + " [" + (Number(wire[1]) + 1) + "] \u2192 " + label(String(wire[2]));
        }
        const wires = (diff.wires && typeof diff.wires === "object") ? diff.wires : {};
        return {
            tool: String(action && action.tool || ""),
            summary: String(action && action.summary || ""),
            added: added.map(function (node) {
                return { id: node.id, type: String(node.type), name: String(node.name || node.label || ""),
                    tab: node.type === "tab" };
            }),
            removed: (Array.isArray(diff.removed) ? diff.removed : []).map(function (id) {
                return { id: String(id), name: nameOf(String(id)) || "" };
            }),
            changed: (Array.isArray(diff.changed) ? diff.changed : []).filter(isNode).map(function (entry) {
                const properties = entry.properties && typeof entry.properties === "object" ? entry.properties : {};
                return {
                    id: entry.id, type: String(entry.type || ""), name: String(entry.name || ""),
                    properties: Object.keys(properties).map(function (name) {
                        const sides = properties[name] || {};
                        if (isMultiline(sides.before) || isMultiline(sides.after)) {
                            const shown = lineDiff(sides.before, sides.after, Diff);
                            return { name: name, lines: shown.lines, omitted: shown.omitted };
                        }
                        if (name === "g") {  // membership: the group, by name
                            return { name: name, before: groupText(sides.before), after: groupText(sides.after) };
                        }
                        return { name: name, before: formatValue(sides.before), after: formatValue(sides.after) };
                    })
                };
            }),
            wires: {
                added: (Array.isArray(wires.added) ? wires.added : []).filter(isWire).map(wireText),
                removed: (Array.isArray(wires.removed) ? wires.removed : []).filter(isWire).map(wireText)
            },
            context: contextView(diff.context, nameOf)
        };
    }

    /** A set_context diff's `context` as the card shows it (the value in full: what is approved is written). */
    function contextView(context, nameOf) {
        if (!context || typeof context !== "object" || typeof context.key !== "string") {
            return null;
        }
        const flow = typeof context.flow === "string" ? context.flow : "";
        return {
            scope: context.scope === "flow" ? "flow" : "global",
            flow: flow,
            flowName: flow ? String(context.flowLabel || nameOf(flow) || "") : "",
            store: String(context.store || ""),
            key: context.key,
            value: context.value === undefined ? "" : JSON.stringify(context.value, null, 2)
        };
    }

    function isNode(value) {
        return value && typeof value === "object" && typeof value.id === "string";
    }

    function isWire(value) {
        return Array.isArray(value) && value.length === 3;
    }

    /**
     * Read the arguments a user edited.
     *
     * @param {string} text the editor's text
     * @returns {{args: object}|{error: ("invalidJson"|"notObject"), detail: (string|undefined)}}
     */
    function parseEditedArgs(text) {
        let value;
        try {
            value = JSON.parse(text);
        } catch (err) {
            return { error: "invalidJson", detail: err.message };
        }
        if (!value || typeof value !== "object" || Array.isArray(value)) {
            return { error: "notObject" };
        }
        return { args: value };
    }

    /**
     * Where this browser keeps the resume token of a run (Web Storage, per Node-RED user): the service stores only
     * a hash, so the token of an `approval_required` event is kept until the run is answered.
     *
     * @param {string} runId
     * @param {string} [username]
     * @returns {string}
     */
    function tokenKey(runId, username) {
        return TOKEN_KEY + ":" + (username ? username + ":" : "") + runId;
    }

    /**
     * The decisions to send once every action has one.
     *
     * @param {(?object)[]} chosen per action: `{type: "approve", parts?}` (parts: the ticked part ids), `{type: "edit", args}`, `{type: "reject",
     *     message?}` or null while undecided
     * @returns {?object[]} null while some action is undecided; an empty reject message is left out
     */
    function decisionsToSend(chosen) {
        if (!chosen.length || chosen.some(function (decision) { return !decision; })) {
            return null;
        }
        return chosen.map(function (decision) {
            if (decision.type === "reject") {
                const message = String(decision.message || "").trim();
                return message ? { type: "reject", message: message } : { type: "reject" };
            }
            if (decision.type === "edit") {
                return { type: "edit", args: decision.args };
            }
            // Some parts ticked (approval-parts.js): only those; none listed approves all.
            return Array.isArray(decision.parts) ? { type: "approve", parts: decision.parts.slice() } :
                { type: "approve" };
        });
    }

    /**
     * What the service keeps of an approved change the editor applied (`POST ai-sidebar/approvals/<runId>/applied`,
     * the body's `outcome`): the counts, or the problem with at most 100 ids and a message of 500 characters.
     *
     * @param {object} outcome flowChange.applyChange's: `{added, tabs, changed, removed, tab}` or `{problem:
     *     {reason, ids?, message?}}`
     * @returns {object}
     */
    function reportedOutcome(outcome) {
        if (outcome && outcome.problem) {
            const problem = { reason: String(outcome.problem.reason) };
            if (Array.isArray(outcome.problem.ids)) {
                problem.ids = outcome.problem.ids.slice(0, 100).map(function (id) {
                    return String(id).slice(0, 128);
                });
            }
            if (outcome.problem.message) {
                problem.message = String(outcome.problem.message).slice(0, 500);
            }
            return { problem: problem };
        }
        const counts = {};
        ["added", "tabs", "changed", "removed"].forEach(function (key) {
            counts[key] = Math.max(0, Number((outcome || {})[key]) || 0);
        });
        if (outcome && typeof outcome.tab === "string") {
            counts.tab = outcome.tab.slice(0, 128);
        }
        return counts;
    }

    return {
        MAX_VALUE_CHARS: MAX_VALUE_CHARS,
        MAX_DIFF_LINES: MAX_DIFF_LINES,
        formatValue: formatValue,
        lineDiff: lineDiff,
        describeAction: describeAction,
        parseEditedArgs: parseEditedArgs,
        tokenKey: tokenKey,
        decisionsToSend: decisionsToSend,
        reportedOutcome: reportedOutcome
    };
}));
