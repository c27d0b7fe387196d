/**
 * What of the editor goes out with a question, and how the context chip above the input says it: the open tab
 * (flow or subflow) and the selected nodes, unless the user removed the chip, and the Debug sidebar messages the
 * user attached. Also the same words for a question reloaded from a session's history.
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.editorContext`) and in Node.js by the
 * package's tests (`require`). The editor API (`RED`) and the translation function are passed in; nothing here
 * touches the DOM.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.editorContext = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /**
     * The open tab as sent to the service.
     *
     * @param {object} RED the editor API (`workspaces.active`, `nodes.workspace`, `nodes.subflow`)
     * @returns {?{id: string, label: string, subflow: boolean}} null while no flow is open
     */
    function selectedFlow(RED) {
        const id = RED.workspaces.active();
        if (!id) {
            return null;
        }
        const workspace = RED.nodes.workspace(id);
        if (workspace) {
            return { id: id, label: workspace.label || "", subflow: false };
        }
        const subflow = RED.nodes.subflow(id);
        if (subflow) {
            return { id: id, label: subflow.name || "", subflow: true };
        }
        return null;
    }

    /**
     * The ids of the tabs and subflows locked in the editor now, deployed or not (Node-RED 3.1+ `locked`; the tab's
     * menu → Lock), as sent to the service (`lockedFlows`): it plans a change by these, not by the deployed flows.
     *
     * @param {object} RED the editor API (`nodes.eachWorkspace`, `nodes.eachSubflow`)
     * @returns {string[]}
     */
    function lockedFlows(RED) {
        const ids = [];
        function note(flow) {
            if (flow.locked) {
                ids.push(flow.id);
            }
        }
        RED.nodes.eachWorkspace(note);
        RED.nodes.eachSubflow(note);
        return ids;
    }

    /**
     * The selected nodes as sent to the service.
     *
     * @param {object} RED the editor API (`view.selection`)
     * @returns {{id: string, type: string, name: string}[]}
     */
    function selectedNodes(RED) {
        const selection = RED.view.selection() || {};
        return (selection.nodes || []).map(function (node) {
            return { id: node.id, type: node.type, name: node.name || "" };
        });
    }

    // How many Debug sidebar messages one question can carry, and how much of each (the service takes 5 of up to
    // 5,000 characters: StreamChatRequest.debugMessages).
    const MAX_DEBUG_MESSAGES = 5;
    const DEBUG_MSG_CHARS = 4000;

    /** " · attached: a.png, b.txt" for the names of the files sent with a question; "" without. */
    function attachedText(names, t) {
        return names && names.length ? " \u00b7 " + t("context.attached", { names: names.join(", ") }) : "";
    }

    /**
     * What the chip shows.
     *
     * @param {{removed: boolean, flow: ?{label: string, subflow: boolean}, count: number, debug: number,
     *     chipsShown: (boolean|undefined), mentions: (string[]|undefined), attached: (string[]|undefined)}} state
     *     `debug`: how many Debug messages are attached (sent whether or not the flow context is removed);
     *     `chipsShown`: the selected nodes have chips of their own beside it (node-chips.js), so it does not count
     *     them; `mentions`: the labels of the @-mentions sent (as a question's sent context shows them);
     *     `attached`: the names of the files sent with it (attachment-chips.js)
     * @param {function(string, object=): string} t the sidebar catalog's translation (keys under `context.`)
     * @returns {{icon: string, text: string, name: string, detail: string, title: string, button: {icon: string,
     *     label: string, removes: boolean}}} `icon`s are Font Awesome classes; `text` is `name` (the flow, which may
     *     be cut when narrow) then `detail` (the counts, never cut); the button removes the context, or brings it
     *     back
     */
    function chip(state, t) {
        const mentions = state.mentions && state.mentions.length ?
            " \u00b7 " + t("context.mentions", { names: state.mentions.map(function (name) {
                return "@" + name;
            }).join(", ") }) + attachedText(state.attached, t) : attachedText(state.attached, t);
        const debugText = state.debug ? t("context.debug", { count: state.debug }) : "";
        if (state.removed) {
            const removed = t("context.removed");
            const removedDetail = (debugText ? " \u00b7 " + debugText : "") + mentions;
            return {
                icon: "fa-ban",
                text: removed + removedDetail,
                name: removed,
                detail: removedDetail,
                title: t("context.removedTooltip"),
                button: { icon: "fa-undo", label: t("context.restore"), removes: false }
            };
        }
        const flow = state.flow;
        let flowText;
        if (!flow) {
            flowText = t("context.noFlow");
        } else {
            flowText = t(flow.subflow ? "context.subflow" : "context.flow", { label: flow.label || t("context.unnamed") });
        }
        let nodesText = state.count ? t("context.nodes", { count: state.count }) : t("context.noNodes");
        if (state.count && state.chipsShown) {
            // The chips beside it name each node: a count would only repeat them (issue 31).
            nodesText = "";
        }
        const detail = (nodesText ? " \u00b7 " + nodesText : "") + (debugText ? " \u00b7 " + debugText : "") +
            mentions;
        return {
            icon: "fa-sitemap",
            text: flowText + detail,
            name: flowText,
            detail: detail,
            title: t("context.tooltip"),
            button: { icon: "fa-times", label: t("context.remove"), removes: true }
        };
    }

    /**
     * The context a stored question went out with, in the chip's words: from the `context` the service keeps in
     * the question's metadata (`{flow: ?{id, label}, nodes: number, debug: number, mentions: ?{kind, id, label}[],
     * attachments: ?{kind, name}[]}`).
     *
     * @param {object} metadata the stored question's metadata (GET ai-sidebar/history)
     * @param {function(string, object=): string} t as for `chip`
     * @param {function(string): boolean} [isSubflow] whether a tab id is a subflow in the workspace
     * @returns {?{icon: string, text: string}} null for a question stored without it (an older service)
     */
    function sentView(metadata, t, isSubflow) {
        const context = metadata && typeof metadata === "object" ? metadata.context : null;
        if (!context || typeof context !== "object") {
            return null;
        }
        const flow = context.flow && typeof context.flow === "object" && typeof context.flow.id === "string" ?
            context.flow : null;
        const count = Number.isInteger(context.nodes) && context.nodes > 0 ? context.nodes : 0;
        const debug = Number.isInteger(context.debug) && context.debug > 0 ? context.debug : 0;
        const mentions = (Array.isArray(context.mentions) ? context.mentions : []).filter(function (item) {
            return item && typeof item === "object" && typeof item.id === "string";
        }).map(function (item) {
            return typeof item.label === "string" && item.label ? item.label : item.id;
        });
        const attached = (Array.isArray(context.attachments) ? context.attachments : []).filter(function (item) {
            return item && typeof item === "object" && typeof item.name === "string";
        }).map(function (item) {
            return item.name;
        });
        const view = chip({
            // A question without flow and nodes went out with the chip removed (or with no tab open).
            removed: !flow && !count,
            flow: flow && { label: typeof flow.label === "string" ? flow.label : "",
                subflow: !!(isSubflow && isSubflow(flow.id)) },
            count: count,
            debug: debug,
            mentions: mentions,
            attached: attached
        }, t);
        return { icon: view.icon, text: view.text };
    }

    /**
     * A Debug sidebar message as it goes out with a question.
     *
     * @param {object} message the message the Debug sidebar shows (Node-RED's `debugPostProcessMessage` hook:
     *     `msg` the encoded text, `format`, `topic`, `property`, `name`, `_source.id`)
     * @returns {{nodeId: ?string, name: string, topic: string, property: string, format: string, msg: string}}
     *     `msg` cut to DEBUG_MSG_CHARS characters (with "…")
     */
    function debugAttachment(message) {
        message = message || {};
        const source = message._source && typeof message._source === "object" ? message._source : {};
        let text = typeof message.msg === "string" ? message.msg : JSON.stringify(message.msg);
        text = text === undefined ? "" : text;
        if (text.length > DEBUG_MSG_CHARS) {
            text = text.slice(0, DEBUG_MSG_CHARS - 1) + "\u2026";
        }
        const nodeId = typeof source.id === "string" ? source.id : (typeof message.id === "string" ? message.id : null);
        return {
            nodeId: nodeId,
            name: String(message.name || source.name || ""),
            topic: String(message.topic || "").slice(0, 500),
            property: String(message.property || "payload").slice(0, 200),
            format: String(message.format || "").slice(0, 100),
            msg: text
        };
    }

    /**
     * Attach one more Debug message: the same one again is not doubled, and only the latest MAX_DEBUG_MESSAGES stay.
     *
     * @param {object[]} attached the attachments so far (debugAttachment)
     * @param {object} item
     * @returns {object[]} a new list
     */
    function attachDebug(attached, item) {
        const same = JSON.stringify(item);
        const list = attached.filter(function (other) {
            return JSON.stringify(other) !== same;
        }).concat([item]);
        return list.slice(-MAX_DEBUG_MESSAGES);
    }

    return { MAX_DEBUG_MESSAGES: MAX_DEBUG_MESSAGES, DEBUG_MSG_CHARS: DEBUG_MSG_CHARS, selectedFlow: selectedFlow,
        lockedFlows: lockedFlows, selectedNodes: selectedNodes, chip: chip, sentView: sentView, debugAttachment: debugAttachment,
        attachDebug: attachDebug };
}));
