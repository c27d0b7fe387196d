/**
 * Pure helpers that keep an imported flow from duplicating config nodes: a config node in the flow that is the same
 * as one the workspace already has is left out and the imported nodes use the existing one; one that differs from
 * every existing node of its type is for the user to decide (add it, or use an existing one).
 *
 * Why: Node-RED's import (editor-client nodes.js `importNodes`, 4.1) only re-uses a config node whose id is already
 * in the workspace, and with `generateIds` every import gets new ids, so importing the same answer twice added a
 * second identical `mqtt-broker`. Conversely, an imported config node whose id is taken is silently replaced by the
 * existing node of that id, whatever its type and settings; `applyPlan` renames such a node when it is to be added.
 *
 * "The same" means the same type and the same behavioural properties: the type's `defaults` (a property the flow
 * leaves out counts as its default, as the import applies it with `applyNodeDefaults`) and whether it is disabled
 * (`d`). Id, scope (`z`), position, `info` and editor bookkeeping (`users`, `_def`, `changed`, ...) are ignored.
 * Credentials cannot be compared (the editor never gets passwords back), so the caller must say that a re-used
 * node keeps its own; an imported node that carries credentials of its own is never taken for an existing one.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.configReuse`) and in Node.js by the package's
 * tests (`require`). Nothing here touches `RED`; the registry and the workspace's config nodes are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.configReuse = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** The value for "add the imported config node" in `decisions`. */
    const KEEP = null;

    function isObject(value) {
        return value !== null && typeof value === "object";
    }

    function hasOwn(object, key) {
        return Object.prototype.hasOwnProperty.call(object, key);
    }

    /** Whether two property values behave the same: equal JSON, where a number equals its decimal string. */
    function sameValue(a, b) {
        if (a === b) {
            return true;
        }
        if (typeof a === "number" && typeof b === "string") {
            return b.trim() !== "" && Number(b) === a;
        }
        if (typeof a === "string" && typeof b === "number") {
            return sameValue(b, a);
        }
        if (!isObject(a) || !isObject(b) || Array.isArray(a) !== Array.isArray(b)) {
            return false;
        }
        const keysA = Object.keys(a).filter(function (key) { return a[key] !== undefined; });
        const keysB = Object.keys(b).filter(function (key) { return b[key] !== undefined; });
        return keysA.length === keysB.length && keysA.every(function (key) {
            return hasOwn(b, key) && sameValue(a[key], b[key]);
        });
    }

    /** A property's value as the imported or existing node has it, its type's default when it has none. */
    function effectiveValue(definition, node, property) {
        if (property === "d") {
            return node.d === true;
        }
        const value = node[property];
        const spec = definition.defaults[property];
        if (value === undefined && spec && spec.value !== undefined) {
            return spec.value;
        }
        // A reference to another config node: no id, null and "" all mean none.
        if (spec && spec.type && (value === undefined || value === null || value === "")) {
            return null;
        }
        return value;
    }

    function hasCredentials(node) {
        return isObject(node.credentials) && Object.keys(node.credentials).some(function (key) {
            const value = node.credentials[key];
            return value !== undefined && value !== null && value !== "";
        });
    }

    /**
     * The behavioural properties in which an imported config node differs from an existing one.
     *
     * @param {{defaults: object}} definition the type's registry entry (`RED.nodes.getType(type)`)
     * @param {object} imported the imported node, its references to other imported config nodes already pointing
     *     where they will point after the import
     * @param {object} existing a config node of the workspace
     * @returns {string[]} property names in the order of the type's defaults; "credentials" when the imported node
     *     brings credentials of its own; empty when the nodes are the same
     */
    function differences(definition, imported, existing) {
        const properties = Object.keys(definition.defaults || {}).concat(["d"]);
        const differing = properties.filter(function (property) {
            return !sameValue(effectiveValue(definition, imported, property),
                effectiveValue(definition, existing, property));
        });
        if (hasCredentials(imported)) {
            differing.push("credentials");
        }
        return differing;
    }

    /** `node` with every reference to a key of `mapping` replaced by its value (see applyPlan for what counts). */
    function remapReferences(node, mapping) {
        function mapped(value) {
            return typeof value === "string" && hasOwn(mapping, value) ? mapping[value] : value;
        }
        const copy = {};
        Object.keys(node).forEach(function (key) {
            const value = node[key];
            if (key === "id" || key === "wires") {
                copy[key] = value;
            } else if (key === "env" && Array.isArray(value)) {
                // A subflow instance can point at a config node in an env variable of type "conf-type".
                copy[key] = value.map(function (entry) {
                    return isObject(entry) && entry.type === "conf-type" && hasOwn(mapping, entry.value) ?
                        Object.assign({}, entry, { value: mapping[entry.value] }) : entry;
                });
            } else if (Array.isArray(value)) {
                copy[key] = value.map(mapped);
            } else {
                copy[key] = mapped(value);
            }
        });
        return copy;
    }

    /**
     * Decide, for each config node of an imported flow, whether an existing config node takes its place.
     *
     * An imported config node is replaced by the first existing node that is the same (see `differences`), checked
     * again each time another replacement changes what its references point at (an `mqtt-broker` whose `tls-config`
     * was replaced can then match too). One that differs from every existing node of its type in scope is a
     * conflict, unless `options.decisions` settles it. Exclusive config types (never shared in Node-RED) and types
     * the registry does not know are always added.
     *
     * @param {object[]} nodes the imported flow (from flowJson.parseFlow)
     * @param {object[]} existing the workspace's config nodes (`RED.nodes.eachConfig`), each with id, type, z and
     *     its properties
     * @param {function(string): ?{category: string, defaults: object, exclusive: boolean}} definitionOf the
     *     registry entry of a type (`RED.nodes.getType`)
     * @param {{scope: (string|null|undefined), decisions: (object|undefined)}} [options] `scope`: the id of the tab
     *     or subflow the nodes land on (config nodes scoped to it can be used too; otherwise only global ones);
     *     `decisions`: the user's answer to earlier conflicts, imported id -> existing id, or KEEP (null) to add it
     * @returns {{replacements: Object<string, string>, reused: {imported: object, existing: object}[],
     *     conflicts: {imported: object, candidates: {existing: object, differences: string[]}[]}[]}}
     *     `replacements` maps each left-out imported config id to the existing id; `conflicts` lists the config
     *     nodes still to decide, each with the existing nodes of its type, fewest differences first
     */
    function planReuse(nodes, existing, definitionOf, options) {
        const scope = options && options.scope;
        const decisions = (options && options.decisions) || {};
        const configs = nodes.filter(function (node) {
            const definition = definitionOf(node.type);
            return definition && definition.category === "config" && !definition.exclusive;
        });
        const candidatesOf = {};
        configs.forEach(function (node) {
            candidatesOf[node.id] = existing.filter(function (other) {
                return other && other.type === node.type && (!other.z || (!!scope && other.z === scope));
            });
        });
        const replacements = {};
        const reused = [];
        const settled = {};
        configs.forEach(function (node) {
            if (!hasOwn(decisions, node.id)) {
                return;
            }
            settled[node.id] = true;
            const chosen = candidatesOf[node.id].filter(function (other) {
                return other.id === decisions[node.id];
            })[0];
            if (chosen) {
                replacements[node.id] = chosen.id;
            }
        });
        let changed = true;
        while (changed) {
            changed = false;
            configs.forEach(function (node) {
                if (settled[node.id]) {
                    return;
                }
                const definition = definitionOf(node.type);
                const imported = remapReferences(node, replacements);
                const same = candidatesOf[node.id].filter(function (other) {
                    return differences(definition, imported, other).length === 0;
                });
                // An existing node of the very same id is the one the flow was written against.
                const match = same.filter(function (other) { return other.id === node.id; })[0] || same[0];
                if (match) {
                    replacements[node.id] = match.id;
                    reused.push({ imported: node, existing: match });
                    settled[node.id] = true;
                    changed = true;
                }
            });
        }
        const conflicts = configs.filter(function (node) {
            return !settled[node.id] && candidatesOf[node.id].length > 0;
        }).map(function (node) {
            const definition = definitionOf(node.type);
            const imported = remapReferences(node, replacements);
            const candidates = candidatesOf[node.id].map(function (other) {
                return { existing: other, differences: differences(definition, imported, other) };
            });
            candidates.sort(function (a, b) {
                return a.differences.length - b.differences.length;
            });
            return { imported: node, candidates: candidates };
        });
        return { replacements: replacements, reused: reused, conflicts: conflicts };
    }

    /**
     * The flow to hand to Node-RED's import: the replaced config nodes left out and every reference to them
     * pointing at the existing node; a config node that is added although its id is taken in the workspace gets a
     * new id (else Node-RED would silently use the existing node of that id instead).
     *
     * A reference is a node property whose string value (or array item) is the id, except `id` and `wires`, and an
     * env entry of type "conf-type" (subflow instances): ids are unique in a flow, so such a value is the link.
     *
     * @param {object[]} nodes the imported flow
     * @param {{replacements: Object<string, string>}} plan from planReuse
     * @param {function(string): boolean} isTaken whether an id is used in the workspace (`RED.nodes.node`)
     * @param {function(): string} newId a fresh node id (`RED.nodes.id`)
     * @param {function(string): ?{category: string}} definitionOf the registry entry of a type
     * @returns {object[]} new node objects; `nodes` is not changed
     */
    function applyPlan(nodes, plan, isTaken, newId, definitionOf) {
        const mapping = Object.assign({}, plan.replacements);
        const used = {};
        nodes.forEach(function (node) {
            used[node.id] = true;
        });
        nodes.forEach(function (node) {
            const definition = definitionOf(node.type);
            if (hasOwn(mapping, node.id) || !definition || definition.category !== "config" || !isTaken(node.id)) {
                return;
            }
            let id = newId();
            while (used[id] || isTaken(id)) {
                id = newId();
            }
            used[id] = true;
            mapping[node.id] = id;
        });
        return nodes.filter(function (node) {
            return !hasOwn(plan.replacements, node.id);
        }).map(function (node) {
            const copy = remapReferences(node, mapping);
            if (hasOwn(mapping, node.id)) {
                copy.id = mapping[node.id];
            }
            return copy;
        });
    }

    return {
        KEEP: KEEP,
        differences: differences,
        planReuse: planReuse,
        applyPlan: applyPlan
    };
}));
