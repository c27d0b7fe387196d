/**
 * `ai-config`: a configuration node that holds the language model settings and the API key for the assistant.
 *
 * The key is a `password` credential: Node-RED stores it encrypted (credentialSecret) and never sends it back to
 * the editor; so are the values of its external MCP servers' environment variables and headers (`mcpSecrets`,
 * see lib/mcp-servers.js). The runtime hands the settings, key included, to the AI assistant service with each
 * request of an `ai-chat` node or of the sidebar (when the user picked this node there), over the token-protected
 * link; the service uses them for that request only (DESIGN.md, "Processes, ports, configuration").
 */
"use strict";

const mcpServers = require("./lib/mcp-servers");
const invalid = mcpServers.invalid;

// Providers and scenarios are the service's (GET /ai-sidebar/scenarios): the edit dialog lists them, and the service
// checks what is sent (400 for a provider it lacks; a scenario key it lacks is ignored).

/**
 * The scenario keys of a stored `scenarios` property: a comma-separated string (or an array), blanks and repeats
 * dropped. An empty result means "all scenarios".
 *
 * @param {string|string[]|undefined} value
 * @returns {string[]}
 */
function parseScenarios(value) {
    const items = Array.isArray(value) ? value : String(value || "").split(",");
    const keys = [];
    items.forEach(function (item) {
        const key = String(item).trim();
        if (key && keys.indexOf(key) === -1) {
            keys.push(key);
        }
    });
    return keys;
}

/**
 * A number from a node property left empty, typed as text or as a number; undefined when empty or not finite.
 *
 * @param {*} value
 * @returns {number|undefined}
 */
function optionalNumber(value) {
    if (value === undefined || value === null || String(value).trim() === "") {
        return undefined;
    }
    const number = Number(value);
    return Number.isFinite(number) ? number : undefined;
}

/**
 * The `provider` object of a stream-chat request (service `ProviderOverride`: camelCase, no other fields) built
 * from an `ai-config` node's properties and credentials.
 *
 * @param {object} config the node's properties
 * @param {{apiKey?: string, mcpSecrets?: string}} [credentials]
 * @returns {{provider: string, model?: string, baseUrl?: string, deployment?: string, apiVersion?: string,
 *     temperature?: number, maxTokens?: number,
 *     apiKey?: string, memory: boolean, tools: boolean, scenarios?: string[], mcpServers?: object[]}}
 *     `mcpServers` (lib/mcp-servers.js) only when the node has some; `deployment` and `apiVersion` (Azure
 *     OpenAI's) only for the `azure-openai` provider; `toolCalling: false` only for a model that cannot call tools;
 *     `completionModel` (the model that answers inline completions) when set, `completionFim` when not "auto"
 * @throws {Error} with code `invalid_config` when a setting is out of range, naming the setting
 */
