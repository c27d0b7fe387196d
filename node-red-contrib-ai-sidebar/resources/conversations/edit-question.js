/**
 * Edit and resend (issues 31 and 35): "Edit" on each question shown opens it in an inline editor (Enter sends,
 * Shift+Enter a new line, Escape cancels). Sending forks the conversation at that question (`POST
 * ai-sidebar/sessions/{id}/fork`: a new conversation with the turns before it), opens the new conversation and asks
 * the edited question there; the old conversation keeps its later turns and stays in the list.
 *
 * When an answer after the question changed the flows (it shows checkpoints.js's "Restore flows to before this",
 * which is offered only when the flow history is on), the editor offers a choice: "Conversation only" (the
 * default) or "Conversation and flows". The latter also asks, once the edited question is answered, for the
 * restore of every flow to the question's time (history.js restoreMessage, scope `whole`), so an approval card
 * shows the diff and nothing is written without Approve. "Flows only" is the checkpoint button itself.
 *
 * Editor-only script: registers `NodeRedAiSidebar.editQuestion` (`offer(sidebar, element)`), called by sidebar.js
 * for each question it shows. Which stored question an edited one is: fork.js.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var WRITE_PERMISSION = "ai-sidebar.write";
    var HISTORY_LIMIT = 200;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function api() {
        return lib().adminApi;
    }

    /**
     * Fork the open conversation at its question shown `fromEnd` places before the last one (`original`: its text)
     * and ask `text` in the new conversation.
     *
     * @returns {Promise<string>} the new conversation's id; rejects with an Error whose message is for the user
     */
    function forkAndAsk(sidebar, fromEnd, original, text, restoreTo) {
        var sessionId = sidebar.conversation.sessionId;
        var path = "ai-sidebar/sessions/" + encodeURIComponent(sessionId);
        return api().requestJson("GET", "ai-sidebar/history/" + encodeURIComponent(sessionId) + "?limit=" +
            HISTORY_LIMIT).then(function (body) {
            var messages = Array.isArray(body && body.messages) ? body.messages : [];
            var id = lib().fork.questionId(messages, lib().chatRequest.replacedTries(messages), fromEnd, original);
            if (id === null) {
                throw new Error(t("editQuestion.notFound"));
            }
            return api().requestJson("POST", path + "/fork", { messageId: id, name: lib().fork.sessionName(text) });
        }, function (err) {
            throw err.status === 404 ? new Error(t("editQuestion.notSaved")) : err;
        }).then(function (made) {
            if (sidebar.controller) {
                throw new Error(t("editQuestion.busy"));
            }
            return Promise.resolve(sidebar.switchSession(made.sessionId)).then(function () {
                sidebar.send(text);
                if (restoreTo) {
                    whenIdle(sidebar, made.sessionId, function () {
                        sidebar.send(lib().history.restoreMessage(restoreTo, "whole"));
                    });
                }
                return made.sessionId;
            });
        });
    }

    /**
     * Call `then` once no answer streams (the send button is enabled again), while `sessionId` is still open; never
     * when the user opened another conversation meanwhile.
     */
    function whenIdle(sidebar, sessionId, then) {
        var observer = null;

        function check() {
            if (sidebar.conversation.sessionId !== sessionId) {
                observer.disconnect();
            } else if (!sidebar.controller) {
                observer.disconnect();
                then();
            }
        }
        observer = new MutationObserver(check);
        observer.observe(sidebar.sendButton[0], { attributes: true, attributeFilter: ["disabled"] });
        check();
    }

    /**
     * The "Conversation only" / "Conversation and flows" choice, when an answer after the question `element` shows
     * changed the flows (it has a checkpoint button); null otherwise.
     *
     * @returns {?{element: jQuery, withFlows: function(): boolean}}
     */
    function restoreChoice(element) {
        var later = element.nextAll(".ai-sidebar-message-assistant").find(".ai-sidebar-checkpoint");
        if (!later.length || !element.attr("data-asked-at")) {
            return null;
        }
        var name = "ai-sidebar-edit-scope-" + Date.now();
        var group = $('<div class="ai-sidebar-edit-question-scope" role="radiogroup"></div>')
            .attr("aria-label", t("editQuestion.scopeLabel"));
        [["conversation", "editQuestion.conversationOnly"], ["both", "editQuestion.conversationAndFlows"]]
            .forEach(function (option, index) {
                var label = $("<label></label>").appendTo(group);
                $('<input type="radio">').attr("name", name).val(option[0]).prop("checked", index === 0)
                    .appendTo(label);
                $("<span></span>").text(" " + t(option[1])).appendTo(label);
            });
        return {
            element: group,
            withFlows: function () {
                return group.find("input:checked").val() === "both";
            }
        };
    }

    /** Put the question `element` shows in an inline editor; its Edit button comes back when it closes. */
    function openEditor(sidebar, element, button) {
        var textElement = element.children(".ai-sidebar-text");
        var original = textElement.text();
        var editor = $('<div class="ai-sidebar-edit-question-editor"></div>');
        var input = $('<textarea class="ai-sidebar-edit-question-input" rows="3"></textarea>')
            .attr("aria-label", t("editQuestion.inputLabel")).val(original).appendTo(editor);
        var hint = $('<div class="ai-sidebar-edit-question-hint"></div>').text(t("editQuestion.hint"))
            .attr("id", "ai-sidebar-edit-hint-" + Date.now()).appendTo(editor);
        input.attr("aria-describedby", hint.attr("id"));
        var choice = restoreChoice(element);
        if (choice) {
            choice.element.appendTo(editor);
        }
        var status = $('<div class="ai-sidebar-edit-question-status" role="alert"></div>').appendTo(editor);
        var buttons = $('<div class="ai-sidebar-edit-question-buttons"></div>').appendTo(editor);
        var send = $('<button type="button" class="red-ui-button red-ui-button-small primary"></button>')
            .text(t("editQuestion.send")).attr("title", t("editQuestion.sendLabel")).appendTo(buttons);
        var cancel = $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .text(t("editQuestion.cancel")).appendTo(buttons);
        var sending = false;

        function close() {
            editor.remove();
            textElement.show();
            button.show().trigger("focus");
        }

        function submit() {
            var text = String(input.val()).trim();
            if (!text || sending) {
                return;
            }
            if (sidebar.controller) {
                status.text(t("editQuestion.busy"));
                return;
            }
            var counted = lib().chatRequest.counter(text, sidebar.maxMessageChars);
            if (counted && counted.over) {
                // Over the service's limit (it would refuse it: 413 message_too_long), as in the composer.
                status.text(t("sidebar.counterOver", { max: counted.max.toLocaleString(RED.i18n.lang()) }));
                return;
            }
            sending = true;
            var restoreTo = choice && choice.withFlows() ? element.attr("data-asked-at") : null;
            editor.find("button, textarea, input").prop("disabled", true);
            status.text("");
            forkAndAsk(sidebar, element.nextAll(".ai-sidebar-message-user").length, original, text, restoreTo).catch(function (err) {
                sending = false;
                editor.find("button, textarea, input").prop("disabled", false);
                status.text(t("editQuestion.failed", { message: (err && err.message) || String(err) }));
                input.trigger("focus");
            });
        }

        input.on("keydown", function (event) {
            if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
                event.preventDefault();
                submit();
            } else if (event.key === "Escape") {
                // The sidebar's own Escape stops an answer; here it only closes the editor.
                event.preventDefault();
                event.stopPropagation();
                close();
            }
        });
        send.on("click", function (event) {
            event.preventDefault();
            submit();
        });
        cancel.on("click", function (event) {
            event.preventDefault();
            close();
        });
        textElement.hide();
        button.hide();
        editor.insertAfter(textElement);
        input.trigger("focus");
        var field = input[0];
        field.setSelectionRange(field.value.length, field.value.length);
    }

    /**
     * Give a question's element its Edit button (users who may change conversations only: the fork needs
     * `ai-sidebar.write`).
     *
     * @param {object} sidebar the AiSidebar: `conversation`, `controller`, `switchSession(id)`, `send(text)`
     * @param {jQuery} element the question's message element (`.ai-sidebar-message-user`)
     */
    function offer(sidebar, element) {
        if (!RED.user.hasPermission(WRITE_PERMISSION)) {
            return;
        }
        var button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-edit-question">' +
            '</button>')
            .attr("title", t("editQuestion.label"))
            .attr("aria-label", t("editQuestion.label"))
            .append($('<i class="fa fa-pencil" aria-hidden="true"></i>'))
            .append($("<span></span>").text(" " + t("editQuestion.edit")))
            .on("click", function (event) {
                event.preventDefault();
                openEditor(sidebar, element, button);
            });
        var row = $('<div class="ai-sidebar-question-actions"></div>').append(button);
        element.append(row);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.editQuestion = { offer: offer };
}());
