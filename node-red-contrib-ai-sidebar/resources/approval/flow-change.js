/**
 * An approved write landing in the editor: the `changes` of a `flow_change` event (README "Changing flows, only
 * after the user approves": the diff `added`, `removed`, `changed`, `wires`, plus `nodes`) applied undeployed, as
 * one undo step, the way the editor's own edits are.
 *
 * `planChange` is pure; `applyChange(RED, changes)` uses the editor's API (Node-RED 4.1 and 5.x,
 * editor-client red.js): `RED.nodes.import` adds the new tabs and nodes (with their wires), an `edit` history event
 * records each changed node, `RED.nodes.remove` deletes with a `delete` history event, all pushed as one
 * `RED.history` entry (`multi` when several), so one Ctrl-Z undoes the whole change. Nothing is deployed: the
 * workspace is marked dirty and the Deploy button shows undeployed changes.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.flowChange`) and in Node.js by the package's
 * tests (`require`).
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.flowChange = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    // Editor nodes hold wires as links, not as a property; these are never copied onto a node.
    const NOT_PROPERTIES = ["id", "type", "z", "wires", "credentials"];
    // Where a node sits: moving an applied node does not change what was applied.
    const LAYOUT = ["x", "y", "w", "h", "g"];

    function isNode(value) {
        return !!value && typeof value === "object" && typeof value.id === "string" && typeof value.type === "string";
    }

    /**
     * What a change does, in the order it is applied.
     *
     * @param {object} changes the `changes` of a flow_change event
     * @returns {{tabs: object[], nodes: object[], moves: {id: string, properties: object}[],
     *     edits: {id: string, properties: object}[], deletes: string[]}} `tabs` and `nodes`: copies of the new ones
     *     (tabs first); `moves`: nodes moved to another tab, their new `z` and what changes with it; `edits`:
     *     property name → new value (`wires` included: the node's outputs as target ids per port); `deletes`: ids
     */
    function planChange(changes) {
        changes = changes && typeof changes === "object" ? changes : {};
        const added = (Array.isArray(changes.nodes) ? changes.nodes : Array.isArray(changes.added) ?
            changes.added : []).filter(isNode).map(function (node) {
            return JSON.parse(JSON.stringify(node));
        });
        const entries = (Array.isArray(changes.changed) ? changes.changed : []).filter(function (entry) {
            return entry && typeof entry.id === "string" && entry.properties && typeof entry.properties === "object";
        });
        function moved(entry) {
            return entry.properties.z && typeof entry.properties.z === "object" && typeof entry.properties.z.after ===
                "string";
        }
        return {
            tabs: added.filter(function (node) { return node.type === "tab"; }),
            nodes: added.filter(function (node) { return node.type !== "tab"; }),
            // Nodes moved to another tab (move_nodes): each new `z` with the other properties set with it.
            moves: entries.filter(moved).map(function (entry) {
                const properties = {};
                Object.keys(entry.properties).forEach(function (name) {
                    const sides = entry.properties[name];
                    if (sides && typeof sides === "object" && "after" in sides && name !== "id" && name !== "type" &&
                            name !== "credentials") {
                        properties[name] = sides.after;
                    }
                });
                return { id: entry.id, properties: properties };
            }),
            edits: entries.filter(function (entry) { return !moved(entry); }).map(function (entry) {
                const properties = {};
                Object.keys(entry.properties).forEach(function (name) {
                    const sides = entry.properties[name];
                    if (sides && typeof sides === "object" && "after" in sides && name !== "id" && name !== "type" &&
                            name !== "z" && name !== "credentials") {
                        properties[name] = sides.after;
                    }
                });
                return { id: entry.id, properties: properties };
            }),
            deletes: (Array.isArray(changes.removed) ? changes.removed : []).filter(function (id) {
                return typeof id === "string";
            })
        };
    }

    /**
     * Why a planned change cannot land in this editor as it is now, or null.
     *
     * @param {object} plan from planChange
     * @param {{exists: function(string): boolean, container: function(string): ?{locked: boolean},
     *     zOf: function(string): ?string}} editor whether a node id is in the workspace; the tab or subflow of an
     *     id (null when the editor has none); the tab or subflow a node is on (null for a tab or a config node)
     * @returns {?{reason: ("missing"|"locked"|"applied"), ids: string[]}} `missing`: nodes to change or delete,
     *     or the tab to add to, are not in the editor (changed since the plan); `locked`: a tab or subflow to add
     *     to, or holding a node to change or delete, is locked in the editor (it refuses the edit; Node-RED 3.1+);
     *     `applied`: the new nodes are there already
     */
    function problemWith(plan, editor) {
        // New containers: tabs, and subflow definitions the nodes moved into belong to (create_subflow).
        const newTabs = plan.tabs.concat(plan.nodes.filter(function (node) {
            return node.type === "subflow";
        })).map(function (tab) { return tab.id; });
        const applied = plan.tabs.concat(plan.nodes).map(function (node) { return node.id; }).filter(editor.exists);
        if (applied.length) {
            return { reason: "applied", ids: applied };
        }
        const moves = plan.moves || [];
        const targets = plan.edits.concat(moves).map(function (edit) { return edit.id; }).concat(plan.deletes);
        const missing = targets.filter(function (id) { return !editor.exists(id); });
        const tabs = [];
        plan.nodes.concat(moves.map(function (move) { return move.properties; })).forEach(function (node) {
            if (node.z && newTabs.indexOf(node.z) === -1 && tabs.indexOf(node.z) === -1) {
                tabs.push(node.z);
            }
        });
        tabs.forEach(function (id) {
            if (!editor.container(id)) {
                missing.push(id);
            }
        });
        if (missing.length) {
            return { reason: "missing", ids: missing };
        }
        // A tab's own edit counts for its lock too (set_disabled, rename), but for unlocking it alone.
        plan.edits.filter(function (edit) {
            const names = Object.keys(edit.properties);
            return !(names.length === 1 && names[0] === "locked");
        }).forEach(function (edit) {
            const container = editor.container(edit.id);
            if (container && (container.type === "tab" || container.type === "subflow") &&
                    tabs.indexOf(edit.id) === -1) {
                tabs.push(edit.id);
            }
        });
        targets.forEach(function (id) {
            const z = editor.zOf(id);
            if (z && tabs.indexOf(z) === -1) {
                tabs.push(z);
            }
        });
        const locked = tabs.filter(function (id) {
            const container = editor.container(id);
            return container && container.locked;
        });
        return locked.length ? { reason: "locked", ids: locked } : null;
    }

    /** The links `wires` asks for from `node`: [{source, sourcePort, target}] to targets the editor has. */
    function linksOf(RED, node, wires) {
        const links = [];
        (Array.isArray(wires) ? wires : []).forEach(function (targets, port) {
            (Array.isArray(targets) ? targets : []).forEach(function (id) {
                const target = RED.nodes.node(id);
                if (target) {
                    links.push({ source: node, sourcePort: port, target: target });
                }
            });
        });
        return links;
    }

    /** The editor's node, tab (workspace), subflow or group of an id, or undefined. */
    function anyNode(RED, id) {
        return RED.nodes.node(id) || RED.nodes.workspace(id) || RED.nodes.subflow(id) || RED.nodes.group(id);
    }

    /**
     * Set changed properties of an editor node, tab or group and return its `edit` history event (the editor's
     * undo of an `edit` puts each old value back, also a tab's `disabled` and label and a group's `nodes`).
     * A property whose new value is null is removed (a node's `d` when enabled, its `g` when it leaves a group).
     */
    function editNode(RED, edit, wasDirty) {
        const node = anyNode(RED, edit.id);
        const event = { t: "edit", node: node, changes: {}, changed: node.changed, dirty: wasDirty };
        const defaults = (node._def && node._def.defaults) || {};
        Object.keys(edit.properties).forEach(function (name) {
            if (NOT_PROPERTIES.indexOf(name) !== -1) {
                return;
            }
            let value = edit.properties[name];
            event.changes[name] = node[name];
            if (defaults[name] && defaults[name].type) {
                // A config node reference: the editor keeps each config node's users (undo restores them).
                moveUser(RED, node, node[name], value);
            }
            if (node.type === "group" && name === "nodes") {
                // The editor's group holds its members as objects (RED.group); the diff names them by id.
                value = (Array.isArray(value) ? value : []).map(function (id) {
                    return RED.nodes.node(id) || RED.nodes.group(id);
                }).filter(Boolean);
            }
            if (name === "g") {
                markGroupDirty(RED, node[name]);
                markGroupDirty(RED, value);
            }
            if (value === null || value === undefined) {
                delete node[name];
            } else {
                node[name] = value;
            }
        });
        if (node.type === "tab" || node.type === "group") {
            node.changed = true;
            node.dirty = true;
        }
        if (node.type === "tab") {
            $tabClass(node);
            RED.events.emit("flows:change", node);
            return event;
        }
        if (node.type === "group") {
            markGroupDirty(RED, node.id);
            RED.events.emit("groups:change", node);
            return event;
        }
        if (Object.prototype.hasOwnProperty.call(edit.properties, "wires")) {
            const removed = [];
            RED.nodes.filterLinks({ source: node }).forEach(function (link) {
                removed.push(link);
                RED.nodes.removeLink(link);
            });
            const created = linksOf(RED, node, edit.properties.wires);
            created.forEach(function (link) {
                RED.nodes.addLink(link);
            });
            event.links = removed;
            event.createdLinks = created;
        }
        node.changed = true;
        node.dirty = true;
        node.resize = true;
        if (RED.editor && RED.editor.validateNode) {
            RED.editor.validateNode(node);
        }
        RED.events.emit("nodes:change", node);
        return event;
    }

    /** Show a tab's disabled state on its tab header, as the editor's own edit does (undo does the same). */
    function $tabClass(tab) {
        if (typeof $ === "function") {
            $("#red-ui-tab-" + tab.id.replace(".", "-")).toggleClass("red-ui-workspace-disabled", !!tab.disabled);
        }
    }

    /** Let the editor redraw a group's border around its members (by id; nothing for none). */
    function markGroupDirty(RED, id) {
        const group = id ? RED.nodes.group(id) : null;
        if (group && RED.group && RED.group.markDirty) {
            RED.group.markDirty(group);
        }
    }

    function moveUser(RED, node, from, to) {
        [].concat(from || []).forEach(function (id) {
            const config = RED.nodes.node(id);
            if (config && config.users && config.users.indexOf(node) !== -1) {
                config.users.splice(config.users.indexOf(node), 1);
            }
        });
        [].concat(to || []).forEach(function (id) {
            const config = RED.nodes.node(id);
            if (config && config.users && config.users.indexOf(node) === -1) {
                config.users.push(node);
            }
        });
    }

    /** Delete nodes (with their wires and group membership) and return the `delete` history event. */
    function deleteNodes(RED, ids, wasDirty) {
        const event = { t: "delete", nodes: [], links: [], dirty: wasDirty };
        ids.forEach(function (id) {
            const group = RED.nodes.node(id) ? null : RED.nodes.group(id);
            if (group) {
                // An ungrouped group: its members left it by `g` edits before; the editor's undo adds it back.
                event.groups = (event.groups || []).concat([group]);
                RED.nodes.removeGroup(group);
                return;
            }
            const node = RED.nodes.node(id);
            if (!node) {
                return;
            }
            if (node.g) {
                const group = RED.nodes.group(node.g);
                if (group && group.nodes.indexOf(node) !== -1) {
                    group.nodes.splice(group.nodes.indexOf(node), 1);
                    RED.group.markDirty(group);
                }
            }
            const removed = RED.nodes.remove(id) || {};
            event.nodes.push(node);
            (removed.links || []).forEach(function (link) {
                event.links.push(link);
            });
            (removed.nodes || []).forEach(function (extra) {
                event.nodes.push(extra);
            });
        });
        return event;
    }

    /**
     * Apply a flow_change in the editor: undeployed, one undo step.
     *
     * @param {object} RED the editor's API
     * @param {object} changes the `changes` of a flow_change event
     * @returns {{added: number, tabs: number, changed: number, removed: number, tab: ?string, record: ?object}|
     *     {problem: object}} what was applied (`tab`: where, shown to the user; `record`: appliedRecord's, for
     *     applied-watch.js, null when nothing changed), or why nothing was (see problemWith)
     */
    function applyChange(RED, changes) {
        const plan = planChange(changes);
        const problem = problemWith(plan, {
            exists: function (id) {
                return !!(RED.nodes.node(id) || RED.nodes.workspace(id) || RED.nodes.subflow(id) ||
                    RED.nodes.group(id));
            },
            container: function (id) {
                return RED.nodes.workspace(id) || RED.nodes.subflow(id) || null;
            },
            zOf: function (id) {
                const node = RED.nodes.node(id) || RED.nodes.group(id);
                return (node && node.z) || null;
            }
        });
        if (problem) {
            return { problem: problem };
        }
        const wasDirty = RED.nodes.dirty();
        const tab = where(RED, plan);
        const events = [];
        // A move is the node taken off its tab and imported again on the new one (same id, its new properties):
        // one `delete` and one `add` event, which the editor's undo reverses.
        const movedNodes = plan.moves.map(function (move) {
            const exported = RED.nodes.convertNode(anyNode(RED, move.id), { dimensions: true });
            Object.keys(move.properties).forEach(function (name) {
                if (move.properties[name] === null) {
                    delete exported[name];
                } else {
                    exported[name] = JSON.parse(JSON.stringify(move.properties[name]));
                }
            });
            return exported;
        });
        if (movedNodes.length) {
            events.push(deleteNodes(RED, plan.moves.map(function (move) { return move.id; }), wasDirty));
        }
        if (plan.tabs.length || plan.nodes.length || movedNodes.length) {
            const imported = RED.nodes.import(plan.tabs.concat(plan.nodes, movedNodes), {
                generateIds: false,
                addFlow: false,
                // Each node stays on the tab it names (a move, link pairs on two tabs), not the open one.
                reimport: true,
                markChanged: true,
                // As Node-RED's own import of suggested flows does: a model often leaves default properties out.
                applyNodeDefaults: true,
                eventContext: { source: "ai-sidebar" }
            });
            // A moved node keeps its id: drawn afresh at its place on the new tab (else the view reuses the old
            // drawing, placed nowhere).
            imported.nodes.forEach(function (node) {
                node.dirty = true;
                node.resize = true;
            });
            // A new group around nodes the editor has (create_group): the import keeps only members it imported.
            imported.groups.forEach(function (group) {
                const planned = plan.nodes.concat(movedNodes).filter(function (node) {
                    return node.id === group.id;
                })[0];
                if (planned && Array.isArray(planned.nodes)) {
                    group.nodes = planned.nodes.map(function (id) {
                        return RED.nodes.node(id) || RED.nodes.group(id);
                    }).filter(Boolean);
                    markGroupDirty(RED, group.id);
                }
            });
            events.push({
                t: "add",
                nodes: imported.nodes.map(function (node) { return node.id; }),
                links: imported.links,
                groups: imported.groups,
                junctions: imported.junctions,
                workspaces: imported.workspaces,
                subflows: imported.subflows,
                dirty: wasDirty
            });
        }
        plan.edits.forEach(function (edit) {
            events.push(editNode(RED, edit, wasDirty));
        });
        if (plan.deletes.length) {
            events.push(deleteNodes(RED, plan.deletes, wasDirty));
        }
        if (!events.length) {
            return { added: 0, tabs: 0, changed: 0, removed: 0, tab: null };
        }
        const entry = events.length === 1 ? events[0] : { t: "multi", events: events, dirty: wasDirty };
        RED.history.push(entry);
        RED.nodes.dirty(true);
        if (tab && RED.workspaces.active() !== tab) {
            RED.workspaces.show(tab);
        }
        RED.view.redraw(true);
        return { added: plan.nodes.length, tabs: plan.tabs.length, changed: plan.edits.length + plan.moves.length,
            removed: plan.deletes.length, tab: tab, record: appliedRecord(entry, plan) };
    }

    /**
     * What applied-watch.js needs to follow a change in the editor: its history entry, the nodes it added or
     * changed with the properties it set (never the values: those are read from the editor), the ids it deleted.
     */
    function appliedRecord(entry, plan) {
        function keysOf(properties) {
            return Object.keys(properties).filter(function (name) {
                return NOT_PROPERTIES.indexOf(name) === -1 && LAYOUT.indexOf(name) === -1;
            });
        }
        return {
            entry: entry,
            nodes: plan.nodes.map(function (node) {
                return { id: node.id, keys: keysOf(node) };
            }).concat(plan.edits.concat(plan.moves).map(function (edit) {
                return { id: edit.id, keys: keysOf(edit.properties) };
            })),
            deletes: plan.deletes.slice()
        };
    }

    /** The tab (or subflow) the change is on, read before it is applied: a new tab, else the first node's. */
    function where(RED, plan) {
        if (plan.tabs.length) {
            return plan.tabs[0].id;
        }
        // Nodes moved into a new subflow (create_subflow): the tab of its instance, where they were.
        const subflows = plan.nodes.filter(function (node) { return node.type === "subflow"; }).map(function (node) {
            return node.id;
        });
        if (plan.moves && plan.moves.length && subflows.indexOf(plan.moves[0].properties.z) === -1) {
            return plan.moves[0].properties.z;
        }
        const first = plan.nodes.filter(function (node) { return node.type !== "subflow"; })[0] ||
            RED.nodes.node((plan.edits[0] || {}).id || plan.deletes[0]) || null;
        return first && first.z ? first.z : null;
    }

    return {
        planChange: planChange,
        problemWith: problemWith,
        applyChange: applyChange
    };
}));
