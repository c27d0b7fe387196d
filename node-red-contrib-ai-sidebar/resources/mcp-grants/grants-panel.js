/**
 * The sidebar's MCP access panel (issue 40): the MCP clients the user let act as them through `nodered-mcp`'s
 * sign-in (`GET ai-sidebar/mcp-grants`: client name, scopes, created, last used), each with a Revoke button
 * (`POST ai-sidebar/mcp-grants/<id>/revoke`; from then on that client's token is refused). Opened from the header's
 * key button over the conversation, like the Knowledge panel; Escape closes it. Faults show as sentences.
 *
 * Editor-only script: registers `NodeRedAiSidebar.McpGrantsPanel`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function lib() {
        return window.NodeRedAiSidebar;
    }

    function age(seconds) {
        return lib().knowledge.formatAge(seconds, Date.now(), RED.i18n && RED.i18n.lang ? RED.i18n.lang() : undefined);
    }

    /** @param {{onOpen: function()}} options `onOpen` runs when the panel opens (the sidebar closes the others) */
    function McpGrantsPanel(options) {
        var self = this;
        this.options = options || {};
        this.request = null;
        this.button = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-mcp-grants-button">' +
            '</button>')
            .attr("aria-label", t("mcpGrants.open")).attr("aria-expanded", "false")
            .append($('<i class="fa fa-key" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.toggle();
            });
        RED.popover.tooltip(this.button, t("mcpGrants.open"));
        this.panel = $('<div class="ai-sidebar-knowledge ai-sidebar-mcp-grants" role="region"></div>')
            .attr("aria-label", t("mcpGrants.title")).hide();
        var head = $('<div class="ai-sidebar-knowledge-head"></div>').appendTo(this.panel);
        $('<div class="ai-sidebar-knowledge-title"></div>').text(t("mcpGrants.title")).appendTo(head);
        $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-mcp-grants-close"></button>')
            .attr("aria-label", t("mcpGrants.close")).attr("title", t("mcpGrants.close"))
            .append($('<i class="fa fa-times" aria-hidden="true"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.close();
            })
            .appendTo(head);
        $('<div class="ai-sidebar-note"></div>').text(t("mcpGrants.intro")).appendTo(this.panel);
        this.status = $('<div class="ai-sidebar-knowledge-status ai-sidebar-mcp-grants-status" role="status" ' +
            'aria-live="polite" tabindex="-1"></div>').appendTo(this.panel);
        this.list = $('<ul class="ai-sidebar-mcp-grants-list"></ul>').appendTo(this.panel);
    }

    McpGrantsPanel.prototype.isOpen = function () {
        return this.panel.is(":visible");
    };

    McpGrantsPanel.prototype.toggle = function () {
        return this.isOpen() ? this.close() : this.open();
    };

    McpGrantsPanel.prototype.open = function () {
        var self = this;
        if (this.options.onOpen) {
            this.options.onOpen();
        }
        this.panel.show();
        this.button.attr("aria-expanded", "true").addClass("selected");
        $(document).off(".aiSidebarMcpGrants").on("keydown.aiSidebarMcpGrants", function (event) {
            if (event.key === "Escape") {
                var inside = $(event.target).closest(self.panel).length;
                self.close();
                if (inside || event.target === document.body) {
                    self.button.trigger("focus");
                }
            }
        });
        this.panel.find(".ai-sidebar-mcp-grants-close").trigger("focus");
        return this.load();
    };

    McpGrantsPanel.prototype.close = function () {
        $(document).off(".aiSidebarMcpGrants");
        this.panel.hide();
        this.button.attr("aria-expanded", "false").removeClass("selected");
    };

    /** Read the grants again; `done` (a sentence) stays in the status line once they are shown. */
    McpGrantsPanel.prototype.load = function (done) {
        var self = this;
        var request = {};
        this.request = request;
        this.showStatus(t("mcpGrants.loading"), false);
        return lib().adminApi.requestJson("GET", "ai-sidebar/mcp-grants").then(function (body) {
            if (self.request === request) {
                self.show(body);
                self.showStatus(done || self.summary(body), false);
            }
        }, function (err) {
            if (self.request === request) {
                self.list.empty();
                self.showStatus(t("mcpGrants.loadFailed", { message: err.message }), true);
            }
        });
    };

    McpGrantsPanel.prototype.summary = function (body) {
        if (!body.enabled) {
            return t("mcpGrants.disabled");
        }
        return body.grants.length ? t("mcpGrants.count", { count: body.grants.length }) : t("mcpGrants.empty");
    };

    McpGrantsPanel.prototype.showStatus = function (text, error) {
        this.status.text(text || "").toggleClass("ai-sidebar-error", !!error);
    };

    McpGrantsPanel.prototype.show = function (body) {
        var self = this;
        this.list.empty();
        (body.grants || []).forEach(function (grant) {
            var item = $('<li class="ai-sidebar-mcp-grant"></li>').attr("data-grant", grant.id).appendTo(self.list);
            $('<div class="ai-sidebar-mcp-grant-client"></div>').text(grant.client).appendTo(item);
            var scopes = grant.scopes.map(function (scope) {
                return t("mcpGrants.scope." + scope);
            }).join(", ");
            $('<div class="ai-sidebar-mcp-grant-detail"></div>').text(t("mcpGrants.detail", {
                scopes: scopes, created: age(grant.createdAt),
                used: grant.lastUsedAt ? age(grant.lastUsedAt) : t("mcpGrants.never")
            })).appendTo(item);
            $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-mcp-grant-revoke"></button>')
                .text(t("mcpGrants.revoke"))
                .attr("aria-label", t("mcpGrants.revokeLabel", { client: grant.client }))
                .on("click", function (event) {
                    event.preventDefault();
                    self.revoke(grant, $(this));
                })
                .appendTo(item);
        });
    };

    /** Revoke one grant; the status line (focused, so the keyboard stays in the panel) says how it went. */
    McpGrantsPanel.prototype.revoke = function (grant, button) {
        var self = this;
        button.prop("disabled", true);
        this.status.trigger("focus");
        return lib().adminApi.requestJson("POST", "ai-sidebar/mcp-grants/" + encodeURIComponent(grant.id) +
            "/revoke", {}).then(function () {
            return self.load(t("mcpGrants.revoked", { client: grant.client }));
        }, function (err) {
            button.prop("disabled", false);
            self.showStatus(t("mcpGrants.revokeFailed", { message: err.message }), true);
        });
    };

    McpGrantsPanel.prototype.destroy = function () {
        $(document).off(".aiSidebarMcpGrants");
        this.request = null;
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.McpGrantsPanel = McpGrantsPanel;
}());
