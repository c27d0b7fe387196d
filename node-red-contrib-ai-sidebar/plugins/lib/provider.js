/**
 * The sidebar's choice of `ai-config` node, resolved in the Node-RED runtime.
 *
 * The editor sends only the id of the chosen node (`configId`) with a chat request; this module replaces it by that
 * node's `provider` settings, key included, before the request is relayed to the service. The key therefore never
 * travels to or from the browser. A `provider` object sent by the browser itself is dropped: only a deployed
 * `ai-config` node may choose the model endpoint, since the service sends its own key to an endpoint without one.
 */
"use strict";

const relayLib = require("./relay");

const CONFIG_TYPE = "ai-config";

/**
 * Rewrite a stream-chat body: `configId` becomes `provider` (the node's settings), a browser `provider` is dropped.
 *
 * @param {object} body the parsed request body (not changed)
 * @param {function(string): ?object} getNode Node-RED's `RED.nodes.getNode`
 * @returns {{body: object}|{status: number, error: object}} the body to forward, or the design's JSON error
 */
function resolveConfig(body, getNode) {
    const forwarded = Object.assign({}, body);
    const configId = forwarded.configId;
    delete forwarded.configId;
    delete forwarded.provider;
    if (configId === undefined || configId === null || configId === "") {
        return { body: forwarded };
    }
    if (typeof configId !== "string") {
        return { status: 400, error: relayLib.errorBody("config_not_found",
            "configId must be the id (a string) of an ai-config node.") };
    }
    const node = getNode(configId);
    if (!node || node.type !== CONFIG_TYPE || typeof node.providerSettings !== "function") {
        return { status: 400, error: relayLib.errorBody("config_not_found",
            "There is no deployed ai-config node with id " + JSON.stringify(configId) + ". Choose another AI " +
            "configuration in the sidebar, or deploy the flows that define it.") };
    }
    try {
        forwarded.provider = node.providerSettings();
    } catch (err) {
        return { status: 400, error: relayLib.errorBody(err.code || "invalid_config", err.message) };
    }
    return { body: forwarded };
}

/**
 * Express middleware for the stream-chat route: applies `resolveConfig` to `req.body` or answers its error.
 *
 * @param {object} RED the Node-RED plugin API
 * @returns {function(object, object, function)}
 */
function configMiddleware(RED) {
    return function (req, res, next) {
        const resolved = resolveConfig(req.body || {}, RED.nodes.getNode);
        if (resolved.error) {
            relayLib.sendJson(res, resolved.status, resolved.error);
            return;
        }
        req.body = resolved.body;
        next();
    };
}

/**
 * The deployed `ai-config` nodes, as the sidebar's picker shows them: no key, no other setting.
 *
 * @param {function(function(object))} eachNode Node-RED's `RED.nodes.eachNode` (iterates the deployed flows)
 * @param {function(string): ?object} getNode Node-RED's `RED.nodes.getNode`: only nodes that run are listed
 *     (not those in a disabled flow), since only those can answer
 * @returns {{id: string, name: string, provider: string, model: string}[]} sorted by name, then id
 */
function listConfigs(eachNode, getNode) {
    const configs = [];
    eachNode(function (definition) {
        if (definition && definition.type === CONFIG_TYPE && getNode(definition.id)) {
            configs.push({
                id: String(definition.id),
                name: typeof definition.name === "string" ? definition.name : "",
                provider: typeof definition.provider === "string" ? definition.provider : "",
                model: typeof definition.model === "string" ? definition.model : ""
            });
        }
    });
    configs.sort(function (a, b) {
        return a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
    });
    return configs;
}

/**
 * Route handler for `GET /ai-sidebar/configs`.
 *
 * @param {object} RED the Node-RED plugin API
 * @returns {function(object, object)}
 */
function configsRoute(RED) {
    return function (req, res) {
        relayLib.sendJson(res, 200, listConfigs(RED.nodes.eachNode, RED.nodes.getNode));
    };
}

module.exports = { resolveConfig, configMiddleware, listConfigs, configsRoute, CONFIG_TYPE };
