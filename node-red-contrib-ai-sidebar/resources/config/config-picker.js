/**
 * The sidebar's AI configuration picker: a compact select in the header offering the service's default provider
 * and the deployed `ai-config` nodes, and a note when the remembered choice is no longer deployed.
 *
 * Editor-only script: registers `NodeRedAiSidebar.ConfigPicker`; the pure parts are in config-choice.js. The list
 * comes from `GET ai-sidebar/configs`, which Node-RED's runtime answers itself with `{id, name, provider, model}`
 * per node: the picker never asks for a key and has none to show. A chat request names the chosen node by its id
 * (`configId`); the runtime puts that node's settings and key into the request on its way to the service.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function sidebarLib() {
        return window.NodeRedAiSidebar;
    }

    // Whether the runtime runs its flows, from the editor's "runtime-state" events (Node-RED's retained
    // notification/runtime-state, runtime lib/flows/index.js, 4.1 and 5): "start", "stop" (a deploy under way, a
    // missing node type, flows stopped), "safe" (safe mode); null until the first one arrives. A payload without a
    // state (a warning cleared) leaves the flows running. And the pickers, drawn again when the flows stop.
    var runtimeState = null;
    var pickers = [];
    var listening = false;

    function watchRuntime(picker) {
        pickers.push(picker);
        if (listening) {
            return;
        }
        listening = true;
        RED.events.on("runtime-state", function (event) {
            runtimeState = event && typeof event.state === "string" ? event.state : "start";
            if (runtimeState === "start") {
                // The list is read again now (the sidebar's refreshConfigs); the one held was read while stopped.
                return;
            }
            pickers.forEach(function (each) {
                if (each.loaded) {
                    each.render();
                }
            });
        });
    }

    /**
     * @param {object} options
     * @param {function(): ?string} options.getSaved the remembered choice (an ai-config node id; null or "" for
     *     the service default)
     * @param {function(?string)} options.setSaved remember a choice (null for the service default)
     * @param {function()} [options.onChange] the choice or the list changed (the header names the model)
     */
    function ConfigPicker(options) {
        var self = this;
        this.options = options;
        this.configs = [];
        this.loaded = false;
        this.request = null;
        watchRuntime(this);

        // Hidden until the list is known, and while no ai-config node is deployed: there is nothing to choose.
        this.select = $('<select class="ai-sidebar-config"></select>')
            .attr("aria-label", t("config.label"))
            .hide()
            .on("change", function () {
                self.choose($(this).val());
            });
        this.note = $('<div class="ai-sidebar-config-note" role="status"></div>').hide();
        $('<i class="fa fa-info-circle"></i>').appendTo(this.note);
        $("<span></span>").text(t("config.missing")).appendTo(this.note);
        $('<button type="button" class="ai-sidebar-config-note-close"></button>')
            .attr("title", t("config.dismiss"))
            .attr("aria-label", t("config.dismiss"))
            .append($('<i class="fa fa-times"></i>'))
            .on("click", function (event) {
                event.preventDefault();
                self.note.hide();
            })
            .appendTo(this.note);
    }

    /**
     * The id of the chosen ai-config node, or "" for the service default. Until the list has been read the
     * remembered choice is used as it is; the runtime refuses an id that is not deployed (`config_not_found`).
     *
     * @returns {string}
     */
    ConfigPicker.prototype.configId = function () {
        if (!this.loaded) {
            return this.options.getSaved() || "";
        }
        return this.select.val() || "";
    };

    /**
     * Choose a deployed node by id (the one the sidebar's setup card created, once deployed).
     *
     * @param {string} id
     * @returns {boolean} false while it is not in the list read last
     */
    ConfigPicker.prototype.chooseIfListed = function (id) {
        var listed = this.configs.some(function (config) {
            return config.id === id;
        });
        if (listed) {
            this.select.val(id);
            this.choose(id);
        }
        return listed;
    };

    /** The text the picker shows for the chosen configuration. */
    ConfigPicker.prototype.label = function () {
        return this.select.find("option:selected").text() || t("config.default");
    };

    ConfigPicker.prototype.choose = function (id) {
        this.options.setSaved(id || null);
        this.note.hide();
        this.updateTitle();
    };

    /**
     * Read the deployed ai-config nodes again (sidebar shown, flows deployed or restarted, a chat refused with
     * `config_not_found`). Answers that arrive after a newer request has started are ignored.
     *
     * @returns {Promise<void>}
     */
    ConfigPicker.prototype.load = function () {
        var self = this;
        var request = {};
        this.request = request;
        return sidebarLib().adminApi.requestJson("GET", "ai-sidebar/configs").then(function (body) {
            if (self.request !== request) {
                return;
            }
            self.request = null;
            self.configs = sidebarLib().configChoice.normaliseConfigs(body);
            self.loaded = true;
            self.render();
        }).catch(function (err) {
            if (self.request !== request) {
                return;
            }
            self.request = null;
            // The list comes from Node-RED itself, not from the service. When it cannot be read the picker keeps
            // what it shows; the service's own reachability is reported by the sidebar's other requests.
            console.warn("[ai-sidebar] could not list the AI configurations:", (err && err.message) || err);
        });
    };

    /** The sidebar is removed: its picker is no longer drawn again on "runtime-state" (the one listener stays). */
    ConfigPicker.prototype.destroy = function () {
        var at = pickers.indexOf(this);
        if (at !== -1) {
            pickers.splice(at, 1);
        }
    };

    ConfigPicker.prototype.render = function () {
        var self = this;
        var choice = sidebarLib().configChoice;
        var saved = this.options.getSaved();
        var resolved = choice.resolveChoice(saved, this.configs, heldByEditor(saved));
        this.select.empty();
        $("<option></option>").val("").text(t("config.default")).appendTo(this.select);
        function format(parts) {
            return t("config.option", parts);
        }
        this.configs.forEach(function (config) {
            var label = choice.configLabel(config, format);
            $("<option></option>").val(config.id).text(label).attr("title", label).appendTo(self.select);
        });
        if (resolved.unlisted) {
            // Kept, named from the editor's own node: a question sent now is refused (config_not_found) until the
            // runtime runs the flows again, which reads the list again ("runtime-state" start).
            var node = RED.nodes.node(resolved.id) || {};
            var label = t("config.notRunning", { label: choice.configLabel({ name: text(node.name),
                provider: text(node.provider), model: text(node.model) }, format) || resolved.id });
            $("<option></option>").val(resolved.id).text(label).attr("title", label).appendTo(self.select);
        }
        this.select.val(resolved.id);
        if (resolved.missing) {
            // The node was deleted or its flow disabled: the default answers from now on, and the user is told once.
            this.options.setSaved(null);
            this.note.show();
        }
        this.select.toggle(this.configs.length > 0 || Boolean(resolved.unlisted));
        this.updateTitle();
    };

    ConfigPicker.prototype.updateTitle = function () {
        var label = this.label();
        this.select.attr("title", t("config.tooltip", { label: label }));
        if (this.options.onChange) {
            this.options.onChange();
        }
    };

    function text(value) {
        return typeof value === "string" ? value : "";
    }

    /**
     * Whether a remembered ai-config node `id` the runtime does not list is to be kept: the runtime lists the nodes it
     * runs, and runs none while its flows are stopped (`runtimeState`); then the editor's own flows say whether the
     * node is still there and not disabled (its flag `d` or its tab's). While the flows run, not listed means gone
     * (deleted, or its flow disabled). True while the runtime's state or the editor's flows (`RED.nodes.version()`,
     * editor-client nodes.js) are not known yet: the picker is drawn again once they are ("runtime-state",
     * "flows:loaded").
     */
    function heldByEditor(id) {
        if (!id || runtimeState === "start") {
            return false;
        }
        if (runtimeState === null || !RED.nodes.version()) {
            return true;
        }
        var node = RED.nodes.node(id);
        if (!node || node.type !== "ai-config" || node.d) {
            return false;
        }
        var tab = node.z ? RED.nodes.workspace(node.z) : null;
        return !(tab && tab.disabled);
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.ConfigPicker = ConfigPicker;
}());
