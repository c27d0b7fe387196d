/**
 * The build loop in the sidebar (issue 34; README "Plan, ask, build, check"): the question card of a `question`
 * event (quick replies, a free answer), the plan card of a `plan` event (its steps, Approve / Approve the plan's
 * changes / Change… / Reject), the "Deploy and test" card of a `deploy_test` event (a build applied in the editor:
 * it deploys the editor's flows the normal Node-RED way, `core:deploy-flows`, waits for the editor's `deploy` event,
 * then lets the service test them), a line per `check` round and the closing block of a `verdict`. An answer or a
 * decision resumes the run through the approval cards' path (ApprovalCards.resume: `POST ai-sidebar/resume`, the
 * continued stream in the same answer, the resume token kept per user and run, a fresh one asked for when it was
 * replaced), so an expired or used token is said as for an approval.
 *
 * Editor-only script: registers `NodeRedAiSidebar.BuildCards`; the pure parts are build-view.js.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    // How long "Deploy and test" waits for the editor's deploy (its dialogs, e.g. unused config nodes, included).
    var DEPLOY_WAIT_MS = 120000;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function view() {
        return window.NodeRedAiSidebar.buildView;
    }

    function button(name, icon, label, primary) {
        var element = $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .addClass("ai-sidebar-build-" + name)
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + label));
        return primary ? element.addClass("primary") : element;
    }

    function cardShell(kind, runId, icon, title) {
        var titleId = "ai-sidebar-build-" + kind + "-" + runId;
        var card = $('<div class="ai-sidebar-approval ai-sidebar-build-card" role="group"></div>')
            .addClass("ai-sidebar-build-" + kind).attr("data-run-id", runId).attr("aria-labelledby", titleId);
        $('<div class="ai-sidebar-approval-title"></div>').attr("id", titleId)
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + title))
            .appendTo(card);
        return card;
    }

    /** A labelled text field with its buttons, hidden until opened (`multiline`: a textarea). */
    function panel(id, label, multiline) {
        var box = $('<div class="ai-sidebar-approval-edit-panel"></div>');
        $("<label></label>").attr("for", id).text(label).appendTo(box);
        var field = (multiline ? $('<textarea class="ai-sidebar-approval-args" rows="3"></textarea>') :
            $('<input type="text" class="ai-sidebar-approval-reason">')).attr("id", id).attr("maxlength", 2000)
            .appendTo(box);
        var buttons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(box);
        return { box: box, field: field, buttons: buttons };
    }

    /** Enter in a one-line field (not while an input method composes) runs `send`. */
    function onEnter(field, send) {
        field.on("keydown", function (event) {
            if (event.key === "Enter" && !event.originalEvent.isComposing && !event.shiftKey) {
                event.preventDefault();
                send();
            }
        });
    }

    /**
     * The build loop's cards.
     *
     * @param {object} approvals the sidebar's ApprovalCards: `sidebar`, `username`, `resume(state, fields)`
     */
    function BuildCards(approvals) {
        this.approvals = approvals;
        this.sidebar = approvals.sidebar;
    }

    /**
     * Show a `question`, `plan`, `check` or `verdict` event in `answer`; returns whether it was one of them. In a
     * reopened conversation (`answer.restoring`) a card shows what was decided, as an approval card does.
     */
    BuildCards.prototype.handleEvent = function (answer, event) {
        var type = event && event.type;
        if (["question", "plan", "deploy_test", "check", "verdict"].indexOf(type) === -1) {
            return false;
        }
        answer.received = true;
        answer.render();
        answer.readOut(true);
        answer.textElement = null;
        if (type === "check" || type === "verdict") {
            this.renderOutcome(answer, event);
            return true;
        }
        if (typeof event.runId !== "string") {
            return true;
        }
        if (typeof event.resumeToken === "string") {
            var key = window.NodeRedAiSidebar.approvalDiff.tokenKey(event.runId, this.approvals.username);
            this.sidebar.storage.set(key, event.resumeToken);
        }
        var card = this.renderCard(answer.element, event);
        if (card && answer.restoring) {
            answer.restoring.shown(event.runId, answer.element, card);
        }
        return true;
    };

    /**
     * The card of a run paused on a question or a plan (a `question` / `plan` event, or a pending run of
     * `ai-sidebar/approvals` whose one action is `ask_user` / `propose_plan`), at the end of `element`.
     *
     * @returns {?jQuery} the card, or null when `source` is neither
     */
    BuildCards.prototype.renderCard = function (element, source) {
        var question = view().questionOf(source);
        var plan = question ? null : view().planOf(source);
        var deploy = question || plan ? null : view().deployTestOf(source);
        var card;
        if (question) {
            card = this.questionCard(element, question);
        } else if (plan) {
            card = this.planCard(element, plan);
        } else if (deploy) {
            card = this.deployCard(element, deploy);
        } else {
            return null;
        }
        this.sidebar.withScroll(function () {
            card.appendTo(element);
        });
        return card;
    };

    /** A state for ApprovalCards.resume: the card, its status line, and how it opens again after a refusal. */
    function resumeState(element, card, runId) {
        var state = { approval: { runId: runId }, element: element, card: card };
        state.status = $('<div class="ai-sidebar-approval-status" role="status"></div>').appendTo(card);
        state.reopen = function (message) {
            card.removeClass("ai-sidebar-approval-sent").find("button, textarea, input").prop("disabled", false);
            card.find(".ai-sidebar-approval-decided").hide();
            state.status.text(message || "");
        };
        return state;
    }

    function decided(card, text) {
        card.find(".ai-sidebar-approval-edit-panel").hide();
        card.children(".ai-sidebar-approval-decided").text(text).show();
    }

    BuildCards.prototype.questionCard = function (element, question) {
        var self = this;
        var card = cardShell("question", question.runId, "fa-question-circle", t("build.question.title"));
        var textId = "ai-sidebar-build-question-text-" + question.runId;
        card.attr("aria-describedby", textId);
        $('<div class="ai-sidebar-build-question-text"></div>').attr("id", textId).text(question.question)
            .appendTo(card);
        var choices = $('<div class="ai-sidebar-approval-buttons ai-sidebar-build-choices"></div>').appendTo(card);
        var state;

        function send(given) {
            var fields = view().answerBody(given);
            if (!fields) {
                return;
            }
            var said = fields.answer.choice !== undefined ? fields.answer.choice : fields.answer.text;
            decided(card, t("build.question.answered", { answer: said }));
            self.approvals.resume(state, fields, { sending: "build.question.sending", sent: "build.question.sent" });
        }

        question.choices.forEach(function (choice) {
            button("choice", "fa-reply", choice).attr("data-choice", choice).on("click", function (event) {
                event.preventDefault();
                send({ choice: choice });
            }).appendTo(choices);
        });
        if (question.free) {
            var free = panel("ai-sidebar-build-answer-" + question.runId,
                question.choices.length ? t("build.question.otherLabel") : t("build.question.freeLabel"));
            free.box.addClass("ai-sidebar-build-free").appendTo(card);
            var sendFree = function () {
                var text = String(free.field.val()).trim();
                if (!text) {
                    free.field.attr("aria-invalid", "true").trigger("focus");
                    return;
                }
                free.field.removeAttr("aria-invalid");
                send({ text: text });
            };
            onEnter(free.field, sendFree);
            button("send-answer", "fa-paper-plane", t("build.question.send"), !question.choices.length)
                .on("click", function (event) {
                    event.preventDefault();
                    sendFree();
                }).appendTo(free.buttons);
        }
        $('<div class="ai-sidebar-approval-decided"></div>').hide().appendTo(card);
        state = resumeState(element, card, question.runId);
        return card;
    };

    BuildCards.prototype.planCard = function (element, plan) {
        var self = this;
        var card = cardShell("plan", plan.runId, "fa-list-ol", t("build.plan.title"));
        $('<div class="ai-sidebar-approval-intro"></div>').text(t("build.plan.intro")).appendTo(card);
        var steps = $('<ol class="ai-sidebar-build-steps"></ol>').appendTo(card);
        plan.steps.forEach(function (step) {
            var item = $('<li class="ai-sidebar-build-step"></li>').appendTo(steps);
            $('<div class="ai-sidebar-build-step-title"></div>').text(step.title).appendTo(item);
            if (step.changes.length) {
                var changes = $('<ul class="ai-sidebar-build-changes"></ul>').appendTo(item);
                step.changes.forEach(function (change) {
                    $("<li></li>").text(change).appendTo(changes);
                });
            }
            if (step.test) {
                $('<div class="ai-sidebar-build-step-test"></div>')
                    .append($('<i class="fa fa-flask" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + t("build.plan.test", { test: step.test })))
                    .appendTo(item);
            }
            if (step.testInject) {
                $('<div class="ai-sidebar-build-step-test-tab"></div>')
                    .append($('<i class="fa fa-plus-square-o" aria-hidden="true"></i>'))
                    .append(document.createTextNode(" " + t("build.plan.testTab", step.testInject)))
                    .appendTo(item);
            }
        });
        if (plan.assumptions.length) {
            var box = $('<div class="ai-sidebar-approval-section ai-sidebar-build-assumptions"></div>').appendTo(card);
            $('<div class="ai-sidebar-approval-section-label"></div>').text(t("build.plan.assumptions")).appendTo(box);
            var list = $("<ul></ul>").appendTo(box);
            plan.assumptions.forEach(function (assumption) {
                $("<li></li>").text(assumption).appendTo(list);
            });
        }
        var buttons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(card);
        var change = panel("ai-sidebar-build-change-" + plan.runId, t("build.plan.changeLabel"), true);
        var reject = panel("ai-sidebar-build-reject-" + plan.runId, t("build.plan.reasonLabel"));
        change.box.hide().appendTo(card);
        reject.box.hide().appendTo(card);
        $('<div class="ai-sidebar-approval-decided"></div>').hide().appendTo(card);
        var state = resumeState(element, card, plan.runId);

        function decide(kind, message) {
            var fields = view().planBody(kind, message);
            if (!fields) {
                change.field.attr("aria-invalid", "true").trigger("focus");
                return;
            }
            change.field.removeAttr("aria-invalid");
            decided(card, t("build.plan.decided." + kind) + (message && String(message).trim() ?
                ": " + String(message).trim() : ""));
            self.approvals.resume(state, fields);
        }

        function open(which, other) {
            other.box.hide();
            which.box.toggle();
            if (which.box.is(":visible")) {
                self.sidebar.reveal(which.box, which.field);
            }
        }

        button("approve", "fa-check", t("build.plan.approve"), true).attr("title", t("build.plan.approveTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                decide("approve");
            }).appendTo(buttons);
        button("approve-all", "fa-check-square-o", t("build.plan.approveAll"))
            .attr("title", t("build.plan.approveAllTooltip")).on("click", function (event) {
                event.preventDefault();
                decide("approveAll");
            }).appendTo(buttons);
        button("change", "fa-pencil", t("build.plan.change")).attr("title", t("build.plan.changeTooltip"))
            .attr("aria-expanded", "false").on("click", function (event) {
                event.preventDefault();
                open(change, reject);
                $(this).attr("aria-expanded", String(change.box.is(":visible")));
            }).appendTo(buttons);
        button("reject", "fa-times", t("build.plan.reject")).attr("title", t("build.plan.rejectTooltip"))
            .attr("aria-expanded", "false").on("click", function (event) {
                event.preventDefault();
                open(reject, change);
                $(this).attr("aria-expanded", String(reject.box.is(":visible")));
            }).appendTo(buttons);

        button("send-change", "fa-paper-plane", t("build.plan.sendChange"), true).on("click", function (event) {
            event.preventDefault();
            decide("edit", change.field.val());
        }).appendTo(change.buttons);
        onEnter(reject.field, function () {
            decide("reject", reject.field.val());
        });
        button("confirm-reject", "fa-times", t("build.plan.reject"), true).on("click", function (event) {
            event.preventDefault();
            decide("reject", reject.field.val());
        }).appendTo(reject.buttons);
        [change, reject].forEach(function (opened) {
            button("cancel", "fa-undo", t("approval.cancel")).on("click", function (event) {
                event.preventDefault();
                opened.box.hide();
            }).appendTo(opened.buttons);
        });
        return card;
    };

    /**
     * Deploy the editor's flows as its Deploy button does, then `done()`; nothing to deploy: `done()` at once. The
     * deploy's failure (said by the editor) or a dialog left open past DEPLOY_WAIT_MS: `failed()`.
     */
    function deployEditor(done, failed) {
        if (!RED.nodes.dirty()) {
            done();
            return;
        }
        var over = false;
        var timer;
        function finish(then) {
            if (!over) {
                over = true;
                clearTimeout(timer);
                RED.events.off("deploy", deployed);
                then();
            }
        }
        function deployed() {
            finish(done);
        }
        RED.events.on("deploy", deployed);
        timer = setTimeout(function () {
            finish(failed);
        }, DEPLOY_WAIT_MS);
        RED.actions.invoke("core:deploy-flows");
    }

    BuildCards.prototype.deployCard = function (element, deploy) {
        var self = this;
        var card = cardShell("deploy", deploy.runId, "fa-rocket", t("build.deploy.title"));
        $('<div class="ai-sidebar-approval-intro"></div>').text(t("build.deploy.intro")).appendTo(card);
        if (deploy.note) {
            $('<div class="ai-sidebar-build-deploy-note"></div>').text(deploy.note).appendTo(card);
        }
        var buttons = $('<div class="ai-sidebar-approval-buttons"></div>').appendTo(card);
        $('<div class="ai-sidebar-approval-decided"></div>').hide().appendTo(card);
        var state = resumeState(element, card, deploy.runId);
        var texts = { sending: "build.deploy.sending", sent: "build.deploy.sent" };

        button("deploy-test", "fa-rocket", t("build.deploy.deploy"), true).attr("title", t("build.deploy.tooltip"))
            .on("click", function (event) {
                event.preventDefault();
                card.find("button").prop("disabled", true);
                state.status.text(t("build.deploy.deploying"));
                deployEditor(function () {
                    decided(card, t("build.deploy.decided.approve"));
                    self.approvals.resume(state, view().deployTestBody(true), texts);
                }, function () {
                    state.reopen(t("build.deploy.failed"));
                });
            }).appendTo(buttons);
        button("not-now", "fa-clock-o", t("build.deploy.notNow")).attr("title", t("build.deploy.notNowTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                decided(card, t("build.deploy.decided.reject"));
                self.approvals.resume(state, view().deployTestBody(false), texts);
            }).appendTo(buttons);
        return card;
    };

    function evidenceList(evidence) {
        var list = $('<ul class="ai-sidebar-build-evidence"></ul>');
        (Array.isArray(evidence) ? evidence : []).forEach(function (item) {
            var line = view().evidenceLine(item);
            $("<li></li>").attr("data-kind", line.params.kind).text(t(line.key, line.params)).appendTo(list);
        });
        return list;
    }

    /** A `check` round as one line with its evidence, or a `verdict` as the closing block; read out either way. */
    BuildCards.prototype.renderOutcome = function (answer, event) {
        var block;
        var heading;
        if (event.type === "check") {
            var passed = event.passed === true;
            heading = t(passed ? "build.check.passed" : "build.check.failed", { round: event.round || 1 });
            block = $('<div class="ai-sidebar-build-check"></div>').attr("data-passed", String(passed))
                .append($('<div class="ai-sidebar-build-check-title"></div>')
                    .append($('<i aria-hidden="true"></i>').addClass("fa " + (passed ? "fa-check" : "fa-times")))
                    .append(document.createTextNode(" " + heading)));
        } else {
            var done = event.status === "done";
            heading = t(done ? "build.verdict.done" : "build.verdict.notDone");
            block = $('<div class="ai-sidebar-build-verdict"></div>').attr("data-status", done ? "done" : "not_done")
                .append($('<div class="ai-sidebar-build-verdict-title"></div>')
                    .append($('<i aria-hidden="true"></i>').addClass("fa " +
                        (done ? "fa-check-circle" : "fa-exclamation-circle")))
                    .append(document.createTextNode(" " + heading)));
            if (typeof event.summary === "string" && event.summary) {
                $('<div class="ai-sidebar-build-verdict-summary"></div>').text(event.summary).appendTo(block);
                heading += ". " + event.summary;
            }
            if (Array.isArray(event.evidence) && event.evidence.length) {
                $('<div class="ai-sidebar-approval-section-label"></div>')
                    .text(t(done ? "build.verdict.evidence" : "build.verdict.failed")).appendTo(block);
            }
        }
        evidenceList(event.evidence).appendTo(block);
        this.sidebar.withScroll(function () {
            block.appendTo(answer.element);
        });
        var said = block.find(".ai-sidebar-build-evidence li").map(function () {
            return $(this).text();
        }).get();
        $("<p></p>").text([heading].concat(said).join(". ")).appendTo(answer.reader);
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.BuildCards = BuildCards;
}());
