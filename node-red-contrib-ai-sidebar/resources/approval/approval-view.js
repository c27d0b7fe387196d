/**
 * The approval card's views, in the sidebar: a node's label as the editor shows it, the card's buttons, the readable
 * diff of one action (approval-diff.js's `describeAction` as DOM) and the list of its parts the user may untick
 * (approval-parts.js: each with a checkbox, keyboard operable; the Approve button then sends the ticked ones).
 *
 * Editor-only script: registers `NodeRedAiSidebar.approvalView`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /** A node's, tab's or subflow's label as the editor shows it, or null when the editor has no such id. */
    function nameOf(id) {
        var node = RED.nodes.node(id);
        if (node) {
            var label = RED.utils.getNodeLabel(node, "");
            return label && label !== node.type ? label : node.type;
        }
        var container = RED.nodes.workspace(id) || RED.nodes.subflow(id);
        return container ? (container.label || container.name || null) : null;
    }

    function button(name, icon, label, tooltip, primary) {
        var element = $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .addClass("ai-sidebar-approval-" + name)
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + label));
        if (tooltip) {
            element.attr("title", tooltip);
        }
        if (primary) {
            element.addClass("primary");
        }
        return element;
    }

    function section(parent, label, items) {
        if (!items.length) {
            return;
        }
        var box = $('<div class="ai-sidebar-approval-section"></div>').appendTo(parent);
        $('<div class="ai-sidebar-approval-section-label"></div>').text(label).appendTo(box);
        var list = $("<ul></ul>").appendTo(box);
        items.forEach(function (item) {
            $("<li></li>").append(item).appendTo(list);
        });
    }

    /** The readable diff of one action (approvalDiff.describeAction) as DOM. */
    function renderDiff(view) {
        var box = $('<div class="ai-sidebar-approval-diff"></div>');
        section(box, t("approval.added"), view.added.map(function (node) {
            if (node.tab) {
                return $("<span></span>").text(t("approval.newTab", { name: node.name }));
            }
            return $("<span></span>").append($("<code></code>").text(node.type))
                .append(document.createTextNode(node.name ? " \u201c" + node.name + "\u201d" : ""));
        }));
        section(box, t("approval.removed"), view.removed.map(function (node) {
            return $("<span></span>").text((node.name ? node.name + " " : "") + "[" + node.id + "]");
        }));
        view.changed.forEach(function (node) {
            var title = node.type + (node.name ? " \u201c" + node.name + "\u201d" : "") + " [" + node.id + "]";
            section(box, t("approval.changed", { node: title }), node.properties.map(function (property) {
                var item = $('<span class="ai-sidebar-approval-property"></span>');
                $("<code></code>").text(property.name).appendTo(item);
                if (property.lines) {
                    var pre = $('<pre class="ai-sidebar-approval-lines"></pre>').appendTo(item);
                    property.lines.forEach(function (line) {
                        var kind = line.kind === "+" ? "added" : line.kind === "-" ? "removed" : "same";
                        $("<span></span>").addClass("ai-sidebar-approval-line-" + kind)
                            .text(line.kind + " " + line.text + "\n").appendTo(pre);
                    });
                    if (property.omitted) {
                        $("<span></span>").text(t("approval.omitted", { count: property.omitted })).appendTo(pre);
                    }
                } else {
                    item.append(document.createTextNode(": "))
                        .append($("<del></del>").text(property.before || "\u2205"))
                        .append(document.createTextNode(" \u2192 "))
                        .append($("<ins></ins>").text(property.after || "\u2205"));
                }
                return item;
            }));
        });
        section(box, t("approval.wiresAdded"), view.wires.added.map(function (text) {
            return $("<span></span>").text(text);
        }));
        section(box, t("approval.wiresRemoved"), view.wires.removed.map(function (text) {
            return $("<span></span>").text(text);
        }));
        if (view.context) {
            var context = view.context;
            var where = context.scope === "flow" ?
                t("approval.contextFlow", { tab: context.flowName || context.flow }) : t("approval.contextGlobal");
            var item = $('<span class="ai-sidebar-approval-context"></span>');
            $("<code></code>").text(context.key).appendTo(item);
            item.append(document.createTextNode(" \u2014 " + where + ", " +
                t("approval.contextStore", { store: context.store })));
            $('<pre class="ai-sidebar-approval-context-value"></pre>').text(context.value).appendTo(item);
            section(box, t("approval.context"), [item]);
        }
        if (!box.children().length) {
            $('<div class="ai-sidebar-approval-section"></div>').text(t("approval.noDiff")).appendTo(box);
        }
        return box;
    }

    /**
     * The list of an action's parts with a checkbox each (approval-parts.js), or null when it has fewer than two.
     * `key`: unique in the sidebar (the inputs' ids). Returns `{element, decision(), follow(approveButton)}`:
     * `decision()` the approval the ticks make (null: none ticked); `follow` keeps the Approve button's label
     * ("Approve" with every part ticked, "Approve n of m parts" otherwise) and disables it with none ticked.
     */
    function renderParts(action, key) {
        var parts = window.NodeRedAiSidebar.approvalParts.describeParts(action, nameOf);
        if (!parts.length) {
            return null;
        }
        var box = $('<fieldset class="ai-sidebar-approval-parts"></fieldset>');
        $("<legend></legend>").text(t("approval.parts", { count: parts.length })).appendTo(box);
        if (action.adjusted) {
            $('<div class="ai-sidebar-approval-adjusted" role="note"></div>').text(t("approval.partsAdjusted"))
                .appendTo(box);
        }
        var list = $('<ul class="ai-sidebar-approval-part-list"></ul>').appendTo(box);
        parts.forEach(function (part, index) {
            var id = "ai-sidebar-approval-part-" + key + "-" + index;
            var item = $("<li></li>").appendTo(list);
            $('<input type="checkbox" class="ai-sidebar-approval-part">').attr("id", id)
                .attr("data-part", part.id).prop("checked", part.ticked).appendTo(item);
            $("<label></label>").attr("for", id).text(t(part.key, part.params)).appendTo(item);
        });
        function ticked() {
            return list.find("input:checked").map(function () { return $(this).attr("data-part"); }).get();
        }
        function decision() {
            return window.NodeRedAiSidebar.approvalParts.decisionFor(parts, ticked());
        }
        return {
            element: box,
            decision: decision,
            follow: function (approve) {
                var label = approve.contents().last();
                function update() {
                    var chosen = decision();
                    label.replaceWith(label = $(document.createTextNode(" " + (chosen && chosen.parts ?
                        t("approval.approveParts", { count: chosen.parts.length, total: parts.length }) :
                        t("approval.approve")))));
                    approve.prop("disabled", !chosen);
                }
                list.on("change", "input", update);
                update();
            }
        };
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.approvalView = { nameOf: nameOf, button: button, renderDiff: renderDiff,
        renderParts: renderParts };
})();
