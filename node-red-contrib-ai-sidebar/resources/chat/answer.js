/**
 * Assistant answers in the sidebar: one streamed answer (`Answer`): its text, tool cards, errors, notices, usage and
 * the buttons under it. A stored answer is drawn through the same Answer by stored-answer.js; the request that
 * streams an answer is stream-chat.js.
 *
 * Editor-only script: registers `Answer`, `offerRegenerate`, `errorLine` and `answerParts` on `NodeRedAiSidebar`. Answer text is markdown from
 * a language model and is only ever inserted after the sidebar's renderer has sanitised it (resources/shared/markdown.js:
 * marked + DOMPurify, then highlight.js on the code blocks' text); everything else goes in as text.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var RESULT_PREVIEW_CHARS = 4000;
    // A failed tool's message is shown on its card without opening it; a longer one is cut there and shown in full
    // in the card's Result section.
    var FAILURE_SUMMARY_CHARS = 300;
    // Who started a tool call (the `origin` of a tool_call event, DESIGN.md "Stream events"); events of older
    // services have none and get no mark.
    var TOOL_ORIGINS = {
        agent: { icon: "fa-magic", label: "tool.origin.agent", tooltip: "tool.originTooltip.agent" },
        direct: { icon: "fa-user", label: "tool.origin.direct", tooltip: "tool.originTooltip.direct" },
        keyword: { icon: "fa-user", label: "tool.origin.keyword", tooltip: "tool.originTooltip.keyword" }
    };

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function sidebarLib() {
        return window.NodeRedAiSidebar;
    }

    /** What the sidebar calls a running tool: its catalog name ("Reading flow…") or "Running <tool>…". */
    function toolLabel(tool) {
        if (/^[a-z0-9_-]+$/i.test(tool)) {
            var known = t("tool.names." + tool);
            // RED._ answers with the key itself when the catalog has no such entry.
            if (known.indexOf("tool.names.") === -1) {
                return known;
            }
        }
        return t("tool.running", { tool: tool });
    }

    /** Set an element's text only when it changes (the waiting line is updated every second). */
    function setText(element, text) {
        if (element.text() !== text) {
            element.text(text);
        }
    }

    /** Put sanitised, highlighted markdown (or plain text when the renderer is missing) into `element`. */
    function renderInto(element, text, renderMarkdown) {
        if (renderMarkdown) {
            renderMarkdown(element, text);
        } else {
            element.text(text);
        }
    }

    /**
     * One assistant answer in the message list: streamed text rendered as sanitised markdown, tool cards,
     * error lines and notes, in the order they arrive.
     *
     * @param {object} sidebar provides `renderMarkdown(element, text)`, `withScroll(change)` and `reader`, a polite
 *     live region that screen readers read the answer from
     * @param {jQuery} element the message element to fill
     */
    function Answer(sidebar, element) {
        this.sidebar = sidebar;
        this.element = element;
        this.textElement = null;
        this.text = "";
        // The whole answer's Markdown as the model sent it (every text block; `text` is the current block's):
        // what its Copy button copies.
        this.markdown = "";
        this.renderPending = false;
        this.toolCards = [];
        // unknown_node_types notices (notice-view.js): the Import buttons of their flows are marked at finish().
        this.notices = [];
        this.sawDone = false;
        // Whether anything of an answer arrived (text or a tool), and whether a fault was shown: a question that
        // failed before any answer goes back into the input.
        this.received = false;
        this.failed = false;
        element.addClass("ai-sidebar-cursor");
        // Until text arrives a line says what the answer waits for, with the time; screen readers are told
        // politely through a live region that exists before its first words (else some would not read them).
        this.wait = new (sidebarLib().waiting.WaitState)(Date.now());
        this.waitLine = null;
        this.waitTimer = null;
        this.spoken = "";
        this.announcer = $('<div class="ai-sidebar-sr-only ai-sidebar-waiting-status" role="status"></div>')
            .attr("aria-live", "polite").attr("aria-atomic", "true").appendTo(element);
        // The answer's text for screen readers, a sentence at a time (live-reading.js): the text itself is
        // rendered again on every frame, which a live region over it would read again and again.
        // The region is the sidebar's own (outside the conversation, whose text it would repeat); it holds the
        // current answer only.
        this.reader = (sidebar.reader || $("<div></div>")).empty();
        this.readUpTo = 0;
        this.showWaiting(false);
    }

    /** Hand the sentences of the current text block that are complete (all of it when `final`) to the reader. */
    Answer.prototype.readOut = function (final) {
        if (!this.textElement) {
            return;
        }
        var next = sidebarLib().liveReading.nextReading(this.textElement.text(), this.readUpTo, final);
        this.readUpTo = next.upTo;
        if (next.say) {
            $("<p></p>").text(next.say).appendTo(this.reader);
        }
    };

    /**
     * Show, update or remove the waiting line for the current state of the wait; `announce` also tells screen
     * readers (not at once for a new answer: a live region that gets its words at birth is often not read).
     */
    Answer.prototype.showWaiting = function (announce) {
        var self = this;
        var view = this.wait.current(Date.now());
        if (!view) {
            this.hideWaiting();
            return;
        }
        if (!this.waitLine) {
            this.waitLine = $('<div class="ai-sidebar-waiting" aria-hidden="true"></div>')
                .append($('<i class="fa fa-circle-o-notch fa-spin"></i>'))
                .append($('<span class="ai-sidebar-waiting-text"></span>'))
                .append(document.createTextNode(" "))
                .append($('<span class="ai-sidebar-waiting-time"></span>'));
            this.waitTimer = setInterval(function () {
                self.showWaiting(true);
            }, 1000);
        }
        var label = view.phase === "tool" ? toolLabel(view.tool) : t("answer.waitingModel");
        var line = this.waitLine;
        setText(line.find(".ai-sidebar-waiting-text"), label);
        setText(line.find(".ai-sidebar-waiting-time"), t("answer.elapsed", { seconds: view.seconds }));
        this.element.addClass("ai-sidebar-waiting-shown");
        // Below everything else: tool cards and notes are added after the line.
        if (this.element.children().last()[0] !== line[0]) {
            this.sidebar.withScroll(function () {
                line.appendTo(self.element);
            });
        }
        if (announce) {
            var spoken = view.announcedSeconds ?
                label + " " + t("answer.elapsed", { seconds: view.announcedSeconds }) : label;
            if (spoken !== this.spoken) {
                this.spoken = spoken;
                this.announcer.text(spoken);
            }
        }
    };

    Answer.prototype.hideWaiting = function () {
        if (this.waitTimer) {
            clearInterval(this.waitTimer);
            this.waitTimer = null;
        }
        if (this.waitLine) {
            this.waitLine.remove();
            this.waitLine = null;
        }
        this.element.removeClass("ai-sidebar-waiting-shown");
        this.spoken = "";
        this.announcer.text("");
    };

    /** The text block that tokens go into; a new one starts after a tool card, so the order stays visible. */
    Answer.prototype.currentText = function () {
        if (!this.textElement) {
            this.text = "";
            this.readUpTo = 0;
            this.textElement = $('<div class="ai-sidebar-text red-ui-help"></div>').appendTo(this.element);
        }
        return this.textElement;
    };

    Answer.prototype.appendToken = function (content) {
        this.received = true;
        sidebarLib().thinkingView.settle(this);
        this.currentText();
        this.text += content;
        this.markdown += content;
        this.scheduleRender();
    };

    Answer.prototype.scheduleRender = function () {
        var self = this;
        if (this.renderPending) {
            return;
        }
        this.renderPending = true;
        // One render per frame however many tokens arrive; a hidden tab gets none until finish(). A frame that
        // comes after an earlier render() (finish() renders at once) must not render again: that would replace
        // the flow buttons finish() added.
        window.requestAnimationFrame(function () {
            if (self.renderPending) {
                self.render();
            }
        });
    };

    Answer.prototype.render = function () {
        this.renderPending = false;
        if (!this.textElement) {
            return;
        }
        var element = this.textElement;
        var text = this.text;
        var renderMarkdown = this.sidebar.renderMarkdown;
        this.sidebar.withScroll(function () {
            renderInto(element, text, renderMarkdown);
        });
        this.readOut(false);
    };

    Answer.prototype.toolCall = function (event) {
        this.received = true;
        this.render();
        this.readOut(true);
        this.textElement = null;
        var tool = String(event.tool || "");
        var card = $('<details class="ai-sidebar-tool"></details>');
        var summary = $("<summary></summary>").appendTo(card);
        $('<i class="fa fa-spinner fa-spin ai-sidebar-tool-icon"></i>').appendTo(summary);
        $('<span class="ai-sidebar-tool-label"></span>').text(toolLabel(tool)).appendTo(summary);
        var origin = Object.prototype.hasOwnProperty.call(TOOL_ORIGINS, event.origin) ?
            TOOL_ORIGINS[event.origin] : null;
        if (origin) {
            card.attr("data-origin", event.origin);
            $('<span class="ai-sidebar-tool-origin"></span>')
                .addClass("ai-sidebar-tool-origin-" + event.origin)
                .attr("title", t(origin.tooltip))
                .append($("<i></i>").addClass("fa " + origin.icon))
                .append(document.createTextNode(" " + t(origin.label)))
                .appendTo(summary);
        }
        if (event.params !== undefined && event.params !== null &&
                !($.isPlainObject(event.params) && $.isEmptyObject(event.params))) {
            appendSection(card, t("tool.parameters"), event.params);
        }
        var self = this;
        this.sidebar.withScroll(function () {
            card.appendTo(self.element);
        });
        this.toolCards.push({ tool: tool, card: card });
    };

    Answer.prototype.toolResult = function (event) {
        var tool = String(event.tool || "");
        var entry = null;
        for (var i = 0; i < this.toolCards.length; i++) {
            if (this.toolCards[i].tool === tool && !this.toolCards[i].done) {
                entry = this.toolCards[i];
                break;
            }
        }
        if (!entry) {
            this.toolCall({ tool: tool });
            entry = this.toolCards[this.toolCards.length - 1];
        }
        entry.done = true;
        var ok = event.ok !== false;
        var card = entry.card;
        card.toggleClass("ai-sidebar-tool-failed", !ok);
        card.find(".ai-sidebar-tool-icon").attr("class", "ai-sidebar-tool-icon fa " +
            (ok ? "fa-check" : "fa-exclamation-triangle"));
        card.find(".ai-sidebar-tool-label").text(t(ok ? "tool.finished" : "tool.failed", { tool: tool }));
        var result = event.result;
        var said = typeof result === "string" ? result.trim() : "";
        // A coded failure's sentence in the user's language (`message`); the model read `result`, in English.
        var failure = ok ? "" : (typeof event.message === "string" && event.message.trim()) || said;
        if (failure) {
            // Why the tool failed is what the user needs, so it shows without opening the card.
            var shown = failure.length > FAILURE_SUMMARY_CHARS ?
                failure.slice(0, FAILURE_SUMMARY_CHARS) + "\u2026" : failure;
            $('<span class="ai-sidebar-tool-failure"></span>').text(shown).appendTo(card.children("summary"));
        }
        if (result !== undefined && result !== null &&
            (!failure || failure.length > FAILURE_SUMMARY_CHARS || failure !== said)) {
            appendSection(card, t("tool.result"), result);
        }
        // What a knowledge tool read, as links under its card (shown without opening it).
        var sources = sidebarLib().answerLinks.sources(event.sources);
        if (sources) {
            this.sidebar.withScroll(function () {
                sources.insertAfter(card);
            });
        }
    };

    Answer.prototype.error = function (message) {
        this.failed = true;
        this.wait.stop();
        this.hideWaiting();
        this.render();
        this.readOut(true);
        this.textElement = null;
        var self = this;
        this.sidebar.withScroll(function () {
            errorLine(message).appendTo(self.element);
        });
        $("<p></p>").text(message).appendTo(this.reader);
    };

    Answer.prototype.note = function (message) {
        this.render();
        this.readOut(true);
        this.textElement = null;
        var self = this;
        this.sidebar.withScroll(function () {
            $('<div class="ai-sidebar-note"></div>').text(message).appendTo(self.element);
        });
        this.showWaiting(false);
    };

    /** A notice box (notice-view.js) under what the answer shows so far; `view` is kept for finish(). */
    Answer.prototype.addNotice = function (box, view) {
        this.render();
        this.readOut(true);
        this.textElement = null;
        this.notices.push(view);
        var self = this;
        this.sidebar.withScroll(function () {
            box.appendTo(self.element);
        });
        $("<p></p>").text(box.text()).appendTo(this.reader);
    };

    /** The answer's tokens and cost from its `done` event (usage-view.js); nothing when the service sent none. */
    Answer.prototype.showUsage = function (usage) {
        var line = sidebarLib().usageView.answerLine(usage);
        if (!line) {
            return;
        }
        this.render();
        // The text block ends here: its last sentence goes to the screen reader before the block is closed.
        this.readOut(true);
        this.textElement = null;
        var self = this;
        this.sidebar.withScroll(function () {
            line.appendTo(self.element);
        });
    };

    /** The user stopped the answer: a small mark says that what is shown is not all of it. */
    Answer.prototype.stopped = function () {
        this.wait.stop();
        this.hideWaiting();
        this.render();
        this.readOut(true);
        $("<p></p>").text(t("answer.stoppedTooltip")).appendTo(this.reader);
        this.textElement = null;
        var self = this;
        this.sidebar.withScroll(function () {
            stoppedMark().appendTo(self.element);
        });
    };

    Answer.prototype.handleEvent = function (event) {
        if (!event || typeof event !== "object") {
            return;
        }
        switch (event.type) {
        case "token":
            if (typeof event.content === "string") {
                this.appendToken(event.content);
            }
            break;
        case "thinking":
            this.received = true;
            sidebarLib().thinkingView.append(this, event.text);
            break;
        case "tool_call":
            this.toolCall(event);
            break;
        case "tool_result":
            this.toolResult(event);
            break;
        case "error":
            // Which faults the answer met (the sidebar offers its setup card after a provider fault).
            this.errorCodes = (this.errorCodes || []).concat([event.code]);
            this.error(event.message || event.code ? sidebarLib().adminApi.localizedError(event)
                : t("error.incomplete"));
            break;
        case "notice":
            sidebarLib().noticeView.render(this, event);
            break;
        case "done":
            this.sawDone = true;
            this.showUsage(event.usage);
            this.suggestions = event.suggestions;
            break;
        default:
            // approval_required and flow_change (approval-card.js); event types added to the contract later are
            // ignored by older sidebars. An answer that changed flows is a checkpoint (checkpoints.js, at finish()).
            this.changedFlows = this.changedFlows || event.type === "flow_change";
            if (this.sidebar.approvals) {
                this.sidebar.approvals.handleEvent(this, event);
            }
            break;
        }
        this.wait.handle(event, Date.now());
        this.showWaiting(true);
    };

    Answer.prototype.finish = function () {
        this.wait.stop();
        this.hideWaiting();
        this.render();
        this.readOut(true);
        this.element.removeClass("ai-sidebar-cursor");
        this.toolCards.forEach(function (entry) {
            if (!entry.done) {
                entry.card.find(".ai-sidebar-tool-icon").attr("class", "ai-sidebar-tool-icon fa fa-minus");
            }
        });
        // Flow blocks get their buttons once the text is final: a half-streamed block is not valid JSON yet.
        sidebarLib().flowBlocks.decorate(this.element);
        sidebarLib().answerLinks.decorate(this.element);
        sidebarLib().noticeView.markImports(this.element, this.notices);
        if (this.markdown.trim()) {
            actionRow(this.element).append(copyAnswerButton(this.markdown));
        }
        if (this.changedFlows && sidebarLib().checkpoints) {
            sidebarLib().checkpoints.offer(this.sidebar, this.element);
        }
        if (this.suggestions) {
            sidebarLib().followups.render(this, this.suggestions);
        }
    };

    /**
     * "Regenerate" under the last finished answer: the same question again, as a new answer after this one (nothing
     * shown is replaced). `regenerate()` returns whether it started a request (not while another answer streams).
     */
    Answer.prototype.offerRegenerate = function (regenerate) {
        offerRegenerate(this.sidebar, this.element, regenerate);
    };

    /**
     * The Regenerate button under an answer's element, live (Answer.offerRegenerate) or restored from the history
     * (the sidebar's renderHistory, for the conversation's last answer).
     *
     * @param {{withScroll: function(function())}} sidebar
     * @param {jQuery} element the answer's message element
     * @param {function(): boolean} regenerate sends the question again
     */
    function offerRegenerate(sidebar, element, regenerate) {
        var button = answerButton("fa-refresh", "answer.regenerate", "answer.regenerateLabel", "ai-sidebar-regenerate")
            .on("click", function (event) {
                event.preventDefault();
                regenerate();
            });
        sidebar.withScroll(function () {
            actionRow(element).append(button);
        });
    }

    /**
     * A Retry button under a failed, cut-off or stopped answer. `retry()` returns whether it started a request
     * (not while another answer streams); the button goes once it did.
     */
    Answer.prototype.offerRetry = function (retry) {
        var self = this;
        var button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-retry"></button>')
            .attr("title", t("answer.retryTooltip"))
            .append($('<i class="fa fa-repeat" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("answer.retry")))
            .on("click", function (event) {
                event.preventDefault();
                if (retry()) {
                    button.remove();
                }
            });
        this.sidebar.withScroll(function () {
            button.appendTo(self.element);
        });
    };

    /** The row of buttons under an answer (Copy, Regenerate), made on first use. */
    function actionRow(element) {
        var row = element.children(".ai-sidebar-answer-actions");
        if (!row.length) {
            row = $('<div class="ai-sidebar-answer-actions"></div>').appendTo(element);
        }
        return row;
    }

    /** A small button with an icon and a word, its longer label as tooltip and accessible name. */
    function answerButton(icon, textKey, labelKey, className) {
        return $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .addClass(className)
            .attr("title", t(labelKey))
            .attr("aria-label", t(labelKey))
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + t(textKey)));
    }

    /** "Copy": the whole answer's Markdown on the clipboard (clipboard.js). */
    function copyAnswerButton(markdown) {
        var button = answerButton("fa-clipboard", "answer.copy", "answer.copyLabel", "ai-sidebar-copy-answer");
        return button.on("click", function (event) {
            event.preventDefault();
            sidebarLib().clipboard.copyText(markdown, button, "answer.copied");
        });
    }

    function stoppedMark() {
        return $('<div class="ai-sidebar-stopped"></div>')
            .attr("title", t("answer.stoppedTooltip"))
            .append($('<i class="fa fa-stop-circle-o"></i>'))
            .append(document.createTextNode(" " + t("answer.stopped")));
    }

    function errorLine(message) {
        return $('<div class="ai-sidebar-error"></div>')
            .append($('<i class="fa fa-exclamation-circle"></i>'))
            .append(document.createTextNode(message));
    }

    /** A labelled, collapsed-with-its-card `<pre>` preview of a tool's parameters or result. */
    function appendSection(card, label, value) {
        var text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
        if (typeof value === "string") {
            try {
                text = JSON.stringify(JSON.parse(value), null, 2);
            } catch {
                // Not JSON: shown as it came.
            }
        }
        if (text.length > RESULT_PREVIEW_CHARS) {
            text = text.slice(0, RESULT_PREVIEW_CHARS) + "\n\u2026";
        }
        var section = $('<div class="ai-sidebar-tool-section"></div>').appendTo(card);
        $('<div class="ai-sidebar-tool-section-label"></div>').text(label).appendTo(section);
        $("<pre></pre>").text(text).appendTo(section);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.Answer = Answer;
    window.NodeRedAiSidebar.offerRegenerate = offerRegenerate;
    window.NodeRedAiSidebar.errorLine = errorLine;
    // For stored-answer.js: the pieces a stored answer is drawn with, as a live one.
    window.NodeRedAiSidebar.answerParts = {
        renderInto: renderInto,
        stoppedMark: stoppedMark,
        actionRow: actionRow,
        copyAnswerButton: copyAnswerButton
    };
}());
