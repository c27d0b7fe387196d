/**
 * What of the editor goes out with a question, and how the context chip above the input says it: the open tab
 * (flow or subflow) and the selected nodes, unless the user removed the chip.
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

    /**
     * What the context chip shows.
     *
     * @param {{removed: boolean, flow: ?{label: string, subflow: boolean}, count: number}} state
     * @param {function(string, object=): string} t the sidebar catalog's translation (keys under `context.`)
     * @returns {{icon: string, text: string, title: string, button: {icon: string, label: string,
     *     removes: boolean}}} `icon`s are Font Awesome classes; the button removes the context, or brings it back
     */
    function chip(state, t) {
        if (state.removed) {
            return {
                icon: "fa-ban",
                text: t("context.removed"),
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
        const nodesText = state.count ? t("context.nodes", { count: state.count }) : t("context.noNodes");
        return {
            icon: "fa-sitemap",
            text: flowText + " \u00b7 " + nodesText,
            title: t("context.tooltip"),
            button: { icon: "fa-times", label: t("context.remove"), removes: true }
        };
    }

    return { selectedFlow: selectedFlow, selectedNodes: selectedNodes, chip: chip };
}));
