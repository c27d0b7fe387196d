/**
 * "Ask the assistant" in the function node's edit dialog: a button beside the code tabs (and the editor action
 * `node-red-contrib-ai-sidebar:assist-function`) opens the assist panel; the proposed code is shown as a line diff
 * per changed part (On Start / On Message / On Stop), with the problems `ai-sidebar/function-check` finds and, when
 * the proposal carries a recent input message of the node and the user may write flows, a "Try on the last
 * message" button that shows what `ai-sidebar/function-sandbox` makes of it (run only when pressed). Accept puts the code into the dialog's code editors, one undoable
 * edit each; nothing is deployed, and the dialog's own Done/Cancel still decide whether the node changes.
 *
 * Editor-only script: registers `NodeRedAiSidebar.assistFunction`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var BUTTON_CLASS = "ai-assist-function-button";
    // Where the dialog's code editors are on the node being edited (10-function.html oneditprepare, 4.1 and 5.x),
    // and the default text an empty On Start / On Stop shows (saved as "" by its oneditsave).
    var EDITORS = {
        onStart: { property: "initEditor", label: "node-red:function.label.initialize",
            placeholder: "node-red:function.text.initialize" },
        onMessage: { property: "editor", label: "node-red:function.label.function" },
        onStop: { property: "finalizeEditor", label: "node-red:function.label.finalize",
            placeholder: "node-red:function.text.finalize" }
    };

    // Sandbox answers said in the user's language (the runtime's own message is English).
    var SAID_HERE = ["sandbox_refused", "sandbox_timeout", "sandbox_memory"];

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function partLabel(part) {
        return RED._(EDITORS[part].label);
    }

    /** The function node whose dialog is the top tray, with its code editors built; else null. */
    function editingFunctionNode() {
        var node = lib().assistEditors.topOfEditStack();
        if (node && node.type === "function" && node.editor && $("#func-tabs").length) {
            return node;
        }
        return null;
    }

    /** The dialog's code per part; an On Start / On Stop that shows only its default comment counts as empty. */
    function currentCode(node) {
        var code = {};
        Object.keys(EDITORS).forEach(function (part) {
            var editor = node[EDITORS[part].property];
            var value = editor ? editor.getValue() : "";
            if (EDITORS[part].placeholder && value === RED._(EDITORS[part].placeholder)) {
                value = "";
            }
            code[part] = value;
        });
        return code;
    }

    /** The Setup tab's modules as the function node saves them (10-function.html getLibsList). */
    function setupLibs() {
        var libs = [];
        $("#node-input-libs-container").children().each(function () {
            var item = $(this);
            var variable = item.find(".node-input-libs-var").val();
            var field = item.find(".node-input-libs-val");
            var module = field.data("typedInput") ? field.typedInput("type") : field.val();
            if (module === "_custom_") {
                module = field.val();
            }
            if (variable && module) {
                libs.push({ var: variable, module: module });
            }
        });
        return libs;
    }

    function outputsCount() {
        var value = parseInt($("#node-input-outputs").val(), 10);
        return isNaN(value) ? 1 : value;
    }

    function context(node) {
        return {
            nodeId: node.id,
            nodeType: node.type,
            name: $("#node-input-name").val() || "",
            tabId: node.z,
            code: currentCode(node),
            outputs: outputsCount(),
            libs: setupLibs()
        };
    }

    /** One part's diff: rows marked added/removed for screen readers as well as by colour. */
    function renderDiff(change) {
        var box = $('<div class="ai-assist-part"></div>').attr("data-part", change.part);
        $('<div class="ai-assist-part-label"></div>')
            .text(partLabel(change.part) + " \u2014 " + t("assist.function.diffCounts",
                { added: change.diff.added, removed: change.diff.removed }))
            .appendTo(box);
        var pre = $('<pre class="ai-assist-diff" tabindex="0"></pre>').appendTo(box);
        var kinds = { "+": "added", "-": "removed", " ": "same" };
        change.diff.lines.forEach(function (line) {
            $('<div class="ai-assist-diff-line"></div>').addClass("ai-assist-diff-" + kinds[line.kind])
                .text(line.kind + " " + line.text).appendTo(pre);
        });
        if (change.diff.omitted) {
            $("<div></div>").text(t("assist.function.omitted", { count: change.diff.omitted })).appendTo(pre);
        }
        return box;
    }

    function renderProblems(target, problems) {
        target.empty();
        if (!problems.length) {
            target.append($('<div class="ai-assist-no-problems"></div>').text(t("assist.function.noProblems")));
            return;
        }
        $('<div class="ai-assist-section-label"></div>').text(t("assist.function.problems", { count: problems.length }))
            .appendTo(target);
        var list = $('<ul class="ai-assist-problem-list"></ul>').appendTo(target);
        problems.forEach(function (problem) {
            var where = partLabel(problem.part) +
                (problem.line !== null ? ", " + t("assist.function.line", { line: problem.line }) : "");
            $('<li class="ai-assist-problem"></li>').attr("data-code", problem.code)
                .append($('<span class="ai-assist-problem-where"></span>').text(where + ": "))
                .append(document.createTextNode(problem.message || problem.code))
                .appendTo(list);
        });
    }

    function pretty(value) {
        var text = JSON.stringify(value, null, 2);
        return text === undefined ? String(value) : text;
    }

    function renderSandbox(target, sample, view) {
        target.empty();
        $('<div class="ai-assist-section-label"></div>').text(t("assist.sandbox.title")).appendTo(target);
        $('<div class="ai-assist-sandbox-caption"></div>').text(t("assist.sandbox.input")).appendTo(target);
        $('<pre class="ai-assist-sandbox-input"></pre>').text(pretty(sample)).appendTo(target);
        if (view.error) {
            // The runtime writes its messages in English (it does not know the editor user's language): a refusal,
            // a timeout and a memory limit are said in the user's language (the refusal's reasons are in the
            // problems list); a thrown error keeps the code's own message.
            var text = SAID_HERE.indexOf(view.error.code) >= 0
                ? t("assist.sandbox." + view.error.code)
                : (view.error.code === "sandbox_error" ? t("assist.sandbox.sandbox_error") + " " : "") +
                    view.error.message;
            $('<div class="ai-assist-sandbox-error ai-assist-error"></div>').attr("data-code", view.error.code)
                .attr("title", view.error.message).text(text).appendTo(target);
        } else if (!view.outputs.length) {
            $('<div class="ai-assist-sandbox-nothing"></div>').text(t("assist.sandbox.nothing")).appendTo(target);
        }
        view.outputs.forEach(function (output) {
            $('<div class="ai-assist-sandbox-caption"></div>')
                .text(t("assist.sandbox.output", { port: output.port })).appendTo(target);
            output.messages.forEach(function (message) {
                $('<pre class="ai-assist-sandbox-output"></pre>').attr("data-port", output.port)
                    .text(pretty(message)).appendTo(target);
            });
        });
        if (view.logs.length) {
            $('<div class="ai-assist-sandbox-caption"></div>').text(t("assist.sandbox.logs")).appendTo(target);
            var logs = $('<ul class="ai-assist-sandbox-logs"></ul>').appendTo(target);
            view.logs.forEach(function (log) {
                $("<li></li>").attr("data-level", log.level).text(log.level + ": " + log.text).appendTo(logs);
            });
        }
    }

    /** Put the proposal into the dialog's code editors, one undoable edit per changed part. */
    function apply(node, changes) {
        changes.forEach(function (change) {
            var editor = node[EDITORS[change.part].property];
            if (editor) {
                lib().assistEditors.replaceText(editor, change.after);
            }
        });
        RED.notify($("<p></p>").text(t("assist.function.applied")), { type: "success", timeout: 4000 });
    }

    function onProposal(node, current, proposal, panel) {
        var request = lib().assistRequest;
        var changes = request.changedParts(current, proposal.code || {}, (lib().vendor || {}).Diff);
        if (!changes.length) {
            panel.refuse(t("assist.function.unchanged"));
            return;
        }
        var layout = $('<div class="ai-assist-function-result"></div>').appendTo(panel.result);
        var diffs = $('<div class="ai-assist-diffs"></div>').appendTo(layout);
        changes.forEach(function (change) {
            renderDiff(change).appendTo(diffs);
        });
        var problems = $('<div class="ai-assist-problems" role="status"></div>')
            .text(t("assist.function.checking")).appendTo(diffs);
        var merged = request.mergedCode(current, proposal.code);
        var ctx = context(node);
        lib().adminApi.requestJson("POST", "ai-sidebar/function-check",
            { code: merged, libs: ctx.libs, outputs: ctx.outputs }).then(function (answer) {
            renderProblems(problems, request.problemList(answer));
        }, function (err) {
            problems.addClass("ai-assist-error").text(t("assist.function.checkFailed", { message: err.message }));
        }).then(function () {
            panel.refit();
            panel.offer(function () {
                // The dialog may have been closed while the panel was open.
                if (editingFunctionNode() === node) {
                    apply(node, changes);
                }
            });
        });
        var samples = Array.isArray(proposal.samples) ? proposal.samples : [];
        if (samples.length && RED.user.hasPermission("flows.write")) {
            offerTry(layout, merged.onMessage, samples[0], ctx.outputs, panel);
        }
    }

    /**
     * The "Try on the last message" button: the proposal runs in the sandbox only when the user presses it, never
     * when it arrives (the model's text may have been steered by what it read; issue 29).
     */
    function offerTry(layout, onMessage, sample, outputs, panel) {
        var request = lib().assistRequest;
        var sandbox = $('<div class="ai-assist-sandbox"></div>').appendTo(layout);
        $('<button type="button" class="red-ui-button ai-assist-sandbox-try"></button>')
            .text(t("assist.sandbox.try")).attr("title", t("assist.sandbox.tryTooltip"))
            .on("click", function () {
                $(this).prop("disabled", true);
                sandbox.attr("role", "status").text(t("assist.sandbox.running"));
                lib().adminApi.requestJson("POST", "ai-sidebar/function-sandbox",
                    request.sandboxBody(onMessage, sample, outputs)).then(function (answer) {
                    renderSandbox(sandbox, sample, request.sandboxView(answer));
                }, function (err) {
                    sandbox.addClass("ai-assist-error").text(t("assist.sandbox.failed", { message: err.message }));
                }).then(function () {
                    panel.refit();
                });
            }).appendTo(sandbox);
    }

    /**
     * Open the assist panel for the function node whose dialog is open.
     *
     * @returns {boolean} false when no function node's dialog is the top tray (nothing opened)
     */
    function open() {
        var node = editingFunctionNode();
        if (!node || $(".ai-assist-dialog:visible").length) {
            return false;
        }
        var current = null;
        var AssistPanel = lib().AssistPanel;
        new AssistPanel({
            kind: "function",
            title: t("assist.function.title"),
            context: function () {
                var ctx = context(node);
                current = ctx.code;
                return ctx;
            },
            onProposal: function (proposal, panel) {
                onProposal(node, current, proposal, panel);
            }
        }).open();
        return true;
    }

    /** The watcher of assist-editors.js: the button beside the function dialog's code tabs. */
    function addButton(tray) {
        var row = tray.find(".func-tabs-row");
        if (!row.length || row.find("." + BUTTON_CLASS).length) {
            return;
        }
        row.addClass("ai-assist-tabs-row");
        lib().assistEditors.assistButton(BUTTON_CLASS, t("assist.function.buttonTooltip"), open, true)
            .appendTo(row);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.assistFunction = { addButton: addButton, open: open, currentCode: currentCode };
}());
