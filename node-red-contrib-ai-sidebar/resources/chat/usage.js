/**
 * Tokens and cost as the sidebar shows them: under each answer from the `done` event's
 * `usage {inputTokens, outputTokens, cost}`, and for the open conversation from
 * `GET ai-sidebar/usage?by=session&sessionId=` (README "Tokens, cost and budgets": `cost` is in USD, null when
 * the model has no price). Nothing is shown when the service reports no usage.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.usage`) and in Node.js by the package's
 * tests (`require`). Nothing here touches the DOM; usage-view.js shows it.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.usage = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // What an unpriced cost reads as (the design's "null when the model has no price": never a guess).
    const NO_COST = "\u2014";

    function count(value) {
        return typeof value === "number" && isFinite(value) && value >= 0 ? Math.round(value) : null;
    }

    /**
     * A cost in USD as text in `locale`: two decimals from one dollar up, three significant digits under it (a
     * question often costs a fraction of a cent), "$0.00" for zero, "—" for null.
     *
     * @param {?number} cost USD
     * @param {string} [locale] a BCP 47 tag (the editor's language); the runtime's default when omitted or unknown
     * @returns {string}
     */
    function formatCost(cost, locale) {
        if (typeof cost !== "number" || !isFinite(cost) || cost < 0) {
            return NO_COST;
        }
        const options = cost === 0 || cost >= 1 ?
            { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 } :
            { style: "currency", currency: "USD", maximumSignificantDigits: 3 };
        try {
            return new Intl.NumberFormat(locale || undefined, options).format(cost);
        } catch {
            return new Intl.NumberFormat(undefined, options).format(cost);
        }
    }

    function formatCount(value, locale) {
        try {
            return new Intl.NumberFormat(locale || undefined).format(value);
        } catch {
            return String(value);
        }
    }

    /**
     * The usage line's parts, or null when there is nothing to show (no usage, or counts that are not numbers).
     *
     * @param {?{inputTokens: number, outputTokens: number, cost: ?number}} usage a `done` event's `usage` or a
     *     totals row of GET usage
     * @param {string} [locale]
     * @returns {?{input: string, output: string, cost: string, priced: boolean}}
     */
    function usageParts(usage, locale) {
        if (!usage || typeof usage !== "object") {
            return null;
        }
        const input = count(usage.inputTokens);
        const output = count(usage.outputTokens);
        if (input === null || output === null) {
            return null;
        }
        const priced = typeof usage.cost === "number" && isFinite(usage.cost);
        return { input: formatCount(input, locale), output: formatCount(output, locale),
            cost: formatCost(usage.cost, locale), priced: priced };
    }

    /**
     * The totals row of one session in a `GET ai-sidebar/usage?by=session` answer, or null when the service
     * counted no turn for it.
     *
     * @param {object} body `{by, total, totals: [{sessionId, turns, inputTokens, outputTokens, cost, ...}]}`
     * @param {string} sessionId
     * @returns {?{turns: number, inputTokens: number, outputTokens: number, cost: ?number}}
     */
    function sessionTotals(body, sessionId) {
        const rows = body && Array.isArray(body.totals) ? body.totals : [];
        const row = rows.filter(function (entry) {
            return entry && entry.sessionId === sessionId;
        })[0];
        return row && count(row.turns) ? row : null;
    }

    /** The query of the open conversation's totals (the plugin relays it to the service as it is). */
    function sessionQuery(sessionId) {
        return "ai-sidebar/usage?by=session&sessionId=" + encodeURIComponent(sessionId);
    }

    return { NO_COST: NO_COST, formatCost: formatCost, usageParts: usageParts, sessionTotals: sessionTotals,
        sessionQuery: sessionQuery };
}));