function providerSettings(config, credentials) {
    const provider = typeof config.provider === "string" ? config.provider.trim() : "";
    if (!provider) {
        throw invalid("provider", "is not set; got " + JSON.stringify(config.provider));
    }
    const settings = { provider: provider };
    const model = String(config.model || "").trim();
    if (model) {
        settings.model = model;
    }
    const baseUrl = String(config.baseUrl || "").trim();
    if (baseUrl) {
        if (!isHttpUrl(baseUrl)) {
            throw invalid("base URL", "must be an http:// or https:// URL; got " + JSON.stringify(baseUrl));
        }
        settings.baseUrl = baseUrl;
    }
    if (provider === "azure-openai") {
        const deployment = String(config.deployment || "").trim();
        if (deployment) {
            if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(deployment)) {
                throw invalid("deployment", "must be an Azure deployment name (letters, digits, . _ -); got "
                    + JSON.stringify(deployment));
            }
            settings.deployment = deployment;
        }
        const apiVersion = String(config.apiVersion || "").trim();
        if (apiVersion) {
            if (!/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(apiVersion)) {
                throw invalid("API version", "must be a date like 2024-10-21 (or 2025-01-01-preview); got "
                    + JSON.stringify(apiVersion));
            }
            settings.apiVersion = apiVersion;
        }
    }
    const temperature = optionalNumber(config.temperature);
    if (temperature !== undefined) {
        if (temperature < 0 || temperature > 2) {
            throw invalid("temperature", "must be between 0 and 2; got " + temperature);
        }
        settings.temperature = temperature;
    }
    const maxTokens = optionalNumber(config.maxTokens);
    if (maxTokens !== undefined) {
        if (!Number.isInteger(maxTokens) || maxTokens < 1) {
            throw invalid("max tokens", "must be a whole number of at least 1; got " + maxTokens);
        }
        settings.maxTokens = maxTokens;
    }
    const apiKey = credentials && typeof credentials.apiKey === "string" ? credentials.apiKey.trim() : "";
    if (apiKey) {
        settings.apiKey = apiKey;
    }
    settings.memory = config.memory !== false;
    settings.tools = config.tools !== false;
    if (config.toolCalling === false) {
        // The model cannot call tools (many local models): the service answers without its agent.
        settings.toolCalling = false;
    }
    if (config.images === "true" || config.images === true || config.images === "false" || config.images === false) {
        // Whether the model takes images (attachments); unset: as the service says of the provider.
        settings.images = config.images === "true" || config.images === true;
    }
    const completionModel = String(config.completionModel || "").trim();
    if (completionModel) {
        // The model of this provider that answers inline completions; unset, the model above does.
        settings.completionModel = completionModel;
    }
    if (config.completionFim === "on" || config.completionFim === "off") {
        settings.completionFim = config.completionFim;
    } else if (config.completionFim !== undefined && config.completionFim !== "" && config.completionFim !== "auto") {
        throw invalid("fill in the middle", "must be auto, on or off; got " + JSON.stringify(config.completionFim));
    }
    const scenarios = parseScenarios(config.scenarios);
    if (scenarios.length) {
        settings.scenarios = scenarios;
    }
    const servers = mcpServers.mcpServerSettings(config.mcpServers, credentials && credentials.mcpSecrets);
    if (servers.length) {
        settings.mcpServers = servers;
    }
    return settings;
}

/**
 * @param {string} value
 * @returns {boolean} whether value is an absolute http(s) URL with a host
 */
function isHttpUrl(value) {
    try {
        const url = new URL(value);
        return (url.protocol === "http:" || url.protocol === "https:") && !!url.hostname;
    } catch {
        return false;
    }
}

module.exports = function (RED) {
    function AiConfigNode(config) {
        RED.nodes.createNode(this, config);
        this.name = config.name;
        this.provider = config.provider;
        this.model = config.model;
        this.config = {
            provider: config.provider,
            model: config.model,
            baseUrl: config.baseUrl,
            deployment: config.deployment,
            apiVersion: config.apiVersion,
            temperature: config.temperature,
            maxTokens: config.maxTokens,
            memory: config.memory,
            tools: config.tools,
            toolCalling: config.toolCalling,
            images: config.images,
            completionModel: config.completionModel,
            completionFim: config.completionFim,
            scenarios: config.scenarios,
            mcpServers: config.mcpServers
        };
    }

    /**
     * The `provider` object for the service, with the API key from this node's credentials.
     *
     * Build it per request and never log it: it holds the key in clear.
     *
     * @returns {object} see `providerSettings`
     * @throws {Error} with code `invalid_config` when a setting is out of range
     */
    AiConfigNode.prototype.providerSettings = function () {
        return providerSettings(this.config, this.credentials);
    };

    /**
     * What may be shown about this node without its key: for the sidebar's picker.
     *
     * @returns {{id: string, name: string, provider: string, model: string}}
     */
    AiConfigNode.prototype.summary = function () {
        return { id: this.id, name: this.name || "", provider: this.provider || "", model: this.model || "" };
    };

    RED.nodes.registerType("ai-config", AiConfigNode, {
        credentials: {
            apiKey: { type: "password" },
            mcpSecrets: { type: "password" }
        }
    });
};

module.exports.providerSettings = providerSettings;
module.exports.parseScenarios = parseScenarios;
