/**
 * The "service not reachable" banner at the top of the AI tab: the error in the user's language, a Retry button,
 * and what starts the service for this installation, from the plugin's `GET ai-sidebar/service-status`
 * (plugins/lib/service-status.js): the state and last output of the service Node-RED supervises, or the commands
 * that start it, each with a Copy button.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.serviceBanner`; its `ServiceBanner` uses
 * jQuery and `RED`) and in Node.js by the package's tests (`require`), which test `describe`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.serviceBanner = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    const COMMAND_IDS = ["pip", "run", "docker", "supervise"];
    const SUPERVISOR_STATES = ["starting", "running", "exited", "failed", "external"];
    // States in which a supervisor will start the service (again): the sidebar keeps checking every second.
    const RESTARTING_STATES = ["starting", "running", "external"];

    /**
     * What the banner says below the error, from the service-status answer.
     *
     * @param {*} status `{reachable, serviceUrl, supervisor, commands[{id, command}]}`, or anything else when the
     *     route could not be read
     * @param {function(string, object=): string} t the sidebar catalog's translation
     * @returns {{supervisor: ?{text: string, lines: string[]}, commands: {id: string, label: string,
     *     command: string, note: (string|undefined)}[]}} commands with an id this sidebar does not know are left
     *     out (a newer plugin may offer more)
     */
    function describe(status, t) {
        const view = { supervisor: null, commands: [] };
        if (!status || typeof status !== "object") {
            return view;
        }
        const supervisor = status.supervisor;
        if (supervisor && SUPERVISOR_STATES.indexOf(supervisor.state) !== -1) {
            view.supervisor = {
                text: t("service.supervisor." + supervisor.state, {
                    pid: supervisor.pid === null || supervisor.pid === undefined ? "" : String(supervisor.pid),
                    code: supervisor.exitCode === null || supervisor.exitCode === undefined ? "" :
                        String(supervisor.exitCode),
                    by: typeof supervisor.by === "string" ? supervisor.by : ""
                }),
                lines: Array.isArray(supervisor.lastLines) ? supervisor.lastLines.map(String) : []
            };
        }
        (Array.isArray(status.commands) ? status.commands : []).forEach(function (item) {
            if (!item || COMMAND_IDS.indexOf(item.id) === -1 || typeof item.command !== "string") {
                return;
            }
            const entry = { id: item.id, label: t("service.command." + item.id), command: item.command };
            if (item.id === "docker") {
                entry.note = t("service.dockerBuild");
            }
            view.commands.push(entry);
        });
        return view;
    }

    /**
     * Whether a supervisor will start the service again, as the service-status answer says (the plugin's own
     * supervisor starting or running it, or waiting to start it again after an exit (`restarting`), or one outside
     * Node-RED such as `make run`).
     *
     * @param {*} status as for `describe`
     * @returns {boolean}
     */
    function restartExpected(status) {
        const supervisor = status && typeof status === "object" ? status.supervisor : null;
        return !!supervisor && (supervisor.restarting === true || RESTARTING_STATES.indexOf(supervisor.state) !== -1);
    }

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /**
     * The banner (hidden until `show`). `element` goes above the chat.
     *
     * @param {object} options
     * @param {function()} options.onRetry the Retry button
     * @param {function(): Promise<object>} options.loadStatus reads `ai-sidebar/service-status`
     */
    function ServiceBanner(options) {
        const self = this;
        this.options = options;
        this.request = null;
        // The help last rendered (JSON of `describe`'s view and `restarting`), or null.
        this.rendered = null;
        // The error last shown, and whether a supervisor will start the service again (renderHelp).
        this.message = "";
        this.restarting = false;
        this.element = $('<div class="ai-sidebar-status" role="alert"></div>').hide();
        this.icon = $('<i class="fa fa-plug"></i>').appendTo(this.element);
        this.text = $("<span></span>").appendTo(this.element);
        $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-retry"></button>')
            .append($('<i class="fa fa-refresh"></i>'))
            .append(document.createTextNode(" " + t("sidebar.retry")))
            .on("click", function (event) {
                event.preventDefault();
                self.options.onRetry();
            })
            .appendTo(this.element);
        this.help = $('<div class="ai-sidebar-status-help"></div>').appendTo(this.element);
    }

    /**
     * Show `message`, then what starts the service (read once per time the banner is shown).
     *
     * @param {string} message the error, already translated
     */
    ServiceBanner.prototype.show = function (message) {
        const self = this;
        const wasShown = (this.element.is(":visible") && !this.isReconnecting()) || this.request;
        this.message = message;
        // Shown again by a later failed check: the line stays as the supervisor's state made it (renderHelp).
        this.text.text(wasShown && this.restarting ? t("service.notAnswering") : message);
        this.element.removeClass("ai-sidebar-status-reconnecting").attr("role", "alert").show();
        this.icon.attr("class", "fa fa-plug");
        if (wasShown) {
            return;
        }
        const request = this.request = this.options.loadStatus().then(function (status) {
            if (self.request === request) {
                self.renderHelp(describe(status, t), restartExpected(status));
            }
        }, function () {
            // The route is missing (an older plugin) or Node-RED is down too: the message above says enough.
        }).then(function () {
            if (self.request === request) {
                self.request = null;
            }
        });
    };

    /**
     * A one-line "reconnecting…" instead of the advice: for a service that answered a moment ago and is probably
     * being restarted (service-watch.js gives the advice if it stays down).
     */
    ServiceBanner.prototype.reconnecting = function () {
        this.request = null;
        this.restarting = false;
        this.help.empty();
        this.rendered = null;
        this.text.text(t("service.reconnecting"));
        this.icon.attr("class", "fa fa-spinner fa-spin");
        this.element.addClass("ai-sidebar-status-reconnecting").attr("role", "status").show();
    };

    /** @returns {boolean} whether the banner shows the "reconnecting…" line */
    ServiceBanner.prototype.isReconnecting = function () {
        return this.element.hasClass("ai-sidebar-status-reconnecting");
    };

    /**
     * A later service-status answer (the sidebar's checks while the service is down): the advice follows it, e.g.
     * the supervisor's state and output. Nothing changes while the banner is hidden or says it reconnects, nor
     * when the answer says what is shown already (a command being selected or copied stays where it is).
     *
     * @param {*} status as for `describe`
     */
    ServiceBanner.prototype.refresh = function (status) {
        if (!this.element.is(":visible") || this.isReconnecting() || this.request) {
            return;
        }
        const view = describe(status, t);
        const restarting = restartExpected(status);
        if (JSON.stringify([view, restarting]) !== this.rendered) {
            this.renderHelp(view, restarting);
        }
    };

    ServiceBanner.prototype.hide = function () {
        this.request = null;
        this.restarting = false;
        this.element.hide().removeClass("ai-sidebar-status-reconnecting");
        this.help.empty();
        this.rendered = null;
    };

    /**
     * Show the advice of `view` (`describe`). While a supervisor will start the service again (`restarting`), the
     * error's own advice ("Start it or check AI_SIDEBAR_SERVICE_URL") is not what to do: the line says only that the
     * service does not answer, and the supervisor's state below says the rest.
     */
    ServiceBanner.prototype.renderHelp = function (view, restarting) {
        this.rendered = JSON.stringify([view, restarting]);
        this.restarting = restarting;
        this.text.text(restarting ? t("service.notAnswering") : this.message);
        const help = this.help.empty();
        if (view.supervisor) {
            $('<div class="ai-sidebar-status-supervisor"></div>').text(view.supervisor.text).appendTo(help);
            if (view.supervisor.lines.length) {
                $('<pre class="ai-sidebar-status-output"></pre>').text(view.supervisor.lines.join("\n")).appendTo(help);
            }
        }
        if (view.commands.length && !view.supervisor) {
            $('<div class="ai-sidebar-status-intro"></div>').text(t("service.intro")).appendTo(help);
        }
        view.commands.forEach(function (item) {
            const block = $('<div class="ai-sidebar-status-command"></div>').attr("data-command", item.id)
                .appendTo(help);
            $('<div class="ai-sidebar-status-label"></div>').text(item.label).appendTo(block);
            const row = $('<div class="ai-sidebar-status-row"></div>').appendTo(block);
            $("<code></code>").text(item.command).appendTo(row);
            const copy = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-status-copy">' +
                "</button>")
                .attr("title", t("service.copyTooltip"))
                .append($('<i class="fa fa-clipboard"></i>'))
                .append(document.createTextNode(" " + t("service.copy")))
                .on("click", function (event) {
                    event.preventDefault();
                    window.NodeRedAiSidebar.clipboard.copyText(item.command, copy, "service.copied");
                })
                .appendTo(row);
            if (item.note) {
                $('<div class="ai-sidebar-status-note"></div>').text(item.note).appendTo(block);
            }
        });
    };

    return { COMMAND_IDS: COMMAND_IDS, describe: describe, restartExpected: restartExpected,
        ServiceBanner: ServiceBanner };
}));
