/**
 * The sidebar's session picker: a header button naming the current conversation and a drawer listing the
 * user's saved sessions (pinned first), where each can be opened, renamed, pinned or deleted.
 *
 * Editor-only script: registers `NodeRedAiSidebar.SessionPicker`. Sessions live in the service
 * (`ai-sidebar/sessions`, scoped to the Node-RED user); a chat with a new session id saves it there, named after
 * its first question, so a fresh conversation appears in the list after its first answer.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function api() {
        return window.NodeRedAiSidebar.adminApi;
    }

    function sessionPath(id) {
        return "ai-sidebar/sessions/" + encodeURIComponent(id);
    }

    /** A short local date and time for a session's last change (the service sends epoch seconds). */
    function formatTime(seconds) {
        if (typeof seconds !== "number") {
            return "";
        }
        try {
            return new Date(seconds * 1000).toLocaleString(RED.i18n.lang(), {
                dateStyle: "short", timeStyle: "short"
            });
        } catch {
            return new Date(seconds * 1000).toLocaleString();
        }
    }

    function iconButton(icon, title, className) {
        var button = $('<button type="button" class="red-ui-button red-ui-button-small"></button>')
            .addClass(className)
            .attr("title", title)
            .attr("aria-label", title)
            .append($("<i></i>").addClass("fa " + icon));
        return button;
    }

    /**
     * A row's main part, which opens its conversation: a button for the keyboard too (Tab reaches it, Enter or Space
     * opens), marked `aria-current` for the conversation shown. Its click handler is the caller's.
     */
    function openButton(isCurrent) {
        var main = $('<div class="ai-sidebar-session-main" role="button" tabindex="0"></div>')
            .on("keydown", function (event) {
                if ((event.key === "Enter" || event.key === " ") && !$(event.target).is("input")) {
                    event.preventDefault();
                    main.trigger("click");
                }
            });
        if (isCurrent) {
            main.attr("aria-current", "true");
        }
        return main;
    }

    /**
     * @param {object} options
     * @param {function(): string} options.currentId the session the sidebar shows
     * @param {function(string, object=)} options.onSelect open another saved session (at a search hit, searchHits.rows)
     * @param {function(string)} options.onDeleted a session was deleted (the sidebar moves on if it was open)
     * @param {function(Error)} options.onError report a failed request (e.g. the service is down)
     * @param {function()} options.onSuccess a request worked (the service is reachable)
     * @param {function()} [options.onLoaded] the list was read again (after `onSuccess`)
     */
    function SessionPicker(options) {
        var self = this;
        this.options = options;
        this.sessions = [];
        this.loaded = false;

        this.button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-session-button">' +
            '</button>')
            .attr("title", t("session.listTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                self.toggle();
            });
        $('<i class="fa fa-comments-o"></i>').appendTo(this.button);
        this.buttonPin = $('<i class="fa fa-thumb-tack ai-sidebar-session-pin-mark"></i>')
            .attr("title", t("session.pinned")).hide().appendTo(this.button);
        this.buttonLabel = $('<span class="ai-sidebar-session-name"></span>').appendTo(this.button);
        $('<i class="fa fa-caret-down"></i>').appendTo(this.button);

        // A group of rows, not a listbox: a row holds buttons of its own (pin, rename, delete) besides the one that
        // opens it, which a listbox's options may not (axe-core: nested-interactive, aria-required-children).
        this.drawer = $('<div class="ai-sidebar-sessions" role="group"></div>').hide()
            .attr("aria-label", t("session.listTooltip"))
            .on("keydown", function (event) {
                if (event.key === "Escape") {
                    event.stopPropagation();
                    self.close();
                    self.button.trigger("focus");
                }
            });
        // Search by text (POST ai-sidebar/search): while it holds a query, the list shows the matching
        // conversations, each opening at its matching message (`onSelect(id, hit)`).
        this.query = "";
        this.searchTimer = null;
        this.searchInput = $('<input type="search" class="ai-sidebar-session-search">')
            .attr("placeholder", t("session.search")).attr("aria-label", t("session.search"))
            .on("input", function () {
                self.scheduleSearch(String(self.searchInput.val()));
            })
            .on("keydown", function (event) {
                // Keys typed here belong to the field, not to the editor's shortcuts; Escape still closes the list.
                if (event.key !== "Escape") {
                    event.stopPropagation();
                }
            })
            .appendTo(this.drawer);
        this.list = $('<div class="ai-sidebar-session-list"></div>').appendTo(this.drawer);
        this.updateButton();
    }

    /** Search a moment after the last key; a query without a word of 3 characters shows the whole list. */
    SessionPicker.prototype.scheduleSearch = function (query) {
        var self = this;
        clearTimeout(this.searchTimer);
        this.query = query.trim();
        if (!window.NodeRedAiSidebar.searchHits.searchable(this.query)) {
            this.query = "";
            this.render();
            return;
        }
        // Rows of an earlier query would read as this one's answer.
        this.list.empty();
        this.searchTimer = setTimeout(function () {
            self.search(self.query);
        }, 250);
    };

    /** Ask the service for conversations holding `query` and list them (or say none does, or why it failed). */
    SessionPicker.prototype.search = function (query) {
        var self = this;
        var searchHits = window.NodeRedAiSidebar.searchHits;
        return api().requestJson("POST", "ai-sidebar/search", { query: query, category: "message", limit: 50 })
            .then(function (body) {
                if (self.query !== query) {
                    return;
                }
                self.options.onSuccess();
                self.renderResults(query, searchHits.rows(body));
            }).catch(function (err) {
                if (self.query !== query) {
                    return;
                }
                self.options.onError(err);
                self.list.empty().append($('<div class="ai-sidebar-error" role="alert"></div>')
                    .append($('<i class="fa fa-exclamation-circle"></i>'))
                    .append(document.createTextNode(t("session.searchFailed", { message: err.message }))));
            });
    };

    SessionPicker.prototype.renderResults = function (query, rows) {
        var self = this;
        var names = {};
        this.sessions.forEach(function (session) {
            names[session.id] = session.name;
        });
        this.list.empty();
        if (!rows.length) {
            $('<div class="ai-sidebar-note" role="status"></div>').text(t("session.noMatch", { query: query }))
                .appendTo(this.list);
            return;
        }
        var currentId = this.options.currentId();
        rows.forEach(function (hit) {
            var row = $('<div class="ai-sidebar-session ai-sidebar-session-hit"></div>')
                .attr("data-session-id", hit.sessionId)
                .toggleClass("ai-sidebar-session-current", hit.sessionId === currentId);
            var main = openButton(hit.sessionId === currentId).appendTo(row);
            $('<div class="ai-sidebar-session-title"></div>')
                .append($('<span class="ai-sidebar-session-label"></span>')
                    .text(names[hit.sessionId] || t("session.untitled")))
                .appendTo(main);
            var snippet = $('<div class="ai-sidebar-session-meta ai-sidebar-session-snippet"></div>').appendTo(main);
            hit.parts.forEach(function (part) {
                snippet.append(part.mark ? $("<mark></mark>").text(part.text) : document.createTextNode(part.text));
            });
            main.on("click", function () {
                self.close();
                self.options.onSelect(hit.sessionId, hit);
            });
            row.appendTo(self.list);
        });
    };

    SessionPicker.prototype.isOpen = function () {
        return this.drawer.is(":visible");
    };

    SessionPicker.prototype.toggle = function () {
        if (this.isOpen()) {
            this.close();
        } else {
            this.open();
        }
    };

    SessionPicker.prototype.open = function () {
        var self = this;
        this.button.addClass("selected");
        this.render();
        this.drawer.show();
        // Drawn from the sessions known so far, then again once fetched: the list says when (``data-loaded``).
        this.list.removeAttr("data-loaded");
        this.load();
        // Escape anywhere, or a click outside the list and its button, closes it (namespaced: removed on close).
        $(document).off(".aiSidebarSessions")
            .on("mousedown.aiSidebarSessions", function (event) {
                if (!$(event.target).closest(self.drawer.add(self.button)).length) {
                    self.close();
                }
            })
            .on("keydown.aiSidebarSessions", function (event) {
                if (event.key === "Escape" && !$(event.target).closest(self.drawer).length) {
                    self.close();
                }
            });
    };

    SessionPicker.prototype.close = function () {
        $(document).off(".aiSidebarSessions");
        this.button.removeClass("selected");
        this.drawer.hide();
        // Closing the list cancels a delete it was asking to confirm; a reload deferred for it is drawn now.
        this.list.find(".ai-sidebar-session-confirm").remove();
        if (this.renderDeferred) {
            this.render();
        }
    };

    /** The current session as the service lists it, or null while it is not saved yet. */
    SessionPicker.prototype.current = function () {
        var id = this.options.currentId();
        for (var i = 0; i < this.sessions.length; i++) {
            if (this.sessions[i].id === id) {
                return this.sessions[i];
            }
        }
        return null;
    };

    /**
     * Fetch the user's sessions and redraw.
     *
     * @returns {Promise<boolean>} whether the list was loaded
     */
    SessionPicker.prototype.load = function () {
        var self = this;
        return api().requestJson("GET", "ai-sidebar/sessions").then(function (body) {
            self.sessions = Array.isArray(body && body.sessions) ? body.sessions : [];
            self.loaded = true;
            self.options.onSuccess();
            self.render();
            self.list.attr("data-loaded", "true");
            if (self.options.onLoaded) {
                self.options.onLoaded();
            }
            return true;
        }).catch(function (err) {
            self.options.onError(err);
            self.render(err);
            self.list.attr("data-loaded", "true");
            return false;
        });
    };

    SessionPicker.prototype.updateButton = function () {
        var session = this.current();
        var name = session && session.name;
        // A conversation without a name yet is not called "New chat" here: that is the button beside this one.
        this.buttonLabel.text(name || t("session.listTooltip"));
        this.button.attr("title", t("session.listTooltip") + (name ? "\n" + name : ""));
        this.buttonPin.toggle(!!(session && session.pinned));
    };

    SessionPicker.prototype.render = function (loadError) {
        var self = this;
        this.updateButton();
        if (this.query) {
            // The search's rows stay until the query changes.
            return;
        }
        if (this.list.find(".ai-sidebar-session-confirm, .ai-sidebar-session-editing").length) {
            // A reload in the background (after an answer, or when the service is back) must not wipe a delete
            // confirmation or a rename the user is in: the list is redrawn when that closes.
            this.renderDeferred = true;
            return;
        }
        this.renderDeferred = false;
        this.list.empty();
        var currentId = this.options.currentId();
        if (!this.current()) {
            // The open conversation has no saved turn yet; it is listed so the user sees where they are.
            $('<div class="ai-sidebar-session ai-sidebar-session-current ai-sidebar-session-unsaved"></div>')
                .append(openButton(true)
                    .append($('<div class="ai-sidebar-session-title"></div>').text(t("session.untitled")))
                    .append($('<div class="ai-sidebar-session-meta"></div>').text(t("session.unsaved"))))
                .on("click", function () {
                    self.close();
                })
                .appendTo(this.list);
        }
        this.sessions.forEach(function (session) {
            self.renderRow(session, session.id === currentId).appendTo(self.list);
        });
        if (loadError) {
            $('<div class="ai-sidebar-error"></div>')
                .append($('<i class="fa fa-exclamation-circle"></i>'))
                .append(document.createTextNode(t("session.loadFailed", { message: loadError.message })))
                .appendTo(this.list);
        } else if (this.loaded && !this.sessions.length) {
            $('<div class="ai-sidebar-note"></div>').text(t("session.none")).appendTo(this.list);
        }
    };

    SessionPicker.prototype.renderRow = function (session, isCurrent) {
        var self = this;
        var row = $('<div class="ai-sidebar-session"></div>')
            .attr("data-session-id", session.id)
            .toggleClass("ai-sidebar-session-current", isCurrent)
            .toggleClass("ai-sidebar-session-pinned", !!session.pinned);
        var main = openButton(isCurrent).appendTo(row);
        var title = $('<div class="ai-sidebar-session-title"></div>').appendTo(main);
        if (session.pinned) {
            $('<i class="fa fa-thumb-tack ai-sidebar-session-pin-mark"></i>').attr("title", t("session.pinned"))
                .appendTo(title);
        }
        $('<span class="ai-sidebar-session-label"></span>').text(session.name || t("session.untitled"))
            .appendTo(title);
        $('<div class="ai-sidebar-session-meta"></div>')
            .text(t("session.meta", { count: session.messages || 0, time: formatTime(session.updatedAt) }))
            .appendTo(main);
        main.on("click", function () {
            if (!row.hasClass("ai-sidebar-session-editing")) {
                self.close();
                if (!isCurrent) {
                    self.options.onSelect(session.id);
                }
            }
        });

        // Renaming, pinning and deleting change what the service stores: routes behind ai-sidebar.write, which a
        // read-only editor user does not have.
        if (!RED.user.hasPermission("ai-sidebar.write")) {
            return row;
        }
        var tools = $('<div class="ai-sidebar-session-tools"></div>').appendTo(row);
        iconButton("fa-thumb-tack", t(session.pinned ? "session.unpin" : "session.pin"), "ai-sidebar-session-pin")
            .toggleClass("selected", !!session.pinned)
            .on("click", function (event) {
                event.preventDefault();
                self.update(session, { pinned: !session.pinned });
            })
            .appendTo(tools);
        iconButton("fa-pencil", t("session.rename"), "ai-sidebar-session-rename")
            .on("click", function (event) {
                event.preventDefault();
                self.startRename(row, session);
            })
            .appendTo(tools);
        iconButton("fa-trash", t("session.delete"), "ai-sidebar-session-delete")
            .on("click", function (event) {
                event.preventDefault();
                self.confirmDelete(row, session);
            })
            .appendTo(tools);
        return row;
    };

    SessionPicker.prototype.startRename = function (row, session) {
        var self = this;
        var title = row.find(".ai-sidebar-session-title");
        var finished = false;
        row.addClass("ai-sidebar-session-editing");
        // While it holds the name field the row's main part is no button (a button holds no field).
        row.find(".ai-sidebar-session-main").removeAttr("role tabindex");
        var input = $('<input type="text" class="ai-sidebar-session-input" maxlength="200">')
            .val(session.name || "")
            .attr("aria-label", t("session.rename"));
        function finish(save) {
            if (finished) {
                return;
            }
            finished = true;
            row.removeClass("ai-sidebar-session-editing");
            var name = String(input.val()).trim();
            if (save && name && name !== session.name) {
                self.update(session, { name: name });
            } else {
                self.render();
            }
        }
        input.on("keydown", function (event) {
            // Keys typed here belong to the field, not to the editor's shortcuts or the drawer.
            event.stopPropagation();
            if (event.key === "Enter" && !event.originalEvent.isComposing) {
                event.preventDefault();
                finish(true);
            } else if (event.key === "Escape") {
                event.preventDefault();
                finish(false);
            }
        }).on("blur", function () {
            finish(true);
        });
        title.empty().append(input);
        input.trigger("focus").trigger("select");
    };

    SessionPicker.prototype.confirmDelete = function (row, session) {
        var self = this;
        row.find(".ai-sidebar-session-confirm").remove();
        var confirm = $('<div class="ai-sidebar-session-confirm"></div>').appendTo(row);
        $("<span></span>").text(t("session.confirmDelete")).appendTo(confirm);
        $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-session-cancel"></button>')
            .text(t("session.cancel"))
            .on("click", function (event) {
                event.preventDefault();
                confirm.remove();
                if (self.renderDeferred) {
                    self.render();
                }
            })
            .appendTo(confirm);
        $('<button type="button" class="red-ui-button red-ui-button-small primary ai-sidebar-session-confirm-delete">' +
            '</button>')
            .text(t("session.delete"))
            .on("click", function (event) {
                event.preventDefault();
                confirm.remove();
                self.remove(session);
            })
            .appendTo(confirm)
            .trigger("focus");
    };

    SessionPicker.prototype.update = function (session, changes) {
        var self = this;
        return api().requestJson("PATCH", sessionPath(session.id), changes).then(function () {
            self.options.onSuccess();
            return self.load();
        }).catch(function (err) {
            self.options.onError(err);
            RED.notify($("<p></p>").text(t("session.updateFailed", { message: err.message })), "error");
            self.render();
        });
    };

    SessionPicker.prototype.remove = function (session) {
        var self = this;
        return api().requestJson("DELETE", sessionPath(session.id)).catch(function (err) {
            // Already gone (deleted in another editor window): the list is what needs fixing.
            if (err.status !== 404) {
                throw err;
            }
        }).then(function () {
            self.options.onSuccess();
            self.sessions = self.sessions.filter(function (s) {
                return s.id !== session.id;
            });
            self.render();
            self.options.onDeleted(session.id);
        }).catch(function (err) {
            self.options.onError(err);
            RED.notify($("<p></p>").text(t("session.deleteFailed", { message: err.message })), "error");
            self.render();
        });
    };

    /** The saved session to show after the open one was deleted: the first one left, or null. */
    SessionPicker.prototype.next = function () {
        return this.sessions.length ? this.sessions[0].id : null;
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.SessionPicker = SessionPicker;
}());
