/**
 * The things the user mentioned with `@` for the next question (issue 37): one chip each above the input, removable
 * one by one; what is left goes out as the request's `mentions` (StreamChatRequest.mentions: at most MAX, kinds
 * node, config, tab, subflow, type, conversation) and is cleared once the question is sent.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.mentionChips`) and in Node.js by the
 * package's tests: the bookkeeping is pure; `render` needs jQuery and node-chips.js's renderChips.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.mentionChips = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // The service's bound (service/requests.py MAX_MENTIONS): the oldest mention gives way to a newer one.
    const MAX = 20;
    const KINDS = ["node", "config", "tab", "subflow", "type", "conversation"];

    /** The mentions of the next question. */
    function MentionChips() {
        this.items = [];
    }

    /**
     * Mention one more thing (once: the same kind and id again is not doubled).
     *
     * @param {{kind: string, id: string, label: string, icon: (string|undefined)}} item as mention-source.js
     *     offers it
     * @returns {boolean} whether it was added (a kind the service does not take is not)
     */
    MentionChips.prototype.add = function (item) {
        if (KINDS.indexOf(item.kind) === -1) {
            return false;
        }
        this.items = this.items.filter(function (other) {
            return other.kind !== item.kind || other.id !== item.id;
        }).concat([{ kind: item.kind, id: item.id, label: String(item.label).slice(0, 200), icon: item.icon }]);
        this.items = this.items.slice(-MAX);
        return true;
    };

    /** Leave the mention with this chip key out. */
    MentionChips.prototype.remove = function (key) {
        this.items = this.items.filter(function (item) {
            return item.kind + ":" + item.id !== key;
        });
    };

    /** The question went out: the next one starts without mentions. */
    MentionChips.prototype.clear = function () {
        this.items = [];
    };

    /**
     * What the request carries.
     *
     * @returns {{kind: string, id: string, label: string}[]}
     */
    MentionChips.prototype.sent = function () {
        return this.items.map(function (item) {
            return { kind: item.kind, id: item.id, label: item.label };
        });
    };

    /**
     * Fill `list` with a chip per mention; removing one calls `changed()`.
     *
     * @param {jQuery} list an element with `role="list"`
     * @param {function(string, object=): string} t the sidebar catalog's translation
     * @param {function()} changed render again after a removal
     * @param {function()} fallbackFocus where the focus goes once the last chip is gone
     */
    MentionChips.prototype.render = function (list, t, changed, fallbackFocus) {
        const self = this;
        window.NodeRedAiSidebar.nodeChips.renderChips(list, this.items.map(function (item) {
            return { id: item.kind + ":" + item.id, label: item.label, icon: item.icon,
                title: t("mentions.kind." + item.kind) + " " + item.id };
        }), {
            name: t("mentions.chips"),
            className: "ai-sidebar-mention-chip",
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

    return { MAX: MAX, KINDS: KINDS, MentionChips: MentionChips };
}));
