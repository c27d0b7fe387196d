/**
 * Syntax highlighting for the code blocks of rendered answers, with highlight.js (resources/vendor/highlight.js).
 *
 * Highlighting works on text, never on HTML: it runs after the answer's markdown has been sanitised and inserted,
 * reads each block's text back (`textContent`), lets highlight.js turn that text into escaped markup made of
 * `<span class="hljs-…">` elements, and sanitises that markup once more (spans with a class, nothing else) before
 * it replaces the block's content. A block's text is therefore exactly what it was, which is what the flow
 * buttons' Import and Copy read.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.codeHighlight`) and in Node.js by the
 * package's tests (`require`). Nothing here touches `RED` or jQuery; highlight.js and the sanitiser are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.codeHighlight = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /**
     * The longest block that is highlighted, in characters. An answer is highlighted again on every streamed
     * frame; past this a block stays plain rather than make the editor stutter.
     */
    const MAX_HIGHLIGHT_CHARS = 50000;

    /** The longest block without a language whose language is guessed (each guess highlights it once per candidate). */
    const MAX_GUESS_CHARS = 10000;

    /** The languages a block without one may be guessed as: what answers about Node-RED contain. */
    const GUESS_LANGUAGES = ["json", "javascript", "typescript", "yaml", "bash", "python", "sql", "xml", "css", "ini"];

    /**
     * highlight.js rates how sure a guess is by its relevance; below this a block of prose or a one-word command
     * would get arbitrary colours, so it stays plain.
     */
    const MIN_GUESS_RELEVANCE = 5;

    /** The marker a highlighted block gets; also how highlight.js itself marks one (`data-highlighted`). */
    const HIGHLIGHTED_CLASS = "hljs";

    /**
     * The language a code block is labelled with, as marked writes it for a fence such as ```json
     * (`class="language-json"`), lower-cased; "" when there is none.
     *
     * @param {string} className the `class` attribute of the `<code>` element
     * @returns {string}
     */
    function languageOf(className) {
        const match = /(?:^|\s)(?:language|lang)-([\w#+.-]+)/i.exec(String(className || ""));
        return match ? match[1].toLowerCase() : "";
    }

    /**
     * Highlight one code block's text.
     *
     * A block labelled with a language highlight.js knows (names and aliases: `js`, `sh`, `yml`, `py`…) is
     * highlighted as that language; a block labelled with another language stays plain; a block without a label
     * is highlighted when highlight.js can tell with some confidence which of GUESS_LANGUAGES it is.
     *
     * @param {object} hljs the highlight.js API (`NodeRedAiSidebar.vendor.hljs`)
     * @param {string} text the block's text
     * @param {string} [language] the block's label (see languageOf)
     * @returns {{language: string, html: string}|null} markup in which every character of `text` is escaped
     *     and sits in `<span class="hljs-…">` elements, or null to leave the block plain
     */
    function highlightCode(hljs, text, language) {
        if (!hljs || typeof text !== "string" || !text || text.length > MAX_HIGHLIGHT_CHARS) {
            return null;
        }
        if (language) {
            const known = hljs.getLanguage(language);
            if (!known) {
                return null;
            }
            const result = hljs.highlight(text, { language: language, ignoreIllegals: true });
            return { language: language, html: result.value };
        }
        if (text.length > MAX_GUESS_CHARS) {
            return null;
        }
        const candidates = GUESS_LANGUAGES.filter(function (name) {
            return !!hljs.getLanguage(name);
        });
        const guess = hljs.highlightAuto(text, candidates);
        if (!guess.language || guess.relevance < MIN_GUESS_RELEVANCE) {
            return null;
        }
        return { language: guess.language, html: guess.value };
    }

    /**
     * Highlight every code block (`pre > code`) in `root` that is not highlighted yet.
     *
     * @param {Element} root rendered, sanitised answer markup in the page
     * @param {object} hljs the highlight.js API
     * @param {function(string): string} sanitize returns the markup with only `<span class>` elements left
     * @returns {number} how many blocks were highlighted
     */
    function highlightBlocks(root, hljs, sanitize) {
        if (!root || !hljs) {
            return 0;
        }
        let count = 0;
        Array.prototype.forEach.call(root.querySelectorAll("pre > code"), function (code) {
            if (code.classList.contains(HIGHLIGHTED_CLASS)) {
                return;
            }
            let highlighted = null;
            try {
                highlighted = highlightCode(hljs, code.textContent, languageOf(code.getAttribute("class")));
            } catch {
                // A grammar that fails on odd input leaves that block plain; the answer itself is unaffected.
            }
            if (!highlighted) {
                return;
            }
            code.innerHTML = sanitize(highlighted.html);
            code.classList.add(HIGHLIGHTED_CLASS);
            code.setAttribute("data-language", highlighted.language);
            count++;
        });
        return count;
    }

    return {
        MAX_HIGHLIGHT_CHARS: MAX_HIGHLIGHT_CHARS,
        MAX_GUESS_CHARS: MAX_GUESS_CHARS,
        GUESS_LANGUAGES: GUESS_LANGUAGES,
        languageOf: languageOf,
        highlightCode: highlightCode,
        highlightBlocks: highlightBlocks
    };
}));
