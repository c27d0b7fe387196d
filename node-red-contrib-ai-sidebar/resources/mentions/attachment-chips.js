/**
 * Files pasted or dropped into the sidebar's input (issue 37): one chip each above the input, removable one by one
 * (button, or Shift+Tab from the input and Enter); what is left goes out as the request's `attachments`
 * (StreamChatRequest.attachments: images as base64 for an image-capable model, text files as text, PDFs as base64
 * whose text the service extracts) and is cleared once the question is sent. Never stored by the editor.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.attachmentChips`) and in Node.js by the
 * package's tests: the bookkeeping is pure; `read` needs a browser's FileReader, `render` jQuery and node-chips.js.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.attachmentChips = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // The service's bounds (service/requests.py MAX_ATTACHMENTS, MAX_IMAGE_BYTES, MAX_ATTACHED_CHARS).
    const MAX_ITEMS = 4;
    const MAX_BYTES = 3 * 1024 * 1024;
    const MAX_CHARS = 100000;
    const IMAGE_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"];
    const TEXT_NAME = /\.(txt|md|markdown|json|csv|tsv|log|ya?ml|xml|html?|js|mjs|ts|py|ini|conf|cfg|toml|sql|sh)$/i;
    const ICONS = { image: "fa-picture-o", text: "fa-file-text-o", pdf: "fa-file-pdf-o" };

    /**
     * Which kind of attachment a file is, by its media type and name.
     *
     * @param {string} type the file's media type ("" when the browser does not know it)
     * @param {string} name the file's name
     * @returns {?string} "image", "pdf", "text", or null for a file the service does not take
     */
    function kindOf(type, name) {
        if (IMAGE_TYPES.indexOf(type) !== -1) {
            return "image";
        }
        if (type === "application/pdf" || /\.pdf$/i.test(name || "")) {
            return "pdf";
        }
        if (/^text\//.test(type) || type === "application/json" || type === "application/xml"
            || TEXT_NAME.test(name || "")) {
            return "text";
        }
        return null;
    }

    /** The attachments of the next question. */
    function AttachmentChips() {
        this.items = [];
        this.next = 1;
    }

    /**
     * Attach one more file, read (see `read`).
     *
     * @param {{kind: string, name: string, mediaType: (string|undefined), data: (string|undefined),
     *     text: (string|undefined), bytes: number}} item
     * @returns {?string} why it was not attached ("tooLarge", "tooMany", "unsupported"), or null when it was
     */
    AttachmentChips.prototype.add = function (item) {
        if (!item || !ICONS[item.kind]) {
            return "unsupported";
        }
        if (this.items.length >= MAX_ITEMS) {
            return "tooMany";
        }
        if ((item.kind === "text" && item.text.length > MAX_CHARS) || (item.kind !== "text" && item.bytes > MAX_BYTES)) {
            return "tooLarge";
        }
        this.items.push(Object.assign({}, item, { key: "attachment-" + this.next++,
            name: String(item.name || item.kind).slice(0, 200) }));
        return null;
    };

    /** Leave the attachment with this chip key out. */
    AttachmentChips.prototype.remove = function (key) {
        this.items = this.items.filter(function (item) {
            return item.key !== key;
        });
    };

    /** The question went out: the next one starts without attachments. */
    AttachmentChips.prototype.clear = function () {
        this.items = [];
    };

    /**
     * What the request carries.
     *
     * @returns {object[]} `{kind: "image", mediaType, data, name}`, `{kind: "text", name, text}` or
     *     `{kind: "pdf", name, data}`
     */
    AttachmentChips.prototype.sent = function () {
        return this.items.map(function (item) {
            if (item.kind === "text") {
                return { kind: "text", name: item.name, text: item.text };
            }
            if (item.kind === "pdf") {
                return { kind: "pdf", name: item.name, data: item.data };
            }
            return { kind: "image", mediaType: item.mediaType, data: item.data, name: item.name };
        });
    };

    /**
     * Read a pasted or dropped file into an attachment (browser only).
     *
     * @param {File} file
     * @param {string} fallbackName the name of a pasted image without one (e.g. "pasted image")
     * @returns {Promise<?object>} the item for `add`, or null for a kind the service does not take
     */
    function read(file, fallbackName) {
        const kind = kindOf(file.type, file.name);
        if (!kind) {
            return Promise.resolve(null);
        }
        const name = file.name || fallbackName;
        return new Promise(function (resolve, reject) {
            const reader = new FileReader();
            reader.onerror = function () {
                reject(reader.error);
            };
            reader.onload = function () {
                if (kind === "text") {
                    resolve({ kind: kind, name: name, text: String(reader.result), bytes: file.size });
                    return;
                }
                // A data URL: "data:<type>;base64,<data>".
                const data = String(reader.result).split(",")[1] || "";
                resolve({ kind: kind, name: name, mediaType: kind === "image" ? file.type : undefined, data: data,
                    bytes: file.size });
            };
            if (kind === "text") {
                reader.readAsText(file);
            } else {
                reader.readAsDataURL(file);
            }
        });
    }

    /**
     * Fill `list` with a chip per attachment; removing one calls `changed()`.
     *
     * @param {jQuery} list an element with `role="list"`
     * @param {function(string, object=): string} t the sidebar catalog's translation
     * @param {function()} changed render again after a removal
     * @param {function()} fallbackFocus where the focus goes once the last chip is gone
     */
    AttachmentChips.prototype.render = function (list, t, changed, fallbackFocus) {
        const self = this;
        window.NodeRedAiSidebar.nodeChips.renderChips(list, this.items.map(function (item) {
            return { id: item.key, label: item.name, icon: ICONS[item.kind], title: t("attachments.kind." + item.kind)
                + ": " + item.name };
        }), {
            name: t("attachments.chips"),
            className: "ai-sidebar-attachment-chip",
            removeLabel: function (name) {
                return t("context.nodeChipRemove", { name: name });
            },
            remove: function (key) {
                self.remove(key);
                changed();
            },
            fallbackFocus: fallbackFocus
        });
    };

    return { MAX_ITEMS: MAX_ITEMS, MAX_BYTES: MAX_BYTES, MAX_CHARS: MAX_CHARS,
        kindOf: kindOf, read: read, AttachmentChips: AttachmentChips };
}));
