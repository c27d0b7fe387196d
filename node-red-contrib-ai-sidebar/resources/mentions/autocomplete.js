/**
 * The suggestion list under the question input (issue 37): `@` followed by a few letters lists what can be
 * mentioned (mention-source.js, ranked by fuzzy.js), `/` at the start lists the slash commands (slash-commands.js).
 * Up and Down move through it, Enter or Tab chooses, Escape closes it; the input stays focused and names the list
 * and its active option for assistive technology (aria-autocomplete, aria-controls, aria-activedescendant).
 *
 * `token` is pure (tested in Node.js); `Autocomplete` needs jQuery. Registers `NodeRedAiSidebar.autocomplete`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.autocomplete = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // Rows the list shows at most.
    const SHOWN = 12;
    let lastId = 0;

    /**
     * The trigger being typed at the caret.
     *
     * @param {string} text what the input holds
     * @param {number} caret the caret's offset
     * @returns {?{trigger: string, query: string, start: number, end: number}} `@word` anywhere after a space or at
     *     the start, `/word` only at the very start (before any space); `start`..`end` is the token's span
     */
    function token(text, caret) {
        const before = text.slice(0, caret);
        const slash = /^\/([^\s/]*)$/.exec(before);
        if (slash) {
            return { trigger: "/", query: slash[1], start: 0, end: caret };
        }
        const at = /(^|\s)@([^\s@]*)$/.exec(before);
        if (at) {
            const start = caret - at[2].length - 1;
            return { trigger: "@", query: at[2], start: start, end: caret };
        }
        return null;
    }

    /**
     * The list bound to an input.
     *
     * @param {object} options
     * @param {jQuery} options.input the textarea
     * @param {jQuery} options.container where the list is put (above the input)
     * @param {string} options.label the list's accessible name
     * @param {string} options.empty what an empty list says
     * @param {Object<string, {open: function(), items: function(string): object[], choose: function(object,
     *     object)}>} options.sources by trigger ("@", "/"): `open()` when the trigger is typed (read what it offers),
     *     `items(query)` the rows (`{label, detail, icon}`, at most SHOWN), `choose(item, token)` when one is chosen
     */
    function Autocomplete(options) {
        this.input = options.input;
        this.sources = options.sources;
        this.empty = options.empty;
        this.current = null; // {trigger, query, start, end} while open
        this.items = [];
        this.active = 0;
        this.listId = "ai-sidebar-suggestions-" + (++lastId);
        this.list = $('<ul class="ai-sidebar-suggestions" role="listbox"></ul>').attr("id", this.listId)
            .attr("aria-label", options.label).hide().appendTo(options.container);
        // A textarea keeps its textbox role (ARIA in HTML allows no combobox there): it names the list it
        // controls and, while open, its active option.
        this.input.attr({ "aria-autocomplete": "list", "aria-controls": this.listId });
        const self = this;
        // mousedown, not click: the input keeps the focus.
        this.list.on("mousedown", "li[role=option]", function (event) {
            event.preventDefault();
            self.choose(Number($(this).attr("data-index")));
        });
    }

    /** Whether the list is open. */
    Autocomplete.prototype.isOpen = function () {
        return this.current !== null;
    };

    /** Read the trigger at the caret again (after every input): open, update or close the list. */
    Autocomplete.prototype.update = function () {
        const element = this.input[0];
        const found = token(element.value, element.selectionStart);
        const source = found && this.sources[found.trigger];
        if (!source) {
            this.close();
            return;
        }
        if (!this.current || this.current.trigger !== found.trigger || this.current.start !== found.start) {
            source.open();
        }
        this.current = found;
        this.items = source.items(found.query).slice(0, SHOWN);
        this.active = 0;
        this.render();
    };

    Autocomplete.prototype.render = function () {
        const self = this;
        this.list.empty().show();
        if (!this.items.length) {
            $('<li class="ai-sidebar-suggestion-empty" role="presentation"></li>').text(this.empty).appendTo(this.list);
            this.input.removeAttr("aria-activedescendant");
            return;
        }
        this.items.forEach(function (item, index) {
            const row = $('<li role="option" class="ai-sidebar-suggestion"></li>')
                .attr("id", self.listId + "-" + index).attr("data-index", index)
                .attr("data-kind", item.kind || "").attr("aria-selected", String(index === self.active))
                .toggleClass("selected", index === self.active)
                .append($('<i aria-hidden="true"></i>').addClass("fa " + (item.icon || "fa-circle-o")))
                .append($('<span class="ai-sidebar-suggestion-label"></span>').text(item.label));
            if (item.detail) {
                row.append($('<span class="ai-sidebar-suggestion-detail"></span>').text(item.detail));
            }
            row.appendTo(self.list);
        });
        this.input.attr("aria-activedescendant", this.listId + "-" + this.active);
    };

    /** Close the list (nothing is chosen). */
    Autocomplete.prototype.close = function () {
        this.current = null;
        this.items = [];
        this.list.hide().empty();
        this.input.removeAttr("aria-activedescendant");
    };

    /** Choose the row at `index`: its source acts on it; the list closes. */
    Autocomplete.prototype.choose = function (index) {
        const item = this.items[index];
        const current = this.current;
        if (!item || !current) {
            return;
        }
        this.close();
        this.sources[current.trigger].choose(item, current);
    };

    /**
     * A key pressed in the input while the list may be open.
     *
     * @param {KeyboardEvent} event
     * @returns {boolean} whether the list used it (the caller does nothing more with it)
     */
    Autocomplete.prototype.keydown = function (event) {
        if (!this.isOpen() || event.altKey || event.ctrlKey || event.metaKey ||
                (event.originalEvent && event.originalEvent.isComposing)) {
            return false;
        }
        const count = this.items.length;
        if (event.key === "Escape") {
            event.preventDefault();
            event.stopPropagation();
            this.close();
            return true;
        }
        if ((event.key === "ArrowDown" || event.key === "ArrowUp") && count) {
            event.preventDefault();
            this.active = (this.active + (event.key === "ArrowDown" ? 1 : count - 1)) % count;
            this.render();
            const row = this.list.children().eq(this.active)[0];
            if (row && row.scrollIntoView) {
                row.scrollIntoView({ block: "nearest" });
            }
            return true;
        }
        if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && count) {
            event.preventDefault();
            this.choose(this.active);
            return true;
        }
        return false;
    };

    return { SHOWN: SHOWN, token: token, Autocomplete: Autocomplete };
}));
