/**
 * "Ask the assistant" in the JSONata expression editor (RED.editor.editExpression): the proposed expression is
 * parsed by the editor's own `jsonata` (a parse error refuses it, with the parser's message) and evaluated on the
 * example message of the editor's Test tab; the result is shown before Accept puts the expression into the editor
 * as one undoable edit.
 *
 * Editor-only script: registers `NodeRedAiSidebar.assistJsonata`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var BUTTON_CLASS = "ai-assist-jsonata-button";
    // The expression editor's parts (editor-client editors/expression.js, 4.1 and 5.x).
    var EXPRESSION = "#red-ui-editor-type-expression";
    var TEST_DATA = "#red-ui-editor-type-expression-test-data";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function editors(tray) {
        return {
            expression: lib().assistEditors.codeEditorIn(tray.find(EXPRESSION)),
            testData: lib().assistEditors.codeEditorIn(tray.find(TEST_DATA))
        };
    }

    function context(tray) {
        var found = editors(tray);
        var ctx = $.extend({}, lib().assistEditors.editedNodeContext(), {
            expression: found.expression ? found.expression.getValue() : ""
        });
        try {
            ctx.testMessage = JSON.parse(found.testData ? found.testData.getValue() : "");
        } catch {
            // The Test tab's text is not JSON (yet): the model gets no example message.
        }
        return ctx;
    }

    function onProposal(tray, proposal, panel) {
        var expression = typeof proposal.expression === "string" ? proposal.expression : "";
        var box = $('<div class="ai-assist-jsonata-result"></div>').appendTo(panel.result);
        $('<div class="ai-assist-section-label"></div>').text(t("assist.jsonata.proposal")).appendTo(box);
        $('<pre class="ai-assist-expression"></pre>').text(expression).appendTo(box);
        var found = editors(tray);
        var testText = found.testData ? found.testData.getValue() : "";
        return lib().assistRequest.checkExpression(window.jsonata, expression, testText).then(function (check) {
            if (!check.ok && check.stage === "parse") {
                panel.refuse(t("assist.jsonata.invalid", { message: check.message }));
                return;
            }
            $('<div class="ai-assist-section-label"></div>').text(t("assist.jsonata.testResult")).appendTo(box);
            var result = $('<pre class="ai-assist-test-result"></pre>').appendTo(box);
            if (!check.ok) {
                result.addClass("ai-assist-error").attr("data-stage", check.stage)
                    .text(t("assist.jsonata." + (check.stage === "message" ? "badMessage" : "evaluateError"),
                        { message: check.message }));
            } else if (check.noMatch) {
                result.attr("data-stage", "result").text(t("assist.jsonata.noMatch"));
            } else {
                result.attr("data-stage", "result").text(JSON.stringify(check.result, null, 4));
            }
            if (check.runtimeOnly.length) {
                $('<div class="ai-assist-note"></div>')
                    .text(t("assist.jsonata.runtimeOnly", { names: check.runtimeOnly.map(function (name) {
                        return "$" + name;
                    }).join(", ") })).appendTo(box);
            }
            panel.offer(function () {
                var editor = editors(tray).expression;
                if (editor) {
                    lib().assistEditors.replaceText(editor, expression);
                }
            });
        });
    }

    function open(tray) {
        if ($(".ai-assist-dialog:visible").length) {
            return;
        }
        var AssistPanel = lib().AssistPanel;
        new AssistPanel({
            kind: "jsonata",
            title: t("assist.jsonata.title"),
            context: function () { return context(tray); },
            onProposal: function (proposal, panel) { return onProposal(tray, proposal, panel); }
        }).open();
    }

    /** The watcher of assist-editors.js: the button beside the expression editor's "format expression". */
    function addButton(tray) {
        var reformat = tray.find("#red-ui-editor-type-expression-reformat");
        if (!reformat.length || tray.find("." + BUTTON_CLASS).length) {
            return;
        }
        lib().assistEditors.assistButton(BUTTON_CLASS, t("assist.jsonata.buttonTooltip"), function () {
            open(tray);
        }).insertBefore(reformat);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.assistJsonata = { addButton: addButton };
}());
