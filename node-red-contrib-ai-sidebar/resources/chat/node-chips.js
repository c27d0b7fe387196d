/**
 * One chip per selected node under the context chip (issue 31): each names its node (its name, else its type and a
 * short id) and has a button that leaves that node out of the next questions. Which nodes the user left out is kept
 * here (`NodeChips`) until the selection changes.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.nodeChips`) and in Node.js by the package's
 * tests (`require`): `label` and `NodeChips`'s bookkeeping are pure; `NodeChips.render` needs jQuery (`$`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.nodeChips = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // How much of an unnamed node's id the chip shows: enough to tell two nodes of one type apart.
    const SHORT_ID = 6;

    /**
     * A node's name on its chip.
     *
     * @param {{id: string, type: string, name: string}} node as editorContext.selectedNodes gives it
     * @returns {string} the name, else "type · short id"
     */
    function label(node) {
        if (node.name) {
            return node.name;
        }
        return node.type + " \u00b7 " + String(node.id).slice(0, SHORT_ID);
    }

    /** The selected nodes' chips and which of them the user removed. */
    function NodeChips() {
        this.removed = new Set();
    }

    /** The selection changed: every node of the new selection is sent again. */
    NodeChips.prototype.reset = function () {
        this.removed.clear();
    };

    /** Leave the node with this id out of the next questions. */
    NodeChips.prototype.remove = function (id) {
        this.removed.add(id);
    };

    /**
     * The nodes that go out with the next question.
     *
     * @param {{id: string}[]} nodes the selection
     * @returns {{id: string}[]} those the user did not remove, in order
     */
    NodeChips.prototype.sent = function (nodes) {
        const removed = this.removed;
        return nodes.filter(function (node) {
            return !removed.has(node.id);
        });
    };

    /**
     * Fill `list` with a chip per item, each with a button that removes it. After a removal the focus goes to the
     * next chip's button (else the previous one's, else `fallbackFocus`), so the keyboard can remove them one by one.
     *
     * @param {jQuery} list an element with `role="list"`
     * @param {{id: string, label: string, title: string, icon: (string|undefined)}[]} items
     * @param {object} options
     * @param {string} options.name the list's accessible name
     * @param {string} options.className the chips' class
     * @param {function(string): string} options.removeLabel the remove button's name for a chip's label
     * @param {function(string)} options.remove leave out the item with this id and render again
     * @param {function()} options.fallbackFocus where the focus goes once the last chip is gone
     */
    function renderChips(list, items, options) {
        list.empty().toggle(items.length > 0).attr("aria-label", options.name);
        items.forEach(function (item, index) {
            const chip = $('<span class="ai-sidebar-node-chip" role="listitem"></span>').addClass(options.className)
                .attr("data-node-id", item.id)
                .attr("title", item.title);
            if (item.icon) {
                chip.append($('<i aria-hidden="true"></i>').addClass("fa " + item.icon));
            }
            chip.append($('<span class="ai-sidebar-node-chip-name"></span>').text(item.label)).appendTo(list);
            $('<button type="button" class="ai-sidebar-node-chip-remove"></button>')
                .attr("aria-label", options.removeLabel(item.label))
                .attr("title", options.removeLabel(item.label))
                .append($('<i class="fa fa-times" aria-hidden="true"></i>'))
                .on("click", function (event) {
                    event.preventDefault();
                    const next = items[index + 1] || items[index - 1];
                    options.remove(item.id);
                    const button = next && list.children().filter(function () {
                        return $(this).attr("data-node-id") === next.id;
                    }).find("button");
                    if (button && button.length) {
                        button.trigger("focus");
                    } else {
                        options.fallbackFocus();
                    }
                })
                .appendTo(chip);
        });
    }

    /**
     * Fill `list` with a chip per node; a chip's button removes it and calls `changed()` (renderChips).
     *
     * @param {jQuery} list an element with `role="list"`
     * @param {{id: string, type: string, name: string}[]} nodes the nodes sent (NodeChips.sent)
     * @param {function(string, object=): string} t the sidebar catalog's translation (keys under `context.`)
     * @param {function()} changed re-render the context after a removal
     * @param {function()} fallbackFocus where the focus goes once the last chip is gone
     */
    NodeChips.prototype.render = function (list, nodes, t, changed, fallbackFocus) {
        const self = this;
        renderChips(list, nodes.map(function (node) {
            return { id: node.id, label: label(node), title: node.type + " " + node.id };
        }), {
            name: t("context.nodeChips"),
            className: "ai-sidebar-selected-chip",
            removeLabel: function (name) {
                return t("context.nodeChipRemove", { name: name });
            },
            remove: function (id) {
                self.remove(id);
                changed();
            },
            fallbackFocus: fallbackFocus
        });
    };

    return { SHORT_ID: SHORT_ID, label: label, NodeChips: NodeChips, renderChips: renderChips };
}));
