/**
 * The sidebar's Knowledge panel: what the assistant can look up (knowledge.js reads the service's answer), opened
 * from the header's book button over the conversation. It lists the installed nodes' help per module and the
 * workspace per tab, subflow, config nodes and summary, each with its passages and when it was indexed, and
 * offers Reindex (`POST ai-sidebar/knowledge/reindex`) to users with the `ai-sidebar.write` permission the
 * plugin route asks for; a read-only user sees the button disabled and why. Faults show as sentences. Below them,
 * the user's own documents (documents-panel.js).
 *
 * Editor-only script: registers `NodeRedAiSidebar.KnowledgePanel`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var WRITE_PERMISSION = "ai-sidebar.write";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function locale() {
        return RED.i18n && RED.i18n.lang ? RED.i18n.lang() : undefined;
    }

    function age(seconds) {
        return lib().knowledge.formatAge(seconds, Date.now(), locale());
    }

    /** A workspace source's label in this editor: the tab's or subflow's name when it still exists. */
    function entryLabel(entry) {
        if (entry.kind === "module") {
            return entry.version ? entry.name + "@" + entry.version : entry.name;
        }
        if (entry.kind === "tab" || entry.kind === "subflow") {
            var node = entry.kind === "tab" ? RED.nodes.workspace(entry.id) : RED.nodes.subflow(entry.id);
            var name = node ? (entry.kind === "tab" ? node.label : node.name) : "";
            return t("knowledge.source." + entry.kind, { name: name || entry.id });
        }
        return entry.kind === "other" ? entry.name : t("knowledge.source." + entry.kind);
    }

    /**
     * @param {{onOpen: function()}} options `onOpen` runs when the panel opens (the sidebar closes its session
     *     list then)
     */
    function KnowledgePanel(options) {
        var self = this;
        this.options = options || {};
        this.request = null;
        this.reindexing = false;
        this.timer = null;
        this.button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-knowledge-button">' +
            '</button>')
            .attr("aria-label", t("knowledge.open")).attr("aria-expanded", "false")
            .append($('<i class="fa fa-book" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.toggle();
            });
        RED.popover.tooltip(this.button, t("knowledge.open"));
        this.panel = $('<div class="ai-sidebar-knowledge" role="region"></div>').attr("aria-label", t("knowledge.title"))
            .hide();
        var head = $('<div class="ai-sidebar-knowledge-head"></div>').appendTo(this.panel);
        $('<div class="ai-sidebar-knowledge-title"></div>').text(t("knowledge.title")).appendTo(head);
        this.reindexButton = $('<button type="button" class="red-ui-button red-ui-button-small ' +
            'ai-sidebar-knowledge-reindex"></button>')
            .append($('<i class="fa fa-refresh" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("knowledge.reindex")))
            .on("click", function (event) {
                event.preventDefault();
                self.reindex();
            })
            .appendTo(head);
        $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-knowledge-close"></button>')
            .attr("aria-label", t("knowledge.close")).attr("title", t("knowledge.close"))
            .append($('<i class="fa fa-times" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.close();
            })
            .appendTo(head);
        this.permissionNote = $('<div class="ai-sidebar-note ai-sidebar-knowledge-readonly"></div>')
            .text(t("knowledge.readOnly")).hide().appendTo(this.panel);
        this.status = $('<div class="ai-sidebar-knowledge-status" role="status" aria-live="polite" tabindex="-1">' +
            '</div>')
            .appendTo(this.panel);
        this.body = $('<div class="ai-sidebar-knowledge-body"></div>').appendTo(this.panel);
        // The third store, the user's own documents (documents-panel.js): kept apart from the index's body, which
        // each load replaces.
        this.documents = new (lib().DocumentsSection)();
        this.documents.element.appendTo(this.panel);
    }

    KnowledgePanel.prototype.isOpen = function () {
        return this.panel.is(":visible");
    };

    KnowledgePanel.prototype.toggle = function () {
        if (this.isOpen()) {
            this.close();
        } else {
            this.open();
        }
    };

    KnowledgePanel.prototype.open = function () {
        if (this.options.onOpen) {
            this.options.onOpen();
        }
        var mayWrite = RED.user.hasPermission(WRITE_PERMISSION);
        this.reindexButton.prop("disabled", !mayWrite || this.reindexing)
            .attr("title", mayWrite ? t("knowledge.reindexTooltip") : t("knowledge.readOnly"));
        this.permissionNote.toggle(!mayWrite);
        this.panel.show();
        this.button.attr("aria-expanded", "true").addClass("selected");
        // Escape closes it wherever the focus is (a button disabled while it ran drops the focus to the page);
        // namespaced, so close() removes exactly this handler.
        var self = this;
        $(document).off(".aiSidebarKnowledge").on("keydown.aiSidebarKnowledge", function (event) {
            if (event.key === "Escape") {
                var inside = $(event.target).closest(self.panel).length;
                self.close();
                if (inside || event.target === document.body) {
                    self.button.trigger("focus");
                }
            }
        });
        this.panel.find(".ai-sidebar-knowledge-close").trigger("focus");
        return Promise.all([this.load(), this.documents.load()]);
    };

    KnowledgePanel.prototype.close = function () {
        $(document).off(".aiSidebarKnowledge");
        this.panel.hide();
        this.button.attr("aria-expanded", "false").removeClass("selected");
    };

    KnowledgePanel.prototype.load = function () {
        var self = this;
        var request = {};
        this.request = request;
        if (!this.reindexing) {
            this.showStatus(t("knowledge.loading"), "loading");
        }
        return lib().adminApi.requestJson("GET", "ai-sidebar/knowledge").then(function (body) {
            if (self.request === request) {
                self.show(body);
                if (!self.reindexing) {
                    self.showStatus(null);
                }
            }
        }, function (err) {
            if (self.request === request) {
                self.body.empty();
                self.showStatus(t("knowledge.loadFailed", { message: err.message }), "error");
            }
        });
    };

    /** The status line: `kind` "loading"/"running" (a spinner), "error", "done", or null to clear it. */
    KnowledgePanel.prototype.showStatus = function (text, kind) {
        this.status.empty().attr("data-kind", kind || "").toggleClass("ai-sidebar-error", kind === "error");
        if (!text) {
            return;
        }
        var icon = { loading: "fa-circle-o-notch fa-spin", running: "fa-circle-o-notch fa-spin",
            error: "fa-exclamation-circle", done: "fa-check" }[kind];
        if (icon) {
            this.status.append($('<i aria-hidden="true"></i>').addClass("fa " + icon)).append(" ");
        }
        this.status.append($('<span class="ai-sidebar-knowledge-status-text"></span>').text(text));
    };

    KnowledgePanel.prototype.show = function (body) {
        var view = lib().knowledge.knowledgeView(body);
        this.body.empty();
        if (!view.available) {
            $('<div class="ai-sidebar-note"></div>').text(t("knowledge.unavailable")).appendTo(this.body);
            return;
        }
        var freshness = $('<div class="ai-sidebar-knowledge-freshness"></div>').appendTo(this.body);
        freshness.text(view.refreshedAt ? t("knowledge.refreshedAt", { age: age(view.refreshedAt) }) :
            t("knowledge.neverRefreshed"));
        if (view.refreshInterval) {
            freshness.append(document.createTextNode(" " + t("knowledge.every", { count: view.refreshInterval })));
        } else if (view.refreshInterval === 0) {
            freshness.append(document.createTextNode(" " + t("knowledge.manual")));
        }
        if (view.lastError) {
            $('<div class="ai-sidebar-error ai-sidebar-knowledge-last-error"></div>')
                .text(t("knowledge.lastError", { message: view.lastError })).appendTo(this.body);
        }
        var self = this;
        view.stores.forEach(function (store) {
            self.storeSection(store).appendTo(self.body);
        });
    };

    KnowledgePanel.prototype.storeSection = function (store) {
        var section = $('<details class="ai-sidebar-knowledge-store"></details>').attr("data-store", store.store);
        var summary = $("<summary></summary>").appendTo(section);
        $('<span class="ai-sidebar-knowledge-store-name"></span>').text(t("knowledge.store." + store.store))
            .appendTo(summary);
        var counts = t("knowledge.sources", { count: store.sources }) + " \u00b7 " +
            t("knowledge.chunks", { count: store.chunks });
        if (store.indexedAt) {
            counts += " \u00b7 " + t("knowledge.indexedAt", { age: age(store.indexedAt) });
        }
        $('<span class="ai-sidebar-knowledge-counts"></span>').text(counts).appendTo(summary);
        if (!store.entries.length) {
            $('<div class="ai-sidebar-note"></div>').text(t("knowledge.empty")).appendTo(section);
            return section;
        }
        var list = $('<ul class="ai-sidebar-knowledge-sources"></ul>').appendTo(section);
        var languages = store.languages.length > 1;
        store.entries.forEach(function (entry) {
            var item = $("<li></li>").attr("data-kind", entry.kind).appendTo(list);
            $('<span class="ai-sidebar-knowledge-source"></span>').text(entryLabel(entry) +
                (languages && entry.language ? " (" + entry.language + ")" : "")).appendTo(item);
            var detail = t("knowledge.chunks", { count: entry.chunks });
            if (entry.indexedAt) {
                detail += " \u00b7 " + age(entry.indexedAt);
            }
            $('<span class="ai-sidebar-knowledge-source-detail"></span>').text(detail).appendTo(item);
        });
        return section;
    };

    /** Reindex now: the button waits (with the time it runs) until the service has read everything again. */
    KnowledgePanel.prototype.reindex = function () {
        var self = this;
        if (this.reindexing) {
            return Promise.resolve();
        }
        this.reindexing = true;
        // A disabled button drops the focus to the page (and Escape would no longer reach the panel): the status
        // line holds it while the reindex runs, and the button gets it back.
        var hadFocus = this.reindexButton.is(":focus");
        this.reindexButton.prop("disabled", true);
        if (hadFocus) {
            this.status.trigger("focus");
        }
        var started = Date.now();
        var tick = function () {
            self.showStatus(t("knowledge.reindexing", { seconds: Math.floor((Date.now() - started) / 1000) }),
                "running");
        };
        tick();
        this.timer = setInterval(tick, 1000);
        this.request = null;
        return lib().adminApi.requestJson("POST", "ai-sidebar/knowledge/reindex", {}).then(function (body) {
            self.show(body);
            self.showStatus(t("knowledge.reindexed", lib().knowledge.reindexCounts(body)), "done");
        }, function (err) {
            self.showStatus(t("knowledge.reindexFailed", { message: err.message }), "error");
        }).then(function () {
            clearInterval(self.timer);
            self.timer = null;
            self.reindexing = false;
            self.reindexButton.prop("disabled", !RED.user.hasPermission(WRITE_PERMISSION));
            if (hadFocus && self.status.is(":focus")) {
                self.reindexButton.trigger("focus");
            }
        });
    };

    KnowledgePanel.prototype.destroy = function () {
        $(document).off(".aiSidebarKnowledge");
        if (this.timer) {
            clearInterval(this.timer);
            this.timer = null;
        }
        this.request = null;
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.KnowledgePanel = KnowledgePanel;
}());
