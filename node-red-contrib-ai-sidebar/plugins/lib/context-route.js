/**
 * `POST /ai-sidebar/context` (issue 36, the `set_context` write tool): set one flow or global context value.
 *
 * Node-RED's Admin API only reads and deletes context (`GET`/`DELETE /context/...`), and the runtime's context
 * module is not part of the API a plugin gets (`RED.nodes` offers createNode, getNode, eachNode, credentials). A
 * node's `context()` is: `Node.prototype.context` (`@node-red/runtime/lib/nodes/Node.js`) is `context.get(id, z)`,
 * whose `flow` is the context the tab's Flow created when it started and whose `global` is the global one
 * (`lib/nodes/context/index.js`). So the value is set through a bare node on the tab (or on none, for global):
 * an object with the prototype of Node-RED's `Node` (found from a running node, since `Node` is not exported to
 * plugins either) made with `RED.nodes.createNode`; it is never registered or started. Valid on Node-RED 4.1
 * and 5.
 *
 * The service calls it only after a person approved the card naming the key, scope, store and value; Node-RED's
 * own `context.write` permission guards it (`ai-sidebar.js`).
 *
 * Body: `{scope: "flow"|"global", flow?: <tab id>, key, store?, value}`. Answers 200 `{scope, flow?, store, key}`,
 * 400 `invalid_request` naming the field (unknown tab, disabled tab, unknown store, key that is no property path,
 * missing value).
 */
"use strict";

const relayLib = require("./relay");

// Same rule as the service's planner (service/nodered/context_plans.py): a property path such as count,
// config.limit, rooms[0] or a["b c"]; no "#:(store)::" prefix and no "$parent".
const KEY = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*|\[\d+\]|\["[^"\\]+"\]|\['[^'\\]+'\])*$/;
const MAX_KEY = 200;
const PROBE_ID = "ai-sidebar-context";

function invalid(res, field, detail) {
    relayLib.sendJson(res, 400, relayLib.errorBody("invalid_request",
        "The request field " + field + " " + detail + "."));
}

/**
 * The context stores of the runtime, as `GET /settings` lists them: the names in settings.js `contextStorage`
 * (without "_" and a "default" that names another store), or ["memory"] when it sets none.
 *
 * @returns {{stores: string[], default: string}}
 */
function contextStores(settings) {
    let storage;
    try {
        storage = settings.get("contextStorage");
    } catch {
        storage = undefined;
    }
    if (!storage || typeof storage !== "object" || !Object.keys(storage).length) {
        return { stores: ["memory"], default: "memory" };
    }
    const names = Object.keys(storage).filter(function (name) {
        return name !== "_" && !(name === "default" && typeof storage[name] === "string");
    });
    const first = typeof storage.default === "string" ? storage.default :
        (Object.prototype.hasOwnProperty.call(storage, "default") ? "default" : names[0]);
    return { stores: names, default: first };
}

/** The deployed tab `id` as its flow configuration (`RED.nodes.eachNode` lists tabs too), or null. */
function deployedTab(RED, id) {
    let found = null;
    RED.nodes.eachNode(function (node) {
        if (node.id === id && node.type === "tab") {
            found = node;
        }
    });
    return found;
}

/**
 * Node-RED's `Node.prototype` (the first prototype above a running node that owns `context` and `updateWires`), or
 * null when no node runs.
 */
function nodePrototype(RED) {
    let found = null;
    RED.nodes.eachNode(function (config) {
        const running = found ? null : RED.nodes.getNode(config.id);
        for (let proto = running && Object.getPrototypeOf(running); proto && !found;
            proto = Object.getPrototypeOf(proto)) {
            if (Object.prototype.hasOwnProperty.call(proto, "context") &&
                    Object.prototype.hasOwnProperty.call(proto, "updateWires")) {
                found = proto;
            }
        }
    });
    return found;
}

/** The body's problem as `[field, detail]`, or null. */
function bodyProblem(body) {
    if (body.scope !== "flow" && body.scope !== "global") {
        return ["scope", "must be \"flow\" or \"global\""];
    }
    if (typeof body.key !== "string" || !body.key.length || body.key.length > MAX_KEY || !KEY.test(body.key)) {
        return ["key", "must be a context key of at most " + MAX_KEY + " characters such as count, config.limit " +
            "or rooms[0]"];
    }
    if (!Object.prototype.hasOwnProperty.call(body, "value")) {
        return ["value", "is required (any JSON; null sets null)"];
    }
    if (body.store !== undefined && typeof body.store !== "string") {
        return ["store", "must be a string"];
    }
    if (body.scope === "flow" && (typeof body.flow !== "string" || !body.flow)) {
        return ["flow", "must be the id of a tab for flow context"];
    }
    if (body.scope === "global" && body.flow !== undefined) {
        return ["flow", "must be left out for global context"];
    }
    return null;
}

/**
 * The route's handler.
 *
 * @param {object} RED the plugin's Node-RED API
 * @returns {function(object, object): Promise<void>}
 */
function contextRoute(RED) {
    return async function (req, res) {
        const body = req.body || {};
        const problem = bodyProblem(body);
        if (problem) {
            return invalid(res, problem[0], problem[1]);
        }
        const stores = contextStores(RED.settings);
        const store = body.store || stores.default;
        if (stores.stores.indexOf(store) === -1) {
            return invalid(res, "store", "names no context store of this Node-RED (" + stores.stores.join(", ") + ")");
        }
        let tab = null;
        if (body.scope === "flow") {
            tab = deployedTab(RED, body.flow);
            if (!tab) {
                return invalid(res, "flow", "names no deployed tab");
            }
            if (tab.disabled) {
                return invalid(res, "flow", "names a disabled tab: its flow does not run, so it has no context");
            }
        }
        const proto = nodePrototype(RED);
        if (!proto) {
            return invalid(res, "scope", "cannot be set while no node runs in this Node-RED (deploy a flow first)");
        }
        const probe = Object.create(proto);
        RED.nodes.createNode(probe, { id: PROBE_ID, type: PROBE_ID, z: tab ? tab.id : undefined, wires: [] });
        const context = probe.context();
        const target = body.scope === "global" ? context.global : context.flow;
        // The default store is Node-RED's "_" alias: naming it would log "unknown store" when contextStorage is unset.
        const storeName = store === stores.default ? undefined : store;
        await new Promise(function (resolve, reject) {
            target.set(body.key, body.value, storeName, function (err) {
                return err ? reject(err) : resolve();
            });
        }).catch(function (err) {
            // Node-RED refused the key or the store could not write: the caller's request, not a fault.
            invalid(res, "key", "could not be set: " + err.message);
            return "answered";
        }).then(function (outcome) {
            if (outcome === "answered") {
                return;
            }
            RED.log.audit({ event: "ai-sidebar.context.set", scope: body.scope, id: tab ? tab.id : "global",
                store: store, key: body.key }, req);
            relayLib.sendJson(res, 200, Object.assign({ scope: body.scope }, tab ? { flow: tab.id } : {},
                { store: store, key: body.key }));
        });
    };
}

module.exports = { contextRoute, contextStores, KEY };
