/**
 * Conversation search: the service's answer (`POST ai-sidebar/search`, category `message`) as one row per
 * conversation, and which message of a conversation's history a row opens at.
 *
 * The service ranks matching messages (SQLite FTS5, BM25) and marks the matched words of each snippet with `[` and
 * `]`; a result names its session, the message's role and `createdAt` (Unix seconds), which the history's messages
 * carry too.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.searchHits`) and in Node.js by the package's
 * tests (`require`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.searchHits = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // FTS5's trigram index finds words of three or more characters only (service/memory/store.py fts_query).
    const MIN_QUERY_CHARS = 3;

    /** Whether a query is worth sending: at least one word of MIN_QUERY_CHARS characters. */
    function searchable(query) {
        return String(query || "").trim().split(/\s+/).some(function (word) {
            return Array.from(word).length >= MIN_QUERY_CHARS;
        });
    }

    /**
     * A snippet's parts, the matched words marked.
     *
     * @param {string} snippet e.g. "…the [catch] node…"
     * @returns {{text: string, mark: boolean}[]}
     */
    function snippetParts(snippet) {
        const parts = [];
        const pattern = /\[([^\]]*)\]/g;
        const text = String(snippet || "");
        let at = 0;
        let match;
        while ((match = pattern.exec(text)) !== null) {
            if (match.index > at) {
                parts.push({ text: text.slice(at, match.index), mark: false });
            }
            parts.push({ text: match[1], mark: true });
            at = match.index + match[0].length;
        }
        if (at < text.length) {
            parts.push({ text: text.slice(at), mark: false });
        }
        return parts;
    }

    /**
     * One row per conversation, in the service's order (best first): its best matching message.
     *
     * @param {{results: object[]}} body the search answer
     * @returns {{sessionId: string, role: string, createdAt: ?number, snippet: string, parts: object[]}[]}
     */
    function rows(body) {
        const seen = new Set();
        const list = [];
        (body && Array.isArray(body.results) ? body.results : []).forEach(function (result) {
            if (!result || result.category !== "message" || typeof result.sessionId !== "string" ||
                    seen.has(result.sessionId)) {
                return;
            }
            seen.add(result.sessionId);
            list.push({ sessionId: result.sessionId, role: String(result.role || ""),
                createdAt: typeof result.createdAt === "number" ? result.createdAt : null,
                snippet: String(result.snippet || ""), parts: snippetParts(result.snippet) });
        });
        return list;
    }

    /**
     * The index of the history message a row stands for: the one of its role and time, else the first whose text
     * holds all the snippet's matched words (case ignored), else -1.
     *
     * @param {{role: string, content: string, createdAt: number}[]} messages the conversation's history
     * @param {{role: string, createdAt: ?number, parts: object[]}} hit a row of rows()
     * @returns {number}
     */
    function messageIndex(messages, hit) {
        if (!Array.isArray(messages) || !hit) {
            return -1;
        }
        for (let i = 0; i < messages.length; i++) {
            const message = messages[i];
            if (message && hit.createdAt !== null && message.createdAt === hit.createdAt && message.role === hit.role) {
                return i;
            }
        }
        const words = (hit.parts || []).filter(function (part) {
            return part.mark && part.text;
        }).map(function (part) {
            return part.text.toLowerCase();
        });
        if (!words.length) {
            return -1;
        }
        for (let i = 0; i < messages.length; i++) {
            const content = messages[i] && typeof messages[i].content === "string" ?
                messages[i].content.toLowerCase() : "";
            if (words.every(function (word) {
                return content.indexOf(word) !== -1;
            })) {
                return i;
            }
        }
        return -1;
    }

    return { MIN_QUERY_CHARS: MIN_QUERY_CHARS, searchable: searchable, snippetParts: snippetParts, rows: rows,
        messageIndex: messageIndex };
}));
