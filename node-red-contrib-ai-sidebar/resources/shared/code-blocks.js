/**
 * Pure helpers for the code blocks of answers: what a block is (a Node-RED flow, JSON that was meant as a flow
 * but cannot be imported, JavaScript for a function node, other code), the label it is shown with, and the line
 * diff shown before a block replaces a function node's code.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.codeBlocks`) and in Node.js by the
 * package's tests (`require`). Nothing here touches `RED` or jQuery; the flow parser is passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.codeBlocks = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** Labels (marked's fence names, highlight.js's guesses) that mean JavaScript a function node can run. */
    const JAVASCRIPT_LANGUAGES = ["javascript", "js", "node", "nodejs", "mjs", "cjs"];

    /** Labels under which a block can hold a flow: JSON, or no label at all. */
    const FLOW_LANGUAGES = ["json", "jsonc", "json5", ""];

    /**
     * The longest text, in lines per side, that lineDiff compares line by line; its table grows with the product
     * of both sides, so past this the whole old text is shown as removed and the new one as added.
     */
    const MAX_DIFF_LINES = 2000;

    /**
     * Whether a block's text was meant as a Node-RED flow: JSON-looking text with the keys every flow node has
     * (`"id"` and `"type"`), or with `"wires"`. Ordinary JSON examples (a payload, a settings object) are not.
     */
    function looksLikeFlow(text) {
        const trimmed = String(text).trim();
        const first = trimmed.charAt(0);
        if (first !== "[" && first !== "{") {
            return false;
        }
        return /"wires"\s*:/.test(trimmed) || (/"id"\s*:/.test(trimmed) && /"type"\s*:/.test(trimmed));
    }

    /**
     * Why JSON meant as a flow cannot be imported.
     *
     * @param {string} text the block's text
     * @returns {{reason: string, detail: string}} `reason` is "invalidJson" (JSON.parse failed; `detail` is the
     *     parser's message, in the browser's words) or "notNodes" (valid JSON whose items are not all objects
     *     with a string `id` and `type`; `detail` is the 1-based position of the first such item, "" when the
     *     value is not an array or an object at all)
     */
    function whyNotFlow(text) {
        let value;
        try {
            value = JSON.parse(String(text).trim());
        } catch (err) {
            return { reason: "invalidJson", detail: String(err && err.message || err) };
        }
        const items = Array.isArray(value) ? value : [value];
        for (let i = 0; i < items.length; i++) {
            const item = items[i];
            if (item === null || typeof item !== "object" || Array.isArray(item) ||
                    typeof item.id !== "string" || !item.id || typeof item.type !== "string" || !item.type) {
                return { reason: "notNodes", detail: String(i + 1) };
            }
        }
        return { reason: "notNodes", detail: "" };
    }

    /**
     * What a code block of an answer is, and so which buttons it gets (every block gets Copy).
     *
     * @param {string} text the block's text (`textContent`)
     * @param {string} language its label: the fence's language, else highlight.js's guess, lower-cased; "" if none
     * @param {function(string): ?object[]} parseFlow flowJson.parseFlow
     * @returns {{kind: string, nodes: (object[]|undefined), reason: (string|undefined),
     *     detail: (string|undefined)}} kind "flow" (with `nodes`: Import), "invalidFlow" (with `reason` and
     *     `detail` from whyNotFlow: a sentence says why it cannot be imported), "javascript" (can go into a
     *     function node) or "code"
     */
    function classify(text, language, parseFlow) {
        language = String(language || "").toLowerCase();
        // A flow is importable whatever its fence says: models label flows "js" or "text" too.
        const nodes = parseFlow(text);
        if (nodes) {
            return { kind: "flow", nodes: nodes };
        }
        if (FLOW_LANGUAGES.indexOf(language) !== -1 && looksLikeFlow(text)) {
            const why = whyNotFlow(text);
            return { kind: "invalidFlow", reason: why.reason, detail: why.detail };
        }
        if (JAVASCRIPT_LANGUAGES.indexOf(language) !== -1) {
            return { kind: "javascript" };
        }
        return { kind: "code" };
    }

    /**
     * The text of a block as it goes into a function node: marked leaves the fence's last line break in the
     * block, which the node's editor would show as an empty last line.
     */
    function blockCode(text) {
        return String(text).replace(/\r\n/g, "\n").replace(/\n$/, "");
    }

    /**
     * A line diff of two texts, as the rows of a unified diff: the longest common subsequence of lines is kept,
     * everything else is removed (from `before`) or added (from `after`), removals first within a change.
     *
     * @param {string} before e.g. the function node's current code
     * @param {string} after e.g. the code block's text
     * @returns {{rows: {type: string, text: string}[], added: number, removed: number}} `type` is "same",
     *     "removed" or "added"
     */
    function lineDiff(before, after) {
        const a = String(before).replace(/\r\n/g, "\n").split("\n");
        const b = String(after).replace(/\r\n/g, "\n").split("\n");
        if (before === "") {
            a.length = 0;
        }
        if (after === "") {
            b.length = 0;
        }
        const rows = [];
        if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) {
            a.forEach(function (line) { rows.push({ type: "removed", text: line }); });
            b.forEach(function (line) { rows.push({ type: "added", text: line }); });
            return { rows: rows, added: b.length, removed: a.length };
        }
        // common[i][j]: length of the longest common subsequence of a[i..] and b[j..].
        const common = [];
        for (let i = a.length; i >= 0; i--) {
            common[i] = new Array(b.length + 1).fill(0);
            for (let j = b.length - 1; i < a.length && j >= 0; j--) {
                common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 :
                    Math.max(common[i + 1][j], common[i][j + 1]);
            }
        }
        let i = 0;
        let j = 0;
        let added = 0;
        let removed = 0;
        while (i < a.length || j < b.length) {
            if (i < a.length && j < b.length && a[i] === b[j]) {
                rows.push({ type: "same", text: a[i] });
                i++;
                j++;
            } else if (i < a.length && (j >= b.length || common[i + 1][j] >= common[i][j + 1])) {
                rows.push({ type: "removed", text: a[i] });
                removed++;
                i++;
            } else {
                rows.push({ type: "added", text: b[j] });
                added++;
                j++;
            }
        }
        return { rows: rows, added: added, removed: removed };
    }

    return {
        JAVASCRIPT_LANGUAGES: JAVASCRIPT_LANGUAGES,
        MAX_DIFF_LINES: MAX_DIFF_LINES,
        looksLikeFlow: looksLikeFlow,
        whyNotFlow: whyNotFlow,
        classify: classify,
        blockCode: blockCode,
        lineDiff: lineDiff
    };
}));
