/**
 * Tokens and cost in the sidebar (usage.js formats them): a line under each streamed answer from its `done`
 * event, and the open conversation's totals under the header from `GET ai-sidebar/usage?by=session&sessionId=`.
 * Neither shows when the service reports no usage (an older service, no model call, a route that failed).
 *
 * Editor-only script: registers `NodeRedAiSidebar.usageView`.
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

    function locale() {
        return RED.i18n && RED.i18n.lang ? RED.i18n.lang() : undefined;
    }

    function line(className, key, parts) {
        var element = $("<div></div>").addClass(className)
            .attr("title", t(parts.priced ? "usage.tooltip" : "usage.noPriceTooltip"))
            .append($('<i class="fa fa-tachometer" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t(key, parts)));
        element.toggleClass("ai-sidebar-usage-unpriced", !parts.priced);
        return element;
    }

    /**
     * The line under an answer for a `done` event's `usage`, or null when there is none to show.
     *
     * @param {?object} usage `{inputTokens, outputTokens, cost}`
     * @returns {?jQuery}
     */
    function answerLine(usage) {
        var parts = lib().usage.usageParts(usage, locale());
        return parts ? line("ai-sidebar-usage", "usage.answer", parts) : null;
    }

    /**
     * The open conversation's totals, an element of the sidebar that shows itself once the service has counted a
     * turn of it. `load(sessionId)` asks again (a newer call wins over an older answer); `clear()` hides it.
     * `onChange`, when set, is called each time it shows or hides.
     */
    function SessionUsage() {
        this.element = $('<div class="ai-sidebar-session-usage"></div>').hide();
        this.request = null;
        this.onChange = null;
    }

    SessionUsage.prototype.changed = function () {
        if (this.onChange) {
            this.onChange();
        }
    };

    SessionUsage.prototype.clear = function () {
        this.request = null;
        this.element.empty().hide();
        this.changed();
    };

    SessionUsage.prototype.load = function (sessionId) {
        var self = this;
        var request = {};
        this.request = request;
        return lib().adminApi.requestJson("GET", lib().usage.sessionQuery(sessionId)).then(function (body) {
            if (self.request !== request) {
                return;
            }
            var totals = lib().usage.sessionTotals(body, sessionId);
            var parts = totals && lib().usage.usageParts(totals, locale());
            if (!parts) {
                self.element.empty().hide();
                self.changed();
                return;
            }
            self.element.empty().append(line("ai-sidebar-session-usage-text", "usage.session", parts).contents())
                .attr("title", t(parts.priced ? "usage.sessionTooltip" : "usage.noPriceTooltip",
                    { turns: totals.turns }))
                .attr("data-session-id", sessionId)
                .show();
            self.changed();
        }, function () {
            // Totals are an extra: a service without the route, or one that is down (the banner says so), shows none.
            if (self.request === request) {
                self.element.empty().hide();
                self.changed();
            }
        });
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.usageView = { answerLine: answerLine, SessionUsage: SessionUsage };
}());
