/**
 * Fuzzy matching of what follows `@` (or `/`) in the question input against the names of things in the workspace:
 * the typed characters in order, not necessarily adjacent ("mqin" finds "mqtt in"), best when they start words or
 * follow each other. Our own small scorer rather than a vendored library: the lists are short strings (names, types,
 * ids), one linear pass per string is enough (a 2,000-node workspace ranks in a few milliseconds, measured by the
 * browser test), and it keeps a kind's boost (selected and nearby nodes first) in one number.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.fuzzy`) and in Node.js by the package's tests.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.fuzzy = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // Points of one matched character: at the start of the text, at the start of a word, right after the previous
    // match, anywhere else.
    const AT_START = 8;
    const AT_WORD = 6;
    const ADJACENT = 4;
    const ANYWHERE = 1;
    const WORD_BREAK = /[\s_\-./:·@]/;

    /**
     * How well `query` matches `text`.
     *
     * @param {string} query lower case, no spaces around
     * @param {string} text lower case
     * @returns {number} higher is better; -1 when the query's characters are not all in the text in order; 0 for an
     *     empty query
     */
    function score(query, text) {
        if (!query) {
            return 0;
        }
        let points = 0;
        let at = 0;
        let previous = -2;
        for (let i = 0; i < query.length; i++) {
            const found = text.indexOf(query[i], at);
            if (found === -1) {
                return -1;
            }
            if (found === 0) {
                points += AT_START;
            } else if (WORD_BREAK.test(text[found - 1])) {
                points += AT_WORD;
            } else if (found === previous + 1) {
                points += ADJACENT;
            } else {
                points += ANYWHERE;
            }
            previous = found;
            at = found + 1;
        }
        // The text holds the query as typed: better still, and shorter texts first among equals.
        if (text.indexOf(query) !== -1) {
            points += query.length * 2;
        }
        return points - text.length / 100;
    }

    /**
     * The items that match `query`, best first.
     *
     * @param {string} query what was typed (any case)
     * @param {{keys: string[], ids: (string[]|undefined), boost: (number|undefined)}[]} items `keys` in lower
     *     case (name, type): an item scores by its best key; `ids` (lower case) match only from their start, as
     *     users type an id they copied (fuzzy over random hex would match nearly every node); `boost` is added to
     *     a match (selected and nearby nodes)
     * @param {number} limit how many at most
     * @returns {object[]} the matching items (the same objects), best first; for an empty query the first
     *     `limit` by boost, in their order
     */
    function rank(query, items, limit) {
        query = String(query || "").toLowerCase().trim();
        // The best `limit` so far, best first: a short list kept in order beats sorting every match.
        const best = [];
        for (let i = 0; i < items.length; i++) {
            const item = items[i];
            let points = -1;
            for (let k = 0; k < item.keys.length; k++) {
                const found = score(query, item.keys[k]);
                if (found > points) {
                    points = found;
                }
            }
            const ids = item.ids || [];
            for (let k = 0; k < ids.length && query; k++) {
                if (ids[k].indexOf(query) === 0 && query.length * AT_START > points) {
                    points = query.length * AT_START;
                }
            }
            if (points < 0) {
                continue;
            }
            points += item.boost || 0;
            if (best.length === limit && points <= best[limit - 1].points) {
                continue;
            }
            let at = best.length;
            while (at > 0 && best[at - 1].points < points) {
                at--;
            }
            best.splice(at, 0, { item: item, points: points });
            if (best.length > limit) {
                best.pop();
            }
        }
        return best.map(function (entry) {
            return entry.item;
        });
    }

    return { score: score, rank: rank };
}));
