/**
 * Writes the assistant waits to make, in the sidebar: the approval card of an `approval_required` event (each
 * action's summary and a readable diff, Approve / Edit / Reject), the decision sent to the plugin's
 * `ai-sidebar/resume` route with the continued stream rendered in the same answer, a `flow_change` applied in the
 * editor (flow-change.js) and reported on its tool card, and the cards of runs still waiting rebuilt from
 * `ai-sidebar/approvals` after a reload or in another browser.
 *
 * Resume tokens: the service keeps only their hash, so the token of an `approval_required` event is kept in this
 * browser's Web Storage (per Node-RED user and run) until the run is answered. A browser without it (another
 * browser of the same user, cleared storage), or whose token was replaced meanwhile, asks the plugin's
 * `ai-sidebar/approvals/<runId>/token` for a fresh one, which makes the previous one stop working.
 *
 * Editor-only script: registers `NodeRedAiSidebar.ApprovalCards`; the pure parts are approval-diff.js.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    // Write tools that act on the running Node-RED through the plugin, not in the editor's workspace: Ctrl-Z does
    // not undo them (service/nodered/tools.py).
    var RUNTIME_TOOLS = ["set_context", "trigger_inject"];

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    /** The card's views (approval-view.js). */
    function views() {
        return lib().approvalView;
    }

    function button(name, icon, label, tooltip, primary) {
        return views().button(name, icon, label, tooltip, primary);
    }

    /**
     * The sidebar's approval cards.
     *
     * @param {object} sidebar the AiSidebar: `storage`, `controller`, `setBusy`, `withScroll`, `configPicker`,
     *     `refreshSessions`, `appendMessage`, `conversation`, `reveal`
     * @param {{username: (string|undefined)}} options
     */
    function ApprovalCards(sidebar, options) {
        this.sidebar = sidebar;
        this.username = options.username;
        this.restoreRequest = null;
        // Questions, plans, checks and verdicts (build-cards.js) resume through resume() below.
        this.build = new (lib().BuildCards)(this);
    }

    /**
     * Events the answer itself does not know: `approval_required` and `flow_change`. In a reopened conversation
     * (`answer.restoring`, see restoring()) they come from the stored answer: the card shows what was decided, and
     * a stored flow_change (which has no changes: the editor applied them once) only what the editor reported.
     */
    ApprovalCards.prototype.handleEvent = function (answer, event) {
        if (this.build.handleEvent(answer, event)) {
            return;
        }
        if (event.type === "approval_required" && typeof event.runId === "string" && Array.isArray(event.actions)) {
            answer.received = true;
            if (typeof event.resumeToken === "string") {
                this.sidebar.storage.set(lib().approvalDiff.tokenKey(event.runId, this.username), event.resumeToken);
            }
            answer.render();
            answer.readOut(true);
            answer.textElement = null;
            var card = this.renderCard(answer.element, event);
            if (answer.restoring) {
                answer.restoring.shown(event.runId, answer.element, card);
            }
        } else if (event.type === "flow_change") {
            answer.received = true;
            if (event.changes) {
                this.applyFlowChange(answer, event);
            } else if (answer.restoring) {
                var outcome = answer.restoring.applied(answer.runId, event.tool);
                if (outcome) {
                    this.showOutcome(answer, event.tool, outcome, true);
                }
            }
        }
    };

    /**
     * Show the card of a run that waits for decisions, at the end of `element`.
     *
     * @param {jQuery} element the assistant message the card belongs to
     * @param {{runId: string, actions: object[], createdAt: (number|undefined)}} approval an approval_required
     *     event, or a pending entry of `ai-sidebar/approvals`
     */
    ApprovalCards.prototype.renderCard = function (element, approval) {
        var self = this;
        var paused = this.build.renderCard(element, approval);
        if (paused) {
            return paused;
        }
        var Diff = (lib().vendor || {}).Diff;
        var card = $('<div class="ai-sidebar-approval" role="group"></div>')
            .attr("data-run-id", approval.runId).attr("aria-label", t("approval.title"));
        $('<div class="ai-sidebar-approval-title"></div>')
            .append($('<i class="fa fa-hand-paper-o" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("approval.title")))
            .appendTo(card);
        $('<div class="ai-sidebar-approval-intro"></div>').text(t("approval.intro")).appendTo(card);
        var state = { approval: approval, element: element, card: card, chosen: [], blocks: [] };
        approval.actions.forEach(function (action, index) {
            state.chosen.push(null);
            state.blocks.push(self.renderAction(state, action, index, Diff).appendTo(card));
        });
        state.status = $('<div class="ai-sidebar-approval-status" role="status"></div>').appendTo(card);
        this.sidebar.withScroll(function () {
            card.appendTo(element);
        });
        return card;
    };

    /** Mark a decision on an action's block: its button pressed and the decision (a rejection's reason) said. */
    function markDecided(block, decision) {
        var buttons = block.children(".ai-sidebar-approval-buttons");
        block.children(".ai-sidebar-approval-edit-panel, .ai-sidebar-approval-reject-panel").hide();
        buttons.find("button").removeClass("selected").attr("aria-pressed", "false");
        buttons.find(".ai-sidebar-approval-" + decision.type).addClass("selected").attr("aria-pressed", "true");
        block.children(".ai-sidebar-approval-decided").text(t("approval.decided." + decision.type) +
            (decision.type === "reject" && decision.message ? ": " + decision.message : "")).show();
    }

    /** The note above a card brought back while it still waits: since when (`createdAt`, seconds since 1970). */
    function waitingNote(createdAt) {
        return $('<div class="ai-sidebar-note ai-sidebar-approval-waiting"></div>').text(t("approval.restored", {
            time: new Date(createdAt * 1000).toLocaleString(RED.i18n.lang())
        }));
    }

    /**
     * A card of a reopened conversation whose decisions were sent: each action's decision marked, the card closed
     * as it was once sent (`decisions`: the service's, one per action, in order).
     */
    function showAnswered(card, decisions) {
        card.children(".ai-sidebar-approval-action").each(function (index) {
            if (decisions[index]) {
                markDecided($(this), decisions[index]);
            }
        });
        card.addClass("ai-sidebar-approval-sent").find("button, textarea, input").prop("disabled", true);
        card.children(".ai-sidebar-approval-status").text(t("approval.sent"));
    }

    /**
     * What a reopened conversation needs to show its approval cards as they were: `outcomes` is the history's
     * `approvals` (per run id, the run's approvals in order: `{status, decisions, applied}`). Its answers
     * (answer.js replayStoredAnswer) call `shown` for each card (the run's next approval) and `applied` for each
     * stored flow_change of a continued run; `elementOf` is where a run's continued answer goes (under its card,
     * as it streamed there).
     *
     * @param {object} outcomes
     */
    ApprovalCards.prototype.restoring = function (outcomes) {
        outcomes = outcomes && typeof outcomes === "object" ? outcomes : {};
        var seen = {};
        var latest = {};
        var elements = {};
        return {
            shown: function (runId, element, card) {
                var runs = Array.isArray(outcomes[runId]) ? outcomes[runId] : [];
                var index = seen[runId] || 0;
                seen[runId] = index + 1;
                var entry = runs[index] || null;
                latest[runId] = { entry: entry, applied: 0 };
                elements[runId] = element;
                if (entry && entry.status === "answered") {
                    showAnswered(card, Array.isArray(entry.decisions) ? entry.decisions : []);
                } else if (entry && entry.status === "pending" && entry.createdAt) {
                    // As a card restore() brings back: it still waits, and since when.
                    waitingNote(entry.createdAt).insertBefore(card);
                }
            },
            applied: function (runId, tool) {
                var current = runId && latest[runId];
                var applied = current && current.entry && Array.isArray(current.entry.applied) ?
                    current.entry.applied : [];
                while (current && current.applied < applied.length) {
                    var report = applied[current.applied++];
                    if (report && report.tool === tool && report.outcome) {
                        return report.outcome;
                    }
                }
                return null;
            },
            elementOf: function (runId) {
                return elements[runId] || null;
            }
        };
    };

    ApprovalCards.prototype.renderAction = function (state, action, index, Diff) {
        var self = this;
        var block = $('<div class="ai-sidebar-approval-action"></div>').attr("data-tool", action.tool);
        var view = lib().approvalDiff.describeAction(action, views().nameOf, Diff,
            { newGroup: t("approval.newGroup") });
        $('<div class="ai-sidebar-approval-summary"></div>').text(view.summary || action.tool).appendTo(block);
        if (action.warning) {
            // New values that look like secrets are shown in full below: the person approving reads what is written.
            $('<div class="ai-sidebar-approval-warning" role="alert"></div>')
                .append($('<i class="fa fa-exclamation-triangle"></i>'))
                .append($("<strong></strong>").text(" " + t("approval.secretWarning") + " "))
                .append($("<span></span>").text(String(action.warning)))
                .appendTo(block);
        }
        views().renderDiff(view).appendTo(block);
        var parts = views().renderParts(action, state.approval.runId + "-" + index);
        if (parts) {
            parts.element.appendTo(block);
        }
        var buttons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(block);
        var editPanel = $('<div class="ai-sidebar-approval-edit-panel"></div>').hide().appendTo(block);
        var rejectPanel = $('<div class="ai-sidebar-approval-reject-panel"></div>').hide().appendTo(block);
        $('<div class="ai-sidebar-approval-decided"></div>').hide().appendTo(block);

        function decide(decision) {
            state.chosen[index] = decision;
            markDecided(block, decision);
            var decisions = lib().approvalDiff.decisionsToSend(state.chosen);
            if (decisions) {
                self.send(state, decisions);
            } else {
                state.status.text(t("approval.waitingOthers"));
            }
        }

        // Most changes are made in the editor (one Ctrl-Z); these act on the running Node-RED at once.
        var runtime = RUNTIME_TOOLS.indexOf(action.tool) >= 0;
        var approve = button("approve", "fa-check", t("approval.approve"),
            t(runtime ? "approval.approveTooltipRuntime" : "approval.approveTooltip"), true)
            .on("click", function (event) {
                event.preventDefault();
                // All parts ticked: "Approve all", one click, no list; else only the ticked ones.
                var decision = parts ? parts.decision() : { type: "approve" };
                if (decision) {
                    decide(decision);
                }
            }).appendTo(buttons);
        if (parts) {
            parts.follow(approve);
        }
        button("edit", "fa-pencil", t("approval.edit"), t("approval.editTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                rejectPanel.hide();
                editPanel.toggle();
                if (editPanel.is(":visible")) {
                    self.sidebar.reveal(editPanel, editPanel.find("textarea"));
                }
            }).appendTo(buttons);
        button("reject", "fa-times", t("approval.reject"), t("approval.rejectTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                editPanel.hide();
                rejectPanel.toggle();
                if (rejectPanel.is(":visible")) {
                    // The reason field and its Reject / Cancel open below the buttons, often below the list's end.
                    self.sidebar.reveal(rejectPanel, rejectPanel.find("input"));
                }
            }).appendTo(buttons);

        var editId = "ai-sidebar-approval-args-" + state.approval.runId + "-" + index;
        $("<label></label>").attr("for", editId).text(t("approval.editLabel")).appendTo(editPanel);
        var textarea = $('<textarea class="ai-sidebar-approval-args" rows="8" spellcheck="false"></textarea>')
            .attr("id", editId).val(JSON.stringify(action.args, null, 2)).appendTo(editPanel);
        var editError = $('<div class="ai-sidebar-error ai-sidebar-approval-edit-error" role="alert"></div>').hide()
            .appendTo(editPanel);
        var editButtons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(editPanel);
        button("use-edited", "fa-check", t("approval.useEdited"), null, true).on("click", function (event) {
            event.preventDefault();
            var parsed = lib().approvalDiff.parseEditedArgs(textarea.val());
            if (parsed.error) {
                editError.text(t("approval." + parsed.error, { detail: parsed.detail || "" })).show();
                textarea.attr("aria-invalid", "true").trigger("focus");
                return;
            }
            editError.hide();
            textarea.removeAttr("aria-invalid");
            decide({ type: "edit", args: parsed.args });
        }).appendTo(editButtons);
        button("cancel-edit", "fa-undo", t("approval.cancel")).on("click", function (event) {
            event.preventDefault();
            editPanel.hide();
        }).appendTo(editButtons);

        var reasonId = "ai-sidebar-approval-reason-" + state.approval.runId + "-" + index;
        $("<label></label>").attr("for", reasonId).text(t("approval.reasonLabel")).appendTo(rejectPanel);
        var reason = $('<input type="text" class="ai-sidebar-approval-reason" maxlength="2000">').attr("id", reasonId)
            .on("keydown", function (event) {
                if (event.key === "Enter" && !event.originalEvent.isComposing) {
                    event.preventDefault();
                    decide({ type: "reject", message: String(reason.val()).trim() });
                }
            }).appendTo(rejectPanel);
        var rejectButtons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(rejectPanel);
        button("confirm-reject", "fa-times", t("approval.rejectConfirm"), null, true).on("click", function (event) {
            event.preventDefault();
            decide({ type: "reject", message: String(reason.val()).trim() });
        }).appendTo(rejectButtons);
        button("cancel-reject", "fa-undo", t("approval.cancel")).on("click", function (event) {
            event.preventDefault();
            rejectPanel.hide();
        }).appendTo(rejectButtons);
        return block;
    };

    /** Let the user decide again (the decisions were not taken: busy, refused edit, network fault). */
    function reopen(state, message) {
        state.card.removeClass("ai-sidebar-approval-sent").find("button, textarea, input").prop("disabled", false);
        state.card.prev(".ai-sidebar-approval-waiting").show();
        state.chosen = state.chosen.map(function () { return null; });
        state.card.find(".ai-sidebar-approval-decided").hide();
        state.card.find(".ai-sidebar-approval-buttons button").removeClass("selected").attr("aria-pressed", "false");
        state.status.text(message || "");
    }

    /** Post the decisions and stream the continued run into the card's answer. */
    ApprovalCards.prototype.send = function (state, decisions) {
        return this.resume(state, { decisions: decisions });
    };

    /**
     * Resume the card's run with `fields` (`{decisions}`, or a question's `{answer}`) and stream the continued run
     * into the card's answer. `state`: `{approval: {runId}, element, card, status, reopen?}` (`reopen(message)`:
     * how the card opens again when the answer was not taken). `texts`: locale keys of the status while sending and
     * once sent (the approval's by default).
     */
    ApprovalCards.prototype.resume = function (state, fields, texts) {
        var sidebar = this.sidebar;
        texts = texts || { sending: "approval.sending", sent: "approval.sent" };
        var reopenCard = state.reopen || function (message) {
            reopen(state, message);
        };
        if (sidebar.controller) {
            reopenCard(t("approval.busy"));
            return;
        }
        state.card.addClass("ai-sidebar-approval-sent").find("button, textarea, input").prop("disabled", true);
        // A restored card's "waiting since" note is no longer true once decided (back if the decision fails).
        state.card.prev(".ai-sidebar-approval-waiting").hide();
        state.status.text(t(texts.sending));
        var runId = state.approval.runId;
        var key = lib().approvalDiff.tokenKey(runId, this.username);
        var body = Object.assign({}, fields, { language: RED.i18n.lang() });
        var configId = sidebar.configPicker.configId();
        if (configId) {
            body.configId = configId;
        }
        var controller = new AbortController();
        sidebar.controller = controller;
        sidebar.setBusy(true);
        var answer = new (lib().Answer)(sidebar, state.element);
        // What the editor applies of this run's approved changes is reported under its run id.
        answer.runId = runId;

        function freshToken() {
            return lib().adminApi.requestJson("POST", "ai-sidebar/approvals/" + encodeURIComponent(runId) + "/token",
                {}).then(function (issued) {
                sidebar.storage.set(key, issued.resumeToken);
                return issued.resumeToken;
            });
        }

        function attempt(token, mayRetry) {
            body.resumeToken = token;
            var held = null;
            // The stored token may have been replaced by another browser of the same user: its 404 is held back
            // and the decision sent again with a fresh token.
            var sink = {
                sawDone: false,
                handleEvent: function (event) {
                    answer.handleEvent(event);
                    sink.sawDone = answer.sawDone;
                },
                error: function (message) {
                    if (mayRetry) {
                        held = message;
                    } else {
                        answer.error(message);
                    }
                }
            };
            return lib().streamChat(body, controller.signal, sink, "ai-sidebar/resume").then(function (outcome) {
                if (mayRetry && outcome.error && outcome.error.status === 404) {
                    return freshToken().then(function (fresh) {
                        return attempt(fresh, false);
                    });
                }
                if (held) {
                    answer.error(held);
                }
                return outcome;
            });
        }

        var stored = sidebar.storage.get(key);
        var run = stored ? attempt(stored, true) : freshToken().then(function (token) {
            return attempt(token, false);
        });
        return run.then(function (outcome) {
            var status = outcome.error ? outcome.error.status : 0;
            if (outcome.ok) {
                sidebar.storage.set(key, null);
                state.status.text(t(texts.sent));
            } else if (status === 400 || status === 403 || status === 429 || status >= 500) {
                // Refused before anything was recorded (wrong edited arguments, a busy or unreachable service):
                // the run still waits.
                reopenCard();
                sidebar.serviceError(outcome.error);
            } else {
                sidebar.storage.set(key, null);
                state.status.text("");
            }
        }, function (err) {
            if (err && err.name === "AbortError") {
                answer.stopped();
                state.status.text("");
            } else if (err && err.name === "ApiError") {
                answer.error(err.message);
                if (err.status === 404 || err.status === 409 || err.status === 410) {
                    sidebar.storage.set(key, null);
                    state.status.text("");
                } else {
                    reopenCard();
                }
            } else {
                answer.error(t("error.network", { message: (err && err.message) || String(err) }));
                reopenCard();
            }
        }).then(function () {
            answer.finish();
            if (sidebar.controller === controller) {
                sidebar.controller = null;
                sidebar.setBusy(false);
            }
            sidebar.refreshSessions(false);
            // The continued run's tokens count in the conversation's total now, not after the next question.
            sidebar.sessionUsage.load(sidebar.conversation.sessionId);
        });
    };

    /**
     * Show the cards of the user's runs of session `sessionId` that still wait (after its history was shown), each
     * as an assistant message at the end; runs whose card is on screen already are skipped.
     *
     * @param {string} sessionId
     * @returns {Promise} settles once shown (a failure to read them is logged: the chat works without them)
     */
    ApprovalCards.prototype.restore = function (sessionId) {
        var self = this;
        var sidebar = this.sidebar;
        var request = {};
        this.restoreRequest = request;
        return lib().adminApi.requestJson("GET", "ai-sidebar/approvals?limit=1").then(function (body) {
            if (self.restoreRequest !== request || sidebar.conversation.sessionId !== sessionId) {
                return;
            }
            var pending = (body && Array.isArray(body.pending) ? body.pending : []).filter(function (run) {
                return run && run.sessionId === sessionId && typeof run.runId === "string" &&
                    Array.isArray(run.actions) && !sidebar.messages.find(".ai-sidebar-approval").filter(function () {
                        return $(this).attr("data-run-id") === run.runId;
                    }).length;
            });
            // The service lists the newest first; the conversation reads oldest first.
            pending.reverse().forEach(function (run) {
                var message = sidebar.appendMessage("assistant");
                if (run.createdAt) {
                    waitingNote(run.createdAt).appendTo(message);
                }
                self.renderCard(message, run);
            });
            if (pending.length) {
                sidebar.scrollToBottom();
            }
        }).catch(function (err) {
            console.warn("[ai-sidebar] could not read the approvals that wait:", err && err.message);
        });
    };

    // What the editor made of an approved change (approval-outcome.js), looked up when called.
    ["applyFlowChange", "reportOutcome", "showOutcome"].forEach(function (name) {
        ApprovalCards.prototype[name] = function () {
            return lib().approvalOutcome[name].apply(this, arguments);
        };
    });

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.ApprovalCards = ApprovalCards;
}());
