/**
 * Node-RED flows in the sidebar, on the editor side: the bar of every answer code block (language, Copy, and
 * "Import" on a block that holds a flow), and the editor's current version of the open tab for `flowData`.
 *
 * Editor-only script: registers `NodeRedAiSidebar.flowBlocks`; the pure parts are in flow-json.js.
 *
 * Import never creates nodes the editor cannot run: every type must be known to the editor's registry (or be a
 * tab, subflow, group, junction, or an instance of a subflow that exists or comes with the flow). Otherwise the
 * import is refused and the unknown types are listed; Node-RED itself would add them as "unknown" placeholder
 * nodes that break the flow on deploy.
 *
 * Nor does it duplicate config nodes silently (config-reuse.js): one the workspace already has is re-used (and the
 * user told so, credentials not compared); one of a type the workspace has, but with other settings, is added or
 * replaced by an existing one as the user chooses before anything is imported.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function flowJson() {
        return window.NodeRedAiSidebar.flowJson;
    }

    function configReuse() {
        return window.NodeRedAiSidebar.configReuse;
    }

    function definitionOf(type) {
        return RED.nodes.getType(type) || null;
    }

    /** The workspace's config nodes, as config-reuse.js compares them. */
    function existingConfigNodes() {
        var nodes = [];
        RED.nodes.eachConfig(function (node) {
            nodes.push(node);
        });
        return nodes;
    }

    /** "Label (type)" of a config node, imported (a plain object) or in the workspace, as the editor labels it. */
    function configNodeName(node) {
        var definition = definitionOf(node.type);
        var label = definition ? RED.utils.getNodeLabel(Object.assign({}, node, { _def: definition }), "") : "";
        return label && label !== node.type ? t("flow.configName", { label: label, type: node.type }) : node.type;
    }

    /** A notification whose text is set as text, never parsed as HTML (it holds names from an answer). */
    function notify(lines, type, timeout) {
        var content = $("<div></div>");
        lines.forEach(function (line) {
            if (Array.isArray(line)) {
                var list = $("<ul></ul>").appendTo(content);
                line.forEach(function (item) {
                    $("<li></li>").append($("<code></code>").text(item)).appendTo(list);
                });
            } else {
                $("<p></p>").text(line).appendTo(content);
            }
        });
        return RED.notify(content, { type: type, timeout: timeout || 5000 });
    }

    /**
     * The types in `nodes` that this editor cannot create.
     *
     * @param {object[]} nodes
     * @returns {string[]}
     */
    function unknownTypes(nodes) {
        return flowJson().unknownTypes(nodes, function (type) {
            return !!RED.nodes.getType(type);
        }, function (id) {
            return !!RED.nodes.subflow(id);
        });
    }

    /**
     * Import a flow from an answer into the open tab, as one undo step.
     *
     * `RED.view.importNodes` adds the nodes and pushes a single "add" history event (Node-RED 4.1,
     * editor-client red.js `importNodes`: `RED.history.push(historyEvent)` once, after `RED.nodes.import`), so
     * one Ctrl-Z removes them all. Without `touchImport` the nodes follow the mouse until a click on the
     * workspace places them, exactly like Node-RED's own Import dialog; placing them adds no history event.
     * `generateIds` gives them fresh ids, so importing the same answer twice never clashes with existing nodes;
     * its config nodes are matched against the workspace's first (config-reuse.js), and when one differs from the
     * existing ones of its type the user chooses in a dialog before anything is imported.
     * Node-RED's own import would add unknown types as "unknown" placeholder nodes; they are refused before.
     *
     * @param {string} text the code block's JSON
     * @param {jQuery} status where to say why an import was refused
     * @returns {boolean} whether the nodes were imported (false also while the user is still asked)
     */
    function importFlow(text, status) {
        status.empty().hide();
        var nodes = flowJson().parseFlow(text);
        if (!nodes) {
            return false;
        }
        var unknown = unknownTypes(nodes);
        if (unknown.length) {
            var message = t("flow.unknownTypes", { count: unknown.length });
            status.append($('<i class="fa fa-exclamation-triangle"></i>'))
                .append(document.createTextNode(" " + message + " " + unknown.join(", ")))
                .append($("<div></div>").text(t("flow.installHint")))
                .show();
            notify([message, unknown, t("flow.installHint")], "error", 10000);
            return false;
        }
        var containsTab = nodes.some(function (node) {
            return node.type === "tab";
        });
        if (!containsTab && (!RED.workspaces.active() || RED.workspaces.isLocked())) {
            notify([t("flow.locked")], "warning");
            return false;
        }
        // Config nodes scoped to the open tab can serve nodes imported into it; a flow with its own tabs gets
        // only global ones.
        var scope = containsTab ? null : RED.workspaces.active();
        var plan = configReuse().planReuse(nodes, existingConfigNodes(), definitionOf, { scope: scope });
        if (plan.conflicts.length) {
            askAboutConfigNodes(plan.conflicts, function (decisions) {
                // Read the workspace again: it may have changed while the dialog was open.
                importPlanned(nodes, configReuse().planReuse(nodes, existingConfigNodes(), definitionOf,
                    { scope: scope, decisions: decisions }));
            });
            return false;
        }
        return importPlanned(nodes, plan);
    }

    /** Hand the flow to Node-RED's import with the config nodes `plan` re-uses left out; say what was done. */
    function importPlanned(nodes, plan) {
        var prepared = configReuse().applyPlan(nodes, plan, function (id) {
            return !!RED.nodes.node(id);
        }, RED.nodes.id, definitionOf);
        try {
            RED.view.importNodes(prepared, {
                generateIds: true,
                addFlow: false,
                touchImport: false,
                generateDefaultNames: false,
                notify: false,
                // As Node-RED 4.1 does for its own suggested flows (red.js applySuggestedFlow): a model often
                // leaves properties out, and a missing default would make the node misbehave or fail to deploy.
                applyNodeDefaults: true,
                eventContext: { source: "ai-sidebar" }
            });
        } catch (err) {
            notify([t("flow.importFailed", { message: (err && err.message) || String(err) })], "error");
            return false;
        }
        var lines = [t("flow.imported", { count: prepared.length }), t("flow.placeHint")];
        // Config nodes re-used because they are the same; the ones the user chose were named in the dialog.
        var reusedIds = plan.reused.map(function (entry) {
            return entry.existing.id;
        }).filter(function (id, index, all) {
            return all.indexOf(id) === index;
        });
        if (reusedIds.length) {
            lines.push(t("flow.configReused", { count: reusedIds.length }), reusedIds.map(function (id) {
                var node = RED.nodes.node(id);
                return node ? configNodeName(node) : id;
            }), t("flow.credentialsNotCompared"));
        }
        notify(lines, "success", reusedIds.length ? 10000 : 6000);
        return true;
    }

    /**
     * Ask, in one modal dialog, what to do with each imported config node that differs from the existing ones of
     * its type: add it (the default) or use one of them. `done(decisions)` is called on Import, with imported id
     * -> existing id or configReuse.KEEP; nothing is called on Cancel.
     *
     * @param {{imported: object, candidates: {existing: object, differences: string[]}[]}[]} conflicts
     * @param {function(Object<string, ?string>)} done
     */
    function askAboutConfigNodes(conflicts, done) {
        var content = $('<div class="ai-sidebar-config-choice"></div>');
        $("<p></p>").text(t("flow.configChoiceIntro", { count: conflicts.length })).appendTo(content);
        var selects = conflicts.map(function (conflict) {
            var id = "ai-sidebar-config-choice-" + conflict.imported.id.replace(/[^\w-]/g, "_");
            var row = $('<div class="ai-sidebar-config-choice-row"></div>').appendTo(content);
            $("<label></label>").attr("for", id).text(configNodeName(conflict.imported)).appendTo(row);
            var select = $("<select></select>").attr("id", id).appendTo(row);
            $("<option></option>").val("").text(t("flow.configAdd")).appendTo(select);
            conflict.candidates.forEach(function (candidate) {
                $("<option></option>").val(candidate.existing.id)
                    .text(t("flow.configUse", { name: configNodeName(candidate.existing),
                        properties: candidate.differences.join(", ") }))
                    .appendTo(select);
            });
            return { imported: conflict.imported, select: select };
        });
        $('<p class="ai-sidebar-config-choice-note"></p>').text(t("flow.credentialsNotCompared")).appendTo(content);
        var dialog = RED.notify(content, {
            modal: true,
            fixed: true,
            type: "warning",
            buttons: [
                {
                    text: RED.utils.sanitize(t("flow.cancel")),
                    class: "ai-sidebar-config-choice-cancel",
                    click: function () {
                        dialog.close();
                    }
                },
                {
                    text: RED.utils.sanitize(t("flow.importConfirm")),
                    class: "primary ai-sidebar-config-choice-import",
                    click: function () {
                        var decisions = {};
                        selects.forEach(function (entry) {
                            decisions[entry.imported.id] = entry.select.val() || configReuse().KEEP;
                        });
                        dialog.close();
                        done(decisions);
                    }
                }
            ]
        });
    }

    function button(name, icon, label, tooltip, onClick) {
        var element = $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .addClass("ai-sidebar-" + name)
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + label))
            .attr("title", tooltip)
            .on("click", function (event) {
                event.preventDefault();
                onClick(element);
            });
        return element;
    }

    /** "Show" / "Hide" of a flow block's JSON, which starts collapsed (`data-ai-sidebar-collapsed`). */
    function showButton(pre) {
        var id = "ai-sidebar-flow-" + RED.nodes.id();
        pre.attr("id", id).attr("data-ai-sidebar-collapsed", "yes");
        var element = button("flow-show", "fa-caret-right", t("flow.show"), t("flow.showTooltip"), function () {
            var collapsed = pre.attr("data-ai-sidebar-collapsed") !== "yes";
            pre.attr("data-ai-sidebar-collapsed", collapsed ? "yes" : "no");
            element.attr("aria-expanded", String(!collapsed)).attr("title", t(collapsed ? "flow.showTooltip" :
                "flow.hideTooltip"));
            element.find("i").attr("class", "fa " + (collapsed ? "fa-caret-right" : "fa-caret-down"));
            element.contents().last().replaceWith(document.createTextNode(" " + t(collapsed ? "flow.show" :
                "flow.hide")));
        });
        return element.attr("aria-expanded", "false").attr("aria-controls", id);
    }

    /** The sentence that says why JSON meant as a flow cannot be imported (codeBlocks.whyNotFlow). */
    function whyNotImportable(kind) {
        return kind.reason === "invalidJson" ? t("code.invalidJson", { detail: kind.detail }) :
            kind.detail ? t("code.notNodesItem", { item: kind.detail }) : t("code.notNodes");
    }

    /**
     * Give every code block in `container` a bar with its language and Copy; a block that holds a Node-RED flow
     * gets Import too, JSON meant as a flow that cannot be imported a sentence saying why, and JavaScript "Put
     * into the selected function node" (function-code.js). Safe to call again on the same container: decorated
     * blocks are skipped.
     *
     * @param {jQuery} container rendered (sanitised, highlighted) answer markup
     */
    function decorate(container) {
        var lib = window.NodeRedAiSidebar;
        // Wide tables scroll in their own box (ai-sidebar.css); focusable so the keyboard can scroll them.
        container.find(".ai-sidebar-text table").attr("tabindex", "0");
        container.find("pre > code").each(function () {
            var code = $(this);
            var pre = code.parent();
            if (pre.attr("data-ai-sidebar-flow") !== undefined) {
                return;
            }
            var text = code.text();
            // The fence's label, else the language highlight.js recognised (code-highlight.js).
            var language = lib.codeHighlight.languageOf(code.attr("class")) || code.attr("data-language") || "";
            var kind = lib.codeBlocks.classify(text, language, flowJson().parseFlow);
            pre.attr("data-ai-sidebar-flow", kind.kind === "flow" ? "yes" : "no");
            pre.attr("data-ai-sidebar-code", kind.kind).attr("tabindex", "0");
            var bar = $('<div class="ai-sidebar-flow-bar ai-sidebar-code-bar"></div>').insertBefore(pre);
            var label = $('<span class="ai-sidebar-flow-label ai-sidebar-code-label"></span>').appendTo(bar);
            var status = $('<div class="ai-sidebar-flow-status ai-sidebar-error" role="alert"></div>').hide();
            if (kind.kind === "flow") {
                // Collapsed: the summary names what is in it; the JSON, often two screens long, shows on request.
                label.append($('<i class="fa fa-sitemap" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + t("flow.label", { count: kind.nodes.length }) +
                        " \u00b7 " + flowJson().typeSummary(kind.nodes)));
                button("flow-import", "fa-download", t("flow.import"), t("flow.importTooltip"), function () {
                    importFlow(text, status);
                }).appendTo(bar);
            } else {
                label.append($('<i class="fa fa-code" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + (language || t("code.plain"))));
            }
            if (kind.kind === "javascript") {
                button("put-function", "fa-sign-in", t("code.put"), t("code.putTooltip"), function () {
                    lib.functionCode.offer(text, status);
                }).appendTo(bar);
            }
            var copyClass = kind.kind === "flow" ? "flow-copy" : "code-copy";
            var copyTooltip = kind.kind === "flow" ? t("flow.copyTooltip") : t("code.copyTooltip");
            var copiedKey = kind.kind === "flow" ? "flow.copied" : "code.copied";
            button(copyClass, "fa-clipboard", t("flow.copy"), copyTooltip, function (element) {
                lib.clipboard.copyText(text, element, copiedKey);
            }).appendTo(bar);
            if (kind.kind === "flow") {
                showButton(pre).appendTo(bar);
            }
            status.insertAfter(pre);
            if (kind.kind === "invalidFlow") {
                // Right under its block, above the status line.
                $('<div class="ai-sidebar-code-note"></div>')
                    .append($('<i class="fa fa-info-circle" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + whyNotImportable(kind)))
                    .insertAfter(pre);
            }
        });
    }

    /**
     * The editor's current version of the open tab (or subflow), undeployed edits included, for `flowData`.
     *
     * The node set is the one Node-RED's Export dialog builds for "current flow" (editor-client red.js, export
     * range "flow"): the tab, its groups, junctions and nodes, and the flow-scoped config nodes that need no
     * users; `RED.nodes.createExportableNodeSet(set)` adds the config nodes they reference and leaves
     * credentials out.
     *
     * @returns {{flowId: string, nodes: (object[]|null), bytes: number}|null} null while no tab is open;
     *     `nodes` is null when the tab is larger than flowJson.MAX_FLOW_DATA_BYTES
     */
    function exportActiveTab() {
        var id = RED.workspaces.active();
        var parent = id && (RED.nodes.workspace(id) || RED.nodes.subflow(id));
        if (!parent) {
            return null;
        }
        var set = RED.nodes.groups(id)
            .concat(RED.nodes.junctions(id))
            .concat(RED.nodes.filterNodes({ z: id }));
        RED.nodes.eachConfig(function (node) {
            if (node.z === id && node._def && node._def.hasUsers === false) {
                set.push(node);
            }
        });
        set.unshift(parent);
        var data = flowJson().flowData(RED.nodes.createExportableNodeSet(set));
        return { flowId: id, nodes: data.nodes, bytes: data.bytes };
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.flowBlocks = {
        decorate: decorate,
        importFlow: importFlow,
        unknownTypes: unknownTypes,
        exportActiveTab: exportActiveTab
    };
}());
