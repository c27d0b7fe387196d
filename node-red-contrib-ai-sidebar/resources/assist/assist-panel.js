/**
 * The assist panel over a node edit dialog: the user's description, Send/Stop, the model's text as it streams from
 * `ai-sidebar/assist`, then what the caller makes of the proposal, with Accept and Cancel.
 *
 * Editor-only script: registers `NodeRedAiSidebar.AssistPanel`. The stream is read by answer.js's `streamChat` (the
 * sidebar's own reader: same headers, errors and SSE parser); this panel only receives its events. Cancel (or
 * Escape) closes the panel and changes nothing; only the caller's `accept` changes the dialog.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var ROUTE = "ai-sidebar/assist";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    /** The ai-config node chosen in the sidebar (config-picker.js remembers it per user), or null. */
    function chosenConfigId() {
        var storage = lib().conversation.safeStorage(function () {
            return window.localStorage;
        });
        var username = RED.settings.user && RED.settings.user.username;
        return storage.get(lib().configChoice.storageKey(username)) || null;
    }

    /**
     * jQuery UI's dialog with one change to its modal focus trap (its documented extension point,
     * `_allowInteraction`): Node-RED's Monaco editors take the focus back when they become visible again (editor-client
     * monaco.js "focusMemory", 300 ms later), and a trap that refuses them starts an endless exchange of focus events
     * (RangeError). The code editor gets its focus; the panel takes it back on the next turn.
     */
    function assistDialogWidget() {
        if (!$.fn.aiSidebarAssistDialog) {
            $.widget("nodeRedAiSidebar.aiSidebarAssistDialog", $.ui.dialog, {
                _allowInteraction: function (event) {
                    if ($(event.target).closest(".monaco-editor").length) {
                        var self = this;
                        setTimeout(function () {
                            if (self.element && self.element.is(":visible")) {
                                self._focusTabbable();
                            }
                        }, 0);
                        return true;
                    }
                    return this._super(event);
                }
            });
        }
        return "aiSidebarAssistDialog";
    }

    /**
     * @param {object} options
     * @param {("function"|"jsonata"|"json")} options.kind
     * @param {string} options.title the panel's title
     * @param {function(): object} options.context the dialog's context, read when the user sends
     * @param {function(object, AssistPanel)} options.onProposal renders the `proposal` event into `panel.result`
     *     and calls `panel.offer(accept)` or `panel.refuse(message)`
     */
    function AssistPanel(options) {
        this.options = options;
        this.controller = null;
        this.accept = null;
        this.build();
    }

    AssistPanel.prototype.build = function () {
        var self = this;
        var content = this.content = $('<div class="ai-assist-panel"></div>').attr("data-kind", this.options.kind);
        var id = "ai-assist-description-" + this.options.kind;
        $('<label class="ai-assist-label"></label>').attr("for", id).text(t("assist.describe." + this.options.kind))
            .appendTo(content);
        this.description = $('<textarea class="ai-assist-description" rows="2"></textarea>').attr("id", id)
            .attr("placeholder", t("assist.placeholder." + this.options.kind)).appendTo(content);
        var row = $('<div class="ai-assist-row"></div>').appendTo(content);
        this.sendButton = $('<button type="button" class="red-ui-button ai-assist-send"></button>')
            .append($('<i class="fa fa-magic" aria-hidden="true"></i>'))
            .append($("<span></span>").text(" " + t("assist.send"))).appendTo(row)
            .on("click", function () { self.send(); });
        this.stopButton = $('<button type="button" class="red-ui-button ai-assist-stop"></button>')
            .text(t("assist.stop")).hide().appendTo(row)
            .on("click", function () { self.stop(); });
        $('<span class="ai-assist-hint"></span>').text(t("assist.sendHint")).appendTo(row);
        this.stream = $('<pre class="ai-assist-stream" aria-live="polite"></pre>').hide().appendTo(content);
        this.status = $('<div class="ai-assist-status" role="status"></div>').hide().appendTo(content);
        this.result = $('<div class="ai-assist-result"></div>').appendTo(content);
        this.description.on("keydown", function (event) {
            if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
                event.preventDefault();
                self.send();
            }
        });
    };

    /** Show the panel over the edit dialog, as the editor's own Export / Import dialogs are (clipboard.js). */
    AssistPanel.prototype.open = function () {
        var self = this;
        var widget = this.widget = assistDialogWidget();
        this.content.appendTo("#red-ui-editor")[widget]({
            modal: true,
            title: this.options.title,
            width: Math.min(980, Math.round(window.innerWidth * 0.92)),
            maxHeight: Math.round(window.innerHeight * 0.9),
            resizable: false,
            classes: {
                "ui-dialog": "red-ui-editor-dialog ai-assist-dialog",
                "ui-dialog-titlebar-close": "hide",
                "ui-widget-overlay": "red-ui-editor-dialog"
            },
            close: function () {
                self.stop();
                self.content[widget]("destroy").remove();
            },
            buttons: [
                { text: t("assist.cancel"), class: "ai-assist-cancel", click: function () { self.close(); } },
                { text: t("assist.accept"), class: "primary ai-assist-accept", click: function () { self.doAccept(); } }
            ]
        });
        // The editor's shortcuts listen on the document (keyboard.js): keys typed here stay here, so Ctrl-Enter
        // sends rather than closing the edit tray below, and Escape closes only this panel.
        this.content.closest(".ui-dialog").on("keydown", function (event) {
            event.stopPropagation();
        });
        this.acceptButton = this.content.closest(".ui-dialog").find(".ai-assist-accept");
        this.setAccept(null);
        this.description.trigger("focus");
    };

    /** Keep the panel in the window as its content grows (jQuery UI places a dialog once, when it opens). */
    AssistPanel.prototype.refit = function () {
        if (this.content.hasClass("ui-dialog-content")) {
            this.content[this.widget]("option", "position", { my: "center", at: "center", of: window });
        }
    };

    AssistPanel.prototype.close = function () {
        if (this.content.hasClass("ui-dialog-content")) {
            this.content[this.widget]("close");
        }
    };

    AssistPanel.prototype.setAccept = function (accept) {
        this.accept = accept;
        this.acceptButton.prop("disabled", !accept).toggleClass("disabled", !accept);
    };

    AssistPanel.prototype.doAccept = function () {
        if (this.accept) {
            var accept = this.accept;
            this.close();
            accept();
        }
    };

    /** Offer the proposal: Accept calls `accept` after the panel closed. */
    AssistPanel.prototype.offer = function (accept) {
        this.setAccept(accept);
    };

    /** Say why the proposal cannot be accepted. */
    AssistPanel.prototype.refuse = function (message) {
        this.setAccept(null);
        this.showStatus(message, true);
    };

    AssistPanel.prototype.showStatus = function (message, isError) {
        this.status.text(message).toggleClass("ai-assist-error", !!isError).show();
    };

    AssistPanel.prototype.setBusy = function (busy) {
        this.sendButton.toggle(!busy);
        this.stopButton.toggle(busy);
        this.description.prop("disabled", busy);
    };

    AssistPanel.prototype.stop = function () {
        if (this.controller) {
            this.controller.abort();
        }
    };

    /** Send the description with the dialog's context and read the answer. */
    AssistPanel.prototype.send = function () {
        var self = this;
        var description = this.description.val().trim();
        if (!description || this.controller) {
            this.description.trigger("focus");
            return;
        }
        var body = lib().assistRequest.requestBody(this.options.kind, description, this.options.context(),
            { language: RED.i18n.lang(), configId: chosenConfigId() });
        var controller = this.controller = new AbortController();
        var proposal = null;
        var text = "";
        this.setAccept(null);
        this.result.empty();
        this.status.empty().hide().removeClass("ai-assist-error");
        this.stream.text("").show().addClass("ai-assist-streaming").removeClass("ai-assist-stream-done");
        this.setBusy(true);
        // What streamChat feeds: the events in order, a message for a failed request, and whether `done` came.
        var sink = {
            sawDone: false,
            handleEvent: function (event) {
                if (!event || typeof event !== "object") {
                    return;
                }
                if (event.type === "token" && typeof event.content === "string") {
                    text += event.content;
                    self.stream.text(lib().assistRequest.withoutFences(text));
                    self.stream.scrollTop(self.stream[0].scrollHeight);
                } else if (event.type === "proposal" && event.kind === self.options.kind) {
                    proposal = event;
                } else if (event.type === "error") {
                    sink.error(lib().adminApi.localizedError(event));
                } else if (event.type === "done") {
                    sink.sawDone = true;
                }
            },
            error: function (message) {
                self.showStatus(message, true);
            }
        };
        lib().streamChat(body, controller.signal, sink, ROUTE).then(function () {
            if (proposal) {
                // The proposal below shows the code, with its diff: the text keeps what the answer said besides.
                var prose = lib().assistRequest.proseOf(text);
                self.stream.text(prose).toggle(Boolean(prose)).addClass("ai-assist-stream-done").scrollTop(0);
                return Promise.resolve(self.options.onProposal(proposal, self)).catch(function (err) {
                    self.showStatus(String(err && err.message || err), true);
                });
            }
        }, function (err) {
            if (err && err.name === "AbortError") {
                self.showStatus(t("assist.stopped"), false);
            } else {
                self.showStatus(t("error.network", { message: (err && err.message) || String(err) }), true);
            }
        }).then(function () {
            self.controller = null;
            self.stream.removeClass("ai-assist-streaming");
            if (!text) {
                self.stream.hide();
            }
            self.setBusy(false);
            self.refit();
        });
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    AssistPanel.chosenConfigId = chosenConfigId;
    window.NodeRedAiSidebar.AssistPanel = AssistPanel;
}());
