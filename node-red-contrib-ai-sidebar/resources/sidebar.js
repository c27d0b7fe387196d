/**
 * The AI tab's content: header (session picker, AI configuration, New chat), the service banner, the message
 * list and the composer (context chip, input, scenario, Stop, Send). It binds the sidebar's parts to the DOM and
 * to the editor's events; their logic lives in modules of their own: conversation.js (which session is open),
 * chat-request.js (the request of a question and what follows its answer), editor-context.js (the context chip),
 * scenario-choice.js, service-watch.js and service-banner.js (service down and back), answer.js (streamed and
 * stored answers), sessions.js, config-picker.js, approval-card.js (writes waiting for approval).
 *
 * Editor-only script: registers `NodeRedAiSidebar.AiSidebar`, created by the plugin's script in ai-sidebar.html.
 * Node-RED loads the package's scripts in no fixed order, so the other parts are looked up when the tab is built.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var HISTORY_LIMIT = 200;

    // The sidebar's parts (window.NodeRedAiSidebar), all loaded once a sidebar is created.
    var lib = null;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function username() {
        return RED.settings.user && RED.settings.user.username;
    }

    /**
     * The renderer of answer text (resources/shared/markdown.js): `render(element, text)` puts the text into the element
     * as sanitised markdown that loads nothing, then highlights its code blocks. Null when the vendored libraries
     * did not load (answers show as text).
     */
    function createMarkdownRenderer() {
        var vendor = lib.vendor || {};
        if (!vendor.marked || !vendor.DOMPurify || !lib.markdown) {
            return null;
        }
        // The sidebar's own DOMPurify (see scripts/vendor.js), so its hooks cannot change how the editor
        // sanitises node help.
        return lib.markdown.createRenderer({
            marked: vendor.marked,
            DOMPurify: vendor.DOMPurify,
            window: window,
            hljs: vendor.hljs,
            codeHighlight: lib.codeHighlight,
            imageLabel: function (alt) {
                return alt ? t("answer.image", { alt: alt }) : t("answer.imageNoAlt");
            }
        });
    }

    function smallButton(icon, label, className) {
        var button = $('<button type="button" class="red-ui-button red-ui-button-small"></button>').addClass(className);
        $("<i></i>").addClass("fa " + icon).appendTo(button);
        if (label) {
            button.append(document.createTextNode(" " + label));
        }
        return button;
    }

    function AiSidebar() {
        var self = this;
        lib = window.NodeRedAiSidebar;
        this.storage = lib.conversation.safeStorage(function () {
            return window.localStorage;
        });
        this.conversation = new lib.conversation.Conversation({
            storage: this.storage,
            username: username(),
            fillRandom: function (bytes) {
                return window.crypto.getRandomValues(bytes);
            }
        });
        this.approvals = new lib.ApprovalCards(this, { username: username() });
        this.controller = null;
        this.sessionRefreshTimer = null;
        this.destroyed = false;
        this.scenarios = {};
        this.scenariosLoaded = false;
        // The service's limit on a question, once its scenarios answer said it (chatRequest.messageLimit).
        this.maxMessageChars = lib.chatRequest.MAX_MESSAGE_CHARS;
        // The model that answers without an ai-config node, as the service's scenarios answer names it.
        this.serviceModel = null;
        this.defaultModels = null;
        this.contextRemoved = false;
        // The selected nodes' chips, and which of them the user left out (node-chips.js).
        this.nodeChips = new lib.nodeChips.NodeChips();
        // Debug sidebar messages attached to the next question (editorContext.debugAttachment).
        this.debugAttached = [];
        // The latest Debug sidebar messages of each node, for "attach recent debug messages".
        this.recentDebug = new lib.recentDebug.RecentDebug();
        this.historyRequest = null;
        this.historyFailed = false;
        this.renderMarkdown = createMarkdownRenderer();
        this.withScroll = this.withScroll.bind(this);
        this.watch = new lib.serviceWatch.ServiceWatch({
            check: function () {
                return self.checkService();
            },
            onReconnecting: function () {
                self.banner.reconnecting();
            },
            onDown: function (err) {
                self.banner.show(err.message);
            },
            onUp: function () {
                self.onServiceBack();
            }
        });
        this.banner = new lib.serviceBanner.ServiceBanner({
            onRetry: function () {
                self.checkService();
            },
            loadStatus: function () {
                return lib.adminApi.requestJson("GET", "ai-sidebar/service-status");
            }
        });
        this.configPicker = new lib.ConfigPicker({
            getSaved: function () {
                return self.storage.get(lib.configChoice.storageKey(username()));
            },
            setSaved: function (id) {
                self.storage.set(lib.configChoice.storageKey(username()), id);
            },
            onChange: function () {
                self.showModel();
                if (self.setupCard) {
                    self.setupCard.render();
                }
            }
        });
        // Ask or Agent (mode-choice.js): whether the assistant may propose changes; remembered per user.
        this.mode = lib.modeChoice.initialMode(this.storage.get(lib.modeChoice.storageKey(username())),
            RED.user.hasPermission("ai-sidebar.write"));
        // Why the service's own model cannot answer, and the way to an ai-config node (setup-card.js).
        this.setupCard = new lib.SetupCard({
            configId: function () {
                return self.configPicker.configId();
            },
            configLabel: function () {
                return self.configPicker.label();
            },
            choose: function (id) {
                return self.configPicker.chooseIfListed(id);
            }
        });
        this.sessions = new lib.SessionPicker({
            currentId: function () {
                return self.conversation.sessionId;
            },
            onSelect: function (id, hit) {
                self.switchSession(id, hit);
            },
            onDeleted: function (id) {
                if (id === self.conversation.sessionId) {
                    var next = self.sessions.next();
                    if (next) {
                        self.switchSession(next);
                    } else {
                        self.newChat();
                    }
                }
            },
            onError: function (err) {
                self.serviceError(err);
            },
            onSuccess: function () {
                self.serviceOk();
            },
            onLoaded: function () {
                self.onSessionsLoaded();
            }
        });
        // What the assistant can look up (knowledge-panel.js) and the open conversation's tokens and cost.
        this.knowledgePanel = new lib.KnowledgePanel({
            onOpen: function () {
                self.sessions.close();
                self.historyPanel.close();
                self.mcpGrantsPanel.close();
            }
        });
        // Every deploy kept (history-panel.js); a restore is asked for in the chat, as an approval card.
        this.historyPanel = new lib.HistoryPanel({
            onOpen: function () {
                self.sessions.close();
                self.knowledgePanel.close();
                self.mcpGrantsPanel.close();
            },
            onRestore: function (message, display) {
                return self.send(message, display);
            }
        });
        // The MCP clients the user signed in with (mcp-grants/grants-panel.js), each revocable.
        this.mcpGrantsPanel = new lib.McpGrantsPanel({
            onOpen: function () {
                self.sessions.close();
                self.knowledgePanel.close();
                self.historyPanel.close();
            }
        });
        this.sessionUsage = new lib.usageView.SessionUsage();
        this.buildDom();
        this.restoreDraft();
        this.onEditorContextChange = this.onEditorContextChange.bind(this);
        RED.events.on("workspace:change", this.onEditorContextChange);
        RED.events.on("view:selection-changed", this.onEditorContextChange);
        // The deployed ai-config nodes change with any deploy or flow restart, from this editor, another one or the
        // Admin API: "runtime-state" is sent once the flows have started (or stopped); editor-client red.js. Not
        // the editor's own "deploy" event: Node-RED answers a deploy before it has started the nodes again
        // (runtime lib/flows/index.js setFlows, 4.1 and 5), and a list read then lacked the nodes being restarted,
        // so an edited ai-config node that was chosen was dropped as no longer deployed.
        this.refreshConfigs = this.refreshConfigs.bind(this);
        RED.events.on("runtime-state", this.refreshConfigs);
        // A conversation restored while the editor loads is shown before the editor has its flows ("flows:loaded",
        // editor-client red.js, Node-RED 2+): its node names could not become links then.
        this.onFlowsLoaded = this.onFlowsLoaded.bind(this);
        RED.events.on("flows:loaded", this.onFlowsLoaded);
        this.refreshContext();
        this.loadScenarios();
        this.sessions.load();
        this.loadConfigs();
        if (this.conversation.isUnsaved()) {
            this.showEmptyState();
        } else {
            this.loadHistory(this.conversation.sessionId);
        }
    }

    /**
     * The session list was read. A session thought unsaved that is listed was saved after all (e.g. a question
     * whose answer was stopped before any text, or sent from another window): its history is shown unless a
     * conversation is on screen already.
     */
    AiSidebar.prototype.onSessionsLoaded = function () {
        if (!this.conversation.isUnsaved() || !this.sessions.current()) {
            return;
        }
        this.conversation.markSaved();
        if (!this.controller && !this.messages.find(".ai-sidebar-message").length) {
            this.loadHistory(this.conversation.sessionId);
        }
    };

    /**
     * Read the session list again after an answer ended; when the answer may have been saved (`expectSaved`)
     * and the session is not listed yet, read it again after each of conversation.SESSION_REFRESH_DELAYS_MS.
     */
    AiSidebar.prototype.refreshSessions = function (expectSaved, attempt) {
        var self = this;
        var sessionId = this.conversation.sessionId;
        attempt = attempt || 0;
        this.cancelSessionRefresh();
        return this.sessions.load().then(function (loaded) {
            var delay = lib.conversation.refreshDelay(attempt);
            if (loaded && expectSaved && !self.sessions.current() && delay !== undefined &&
                    self.conversation.sessionId === sessionId && !self.destroyed) {
                self.sessionRefreshTimer = setTimeout(function () {
                    self.sessionRefreshTimer = null;
                    self.refreshSessions(true, attempt + 1);
                }, delay);
            }
        });
    };

    AiSidebar.prototype.cancelSessionRefresh = function () {
        if (this.sessionRefreshTimer) {
            clearTimeout(this.sessionRefreshTimer);
            this.sessionRefreshTimer = null;
        }
    };

    /** Link the node names in every answer shown (those already linked stay as they are). */
    AiSidebar.prototype.linkAnswers = function () {
        this.messages.children(".ai-sidebar-message-assistant").each(function () {
            lib.answerLinks.decorate($(this));
        });
    };

    /** The editor has its flows ("flows:loaded"): answers get their node links, the picker compares with them. */
    AiSidebar.prototype.onFlowsLoaded = function () {
        this.linkAnswers();
        if (this.configPicker.loaded) {
            this.configPicker.render();
        }
    };

    AiSidebar.prototype.refreshConfigs = function (event) {
        if (lib.configChoice.refreshesConfigs(event)) {
            this.loadConfigs();
        }
    };

    /** Read the deployed ai-config nodes; a node the setup card created is chosen once it is listed. */
    AiSidebar.prototype.loadConfigs = function () {
        var self = this;
        return this.configPicker.load().then(function () {
            self.setupCard.configsLoaded();
        });
    };

    /** Switch between Ask, Agent and Plan (remembered per user); the toggle shows the mode. */
    AiSidebar.prototype.setMode = function (mode) {
        this.mode = mode;
        this.storage.set(lib.modeChoice.storageKey(username()), mode);
        this.modeButtons.forEach(function (item) {
            item.button.attr("aria-checked", String(item.mode === mode)).attr("tabindex", item.mode === mode ? 0 : -1)
                .toggleClass("selected", item.mode === mode);
        });
    };

    /**
     * The Ask / Agent / Plan toggle: a radio group of buttons (arrow keys move between them, as for any radio group;
     * Tab reaches the chosen one).
     */
    AiSidebar.prototype.buildModeToggle = function () {
        var self = this;
        var group = $('<div class="ai-sidebar-mode button-group" role="radiogroup"></div>')
            .attr("aria-label", t("mode.label"));
        this.modeButtons = lib.modeChoice.MODES.map(function (mode) {
            var button = $('<button type="button" role="radio" class="red-ui-button red-ui-button-small"></button>')
                .addClass("ai-sidebar-mode-" + mode)
                .text(t("mode." + mode))
                .attr("title", t("mode." + mode + "Tooltip"))
                .on("click", function (event) {
                    event.preventDefault();
                    self.setMode(mode);
                })
                .on("keydown", function (event) {
                    var other = lib.modeChoice.nextMode(mode, event.key);
                    if (!other) {
                        return;
                    }
                    event.preventDefault();
                    self.setMode(other);
                    group.find(".ai-sidebar-mode-" + other).trigger("focus");
                })
                .appendTo(group);
            return { mode: mode, button: button };
        });
        this.setMode(this.mode);
        return group;
    };

    /** "Switch to Agent mode" on an Ask mode answer's notice: switch and send the question again. */
    AiSidebar.prototype.resendInAgentMode = function (question) {
        this.setMode("agent");
        return this.retry(question.message, question.request);
    };

    AiSidebar.prototype.buildDom = function () {
        var self = this;
        this.content = $('<div class="ai-sidebar"></div>')
            .on("keydown", function (event) {
                // Escape stops an answer from anywhere in the tab (focus is on Stop while one streams).
                if (event.key === "Escape" && self.controller) {
                    event.preventDefault();
                    event.stopPropagation();
                    self.stop();
                }
            });

        var header = $('<div class="red-ui-sidebar-header"></div>').appendTo(this.content);
        this.sessions.button.appendTo(header);
        this.configPicker.select.appendTo(header);
        this.knowledgePanel.button.appendTo(header);
        this.historyPanel.button.appendTo(header);
        this.mcpGrantsPanel.button.appendTo(header);
        this.sessions.button.on("click", function () {
            self.knowledgePanel.close();
            self.historyPanel.close();
            self.mcpGrantsPanel.close();
        });
        this.newChatButton = smallButton("fa-plus", t("sidebar.newChat"), "ai-sidebar-new-chat")
            .on("click", function (event) {
                event.preventDefault();
                self.sessions.close();
                self.newChat();
            })
            .appendTo(header);
        RED.popover.tooltip(this.newChatButton, t("sidebar.newChatTooltip"));
        // One line under the header: which model answers (cut with an ellipsis when narrow, the tooltip has it
        // whole) and the open conversation's tokens and cost. One line, not two: on Node-RED 5 the sidebar section
        // is short, and every line taken here is taken from the conversation.
        this.headerLine = $('<div class="ai-sidebar-header-line"></div>').hide().appendTo(this.content);
        this.modelLine = $('<div class="ai-sidebar-model"></div>').hide()
            .append($('<i class="fa fa-microchip" aria-hidden="true"></i>'))
            .append($('<span class="ai-sidebar-model-name"></span>'))
            .appendTo(this.headerLine);
        this.sessionUsage.element.appendTo(this.headerLine);
        this.sessionUsage.onChange = function () {
            self.showHeaderLine();
        };
        this.configPicker.note.appendTo(this.content);
        this.banner.element.appendTo(this.content);

        var body = $('<div class="ai-sidebar-body"></div>').appendTo(this.content);
        // A named log for assistive technology; aria-live off because the answer is read out a sentence at a time
        // by its own live region (this.reader), not again token by token here.
        this.messages = $('<div class="ai-sidebar-messages" role="log" aria-live="off"></div>')
            .attr("aria-label", t("sidebar.messagesLabel")).appendTo(body);
        // A conversation opens at its latest message. One loaded while the tab is hidden (a reload with another
        // tab shown, Node-RED 5's stacked sections) has no height to scroll yet: it is scrolled once it has,
        // unless the user scrolled up since.
        // It stays there while it changes: the list resized (the usage line under the header, the composer growing)
        // or a message in it grown after it was shown (a button an answer gets once a request returns), until the
        // user scrolls up or clicks inside it (a tool card they open is not pulled away from them).
        this.pinnedToBottom = true;
        this.scrolledTo = null;
        this.messages.on("scroll", function () {
            var list = self.messages[0];
            // A scroll event comes a frame later: one that scrollToBottom caused says nothing of the user, and the
            // list may have grown meanwhile by more than isScrolledToBottom's margin (seen on a loaded machine).
            if (list.clientHeight > 0 && list.scrollTop !== self.scrolledTo) {
                self.pinnedToBottom = self.isScrolledToBottom();
            }
        });
        this.messages.on("pointerdown", function () {
            self.pinnedToBottom = false;
        });
        if (window.ResizeObserver) {
            this.resizeObserver = new ResizeObserver(function () {
                if (self.pinnedToBottom) {
                    self.scrollToBottom();
                }
            });
            this.resizeObserver.observe(this.messages[0]);
            if (window.MutationObserver) {
                this.messagesObserver = new MutationObserver(function (mutations) {
                    mutations.forEach(function (mutation) {
                        Array.prototype.forEach.call(mutation.addedNodes, function (node) {
                            if (node.nodeType === 1) {
                                self.resizeObserver.observe(node);
                            }
                        });
                        Array.prototype.forEach.call(mutation.removedNodes, function (node) {
                            if (node.nodeType === 1) {
                                self.resizeObserver.unobserve(node);
                            }
                        });
                    });
                });
                this.messagesObserver.observe(this.messages[0], { childList: true });
            }
        }
        this.sessions.drawer.appendTo(body);
        this.knowledgePanel.panel.appendTo(body);
        this.historyPanel.panel.appendTo(body);
        this.mcpGrantsPanel.panel.appendTo(body);
        this.showEmptyState();

        this.reader = $('<div class="ai-sidebar-sr-only ai-sidebar-answer-live"></div>')
            .attr("aria-live", "polite").attr("aria-relevant", "additions").appendTo(this.content);
        var composer = $('<div class="ai-sidebar-composer"></div>').appendTo(this.content);
        this.contextChip = $('<div class="ai-sidebar-context"></div>').appendTo(composer);
        this.nodeChipList = $('<div class="ai-sidebar-node-chips" role="list"></div>').hide().appendTo(composer);
        this.debugList = $('<div class="ai-sidebar-context-debug"></div>').hide().appendTo(composer);
        this.input = $('<textarea class="ai-sidebar-input" rows="2"></textarea>')
            .attr("placeholder", t("sidebar.placeholder"))
            .attr("aria-label", t("sidebar.inputLabel"))
            .on("focus", function () {
                self.sessions.close();
            })
            .on("keydown", function (event) {
                // The suggestions of `@` and `/` take Up, Down, Enter, Tab and Escape while they are open.
                if (self.mentions.autocomplete.keydown(event)) {
                    return;
                }
                // isComposing: Enter also confirms an IME composition (Japanese, Chinese); that must not send.
                if (event.key === "Enter" && !event.shiftKey && !event.originalEvent.isComposing) {
                    event.preventDefault();
                    self.send();
                    return;
                }
                if (!event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey &&
                        !event.originalEvent.isComposing) {
                    self.recallQuestion(event);
                }
            })
            .on("input", function () {
                self.mentions.autocomplete.update();
                self.updateCounter();
                self.keepDraft();
            })
            .on("blur", function () {
                self.mentions.autocomplete.close();
            });
        // The mention chips and the suggestions of `@` and `/` sit between the context and the input.
        this.mentions = new lib.ComposerMentions(this, composer);
        this.input.appendTo(composer);
        this.counter = $('<div class="ai-sidebar-counter" aria-live="polite"></div>').hide().appendTo(composer);
        var actions = $('<div class="ai-sidebar-actions"></div>').appendTo(composer);
        this.buildModeToggle().appendTo(actions);
        this.scenarioSelect = $('<select class="ai-sidebar-scenario"></select>')
            .attr("title", t("sidebar.scenario"))
            .attr("aria-label", t("sidebar.scenario"))
            .hide()
            .on("change", function () {
                self.storage.set(lib.scenarioChoice.STORAGE_KEY, $(this).val());
                self.refreshQuickPrompts();
            })
            .appendTo(actions);
        // Stop and Send stay side by side (on a line of their own in a very narrow sidebar). Stop shows only its
        // icon, named for assistive technology: its word took the width the scenario's choice needs.
        var sendButtons = $('<span class="ai-sidebar-send-buttons"></span>').appendTo(actions);
        this.stopButton = $('<button type="button" class="red-ui-button ai-sidebar-stop"></button>')
            .append($('<i class="fa fa-stop" aria-hidden="true"></i>'))
            .attr("title", t("sidebar.stopTooltip"))
            .attr("aria-label", t("sidebar.stop"))
            .prop("disabled", true)
            .on("click", function (event) {
                event.preventDefault();
                self.stop();
            })
            .appendTo(sendButtons);
        this.sendButton = $('<button type="button" class="red-ui-button primary ai-sidebar-send"></button>')
            .append($('<i class="fa fa-paper-plane" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("sidebar.send")))
            .on("click", function (event) {
                event.preventDefault();
                self.send();
            })
            .appendTo(sendButtons);
    };

    /** Name the model that answers the next question under the header (configChoice.answeringModel). */
    AiSidebar.prototype.showModel = function () {
        if (!this.modelLine) {
            return;
        }
        var configId = this.configPicker.configId();
        var model = lib.configChoice.answeringModel(configId, this.configPicker.configs,
            this.serviceModel, this.defaultModels);
        if (this.setupCard.setup && !configId) {
            // The service's own model cannot answer: the line says so rather than naming it as if ready.
            this.modelLine.attr("title", this.setupCard.setup.message).attr("aria-label", this.setupCard.setup.message)
                .addClass("ai-sidebar-model-missing").show()
                .find(".ai-sidebar-model-name").text(t("setup.noModel"));
        } else if (!model) {
            this.modelLine.hide();
        } else {
            var title = t("sidebar.modelTooltip", { model: model.model || model.provider, provider: model.provider });
            this.modelLine.attr("title", title).attr("aria-label", title).removeClass("ai-sidebar-model-missing").show()
                .find(".ai-sidebar-model-name").text(model.text);
        }
        this.showHeaderLine();
    };

    /** Show the line under the header while it has something to say: the model, the conversation's usage. */
    AiSidebar.prototype.showHeaderLine = function () {
        this.headerLine.toggle(this.modelLine.css("display") !== "none" ||
            this.sessionUsage.element.css("display") !== "none");
    };

    /** Keep what the input holds as the open conversation's unsent question (it survives a reload). */
    AiSidebar.prototype.keepDraft = function () {
        lib.conversation.saveDraft(this.storage, this.conversation.sessionId, username(), this.input.val());
    };

    /** Put the open conversation's unsent question (or nothing) into the input. */
    AiSidebar.prototype.restoreDraft = function () {
        this.input.val(lib.conversation.loadDraft(this.storage, this.conversation.sessionId, username()));
        this.updateCounter();
    };

    /** Show how long the question is once it nears the service's limit, marked when it is over. */
    AiSidebar.prototype.updateCounter = function () {
        var counter = lib.chatRequest.counter(this.input.val(), this.maxMessageChars);
        // Over the limit Send waits (the service would refuse the question: 413 message_too_long).
        this.overLimit = Boolean(counter && counter.over);
        this.updateSendButton();
        if (!counter) {
            this.counter.hide();
            return;
        }
        var lang = RED.i18n.lang();
        var max = counter.max.toLocaleString(lang);
        this.counter
            .text(t("sidebar.counter", { count: counter.count.toLocaleString(lang), max: max }))
            .attr("title", t(counter.over ? "sidebar.counterOver" : "sidebar.counterTooltip", { max: max }))
            .toggleClass("ai-sidebar-counter-over", counter.over)
            .show();
    };

    /** The selected nodes that go out with a question: those whose chip the user did not remove. */
    AiSidebar.prototype.selectedNodes = function () {
        return this.nodeChips.sent(lib.editorContext.selectedNodes(RED));
    };

    /** The user moved to another tab or selection: the context chip (if removed) comes back for it. */
    AiSidebar.prototype.onEditorContextChange = function () {
        this.contextRemoved = false;
        this.nodeChips.reset();
        if (this.controller) {
            // The chip shows what the streaming answer was asked with until it ends (see ask()).
            this.contextChanged = true;
            return;
        }
        this.refreshContext();
    };

    /**
     * What the chip shows now: the context the next question goes out with (editorContext.chip). Above the input
     * the selected nodes have chips of their own; under a sent question (`sent`) their count and the mentions are
     * said.
     */
    AiSidebar.prototype.contextView = function (sent) {
        return lib.editorContext.chip({
            removed: this.contextRemoved,
            flow: lib.editorContext.selectedFlow(RED),
            count: this.selectedNodes().length,
            debug: this.debugAttached.length,
            chipsShown: !sent,
            mentions: sent ? this.mentions.chips.sent().map(function (item) {
                return item.label;
            }) : [],
            attached: sent ? this.mentions.attachments.items.map(function (item) {
                return item.name;
            }) : []
        }, t);
    };

    /** Attach a Debug sidebar message (editorContext.debugAttachment) to the next question; the chip lists it. */
    AiSidebar.prototype.attachDebug = function (item) {
        this.debugAttached = lib.editorContext.attachDebug(this.debugAttached, item);
        if (!this.controller) {
            this.refreshContext();
        } else {
            this.contextChanged = true;
        }
    };

    /** Record a message the Debug sidebar received (its debugPostProcessMessage hook). */
    AiSidebar.prototype.recordDebug = function (message) {
        var source = message && message._source;
        this.recentDebug.add(lib.editorContext.debugAttachment(message), source && source.z);
    };

    /**
     * Attach the recent Debug sidebar messages of the selected nodes, or of the open flow's nodes when none is
     * selected (the chip lists them); says so when there is none.
     *
     * @returns {number} how many were attached
     */
    AiSidebar.prototype.attachRecentDebug = function () {
        var self = this;
        var flow = lib.editorContext.selectedFlow(RED);
        var items = this.recentDebug.recent({
            nodeIds: this.selectedNodes().map(function (node) {
                return node.id;
            }),
            tab: flow && flow.id
        }, lib.editorContext.MAX_DEBUG_MESSAGES);
        if (!items.length) {
            RED.notify($("<p></p>").text(t("context.recentDebugNone")), { type: "warning", timeout: 4000 });
            return 0;
        }
        items.forEach(function (item) {
            self.debugAttached = lib.editorContext.attachDebug(self.debugAttached, item);
        });
        if (this.controller) {
            this.contextChanged = true;
        } else {
            this.refreshContext();
        }
        return items.length;
    };

    AiSidebar.prototype.detachDebug = function (item) {
        this.debugAttached = this.debugAttached.filter(function (other) {
            return other !== item;
        });
        this.refreshContext();
    };

    /**
     * "Explain" on a Debug sidebar message: attach it and ask about it. When the user is typing a question, or an
     * answer still streams, it is only attached (the chip lists it) and goes with the next question.
     */
    AiSidebar.prototype.explainDebug = function (item) {
        this.attachDebug(item);
        if (this.controller) {
            RED.notify($("<p></p>").text(t("sidebar.busy")), { type: "warning", timeout: 3000 });
            return;
        }
        if (String(this.input.val()).trim()) {
            this.focusInput();
            return;
        }
        this.send(t("prompt.explainDebug"));
    };

    AiSidebar.prototype.setContextRemoved = function (removed) {
        this.contextRemoved = removed;
        this.refreshContext();
    };

    AiSidebar.prototype.refreshContext = function () {
        var self = this;
        var view = this.contextView();
        this.nodeChips.render(this.nodeChipList, this.contextRemoved ? [] : this.selectedNodes(), t, function () {
            self.refreshContext();
        }, function () {
            self.focusInput();
        });
        this.mentions.render();
        var chip = this.contextChip.empty().toggleClass("ai-sidebar-context-removed", this.contextRemoved)
            .attr("title", view.title + "\n" + view.text);
        // When narrow, the flow's name is cut, never the counts after it.
        $('<span class="ai-sidebar-context-label"></span>')
            .append($("<i></i>").addClass("fa " + view.icon))
            .append($('<span class="ai-sidebar-context-name"></span>').text(view.name))
            .append($('<span class="ai-sidebar-context-detail"></span>').text(view.detail))
            .appendTo(chip);
        $('<button type="button" class="ai-sidebar-context-recent-debug"></button>')
            .attr("title", t("context.recentDebug")).attr("aria-label", t("context.recentDebug"))
            .append($('<i class="fa fa-bug" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.attachRecentDebug();
            })
            .appendTo(chip);
        $('<button type="button" class="ai-sidebar-context-remove"></button>')
            .attr("title", view.button.label).attr("aria-label", view.button.label)
            .append($("<i></i>").addClass("fa " + view.button.icon))
            .on("click", function (event) {
                event.preventDefault();
                self.setContextRemoved(view.button.removes);
            })
            .appendTo(chip);
        this.debugList.empty().toggle(this.debugAttached.length > 0);
        this.debugAttached.forEach(function (item) {
            var label = t("context.debugItem", { name: item.name || item.nodeId || "?",
                property: item.property, format: item.format || "" });
            var row = $('<div class="ai-sidebar-context-debug-item"></div>')
                .attr("title", item.msg)
                .append($('<i class="fa fa-bug" aria-hidden="true"></i>'))
                .append($('<span class="ai-sidebar-context-debug-text"></span>').text(label + " " + item.msg))
                .appendTo(self.debugList);
            $('<button type="button" class="ai-sidebar-context-remove"></button>')
                .attr("title", t("context.removeDebug")).attr("aria-label", t("context.removeDebug"))
                .append($('<i class="fa fa-times"></i>'))
                .on("click", function (event) {
                    event.preventDefault();
                    self.detachDebug(item);
                })
                .appendTo(row);
        });
    };

    AiSidebar.prototype.chatRequest = function (message) {
        return lib.chatRequest.build({
            message: message,
            sessionId: this.conversation.sessionId,
            language: RED.i18n.lang(),
            scenario: this.scenarioSelect.val(),
            configId: this.configPicker.configId(),
            mode: this.mode,
            contextRemoved: this.contextRemoved,
            debugMessages: this.debugAttached,
            mentions: this.mentions.chips.sent(),
            attachments: this.mentions.attachments.sent(),
            flow: lib.editorContext.selectedFlow(RED),
            nodes: this.selectedNodes(),
            exportTab: function () {
                return lib.flowBlocks.exportActiveTab();
            },
            lockedFlows: function () {
                return lib.editorContext.lockedFlows(RED);
            },
            warn: function (text, err) {
                console.warn(text, err);
            }
        });
    };

    AiSidebar.prototype.loadScenarios = function () {
        var self = this;
        return lib.adminApi.requestJson("GET", "ai-sidebar/scenarios?lang=" + encodeURIComponent(RED.i18n.lang()))
            .then(function (body) {
                self.scenariosLoaded = true;
                self.serviceOk();
                self.maxMessageChars = lib.chatRequest.messageLimit(body);
                self.updateCounter();
                self.serviceModel = body && body.model;
                self.defaultModels = body && body.defaultModels;
                self.setupCard.setState(body && body.setup);
                self.showModel();
                if (self.setupCard.needed() && self.messages.find(".ai-sidebar-empty").length) {
                    self.showEmptyState();
                }
                var scenarios = body && body.scenarios;
                var choice = lib.scenarioChoice.options(scenarios,
                    self.scenarioSelect.val() || self.storage.get(lib.scenarioChoice.STORAGE_KEY));
                if (!choice) {
                    return;
                }
                self.scenarios = scenarios;
                self.scenarioSelect.empty();
                choice.options.forEach(function (option) {
                    $("<option></option>").val(option.key).text(option.name).attr("title", option.title)
                        .appendTo(self.scenarioSelect);
                });
                if (choice.selected) {
                    self.scenarioSelect.val(choice.selected);
                }
                self.scenarioSelect.show();
                self.refreshQuickPrompts();
            }).catch(function (err) {
                self.serviceError(err);
            });
    };

    /**
     * Ask the service again (Retry button, and serviceWatch's checks while it is down) through the plugin's
     * service-status route, which answers 200 either way (a relayed route would log a 502 in the console at each
     * check); an older plugin without that route is asked for the scenarios instead.
     */
    AiSidebar.prototype.checkService = function () {
        var self = this;
        return lib.adminApi.requestJson("GET", "ai-sidebar/service-status").then(function (status) {
            if (self.destroyed) {
                return;
            }
            if (status && status.reachable) {
                self.serviceOk();
                return;
            }
            self.watch.supervised(lib.serviceBanner.restartExpected(status));
            self.serviceError(new lib.adminApi.ApiError(502, {
                code: "service_unreachable", serviceUrl: (status && status.serviceUrl) || ""
            }));
            self.banner.refresh(status);
        }, function (err) {
            if (self.destroyed) {
                return undefined;
            }
            return err && err.status === 404 ? self.loadScenarios() : self.serviceError(err);
        });
    };

    /** A request failed; when the service is down, the banner says so and the service is asked again. */
    AiSidebar.prototype.serviceError = function (err) {
        this.watch.failed(err);
    };

    /** A request reached the service. */
    AiSidebar.prototype.serviceOk = function () {
        this.watch.reached();
    };

    /** The service is back: clear the banner and load what could not be loaded while it was down. */
    AiSidebar.prototype.onServiceBack = function () {
        var self = this;
        var sessionId = this.conversation.sessionId;
        this.banner.hide();
        if (!this.scenariosLoaded) {
            this.loadScenarios();
        }
        if (this.historyFailed && !this.controller) {
            this.loadHistory(sessionId);
        }
        // The list is read again even if it was read before the outage: an answer it cut off may have been saved,
        // and the open conversation's totals (hidden when they could not be read) come back with it.
        this.sessions.load().then(function () {
            if (!self.destroyed && !self.historyRequest && self.conversation.sessionId === sessionId &&
                    !self.conversation.isUnsaved()) {
                self.sessionUsage.load(sessionId);
            }
        });
    };

    AiSidebar.prototype.showEmptyState = function () {
        this.messages.empty();
        var empty = $('<div class="ai-sidebar-empty"></div>').appendTo(this.messages);
        if (this.setupCard.needed()) {
            this.setupCard.render();
            this.setupCard.element.appendTo(empty);
        }
        $("<div></div>").text(t("sidebar.empty")).appendTo(empty);
        this.quickPrompts = $('<div class="ai-sidebar-prompts"></div>').appendTo(empty);
        this.refreshQuickPrompts();
    };

    /** Quick-start questions of the chosen scenario, shown while the chat is empty; a click fills the input. */
    AiSidebar.prototype.refreshQuickPrompts = function () {
        var self = this;
        if (!this.quickPrompts || !this.scenarioSelect || !$.contains(this.messages[0], this.quickPrompts[0])) {
            return;
        }
        this.quickPrompts.empty();
        lib.scenarioChoice.quickPrompts(this.scenarios, this.scenarioSelect.val()).forEach(function (prompt) {
            $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-prompt"></button>')
                .text(prompt)
                .on("click", function (event) {
                    event.preventDefault();
                    self.input.val(prompt).trigger("focus");
                    self.updateCounter();
                    self.keepDraft();
                })
                .appendTo(self.quickPrompts);
        });
    };

    AiSidebar.prototype.isScrolledToBottom = function () {
        var el = this.messages[0];
        return el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    };

    AiSidebar.prototype.scrollToBottom = function () {
        var el = this.messages[0];
        el.scrollTop = el.scrollHeight;
        this.scrolledTo = el.scrollTop;
        this.pinnedToBottom = true;
    };

    /**
     * Scroll the message list just enough to show all of `element` (its top wins when it is taller than the list),
     * then focus `field` without the browser scrolling again: a panel opened inside a message (an approval card's
     * reason and its Reject / Cancel) may start below the list's visible end.
     *
     * @param {jQuery} element inside the message list
     * @param {jQuery} [field] what gets the focus
     */
    AiSidebar.prototype.reveal = function (element, field) {
        var list = this.messages[0];
        var target = element[0];
        if (target && list.clientHeight > 0) {
            var margin = 8;
            var box = list.getBoundingClientRect();
            var rect = target.getBoundingClientRect();
            if (rect.bottom + margin > box.bottom) {
                list.scrollTop += rect.bottom + margin - box.bottom;
                rect = target.getBoundingClientRect();
            }
            if (rect.top - margin < box.top) {
                list.scrollTop -= box.top - (rect.top - margin);
            }
            this.pinnedToBottom = this.isScrolledToBottom();
        }
        if (field && field[0]) {
            field[0].focus({ preventScroll: true });
        }
    };

    /** Run `change` on the message list, keeping it pinned to the bottom if the user had not scrolled up. */
    AiSidebar.prototype.withScroll = function (change) {
        var pinned = this.isScrolledToBottom();
        change();
        if (pinned) {
            this.scrollToBottom();
        }
    };

    AiSidebar.prototype.appendMessage = function (role) {
        this.messages.find(".ai-sidebar-empty, .ai-sidebar-loading").remove();
        var message = $('<div class="ai-sidebar-message"></div>').addClass("ai-sidebar-message-" + role);
        $('<div class="ai-sidebar-role"></div>').text(t(role === "user" ? "sidebar.you" : "sidebar.assistant"))
            .appendTo(message);
        message.appendTo(this.messages);
        return message;
    };

    /**
     * A question, with the context it went out with (`context`: a chip view) when it was asked here; `askedAt` (ISO
     * 8601) is where a checkpoint under its answer restores the flows to (checkpoints.js). It can be edited and
     * sent again in a fork of the conversation (edit-question.js).
     */
    AiSidebar.prototype.appendUserMessage = function (text, context, askedAt) {
        var element = this.appendMessage("user");
        if (askedAt) {
            element.attr("data-asked-at", askedAt);
        }
        $('<div class="ai-sidebar-text"></div>').text(text).appendTo(element);
        if (context) {
            $('<div class="ai-sidebar-sent-context"></div>')
                .attr("title", t("context.sentTooltip"))
                .append($('<i aria-hidden="true"></i>').addClass("fa " + context.icon))
                .append(document.createTextNode(" " + context.text))
                .appendTo(element);
        }
        lib.editQuestion.offer(this, element);
    };

    /**
     * Show the stored conversation of a session. A session the service does not know (404 session_not_found)
     * is a new chat that has no saved turn yet, so it shows as an empty chat.
     */
    AiSidebar.prototype.loadHistory = function (sessionId, hit) {
        var self = this;
        var request = {};
        this.historyRequest = request;
        this.historyFailed = false;
        this.messages.empty();
        $('<div class="ai-sidebar-note ai-sidebar-loading"></div>').text(t("history.loading")).appendTo(this.messages);
        return lib.adminApi.requestJson("GET", "ai-sidebar/history/" + encodeURIComponent(sessionId) +
            "?limit=" + HISTORY_LIMIT).then(function (body) {
            if (self.historyRequest !== request) {
                return;
            }
            self.historyRequest = null;
            self.serviceOk();
            self.renderHistory(Array.isArray(body && body.messages) ? body.messages : [], hit, body && body.summary,
                body && body.approvals);
            self.sessionUsage.load(sessionId);
            self.approvals.restore(sessionId);
        }).catch(function (err) {
            if (self.historyRequest !== request) {
                return;
            }
            self.historyRequest = null;
            if (err.status === 404 && err.code === "session_not_found") {
                self.serviceOk();
                self.showEmptyState();
                self.approvals.restore(sessionId);
                return;
            }
            self.historyFailed = true;
            self.serviceError(err);
            self.showEmptyState();
            // A service that is down is reported once, above the chat; other faults are shown here.
            if (!err.serviceUnreachable()) {
                lib.errorLine(t("history.loadFailed", { message: err.message })).appendTo(self.messages);
            }
        });
    };

    /**
     * Show a session's stored messages, at the latest one, or at the one a search `hit` (searchHits.rows) found;
     * with `summary` ({throughId}: the service summarised the messages up to that id for the model) a one-line
     * note after the last of them (before the first shown message when all are newer). `approvals` (the
     * history's: per run id what became of its approvals) lets the approval cards show what was decided; an
     * answer that continued a run (`metadata.resumed`) goes under its card, as it streamed.
     */
    AiSidebar.prototype.renderHistory = function (messages, hit, summary, approvals) {
        var self = this;
        var restoring = this.approvals.restoring(approvals);
        var found = hit ? lib.searchHits.messageIndex(messages, hit) : -1;
        var foundElement = null;
        if (!messages.length) {
            this.showEmptyState();
            return;
        }
        this.messages.empty();
        var summarisedThrough = summary && typeof summary.throughId === "number" ? summary.throughId : null;
        if (summarisedThrough !== null && !(messages[0] && messages[0].id <= summarisedThrough)) {
            self.appendSummaryNote();
            summarisedThrough = null;
        }
        var replaced = lib.chatRequest.replacedTries(messages);
        messages.forEach(function (message, index) {
            if (!message || typeof message.content !== "string" || replaced.has(index)) {
                return;
            }
            if (summarisedThrough !== null && message.id > summarisedThrough) {
                self.appendSummaryNote();
                summarisedThrough = null;
            }
            if (message.role === "user") {
                self.appendUserMessage(message.content, lib.editorContext.sentView(message.metadata, t,
                    function (id) {
                        return !!RED.nodes.subflow(id);
                    }), lib.fork.checkpointTime(message.createdAt));
                if (index === found) {
                    foundElement = self.messages.children(".ai-sidebar-message").last();
                }
                var next = messages[index + 1];
                if (!next || next.role !== "assistant") {
                    // The answer failed or was stopped before any text: the service kept only the question.
                    var missing = self.appendMessage("assistant");
                    if (!lib.renderMissingAnswer(missing, message.metadata)) {
                        missing.remove();
                    }
                }
            } else if (message.role === "assistant") {
                var resumed = message.metadata && message.metadata.resumed;
                var element = (typeof resumed === "string" && restoring.elementOf(resumed)) ||
                    self.appendMessage("assistant");
                if (Array.isArray(message.events)) {
                    lib.replayStoredAnswer(self, element, message, restoring);
                } else {
                    lib.renderStoredAnswer(self.renderMarkdown, element, message);
                }
                if (index === found) {
                    foundElement = element;
                }
            }
        });
        if (summarisedThrough !== null) {
            this.appendSummaryNote();
        }
        this.offerRegenerateRestored(messages);
        if (foundElement) {
            this.showFound(foundElement);
        } else {
            this.scrollToBottom();
        }
    };

    /**
     * Regenerate under a restored conversation's last answer, as under a live one: its question sent again, with
     * the editor's context, AI configuration and mode as they are now (the history keeps no whole request).
     */
    AiSidebar.prototype.offerRegenerateRestored = function (messages) {
        var self = this;
        var last = messages[messages.length - 1];
        var question = messages.filter(function (message) {
            return message && message.role === "user" && typeof message.content === "string";
        }).pop();
        var element = this.messages.children(".ai-sidebar-message-assistant").last();
        if (last && last.role === "assistant" && typeof last.content === "string" && last.content.trim() &&
                question && element.length) {
            lib.offerRegenerate(this, element, function () {
                return self.send(question.content);
            });
        }
    };

    /** The one-line note where the conversation the model still sees verbatim starts. */
    AiSidebar.prototype.appendSummaryNote = function () {
        $('<div class="ai-sidebar-note ai-sidebar-summarised" role="note"></div>')
            .append($('<i class="fa fa-compress" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("history.summarised")))
            .appendTo(this.messages);
    };

    /** Open the conversation at a message a search found: scrolled to its top, marked until the next search. */
    AiSidebar.prototype.showFound = function (element) {
        element.addClass("ai-sidebar-message-found");
        var list = this.messages[0];
        list.scrollTop = element[0].offsetTop - list.offsetTop - 8;
        this.pinnedToBottom = this.isScrolledToBottom();
    };

    /** Open a saved session; the promise settles once its history is shown. */
    AiSidebar.prototype.switchSession = function (sessionId, hit) {
        if (!sessionId) {
            return Promise.resolve();
        }
        this.stop();
        this.cancelSessionRefresh();
        this.keepDraft();
        this.conversation.open(sessionId);
        this.restoreDraft();
        this.sessions.render();
        return this.loadHistory(sessionId, hit);
    };

    /** Send is disabled while an answer streams and while the question is over the service's limit. */
    AiSidebar.prototype.updateSendButton = function () {
        var disabled = Boolean(this.busy || this.overLimit);
        // Node-RED draws a disabled primary button by its "disabled" class (style.min.css), not by the attribute.
        this.sendButton.prop("disabled", disabled).toggleClass("disabled", disabled);
    };

    AiSidebar.prototype.setBusy = function (busy) {
        var hadFocus = $.contains(this.content[0], document.activeElement);
        this.busy = busy;
        this.updateSendButton();
        this.stopButton.prop("disabled", !busy);
        this.input.prop("disabled", busy);
        if (!busy) {
            this.input.trigger("focus");
        } else if (hadFocus) {
            // The disabled input would drop the focus to the page; Stop keeps it in the tab (and Escape works).
            this.stopButton.trigger("focus");
        }
    };

    /**
     * Ask a question: `text`, or what the user typed when it is omitted; `display` is what the user sees of a
     * direct trigger a button sends (the service keeps it as the question: `display` in the request).
     *
     * @returns {boolean} whether a request was started
     */
    AiSidebar.prototype.send = function (text, display) {
        var fromInput = text === undefined;
        var message = String(fromInput ? this.input.val() : text).trim();
        if (!message || this.controller) {
            return false;
        }
        var counted = fromInput ? lib.chatRequest.counter(message, this.maxMessageChars) : null;
        if (counted && counted.over) {
            // Enter with a question over the limit: nothing is sent; the counter (marked) says by how much.
            this.updateCounter();
            this.input.trigger("focus");
            return false;
        }
        this.mentions.autocomplete.close();
        // A slash command (slash-commands.js) acts here, and may send its own question instead.
        var instead = fromInput ? this.mentions.beforeSend(message) : null;
        if (instead === "") {
            this.input.val("");
            this.updateCounter();
            this.keepDraft();
            return false;
        }
        message = instead || message;
        if (fromInput) {
            this.input.val("");
            this.updateCounter();
            this.keepDraft();
        }
        var request = this.chatRequest(message);
        if (display) {
            request.body.display = display;
        }
        // Shown under the question, live and after Retry (which sends the same request).
        request.contextView = this.contextView(true);
        // A question refused before any answer (images_not_supported) gets its files back with its words (ask()).
        request.attachedItems = this.mentions.attachments.items.slice();
        // Attached Debug messages and mentions go with this question only; the chip shows them until its answer ends.
        if (this.debugAttached.length || this.mentions.chips.items.length || this.mentions.attachments.items.length) {
            this.debugAttached = [];
            this.mentions.chips.clear();
            this.mentions.attachments.clear();
            this.contextChanged = true;
        }
        this.ask(message, request, fromInput);
        return true;
    };

    /**
     * Retry: send a question again with the context and scenario it went out with, but the AI configuration and
     * mode chosen now (chatRequest.again: a Retry after choosing a working configuration must use it), as a new
     * turn of the same conversation. The question leaves the input if a failed send had put it back; `replaces` (the
     * failed answer's element) goes with its question.
     *
     * @returns {boolean} whether a request was started (not while another answer streams)
     */
    AiSidebar.prototype.retry = function (message, request, replaces) {
        if (this.controller) {
            return false;
        }
        if (replaces) {
            // A Retry takes the failed try's place: the question is shown once (chatRequest.replacedTries).
            replaces.prev(".ai-sidebar-message-user").remove();
            replaces.remove();
        }
        if (String(this.input.val()).trim() === message) {
            this.input.val("");
            this.updateCounter();
        }
        this.ask(message, lib.chatRequest.again(request, { configId: this.configPicker.configId(), mode: this.mode }),
            true);
        return true;
    };

    /** Show the question, stream its answer, and offer Retry when it failed, was cut off or was stopped. */
    AiSidebar.prototype.ask = function (message, request, fromInput) {
        var self = this;
        // Follow-up suggestions belong to the newest answer only (chat/followups.js).
        lib.followups.clear(this.messages);
        // A history still loading would replace the conversation the user has just continued.
        this.historyRequest = null;
        this.historyFailed = false;
        this.sessions.close();
        this.messages.find(".ai-sidebar-regenerate").remove();
        this.recalled = null;
        this.appendUserMessage(request.body.display || message, request.contextView, new Date().toISOString());
        var answer = new lib.Answer(this, this.appendMessage("assistant"));
        // What a notice's "switch to Agent mode" sends again.
        answer.question = { message: message, request: request };
        if (request.flowDataBytes) {
            answer.note(t("context.tooLarge", { size: Math.round(request.flowDataBytes / 1048576) }));
        }
        this.scrollToBottom();

        var controller = new AbortController();
        var sessionId = this.conversation.sessionId;
        var stopped = false;
        this.controller = controller;
        this.setBusy(true);
        var refusedCode = null;
        // Silent for a while (no ping either): ask whether the service still answers; the banner says if not.
        lib.streamChat(request.body, controller.signal, answer, undefined, function () {
            self.checkService();
        }).then(function (outcome) {
            refusedCode = outcome.error ? outcome.error.code : null;
            if (outcome.ok) {
                self.serviceOk();
            } else if (outcome.error) {
                self.serviceError(outcome.error);
                if (outcome.error.code === "config_not_found") {
                    // The chosen node went away since the list was read: the picker falls back and says so.
                    self.configPicker.load();
                }
            }
        }, function (err) {
            if (err && err.name === "AbortError") {
                stopped = true;
                answer.stopped();
            } else {
                answer.error(t("error.network", { message: (err && err.message) || String(err) }));
            }
        }).then(function () {
            answer.finish();
            var next = lib.chatRequest.afterAnswer({
                failed: !!answer.failed,
                received: !!answer.received,
                stopped: stopped,
                fromInput: fromInput,
                inputEmpty: !self.input.val(),
                errorCodes: (answer.errorCodes || []).concat(refusedCode ? [refusedCode] : [])
            });
            if (self.controller === controller) {
                self.controller = null;
                if (next.restoreInput) {
                    self.input.val(message);
                    self.keepDraft();
                    self.updateCounter();
                    if (request.attachedItems && request.attachedItems.length &&
                            !self.mentions.attachments.items.length) {
                        self.mentions.attachments.items = request.attachedItems.slice();
                        self.contextChanged = true;
                    }
                }
                self.setBusy(false);
                if (self.contextChanged) {
                    self.contextChanged = false;
                    self.refreshContext();
                }
            }
            if (self.conversation.sessionId !== sessionId) {
                return;
            }
            if (next.retry) {
                answer.offerRetry(function () {
                    return self.retry(message, request, answer.element);
                });
            } else if (answer.received) {
                // Regenerate under the last finished answer only: the next question takes it away (ask()).
                answer.offerRegenerate(function () {
                    return self.retry(message, request);
                });
            }
            if (next.setup) {
                // Mend it here: the card (moved from wherever it was) offers a new ai-config node and its test.
                self.setupCard.render();
                self.withScroll(function () {
                    self.setupCard.element.appendTo(self.messages);
                });
            } else if (!answer.failed && answer.received) {
                // A model answered: the card has done its work in this conversation.
                self.setupCard.element.detach();
            }
            if (next.markSaved) {
                self.conversation.markSaved();
            }
            self.refreshSessions(next.expectSaved);
            self.sessionUsage.load(sessionId);
        });
    };

    AiSidebar.prototype.stop = function () {
        if (this.controller) {
            this.controller.abort();
        }
    };

    AiSidebar.prototype.newChat = function () {
        this.stop();
        this.cancelSessionRefresh();
        this.historyRequest = null;
        this.historyFailed = false;
        this.keepDraft();
        this.conversation.start();
        this.sessionUsage.clear();
        this.sessions.render();
        // A new chat starts with the default context: the chip removed in the last one comes back.
        this.contextChanged = false;
        this.debugAttached = [];
        this.mentions.chips.clear();
        this.mentions.attachments.clear();
        this.setContextRemoved(false);
        this.showEmptyState();
        this.input.val("").trigger("focus");
        this.updateCounter();
    };

    /**
     * Up in the empty input recalls the conversation's last question (as shown: typed, an action's, or from the
     * stored history); Down while it is unchanged empties the input again (chatRequest.recall).
     */
    AiSidebar.prototype.recallQuestion = function (event) {
        var last = this.messages.find(".ai-sidebar-message-user > .ai-sidebar-text").last().text();
        var text = lib.chatRequest.recall(event.key, String(this.input.val()), last, this.recalled);
        if (text === null) {
            return;
        }
        event.preventDefault();
        this.recalled = text ? text : null;
        this.input.val(text);
        this.updateCounter();
        this.keepDraft();
    };

    AiSidebar.prototype.focusInput = function () {
        if (!this.input.prop("disabled")) {
            this.input.trigger("focus");
        }
    };

    /** The "explain selection" action: explain the selected nodes, or the open flow when none is selected. */
    AiSidebar.prototype.explainSelection = function () {
        if (this.controller) {
            RED.notify($("<p></p>").text(t("sidebar.busy")), { type: "warning", timeout: 3000 });
            return;
        }
        // Asking about the selection only makes sense with it: bring a removed context chip back.
        this.setContextRemoved(false);
        var count = this.selectedNodes().length;
        this.send(count ? t("prompt.explainSelection", { count: count }) : t("prompt.explainFlow"));
    };

    AiSidebar.prototype.destroy = function () {
        this.destroyed = true;
        this.stop();
        this.cancelSessionRefresh();
        this.watch.stop();
        this.knowledgePanel.destroy();
        this.historyPanel.destroy();
        this.mcpGrantsPanel.destroy();
        this.configPicker.destroy();
        RED.events.off("workspace:change", this.onEditorContextChange);
        RED.events.off("view:selection-changed", this.onEditorContextChange);
        RED.events.off("runtime-state", this.refreshConfigs);
        RED.events.off("flows:loaded", this.onFlowsLoaded);
        if (this.resizeObserver) {
            this.resizeObserver.disconnect();
        }
        if (this.messagesObserver) {
            this.messagesObserver.disconnect();
        }
        this.content.remove();
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.AiSidebar = AiSidebar;
}());
