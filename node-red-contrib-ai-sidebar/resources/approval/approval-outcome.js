/**
 * What the editor made of an approved change, in the sidebar: a `flow_change` applied in the editor (flow-change.js)
 * and said on the write's tool card, followed as the editor undoes or changes it (applied-watch.js), and reported to
 * the service (`ai-sidebar/approvals/<runId>/applied`) for the reopened conversation.
 *
 * Editor-only script: registers `NodeRedAiSidebar.approvalOutcome`: `applyFlowChange`, `reportOutcome` and
 * `showOutcome`, which `NodeRedAiSidebar.ApprovalCards` (approval-card.js) runs as its own methods.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    // Methods of ApprovalCards (approval-card.js calls them with its card set as `this`).
    var methods = {};

    /**
     * Apply a flow_change in the editor and say on the write's tool card what was applied; the outcome is kept by
     * the service with the approval of the answer's run (`answer.runId`), for the reopened conversation.
     */
    methods.applyFlowChange = function (answer, event) {
        var outcome;
        try {
            outcome = lib().flowChange.applyChange(RED, event.changes);
        } catch (err) {
            console.warn("[ai-sidebar] could not apply the change in the editor:", err);
            outcome = { problem: { reason: "failed", message: (err && err.message) || String(err) } };
        }
        var line = this.showOutcome(answer, event.tool, outcome);
        var self = this;
        var runId = answer.runId;
        if (runId) {
            this.reportOutcome(runId, event.tool, outcome);
        }
        if (outcome.record) {
            // The line follows the editor (Ctrl-Z, Redo, the user's edits), and so does what the service keeps.
            lib().appliedWatch.follow(RED, outcome.record, line, function (state) {
                var later = Object.assign({}, outcome, { later: state });
                var fresh = self.showOutcome(answer, event.tool, later, false, true);
                line.attr("data-state", fresh.attr("data-state")).empty().append(fresh.contents());
                if (runId) {
                    self.reportOutcome(runId, event.tool, outcome, state);
                }
            });
        }
    };

    /**
     * Tell the service what the editor made of an approved change (`POST ai-sidebar/approvals/<runId>/applied`),
     * one report after the other (an agent's batch applies several); a failure is logged: the change stands.
     */
    methods.reportOutcome = function (runId, tool, outcome, later) {
        var body = { tool: tool, outcome: lib().approvalDiff.reportedOutcome(outcome) };
        if (later) {
            body.later = later;
        }
        var route = "ai-sidebar/approvals/" + encodeURIComponent(runId) + "/applied";
        this.reporting = (this.reporting || Promise.resolve()).then(function () {
            return lib().adminApi.requestJson("POST", route, body);
        }).catch(function (err) {
            console.warn("[ai-sidebar] could not keep what the editor applied:", err && err.message);
        });
        return this.reporting;
    };

    /**
     * Say on the write's tool card what the editor applied (`outcome`: flowChange.applyChange's), or why not.
     * `restored`: told again in a reopened conversation, where "not deployed, Ctrl-Z undoes it" may no longer hold.
     * `outcome.later` ("undone", "changed"; applied-watch.js): what the editor made of it since. `detached`: the
     * line is returned, not placed (its contents replace the shown line's). Returns the line.
     */
    methods.showOutcome = function (answer, tool, outcome, restored, detached) {
        var text;
        if (outcome.problem) {
            var problem = outcome.problem;
            // A tab or subflow by its label, as the editor shows it; a node by its id.
            var named = (problem.ids || []).map(function (id) {
                var container = RED.nodes.workspace(id) || RED.nodes.subflow(id);
                var label = container && (container.label || container.name);
                return label ? "\"" + label + "\"" : id;
            });
            text = t("approval.notApplied." + problem.reason, { ids: named.join(", "), message: problem.message || "" });
        } else {
            var parts = [];
            [["added", "nodes"], ["tabs", "tabs"], ["changed", "changed"], ["removed", "removed"]]
                .forEach(function (pair) {
                    if (outcome[pair[0]]) {
                        parts.push(t("approval.appliedParts." + pair[1], { count: outcome[pair[0]] }));
                    }
                });
            var key = outcome.later === "undone" ? "approval.appliedUndone" :
                outcome.later === "changed" ? "approval.appliedChanged" :
                    restored ? "approval.appliedEarlier" : "approval.applied";
            text = parts.length ? t(key, { parts: parts.join(", ") }) : t("approval.appliedNothing");
        }
        var entry = null;
        for (var i = answer.toolCards.length - 1; i >= 0; i--) {
            if (answer.toolCards[i].tool === tool) {
                entry = answer.toolCards[i];
                break;
            }
        }
        var line = $('<span class="ai-sidebar-tool-applied"></span>')
            .attr("data-state", outcome.problem ? "problem" : outcome.later || "applied")
            .toggleClass("ai-sidebar-tool-applied-problem", !!outcome.problem)
            .append($('<i aria-hidden="true"></i>').addClass("fa " +
                (outcome.problem ? "fa-exclamation-triangle" : "fa-pencil-square-o")))
            .append(document.createTextNode(" " + text));
        if (entry && outcome.problem) {
            // The tool ran (it handed the change over), but nothing changed: the card says failed, not finished.
            entry.card.addClass("ai-sidebar-tool-failed");
            entry.card.find(".ai-sidebar-tool-icon").attr("class", "ai-sidebar-tool-icon fa fa-exclamation-triangle");
            entry.card.find(".ai-sidebar-tool-label").text(t("tool.failed", { tool: tool }));
        }
        if (detached) {
            return line;
        }
        this.sidebar.withScroll(function () {
            if (entry) {
                line.appendTo(entry.card.children("summary"));
            } else {
                $('<div class="ai-sidebar-note"></div>').append(line).appendTo(answer.element);
            }
        });
        $("<p></p>").text(text).appendTo(answer.reader);
        return line;
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.approvalOutcome = methods;
})();
