/**
 * Slash commands of the question input (issue 37): `/explain`, `/fix`, `/plan`, `/build`, `/test`, `/docs <node>`,
 * `/history`, `/new`, `/clear`, `/model`, `/help`, and the user's own flow templates as `/name` (GET
 * ai-sidebar/templates, those not shared). The names stay English; their descriptions come from the sidebar's
 * catalog (`slash.<name>`). A command either sends a question (its prompt in the user's language, then what
 * follows the command) or acts in the sidebar (`action`).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.slashCommands`) and in Node.js by the
 * package's tests: nothing here touches the DOM or `RED`.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.slashCommands = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // `prompt`: the question sent (catalog key slash.prompt.<name>); `mode`: the mode switched to first; `action`:
    // what the sidebar does instead of sending; `arg`: takes words after it (chosen from the list, the command is
    // put in the input to be completed, else it runs at once).
    const COMMANDS = [
        { name: "explain", prompt: true, arg: true },
        { name: "fix", prompt: true, arg: true },
        { name: "plan", mode: "plan", arg: true },
        { name: "build", mode: "agent", prompt: true, arg: true },
        { name: "test", prompt: true, arg: true },
        { name: "docs", prompt: true, arg: true },
        { name: "history", action: "history" },
        { name: "new", action: "new" },
        { name: "clear", action: "clear" },
        { name: "model", action: "model" },
        { name: "help", action: "help" }
    ];
    const ICON = "fa-terminal";
    const TEMPLATE_ICON = "fa-clone";
    // A template's name as a command: letters, digits, - and _ (other characters become -).
    function commandName(name) {
        return String(name).trim().toLowerCase().replace(/[^\p{L}\p{N}_-]+/gu, "-").replace(/^-+|-+$/g, "");
    }

    /**
     * The user's own flow templates as commands (the shared ones, the seeded examples, are not).
     *
     * @param {{name: string, description: string, shared: boolean}[]} templates GET ai-sidebar/templates
     * @returns {{name: string, template: string, description: string}[]} without names a built-in command has
     */
    function templateCommands(templates) {
        const taken = new Set(COMMANDS.map(function (command) {
            return command.name;
        }));
        const result = [];
        (templates || []).forEach(function (template) {
            const name = commandName(template.name);
            if (!template.shared && name && !taken.has(name)) {
                taken.add(name);
                result.push({ name: name, template: template.name, description: template.description || "" });
            }
        });
        return result;
    }

    /**
     * The rows the list shows for what follows `/`.
     *
     * @param {string} query typed after `/`
     * @param {object[]} templates templateCommands
     * @param {function(string, object=): string} t the sidebar catalog's translation
     * @returns {{name: string, label: string, detail: string, icon: string, command: object}[]} prefix matches
     *     first, then the other commands that contain the query
     */
    function items(query, templates, t) {
        query = String(query || "").toLowerCase();
        const all = COMMANDS.map(function (command) {
            return { name: command.name, label: "/" + command.name + (command.name === "docs" ? " <node>" : ""),
                detail: t("slash." + command.name), icon: ICON, command: command };
        }).concat(templates.map(function (command) {
            return { name: command.name, label: "/" + command.name,
                detail: t("slash.template", { name: command.template }) +
                    (command.description ? " \u00b7 " + command.description : ""),
                icon: TEMPLATE_ICON, command: command };
        }));
        const starts = all.filter(function (row) {
            return row.name.indexOf(query) === 0;
        });
        const contains = all.filter(function (row) {
            return row.name.indexOf(query) > 0;
        });
        return starts.concat(contains);
    }

    /**
     * What a question starting with `/` does.
     *
     * @param {string} message the question as typed
     * @param {object[]} templates templateCommands
     * @returns {?{command: object, rest: string}} null when it names no command (it is sent as it is)
     */
    function parse(message, templates) {
        const match = /^\/([^\s/]+)(?:\s+([\s\S]*))?$/.exec(String(message).trim());
        if (!match) {
            return null;
        }
        const name = match[1].toLowerCase();
        const command = COMMANDS.concat(templates).find(function (candidate) {
            return candidate.name === name;
        });
        return command ? { command: command, rest: (match[2] || "").trim() } : null;
    }

    /**
     * The question a command sends.
     *
     * @param {{command: object, rest: string}} parsed parse()
     * @param {function(string, object=): string} t the sidebar catalog's translation
     * @returns {string} "" when it sends nothing (an action, or /plan without words)
     */
    function question(parsed, t) {
        const command = parsed.command;
        const rest = parsed.rest;
        if (command.template) {
            return t("slash.prompt.template", { name: command.template }) + (rest ? "\n\n" + rest : "");
        }
        if (command.name === "docs") {
            return t("slash.prompt.docs", { node: rest || t("slash.selectedNode") });
        }
        if (command.prompt) {
            return t("slash.prompt." + command.name) + (rest ? "\n\n" + rest : "");
        }
        return command.action ? "" : rest;
    }

    return { COMMANDS: COMMANDS, commandName: commandName, templateCommands: templateCommands, items: items,
        parse: parse, question: question };
}));
