/**
 * The sidebar's History panel (issue 35): every deploy the service kept (history.js reads the routes' answers),
 * opened from the header's clock button over the conversation like the Knowledge panel. Each deploy shows when,
 * who, whether the assistant or an editor made it and how many objects changed; "Changes" shows its diff against
 * the deploy before it and "Compare with now" against the flows deployed now, per tab and node. Users with the
 * `ai-sidebar.write` permission restore a whole deploy, a tab or a node through the chat (the approval card, then
 * the editor, undeployed); users with `flows.write` pin a deploy (`PATCH ai-sidebar/flow-history/<rev>`).
 *
 * Editor-only script: registers `NodeRedAiSidebar.HistoryPanel`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var RESTORE_PERMISSION = "ai-sidebar.write";
    var PIN_PERMISSION = "flows.write";
    var ORIGIN_ICONS = { assistant: "fa-magic", editor: "fa-user", api: "fa-plug" };
    // Node-RED tells every editor of each deploy (any editor's, the Admin API's, the assistant's) on this comms
    // topic with `{revision}` (@node-red/runtime lib/api/comms.js; the editor's own deploy.js listens to it too).
    var DEPLOY_TOPIC = "notification/runtime-deploy";
    // The service captures a deploy after the same notice (its own comms connection, then GET /flows): the open
    // panel reads its first page again until the new rev is listed, at most REFRESH_TRIES times, waiting
    // REFRESH_DELAY ms longer before each read (about 9 s in all).
    var REFRESH_TRIES = 8;
    var REFRESH_DELAY = 250;

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function history() {
        return window.NodeRedAiSidebar.history;
    }

    function api() {
        return window.NodeRedAiSidebar.adminApi;
    }

    function locale() {
        return RED.i18n && RED.i18n.lang ? RED.i18n.lang() : undefined;
    }

    /** The editor's name for a node, tab or subflow id, or null when the editor has none. */
    function nameOf(id) {
        var node = RED.nodes.node(id) || RED.nodes.workspace(id) || RED.nodes.subflow(id);
        if (!node) {
            return null;
        }
        return node.type === "tab" ? node.label || null : node.name || null;
    }

    function smallButton(icon, label, className) {
        var button = $('<button type="button" class="red-ui-button red-ui-button-small"></button>').addClass(className);
        $('<i aria-hidden="true"></i>').addClass("fa " + icon).appendTo(button);
        if (label) {
            button.append(document.createTextNode(" " + label));
        }
        return button;
    }

    /**
     * @param {{onOpen: function(), onRestore: function(string, string): boolean}} options `onOpen` runs when the
     *     panel opens (the sidebar closes its other panels); `onRestore(message, display)` sends the restore's chat
     *     message (a direct trigger) shown and kept as `display` (e.g. "Restore flow “Alpha” to 12/2/26, 10:42
     *     AM") and says whether it went out (not while an answer streams)
     */
    function HistoryPanel(options) {
        var self = this;
        this.options = options || {};
        this.deploys = [];
        this.request = null;
        this.button = smallButton("fa-history", null, "ai-sidebar-history-button")
            .attr("aria-label", t("flowHistory.open")).attr("aria-expanded", "false")
            .on("click", function (event) {
                event.preventDefault();
                self.toggle();
            });
        RED.popover.tooltip(this.button, t("flowHistory.open"));
        this.panel = $('<div class="ai-sidebar-history" role="region"></div>').attr("aria-label", t("flowHistory.title"))
            .hide();
        var head = $('<div class="ai-sidebar-history-head"></div>').appendTo(this.panel);
        $('<div class="ai-sidebar-history-title"></div>').text(t("flowHistory.title")).appendTo(head);
        smallButton("fa-refresh", null, "ai-sidebar-history-reload")
            .attr("aria-label", t("flowHistory.reload")).attr("title", t("flowHistory.reload"))
            .on("click", function (event) {
                event.preventDefault();
                self.load();
            })
            .appendTo(head);
        smallButton("fa-times", null, "ai-sidebar-history-close")
            .attr("aria-label", t("flowHistory.close")).attr("title", t("flowHistory.close"))
            .on("click", function (event) {
                event.preventDefault();
                self.close();
            })
            .appendTo(head);
        this.project = $('<div class="ai-sidebar-history-project"></div>').hide().appendTo(this.panel);
        this.status = $('<div class="ai-sidebar-history-status" role="status" aria-live="polite"></div>')
            .appendTo(this.panel);
        this.list = $('<ol class="ai-sidebar-history-list"></ol>').appendTo(this.panel);
        this.more = smallButton("fa-angle-double-down", t("flowHistory.more"), "ai-sidebar-history-more").hide()
            .on("click", function (event) {
                event.preventDefault();
                self.loadMore();
            })
            .appendTo(this.panel);
        this.awaited = null;
        this.refreshTimer = null;
        this.onDeploy = function (topic, message) {
            self.deployed(message && message.revision);
        };
        RED.comms.subscribe(DEPLOY_TOPIC, this.onDeploy);
    }

    HistoryPanel.prototype.isOpen = function () {
        return this.panel.is(":visible");
    };

    HistoryPanel.prototype.toggle = function () {
        if (this.isOpen()) {
            this.close();
        } else {
            this.open();
        }
    };

    HistoryPanel.prototype.open = function () {
        var self = this;
        if (this.options.onOpen) {
            this.options.onOpen();
        }
        this.panel.show();
        this.button.attr("aria-expanded", "true").addClass("selected");
        $(document).off(".aiSidebarHistory").on("keydown.aiSidebarHistory", function (event) {
            if (event.key === "Escape") {
                var inside = $(event.target).closest(self.panel).length;
                self.close();
                if (inside || event.target === document.body) {
                    self.button.trigger("focus");
                }
            }
        });
        this.panel.find(".ai-sidebar-history-close").trigger("focus");
        return this.load();
    };

    HistoryPanel.prototype.close = function () {
        $(document).off(".aiSidebarHistory");
        this.stopRefresh();
        this.panel.hide();
        this.button.attr("aria-expanded", "false").removeClass("selected");
    };

    /** The status line: `kind` "loading" (a spinner), "error", or null to clear it. */
    HistoryPanel.prototype.showStatus = function (text, kind) {
        this.status.empty().attr("data-kind", kind || "").toggleClass("ai-sidebar-error", kind === "error");
        if (!text) {
            return;
        }
        if (kind === "loading") {
            this.status.append($('<i class="fa fa-circle-o-notch fa-spin" aria-hidden="true"></i>')).append(" ");
        }
        this.status.append($("<span></span>").text(text));
    };

    /** A failed request's sentence: the history being off or unreadable is said in the user's language. */
    function failure(err) {
        return history().unavailable(err) ? t("flowHistory.unavailable") : t("flowHistory.loadFailed", { message: err.message });
    }

    /** Read the newest page of deploys again. */
    HistoryPanel.prototype.load = function () {
        this.deploys = [];
        this.list.empty();
        this.more.hide();
        return this.fetchPage(null);
    };

    /** Whether deploy `rev` is listed. */
    HistoryPanel.prototype.lists = function (rev) {
        return this.deploys.some(function (deploy) {
            return String(deploy.rev) === rev;
        });
    };

    /** Node-RED deployed `rev`: while the panel is open, read the list again until the service captured it. */
    HistoryPanel.prototype.deployed = function (rev) {
        if (typeof rev !== "string" || !rev || !this.isOpen() || this.lists(rev)) {
            return;
        }
        this.awaited = { rev: rev, tries: 0 };
        this.refreshSoon();
    };

    HistoryPanel.prototype.refreshSoon = function () {
        var self = this;
        var awaited = this.awaited;
        clearTimeout(this.refreshTimer);
        this.refreshTimer = setTimeout(function () {
            if (self.awaited !== awaited) {
                return;
            }
            self.load().then(function () {
                if (self.awaited !== awaited) {
                    return;
                }
                awaited.tries += 1;
                if (self.lists(awaited.rev) || awaited.tries >= REFRESH_TRIES) {
                    self.awaited = null;
                } else {
                    self.refreshSoon();
                }
            });
        }, REFRESH_DELAY * (awaited.tries + 1));
    };

    HistoryPanel.prototype.stopRefresh = function () {
        clearTimeout(this.refreshTimer);
        this.refreshTimer = null;
        this.awaited = null;
    };

    /** Read the page of deploys older than the last one shown. */
    HistoryPanel.prototype.loadMore = function () {
        var last = this.deploys[this.deploys.length - 1];
        return last ? this.fetchPage(last.time) : Promise.resolve();
    };

    HistoryPanel.prototype.fetchPage = function (before) {
        var self = this;
        var request = {};
        this.request = request;
        this.showStatus(t("flowHistory.loading"), "loading");
        return api().requestJson("GET", history().listPath(before)).then(function (body) {
            if (self.request !== request) {
                return;
            }
            if (!before) {
                window.NodeRedAiSidebar.historyProject.render(self.project, body.project, locale());
            }
            var page = Array.isArray(body.deploys) ? body.deploys : [];
            var start = self.deploys.length;
            self.deploys = self.deploys.concat(page);
            self.showStatus(self.deploys.length ? null : t("flowHistory.empty"), null);
            page.forEach(function (deploy, offset) {
                self.row(start + offset).appendTo(self.list);
            });
            self.more.toggle(page.length === history().PAGE_SIZE);
        }, function (err) {
            if (self.request === request) {
                self.more.hide();
                self.showStatus(failure(err), "error");
            }
        });
    };

    /** One deploy's row: when, who, what kind, counts; Changes, Compare with now, Pin, Restore this deploy. */
    HistoryPanel.prototype.row = function (index) {
        var self = this;
        var deploy = history().deployRow(this.deploys[index], locale());
        var item = $('<li class="ai-sidebar-history-deploy"></li>').attr("data-rev", deploy.rev)
            .attr("data-origin", deploy.origin);
        var line = $('<div class="ai-sidebar-history-when"></div>').appendTo(item);
        $('<i aria-hidden="true"></i>').addClass("fa " + ORIGIN_ICONS[deploy.origin]).appendTo(line);
        $('<time class="ai-sidebar-history-time"></time>').attr("datetime", deploy.time).text(deploy.when).appendTo(line);
        var who = t("flowHistory.origin." + deploy.origin) + (deploy.user ? " · " + deploy.user : "");
        $('<div class="ai-sidebar-history-who"></div>').text(who).appendTo(item);
        $('<div class="ai-sidebar-history-counts"></div>').toggleClass("ai-sidebar-history-first", deploy.first)
            .text(deploy.first ? t("flowHistory.startsHere") : t("flowHistory.counts", deploy.counts)).appendTo(item);
        if (deploy.summary) {
            $('<div class="ai-sidebar-history-summary"></div>').text(deploy.summary).appendTo(item);
        }
        var buttons = $('<div class="ai-sidebar-history-buttons"></div>').appendTo(item);
        var diff = $('<div class="ai-sidebar-history-diff"></div>').hide();
        smallButton("fa-exchange", t("flowHistory.changes"), "ai-sidebar-history-changes")
            .attr("aria-expanded", "false")
            .on("click", function (event) {
                event.preventDefault();
                self.toggleDiff(index, false, $(this), diff);
            })
            .appendTo(buttons);
        smallButton("fa-clock-o", t("flowHistory.compareNow"), "ai-sidebar-history-compare")
            .attr("aria-expanded", "false")
            .on("click", function (event) {
                event.preventDefault();
                self.toggleDiff(index, true, $(this), diff);
            })
            .appendTo(buttons);
        if (RED.user.hasPermission(PIN_PERMISSION)) {
            this.pinButton(deploy).appendTo(buttons);
        }
        diff.appendTo(item);
        return item;
    };

    HistoryPanel.prototype.pinButton = function (deploy) {
        var pinned = deploy.pinned;
        var button = smallButton("fa-thumb-tack", null, "ai-sidebar-history-pin");
        function show() {
            button.toggleClass("selected", pinned).attr("aria-pressed", String(pinned))
                .attr("aria-label", t(pinned ? "flowHistory.unpin" : "flowHistory.pin"))
                .attr("title", t(pinned ? "flowHistory.unpin" : "flowHistory.pin"));
        }
        show();
        var self = this;
        button.on("click", function (event) {
            event.preventDefault();
            button.prop("disabled", true);
            api().requestJson("PATCH", "ai-sidebar/flow-history/" + encodeURIComponent(deploy.rev),
                { pinned: !pinned }).then(function (body) {
                pinned = !!body.pinned;
                show();
            }, function (err) {
                self.showStatus(failure(err), "error");
            }).then(function () {
                button.prop("disabled", false);
            });
        });
        return button;
    };

    /** Show (or hide, when it shows the same comparison) a deploy's diff under its row. */
    HistoryPanel.prototype.toggleDiff = function (index, withNow, button, container) {
        var self = this;
        var kind = withNow ? "now" : "before";
        var row = container.closest(".ai-sidebar-history-deploy");
        if (container.is(":visible") && container.attr("data-against") === kind) {
            container.hide().empty().removeAttr("data-against");
            button.attr("aria-expanded", "false");
            return Promise.resolve();
        }
        row.find(".ai-sidebar-history-changes, .ai-sidebar-history-compare").attr("aria-expanded", "false");
        button.attr("aria-expanded", "true");
        container.attr("data-against", kind).empty().show()
            .append($('<div class="ai-sidebar-note"></div>').text(t("flowHistory.loading")));
        return api().requestJson("GET", history().diffPath(this.deploys, index, withNow)).then(function (body) {
            if (container.attr("data-against") === kind) {
                self.renderDiff(container, body, withNow);
            }
        }, function (err) {
            if (container.attr("data-against") !== kind) {
                return;
            }
            var text = err.code === "snapshot_not_found" ? t("flowHistory.first") : failure(err);
            container.empty().append($('<div class="ai-sidebar-note"></div>').text(text)
                .toggleClass("ai-sidebar-error", err.code !== "snapshot_not_found"));
        });
    };

    HistoryPanel.prototype.renderDiff = function (container, body, withNow) {
        var self = this;
        var view = history().diffView(body, nameOf);
        var to = body.from && body.from.rev;
        var when = history().formatTime(body.from && body.from.time, locale(), "short");
        var mayRestore = RED.user.hasPermission(RESTORE_PERMISSION) && !!to;
        container.empty();
        $('<div class="ai-sidebar-history-against"></div>')
            .text(withNow ? t("flowHistory.againstNow") : t("flowHistory.againstBefore")).appendTo(container);
        if (view.empty) {
            $('<div class="ai-sidebar-note"></div>').text(t("flowHistory.noChanges")).appendTo(container);
            return;
        }
        view.tabs.forEach(function (tab) {
            var section = $('<section class="ai-sidebar-history-tab"></section>').attr("data-tab", tab.id || "")
                .appendTo(container);
            var title = $('<div class="ai-sidebar-history-tab-title"></div>').appendTo(section);
            $("<span></span>").text(tab.id ? t("flowHistory.tab." + (tab.type === "subflow" ? "subflow" : "tab"),
                { name: tab.label || tab.id }) : t("flowHistory.tab.global")).appendTo(title);
            if (tab.status !== "changed") {
                $('<span class="ai-sidebar-history-tab-status"></span>').text(t("flowHistory.status." + tab.status))
                    .appendTo(title);
            }
            if (mayRestore && tab.id) {
                self.restoreButton(t("flowHistory.restoreTab"), to, "tab", tab.id,
                    t("flowHistory.restoreAsked." + (tab.type === "subflow" ? "subflow" : "tab"),
                        { name: tab.label || tab.id, time: when })).appendTo(section);
            }
            var lines = $('<ul class="ai-sidebar-history-lines"></ul>').appendTo(section);
            tab.lines.forEach(function (line) {
                var item = $("<li></li>").attr("data-kind", line.kind).attr("data-node", line.node || "")
                    .appendTo(lines);
                $('<span class="ai-sidebar-history-kind"></span>').text(t("flowHistory.kind." + line.kind))
                    .appendTo(item);
                $('<span class="ai-sidebar-history-node"></span>').text(line.text).appendTo(item);
                if (mayRestore && line.node) {
                    self.restoreButton(null, to, "node", line.node,
                        t("flowHistory.restoreAsked.node", { name: line.text, time: when })).attr("aria-label", t("flowHistory.restoreNode",
                        { name: line.text })).attr("title", t("flowHistory.restoreNode", { name: line.text }))
                        .appendTo(item);
                }
                if (line.properties.length) {
                    var properties = $('<ul class="ai-sidebar-history-properties"></ul>').appendTo(item);
                    line.properties.forEach(function (property) {
                        var entry = $("<li></li>").attr("data-property", property.name).appendTo(properties);
                        if (line.kind !== "property") {
                            $('<span class="ai-sidebar-history-property"></span>').text(property.name + ": ")
                                .appendTo(entry);
                        }
                        $('<span class="ai-sidebar-history-before"></span>').text(property.before).appendTo(entry);
                        entry.append(document.createTextNode(" → "));
                        $('<span class="ai-sidebar-history-after"></span>').text(property.after).appendTo(entry);
                    });
                }
            });
        });
        if (mayRestore) {
            this.restoreButton(t("flowHistory.restoreWhole"), to, "whole", null,
                t("flowHistory.restoreAsked.whole", { time: when })).appendTo(container);
        }
    };

    /** A button that asks the assistant to restore `scope` (`targetId`) to deploy `rev`, shown as `display`. */
    HistoryPanel.prototype.restoreButton = function (label, rev, scope, targetId, display) {
        var self = this;
        return smallButton("fa-undo", label, "ai-sidebar-history-restore").attr("data-scope", scope)
            .on("click", function (event) {
                event.preventDefault();
                var message = history().restoreMessage(rev, scope, targetId);
                if (self.options.onRestore && self.options.onRestore(message, display)) {
                    self.close();
                } else {
                    self.showStatus(t("flowHistory.busy"), "error");
                }
            });
    };

    HistoryPanel.prototype.destroy = function () {
        $(document).off(".aiSidebarHistory");
        this.stopRefresh();
        RED.comms.unsubscribe(DEPLOY_TOPIC, this.onDeploy);
        this.request = null;
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.HistoryPanel = HistoryPanel;
}());
