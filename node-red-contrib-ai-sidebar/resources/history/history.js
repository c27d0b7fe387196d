/**
 * The flow history as the sidebar's History panel shows it (issue 35), from the service's routes relayed by the
 * plugin: `GET ai-sidebar/flow-history?limit=&before=` (`{deploys: [{rev, time (ISO 8601 UTC), user, origin
 * ("assistant"|"editor"|"api"), pinned, first, counts: {added, removed, changed} (null when first), detail}]}`,
 * newest first) and
 * `GET ai-sidebar/flow-history/diff?from=&to=` (`{from, to, tabs: [{id, type, label, status, properties, added,
 * removed, changed, moved, renamed, wires: {added, removed}}], counts}`, service/history/diff.py).
 *
 * A restore goes through the chat's direct trigger (`@tools:restore_flows|{...}`, service/chat/direct.py): the
 * service plans it on the live flows and answers with the approval card, as for any write.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.history`) and in Node.js by the package's
 * tests (`require`). Nothing here touches the DOM or `RED`; history-panel.js shows it.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.history = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const PAGE_SIZE = 20;
    const KINDS = ["added", "removed", "changed"];
    const MAX_VALUE = 300; // characters of a value shown; the rest is cut

    function number(value) {
        return typeof value === "number" && isFinite(value) && value >= 0 ? value : 0;
    }

    /**
     * The route of one page of the listing: the newest `PAGE_SIZE` deploys, or those before `before` (the ISO time
     * of the last one shown).
     */
    function listPath(before) {
        return "ai-sidebar/flow-history?limit=" + PAGE_SIZE + (before ? "&before=" + encodeURIComponent(before) : "");
    }

    /**
     * The route of a deploy's diff: against the deploy before it (`from` the one listed after it, or, for the
     * last one listed, the time one millisecond earlier: the deploy then in force), or against `now`.
     *
     * @param {object[]} deploys the deploys listed, newest first
     * @param {number} index the deploy's place in `deploys`
     * @param {boolean} [withNow] compare the deploy with the flows deployed now
     */
    function diffPath(deploys, index, withNow) {
        const deploy = deploys[index];
        let from;
        let to;
        if (withNow) {
            from = deploy.rev;
            to = "now";
        } else {
            const previous = deploys[index + 1];
            from = previous ? previous.rev : new Date(Date.parse(deploy.time) - 1).toISOString();
            to = deploy.rev;
        }
        return "ai-sidebar/flow-history/diff?from=" + encodeURIComponent(from) + "&to=" + encodeURIComponent(to);
    }

    /**
     * A deploy as a row shows it: `when` in the user's locale (date and time), `origin`, `user` or null, `first`
     * (the first state the history captured: nothing before it to count against), `counts` (the numbers of added,
     * removed and changed objects; null when `first`), `summary` (the assistant's own words for its change,
     * when it made it) and `pinned`.
     *
     * @param {object} deploy one of the listing's deploys
     * @param {string} [locale] a BCP 47 tag such as "de" (the editor's language)
     */
    function deployRow(deploy, locale) {
        const counts = deploy.counts || {};
        const first = deploy.first === true || deploy.counts === null;
        const detail = deploy.detail || {};
        return {
            rev: String(deploy.rev),
            time: deploy.time,
            when: formatTime(deploy.time, locale),
            origin: ["assistant", "editor", "api"].indexOf(deploy.origin) === -1 ? "editor" : deploy.origin,
            user: deploy.user ? String(deploy.user) : null,
            first: first,
            counts: first ? null :
                { added: number(counts.added), removed: number(counts.removed), changed: number(counts.changed) },
            summary: typeof detail.summary === "string" ? detail.summary : null,
            pinned: !!deploy.pinned
        };
    }

    /**
     * An ISO time as a date and time in `locale` (the browser's when it is unknown): `style` "medium" (the rows,
     * with seconds) or "short" (a restore's question, which also names the conversation).
     */
    function formatTime(iso, locale, style) {
        const date = new Date(iso);
        if (isNaN(date.getTime())) {
            return String(iso || "");
        }
        const options = { dateStyle: style || "medium", timeStyle: style || "medium" };
        try {
            return new Intl.DateTimeFormat(locale || undefined, options).format(date);
        } catch {
            return new Intl.DateTimeFormat(undefined, options).format(date);
        }
    }

    /**
     * A value of a property before or after as one line of text, cut at `MAX_VALUE` characters (the service sent
     * it redacted).
     */
    function valueText(value) {
        if (value === undefined || value === null) {
            return "—";
        }
        const text = JSON.stringify(value);
        return text.length > MAX_VALUE ? text.slice(0, MAX_VALUE - 1) + "…" : text;
    }

    /**
     * A diff as the panel shows it: one section per tab with its lines, nodes named (their name, else the name the
     * editor has for them through `nameOf(id)`, else their type) and ids kept for the restore buttons.
     *
     * @param {object} diff the diff route's answer
     * @param {function(string): (string|null)} nameOf the editor's label of a node id, or null when unknown
     * @returns {{tabs: {id, type, label, status, lines: {kind, node, text, properties}[]}[], empty: boolean}}
     *     `kind` is one of added, removed, changed, moved, renamed, wire-added, wire-removed, property;
     *     `properties` (changed nodes) lists `{name, before, after}` as text
     */
    function diffView(diff, nameOf) {
        function label(node) {
            return (node && node.name) || (node && nameOf(node.id)) || (node && node.type) || "";
        }
        function wireEnd(id) {
            return nameOf(id) || id;
        }
        function properties(map) {
            return Object.keys(map || {}).map(function (name) {
                return { name: name, before: valueText(map[name].before), after: valueText(map[name].after) };
            });
        }
        const tabs = (diff && Array.isArray(diff.tabs) ? diff.tabs : []).map(function (tab) {
            const lines = [];
            properties(tab.properties).forEach(function (property) {
                lines.push({ kind: "property", node: null, text: property.name, properties: [property] });
            });
            KINDS.forEach(function (kind) {
                (tab[kind] || []).forEach(function (node) {
                    lines.push({ kind: kind, node: node.id, text: label(node), type: node.type,
                        properties: kind === "changed" ? properties(node.properties) : [] });
                });
            });
            (tab.renamed || []).forEach(function (node) {
                lines.push({ kind: "renamed", node: node.id, text: valueText(node.before) + " → " + valueText(node.after),
                    type: node.type, properties: [] });
            });
            (tab.moved || []).forEach(function (node) {
                lines.push({ kind: "moved", node: node.id, text: label(node), type: node.type, properties: [] });
            });
            ["added", "removed"].forEach(function (kind) {
                ((tab.wires || {})[kind] || []).forEach(function (wire) {
                    lines.push({ kind: "wire-" + kind, node: null, type: null, properties: [],
                        text: wireEnd(wire[0]) + " (" + (Number(wire[1]) + 1) + ") → " + wireEnd(wire[2]) });
                });
            });
            return { id: tab.id || null, type: tab.type, label: tab.label || (tab.id && nameOf(tab.id)) || "",
                status: tab.status, lines: lines };
        });
        return { tabs: tabs, empty: tabs.length === 0 };
    }

    /**
     * The chat message that asks the service to restore: its direct trigger for `restore_flows` (a write tool:
     * the service answers with the approval card, and after Approve the change lands in the editor).
     *
     * @param {string} rev the deploy to restore
     * @param {string} scope "whole", "tab" or "node"
     * @param {string} [targetId] the tab or node (scope tab/node)
     */
    function restoreMessage(rev, scope, targetId) {
        const args = { to: String(rev), scope: scope };
        if (scope !== "whole") {
            args.target_id = String(targetId);
        }
        return "@tools:restore_flows|" + JSON.stringify(args);
    }

    /** Whether a failed request means the history is off or cannot be read (the panel says so, not the code). */
    function unavailable(err) {
        return !!err && (err.code === "history_unavailable" || err.code === "memory_unavailable");
    }

    return { PAGE_SIZE: PAGE_SIZE, listPath: listPath, diffPath: diffPath, deployRow: deployRow,
        formatTime: formatTime, diffView: diffView, restoreMessage: restoreMessage, unavailable: unavailable };
}));
