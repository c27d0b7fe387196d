/**
 * The setup card of the sidebar's empty state (issue 31): when the service's own model cannot answer (GET
 * ai-sidebar/scenarios `setup`: `{code, message, setting}`, null when it can) and no ai-config node is chosen, it
 * says why and offers to create an `ai-config` node here, in the node's own edit dialog; once deployed the new node
 * is chosen, and "Test connection" sends one tiny request through the plugin (POST ai-sidebar/test-provider) and
 * names the URL it reached.
 *
 * Editor-only script: registers `NodeRedAiSidebar.SetupCard`. The config node is added the way Node-RED's
 * configuration-nodes sidebar adds one (`RED.editor.editConfig("", type, "_ADD_")`, Node-RED 4.1 and 5.x), so no
 * flow node is needed as a vehicle; the add is one undoable edit, made only when the dialog's Add is pressed.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var TYPE = "ai-config";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    /**
     * Whether the editor can open the ai-config node `id` in its dialog: the node is in the editor's flows and its
     * tab, if it has one, is not locked (Node-RED 4.1 and 5.x open no dialog for a node of a locked tab).
     */
    function editable(id) {
        var node = RED.nodes.node(id);
        if (!node || node.type !== TYPE) {
            return false;
        }
        // RED.workspaces.isLocked() without an id answers for the active tab: a global config node has no z.
        return !(node.z && RED.workspaces.isLocked && RED.workspaces.isLocked(node.z));
    }

    function button(icon, label, className) {
        return $('<button type="button" class="red-ui-button red-ui-button-small"></button>').addClass(className)
            .append($('<i aria-hidden="true"></i>').addClass("fa " + icon))
            .append(document.createTextNode(" " + label));
    }

    /**
     * @param {object} options
     * @param {function(): string} options.configId the chosen ai-config node ("" for the service default)
     * @param {function(): string} options.configLabel how the picker names the chosen node
     * @param {function(string): boolean} options.choose choose a deployed node by id (false: not deployed)
     */
    function SetupCard(options) {
        this.options = options;
        this.setup = null;
        this.pendingId = null;
        this.element = $('<div class="ai-sidebar-setup" role="region"></div>').attr("aria-label", t("setup.title"));
    }

    /** Whether the card has something to say: the service's model cannot answer, or a new node waits for Deploy. */
    SetupCard.prototype.needed = function () {
        return !!(this.setup || this.pendingId);
    };

    /** The service's `setup` (null: its model can answer); the card is drawn again. */
    SetupCard.prototype.setState = function (setup) {
        this.setup = setup && typeof setup === "object" && setup.code ? setup : null;
        this.render();
    };

    /** The configurations were read again (after a deploy): the node created here is chosen once it is deployed. */
    SetupCard.prototype.configsLoaded = function () {
        if (this.pendingId && this.options.choose(this.pendingId)) {
            this.pendingId = null;
        }
        this.render();
    };

    SetupCard.prototype.render = function () {
        var self = this;
        var card = this.element.empty();
        $('<div class="ai-sidebar-setup-title"></div>')
            .append($('<i class="fa fa-plug" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("setup.title")))
            .appendTo(card);
        var chosen = this.options.configId();
        if (this.pendingId) {
            $('<p class="ai-sidebar-setup-text"></p>').text(t("setup.deploy")).appendTo(card);
            button("fa-cloud-upload", t("setup.deployButton"), "primary ai-sidebar-setup-deploy")
                .on("click", function (event) {
                    event.preventDefault();
                    RED.actions.invoke("core:deploy-flows");
                })
                .appendTo(card);
        } else if (chosen) {
            $('<p class="ai-sidebar-setup-text"></p>').text(t("setup.using", { label: this.options.configLabel() }))
                .appendTo(card);
        } else if (this.setup) {
            $('<p class="ai-sidebar-setup-text ai-sidebar-setup-why"></p>').text(this.setup.message).appendTo(card);
            $('<p class="ai-sidebar-setup-text"></p>').text(t("setup.create")).appendTo(card);
        }
        var row = $('<div class="ai-sidebar-setup-actions"></div>').appendTo(card);
        if (chosen && !this.pendingId && editable(chosen) && RED.user.hasPermission("flows.write")) {
            // A refused key or a wrong URL is fixed in the chosen node: its own dialog, as the configuration-nodes
            // sidebar opens it (`editConfig("", type, id)`, Node-RED 4.1 and 5.x); a Deploy then applies it.
            button("fa-pencil", t("setup.editButton"), "primary ai-sidebar-setup-edit")
                .attr("title", t("setup.editTooltip"))
                .on("click", function (event) {
                    event.preventDefault();
                    if (!editable(chosen)) {
                        // Deleted in the editor or its tab locked since the card was drawn: Node-RED would open
                        // an empty "Add new" dialog or nothing at all. The card is drawn again without the button.
                        self.render();
                        return;
                    }
                    RED.editor.editConfig("", TYPE, chosen);
                })
                .appendTo(row);
        }
        if (!this.pendingId && RED.user.hasPermission("flows.write")) {
            button("fa-plus", t("setup.createButton"), chosen ? "ai-sidebar-setup-create" :
                "primary ai-sidebar-setup-create")
                .on("click", function (event) {
                    event.preventDefault();
                    self.create();
                })
                .appendTo(row);
        }
        if (!this.pendingId) {
            button("fa-exchange", t("setup.test"), "ai-sidebar-setup-test")
                .on("click", function (event) {
                    event.preventDefault();
                    self.test();
                })
                .appendTo(row);
        }
        this.result = $('<div class="ai-sidebar-setup-result" role="status" aria-live="polite"></div>').appendTo(card);
    };

    /**
     * Open Node-RED's own dialog for a new ai-config node (`editConfig("", type, "_ADD_")`, as the configuration-nodes
     * sidebar's "add" does, Node-RED 4.1 and 5.x): the editor adds the node, as one undoable edit, only when the
     * user presses Add (it then emits `nodes:add`); Cancel leaves the workspace as it was.
     */
    SetupCard.prototype.create = function () {
        var self = this;
        if (!RED.nodes.getType(TYPE)) {
            return;
        }
        function added(node) {
            if (node && node.type === TYPE) {
                self.pendingId = node.id;
                self.render();
            }
        }
        function closed() {
            RED.events.off("nodes:add", added);
            RED.events.off("editor:close", closed);
        }
        RED.events.on("nodes:add", added);
        RED.events.on("editor:close", closed);
        RED.editor.editConfig("", TYPE, "_ADD_");
    };

    /** "Test connection": one tiny request to the chosen configuration's provider, through the plugin. */
    SetupCard.prototype.test = function () {
        var result = this.result.removeClass("ai-sidebar-setup-ok ai-sidebar-setup-failed")
            .text(t("setup.testing"));
        var body = { language: RED.i18n.lang() };
        var configId = this.options.configId();
        if (configId) {
            body.configId = configId;
        }
        return window.NodeRedAiSidebar.adminApi.requestJson("POST", "ai-sidebar/test-provider", body)
            .then(function (answer) {
                if (answer && answer.ok) {
                    result.addClass("ai-sidebar-setup-ok").text(t("setup.testOk", {
                        url: answer.url || "?", model: answer.model || answer.provider || "?",
                        ms: Number(answer.latencyMs || 0).toLocaleString(RED.i18n.lang())
                    }));
                    return;
                }
                var message = (answer && answer.error && answer.error.message) || "?";
                result.addClass("ai-sidebar-setup-failed")
                    .text(answer && answer.url ? t("setup.testFailedAt", { url: answer.url, message: message }) : message);
            }, function (err) {
                result.addClass("ai-sidebar-setup-failed").text(err.message);
            });
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.SetupCard = SetupCard;
}());
