/**
 * Which words of an answer name something in the workspace, and what the `sources` of a tool_result event link to.
 *
 * An answer may name nodes by id ("the function node 8f3a…") or by name ("Parse reading"). Both become links that
 * reveal the node: an id of a node, tab, subflow or group that exists, and a name that exactly one of them has
 * (case as written; at least MIN_NAME_CHARS characters; never a name that is also a node type's, which prose uses
 * for the type). A name that reads as an ordinary word (one word of lower-case letters: "error", "start") is
 * linked only where the answer quotes it ("error", 'error', “error”, «error», 「error」, or an inline code span): prose
 * uses such words for themselves. A match must stand alone: no letter, digit or `_` right before or after it, and
 * not be part of a property path (`msg.error`, `error.message`).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.nodeLinks`) and in Node.js by the package's
 * tests (`require`). The workspace is passed in as plain objects; nothing here touches `RED` or the DOM.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.nodeLinks = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const MIN_NAME_CHARS = 3;
    // Above this many candidates the answer is not searched for names (ids still are): one pattern of every name
    // of a very large workspace would cost more than the links are worth.
    const MAX_NAMES = 5000;

    function escapeRegExp(text) {
        return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }

    // One word of lower-case letters (and their marks): a name that prose would also use as a word.
    const WORD_LIKE = /^\p{Ll}[\p{Ll}\p{M}]*$/u;
    const OPENING_QUOTES = "\"'\u201c\u2018\u00ab\u201e\u300c";
    const CLOSING_QUOTES = "\"'\u201d\u2019\u00bb\u201c\u300d";

    function alternation(texts) {
        return texts.slice().sort(function (a, b) {
            return b.length - a.length;
        }).map(escapeRegExp).join("|");
    }

    /**
     * What an answer's words can link to.
     *
     * @param {{id: string, name: (string|undefined), type: string}[]} items the workspace's flow nodes, tabs
     *     (`name`: the tab's label), subflows and groups
     * @param {function(string): boolean} [isNodeType] whether a word is a registered node type ("debug", "change")
     * @returns {{byText: Map<string, {id: string, name: string, type: string}>, pattern: ?RegExp,
     *     quoted: Map<string, {id: string, name: string, type: string}>, quotedPattern: ?RegExp}} `pattern` finds
     *     any text of `byText` (global, longest first), null when there is none; `quoted`: the word-like names,
     *     which `quotedPattern` finds between quotes (the name is its group 1)
     */
    function targets(items, isNodeType) {
        const byText = new Map();
        const quoted = new Map();
        const names = new Map();
        (items || []).forEach(function (item) {
            if (!item || typeof item.id !== "string" || !item.id) {
                return;
            }
            const entry = { id: item.id, name: typeof item.name === "string" ? item.name : "", type: item.type || "" };
            byText.set(item.id, entry);
            const name = entry.name.trim();
            if (name.length >= MIN_NAME_CHARS && !(isNodeType && isNodeType(name))) {
                names.set(name, names.has(name) ? null : entry);
            }
        });
        if (names.size <= MAX_NAMES) {
            names.forEach(function (entry, name) {
                // A name two things have, or another one's id, names nothing for sure.
                if (entry && !byText.has(name)) {
                    (WORD_LIKE.test(name) ? quoted : byText).set(name, entry);
                }
            });
        }
        const quotedPattern = quoted.size ? new RegExp("[" + OPENING_QUOTES + "](" +
            alternation(Array.from(quoted.keys())) + ")[" + CLOSING_QUOTES + "]", "gu") : null;
        if (!byText.size) {
            return { byText: byText, pattern: null, quoted: quoted, quotedPattern: quotedPattern };
        }
        // Not part of a property path either: "msg.error" names no node called "error".
        const pattern = new RegExp("(?<![\\p{L}\\p{N}_.$])(?:" + alternation(Array.from(byText.keys())) +
            ")(?![\\p{L}\\p{N}_]|\\.[\\p{L}\\p{N}_$])", "gu");
        return { byText: byText, pattern: pattern, quoted: quoted, quotedPattern: quotedPattern };
    }

    /**
     * Where a text names something of `found` (targets()).
     *
     * @param {string} text
     * @param {{byText: Map, pattern: ?RegExp}} found
     * @returns {{start: number, end: number, text: string, id: string, name: string, type: string}[]} in order,
     *     not overlapping
     */
    function findLinks(text, found) {
        const links = [];
        if (!found || !text) {
            return links;
        }
        let match;
        if (found.pattern) {
            found.pattern.lastIndex = 0;
            while ((match = found.pattern.exec(text)) !== null) {
                const entry = found.byText.get(match[0]);
                links.push({ start: match.index, end: match.index + match[0].length, text: match[0], id: entry.id,
                    name: entry.name, type: entry.type });
            }
        }
        if (found.quotedPattern) {
            found.quotedPattern.lastIndex = 0;
            while ((match = found.quotedPattern.exec(text)) !== null) {
                const entry = found.quoted.get(match[1]);
                const start = match.index + 1;
                if (!links.some(function (link) { return link.start < start + match[1].length && start < link.end; })) {
                    links.push({ start: start, end: start + match[1].length, text: match[1], id: entry.id,
                        name: entry.name, type: entry.type });
                }
            }
            links.sort(function (a, b) { return a.start - b.start; });
        }
        return links;
    }

    /**
     * What an inline code span links to: only a span that is all an id or a name (`8f3a…`); a span holding flow
     * JSON or code is left alone.
     *
     * @param {string} text the span's text
     * @param {{byText: Map}} found
     * @returns {?{id: string, name: string, type: string}}
     */
    function codeTarget(text, found) {
        const key = String(text).trim();
        return (found && (found.byText.get(key) || (found.quoted && found.quoted.get(key)))) || null;
    }

    /**
     * The links a tool_result's `sources` stand for (contracts16 A), in order, at most 20, repeats left out.
     *
     * @param {object[]} sources `{kind: "node-help", type, module, version, section?}` or
     *     `{kind: "workspace", id, tab, name, nodeType}`; other kinds are skipped
     * @param {function(string): boolean} exists whether a node, tab, subflow or group of that id is in the workspace
     * @returns {{kind: ("help"|"node"), type: (string|undefined), id: (string|undefined), name: string,
     *     tab: ?string, gone: boolean}[]} `name`: the node's name, else its type, else its id
     */
    function sourceLinks(sources, exists) {
        const links = [];
        const seen = new Set();
        (Array.isArray(sources) ? sources : []).forEach(function (source) {
            if (!source || typeof source !== "object" || links.length >= 20) {
                return;
            }
            if (source.kind === "node-help" && typeof source.type === "string" && source.type) {
                const key = "help:" + source.type;
                if (!seen.has(key)) {
                    seen.add(key);
                    links.push({ kind: "help", type: source.type, name: source.type, tab: null, gone: false });
                }
            } else if (source.kind === "workspace" && typeof source.id === "string" && source.id) {
                const key = "node:" + source.id;
                if (!seen.has(key)) {
                    seen.add(key);
                    links.push({
                        kind: "node", id: source.id,
                        name: String(source.name || source.nodeType || source.id),
                        tab: typeof source.tab === "string" && source.tab && source.nodeType !== "tab" ?
                            source.tab : null,
                        gone: !exists(source.id)
                    });
                }
            }
        });
        return links;
    }

    return { MIN_NAME_CHARS: MIN_NAME_CHARS, MAX_NAMES: MAX_NAMES, targets: targets, findLinks: findLinks,
        codeTarget: codeTarget, sourceLinks: sourceLinks };
}));
