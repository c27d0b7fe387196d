/**
 * `@` and `/` in the sidebar's question input (issue 37), bound to the sidebar (sidebar.js): the suggestion list
 * (autocomplete.js) over what can be mentioned (mention-source.js, fuzzy.js) and the slash commands
 * (slash-commands.js); the mention chips (mention-chips.js), the files pasted or dropped into the input
 * (attachment-chips.js) and what a command does when the question is sent.
 *
 * Editor-only script: registers `NodeRedAiSidebar.ComposerMentions`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /**
     * @param {object} sidebar the AiSidebar (its `input`, `composer`, `recentDebug`, `attachDebug`, `setMode`,
     *     `newChat`, `historyPanel`, `configPicker`, `refreshContext`, `focusInput`, `appendMessage`)
     * @param {jQuery} composer where the chips and the list go (above the input)
     */
    function ComposerMentions(sidebar, composer) {
        var lib = window.NodeRedAiSidebar;
        var self = this;
        this.sidebar = sidebar;
        this.lib = lib;
        this.chips = new lib.mentionChips.MentionChips();
        this.chipList = $('<div class="ai-sidebar-node-chips ai-sidebar-mention-chips" role="list"></div>').hide()
            .appendTo(composer);
        // Files pasted or dropped into the input (attachment-chips.js): chips of their own, after the mentions.
        this.attachments = new lib.attachmentChips.AttachmentChips();
        this.attachmentList = $('<div class="ai-sidebar-node-chips ai-sidebar-attachment-chips" role="list"></div>')
            .hide().appendTo(composer);
        sidebar.input.on("paste", function (event) {
            var data = event.originalEvent && event.originalEvent.clipboardData;
            if (data && data.files && data.files.length) {
                event.preventDefault();  // the file, not its name as text
                self.attachFiles(data.files);
            }
        }).on("dragover", function (event) {
            var data = event.originalEvent && event.originalEvent.dataTransfer;
            if (data && Array.prototype.indexOf.call(data.types || [], "Files") !== -1) {
                event.preventDefault();
            }
        }).on("drop", function (event) {
            var data = event.originalEvent && event.originalEvent.dataTransfer;
            if (data && data.files && data.files.length) {
                event.preventDefault();
                self.attachFiles(data.files);
            }
        });
        this.candidates = [];
        this.templates = [];
        // How long the last ranking of `@` took, in milliseconds (performance.now): the browser test reads it.
        this.lastRankMs = null;
        this.autocomplete = new lib.autocomplete.Autocomplete({
            input: sidebar.input,
            container: composer,
            label: t("mentions.list"),
            empty: t("mentions.none"),
            sources: {
                "@": {
                    open: function () {
                        var open = sidebar.conversation.sessionId;
                        self.candidates = lib.mentionSource.candidates(RED, sidebar.recentDebug,
                            sidebar.sessions.sessions.filter(function (session) {
                                return session.id !== open;
                            }));
                    },
                    items: function (query) {
                        var started = performance.now();
                        var found = lib.fuzzy.rank(query, self.candidates, lib.autocomplete.SHOWN);
                        self.lastRankMs = performance.now() - started;
                        return found.map(function (item) {
                            return $.extend({}, item, { detail: [t("mentions.kind." + item.kind), item.detail]
                                .filter(Boolean).join(" \u00b7 ") });
                        });
                    },
                    choose: function (item, token) {
                        self.mention(item, token);
                    }
                },
                "/": {
                    open: function () {
                        self.loadTemplates();
                    },
                    items: function (query) {
                        return lib.slashCommands.items(query, self.templates, t);
                    },
                    choose: function (row) {
                        self.chooseCommand(row.command);
                    }
                }
            }
        });
    }

    /** Read the user's flow templates (for `/name`); the list shows the built-in commands until they come. */
    ComposerMentions.prototype.loadTemplates = function () {
        var self = this;
        this.lib.adminApi.requestJson("GET", "ai-sidebar/templates").then(function (body) {
            self.templates = self.lib.slashCommands.templateCommands(body && body.templates);
            if (self.autocomplete.isOpen() && self.autocomplete.current.trigger === "/") {
                self.autocomplete.update();
            }
        }, function () {
            self.templates = [];
        });
    };

    /** Take the `@word` out of the input and mention the chosen item: a chip, or an attached debug message. */
    ComposerMentions.prototype.mention = function (item, token) {
        var input = this.sidebar.input;
        var text = input.val();
        var before = text.slice(0, token.start).replace(/\s+$/, "");
        var after = text.slice(token.end).replace(/^\s+/, "");
        var joined = before + (before && after ? " " : "") + after;
        input.val(joined);
        this.sidebar.updateCounter();
        input[0].setSelectionRange(before.length + (before && after ? 1 : 0), before.length + (before && after ? 1 : 0));
        if (item.kind === "debug") {
            this.sidebar.attachDebug(item.debug);
        } else {
            this.chips.add(item);
            this.sidebar.refreshContext();
        }
        input.trigger("focus");
        this.sidebar.keepDraft();
    };

    /**
     * Mention these nodes ("Ask the assistant about this node"): a chip each, the focus in the input.
     *
     * @param {{id: string, type: string, name: string}[]} nodes editor nodes
     */
    ComposerMentions.prototype.mentionNodes = function (nodes) {
        var chips = this.chips;
        var source = this.lib.mentionSource;
        nodes.forEach(function (node) {
            chips.add({ kind: "node", id: node.id, label: source.nodeLabel(node), icon: source.ICONS.node });
        });
        var sidebar = this.sidebar;
        sidebar.refreshContext();
        // After the editor's own handling: the context menu gives the focus back to the canvas once its entry ran
        // (RED.contextMenu's onpostselect: RED.view.focus).
        setTimeout(function () {
            sidebar.focusInput();
        }, 0);
    };

    /** A command chosen from the list: one that takes words is put in the input, the others run now. */
    ComposerMentions.prototype.chooseCommand = function (command) {
        var input = this.sidebar.input;
        if (command.arg || command.template) {
            input.val("/" + command.name + " ");
            this.sidebar.updateCounter();
            var end = input.val().length;
            input[0].setSelectionRange(end, end);
            return;
        }
        input.val("");
        this.sidebar.updateCounter();
        this.run({ command: command, rest: "" });
    };

    /**
     * A question being sent: a slash command runs here.
     *
     * @param {string} message the trimmed question
     * @returns {?string} what to send instead ("" to send nothing), or null when it is no command
     */
    ComposerMentions.prototype.beforeSend = function (message) {
        var parsed = this.lib.slashCommands.parse(message, this.templates);
        if (!parsed) {
            return null;
        }
        return this.run(parsed);
    };

    /** Run a parsed command; returns the question it sends ("" for none). */
    ComposerMentions.prototype.run = function (parsed) {
        var sidebar = this.sidebar;
        var command = parsed.command;
        if (command.mode) {
            sidebar.setMode(command.mode);
        }
        switch (command.action) {
        case "history":
            sidebar.historyPanel.open();
            break;
        case "new":
            sidebar.newChat();
            break;
        case "clear":
            this.chips.clear();
            this.attachments.clear();
            sidebar.debugAttached = [];
            sidebar.input.val("");
            sidebar.updateCounter();
            sidebar.keepDraft();
            sidebar.refreshContext();
            sidebar.focusInput();
            break;
        case "model":
            sidebar.configPicker.select.trigger("focus");
            break;
        case "help":
            this.showHelp();
            break;
        default:
            break;
        }
        return this.lib.slashCommands.question(parsed, t);
    };

    /** The commands and what they do, as a note in the conversation (not sent, not stored). */
    ComposerMentions.prototype.showHelp = function () {
        var lib = this.lib;
        var note = this.sidebar.appendMessage("assistant").addClass("ai-sidebar-slash-help");
        $('<div class="ai-sidebar-text"></div>').text(t("slash.helpIntro")).appendTo(note);
        var list = $("<dl></dl>").appendTo(note);
        lib.slashCommands.items("", this.templates, t).forEach(function (row) {
            $("<dt></dt>").text(row.label).appendTo(list);
            $("<dd></dd>").text(row.detail).appendTo(list);
        });
        this.sidebar.scrollToBottom();
    };

    /**
     * Attach pasted or dropped files: a chip each; one the service does not take, too large or one too many is
     * said in a notification and left out.
     *
     * @param {FileList} files
     * @returns {Promise} settled once every file is read
     */
    ComposerMentions.prototype.attachFiles = function (files) {
        var self = this;
        var chips = this.lib.attachmentChips;
        return Promise.all(Array.prototype.map.call(files, function (file) {
            return chips.read(file, t("attachments.pasted")).then(function (item) {
                var problem = item ? self.attachments.add(item) : "unsupported";
                if (problem) {
                    RED.notify(t("attachments." + problem, { name: file.name || t("attachments.pasted"),
                        count: chips.MAX_ITEMS, megabytes: chips.MAX_BYTES / 1048576 }), "warning");
                }
            }, function () {
                RED.notify(t("attachments.unreadable", { name: file.name || t("attachments.pasted") }), "error");
            });
        })).then(function () {
            self.sidebar.refreshContext();
            self.sidebar.focusInput();
        });
    };

    /** Render the mention chips and the attachment chips. */
    ComposerMentions.prototype.render = function () {
        var sidebar = this.sidebar;
        function changed() {
            sidebar.refreshContext();
        }
        function focusInput() {
            sidebar.focusInput();
        }
        this.chips.render(this.chipList, t, changed, focusInput);
        this.attachments.render(this.attachmentList, t, changed, focusInput);
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.ComposerMentions = ComposerMentions;
}());
