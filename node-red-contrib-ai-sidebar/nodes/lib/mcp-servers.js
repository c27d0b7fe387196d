/**
 * The external MCP servers of an `ai-config` node, as the service's request model takes them (service
 * `McpServerConfig` inside `ProviderOverride.mcpServers`: `name`, then `url` + `headers` or `command` + `args` +
 * `env`).
 *
 * The node's `mcpServers` property (in flows.json, shown in the editor) holds everything but secret values:
 * `[{id, name, transport: "stdio"|"http", command, args, url, secrets: [names]}]`, where `secrets` names the
 * environment variables (stdio) or headers (http) whose values are secret. The values live in the node's
 * `mcpSecrets` password credential, a JSON object `{<server id>: {<name>: <value>}}`: Node-RED stores it encrypted
 * and never sends it back to the editor.
 */
"use strict";

// The service's rules (service/settings.py McpServerConfig, service/web/schemas.py ProviderOverride).
const NAME_PATTERN = /^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$/;
const NAME_LIMIT = 24;
const SERVER_LIMIT = 10;
const TRANSPORTS = ["stdio", "http"];

/**
 * A command line's arguments: split at white space, a double-quoted part kept whole (quotes removed).
 *
 * @param {string|string[]|undefined} value
 * @returns {string[]}
 */
function parseArgs(value) {
    if (Array.isArray(value)) {
        return value.map(String);
    }
    const args = [];
    const pattern = /"([^"]*)"|(\S+)/g;
    let match;
    while ((match = pattern.exec(String(value || ""))) !== null) {
        args.push(match[1] !== undefined ? match[1] : match[2]);
    }
    return args;
}

/**
 * The parsed `mcpSecrets` credential: `{<server id>: {<name>: <value>}}` (empty when unset).
 *
 * @param {string|undefined} credential
 * @returns {object}
 * @throws {Error} code `invalid_config` when it is not a JSON object (the message never holds it)
 */
function parseSecrets(credential) {
    if (credential === undefined || credential === null || credential === "") {
        return {};
    }
    let secrets;
    try {
        secrets = JSON.parse(credential);
    } catch {
        secrets = null;
    }
    if (!secrets || typeof secrets !== "object" || Array.isArray(secrets)) {
        throw invalid("MCP server secrets", "are not readable; enter them again in the node's settings");
    }
    return secrets;
}

/**
 * The `mcpServers` of a stream-chat request's `provider`, from an `ai-config` node's property and credential.
 *
 * @param {object[]|undefined} servers the node's `mcpServers` property
 * @param {string|undefined} credential the node's `mcpSecrets` credential
 * @returns {object[]} `{name, url, headers}` or `{name, command, args, env}` each; empty without servers
 * @throws {Error} code `invalid_config` naming the server and the setting that is wrong (never a secret's value)
 */
function mcpServerSettings(servers, credential) {
    if (servers === undefined || servers === null || servers === "") {
        return [];
    }
    if (!Array.isArray(servers)) {
        throw invalid("MCP servers", "must be a list");
    }
    if (servers.length > SERVER_LIMIT) {
        throw invalid("MCP servers", "are " + servers.length + "; at most " + SERVER_LIMIT + " are allowed");
    }
    const secrets = servers.some(function (server) {
        return server && Array.isArray(server.secrets) && server.secrets.length;
    }) ? parseSecrets(credential) : {};
    const names = [];
    return servers.map(function (server) {
        const name = String((server && server.name) || "").trim();
        const what = "MCP server " + JSON.stringify(name);
        if (!NAME_PATTERN.test(name) || name.length > NAME_LIMIT) {
            throw invalid(what, "needs a name of letters, digits, - and single _ (at most " + NAME_LIMIT +
                " characters)");
        }
        if (names.indexOf(name) !== -1) {
            throw invalid(what, "is listed twice; give each server its own name");
        }
        names.push(name);
        const transport = server.transport || "stdio";
        if (TRANSPORTS.indexOf(transport) === -1) {
            throw invalid(what, "has transport " + JSON.stringify(transport) + "; use stdio or http");
        }
        const values = {};
        const stored = (server.id && secrets[server.id]) || {};
        (Array.isArray(server.secrets) ? server.secrets : []).forEach(function (key) {
            if (typeof stored[key] !== "string") {
                throw invalid(what, "has no value for " + JSON.stringify(key) + "; enter it again");
            }
            values[key] = stored[key];
        });
        if (transport === "http") {
            const url = String(server.url || "").trim();
            if (!/^https?:\/\/[^/\s]+/.test(url)) {
                throw invalid(what, "needs an http:// or https:// URL; got " + JSON.stringify(url));
            }
            return { name: name, url: url, headers: values };
        }
        const command = String(server.command || "").trim();
        if (!command) {
            throw invalid(what, "needs a command to start");
        }
        return { name: name, command: command, args: parseArgs(server.args), env: values };
    });
}

/**
 * The error of an `ai-config` setting the service would refuse.
 *
 * @param {string} setting what is wrong, as the user knows it ("base URL", "MCP server \"docs\"")
 * @param {string} problem the sentence's rest: what is wrong and what to do
 * @returns {Error} with code `invalid_config`
 */
function invalid(setting, problem) {
    const err = new Error("The ai-config node's " + setting + " " + problem + ". Fix it in the node's settings " +
        "and deploy again.");
    err.code = "invalid_config";
    return err;
}

module.exports = { mcpServerSettings, parseArgs, parseSecrets, invalid, SERVER_LIMIT, NAME_PATTERN };
