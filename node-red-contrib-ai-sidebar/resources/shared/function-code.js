/**
 * "Put into the selected function node" for JavaScript blocks of answers: the change is shown as a line diff
 * first, and applied (replacing the node's On Message code, `func`) as one undo step.
 *
 * Editor-only script: registers `NodeRedAiSidebar.functionCode`; the diff itself is code-blocks.js's lineDiff.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function codeBlocks() {
        return window.NodeRedAiSidebar.codeBlocks;
    }

    /** The one function node selected in the workspace, or null (none, several, or other nodes too). */
    function selectedFunctionNode() {
        var selection = RED.view.selection();
        var nodes = (selection && selection.nodes) || [];
        return nodes.length === 1 && nodes[0].type === "function" ? nodes[0] : null;
    }

    function nodeName(node) {
        return RED.utils.getNodeLabel(node, node.type);
    }

    /**
     * Replace `node.func` with `code` as one history event: Node-RED's own "edit" event (editor-client
     * history.js undoes it by restoring `changes`, the node's `changed` flag and the workspace's dirty state).
     */
    function apply(node, code) {
        var event = {
            t: "edit",
            node: node,
            changes: { func: node.func },
            changed: node.changed,
            dirty: RED.nodes.dirty()
        };
        node.func = code;
        node.changed = true;
        node.dirty = true;
        RED.history.push(event);
        RED.nodes.dirty(true);
        RED.editor.validateNode(node);
        RED.events.emit("nodes:change", node);
        RED.view.redraw(true);
    }

    /** The diff rows as a `<pre>`: one line each, marked added/removed for screen readers as well as by colour. */
    function diffView(diff) {
        var view = $('<pre class="ai-sidebar-diff" tabindex="0"></pre>')
            .attr("aria-label", t("code.diffLabel", { added: diff.added, removed: diff.removed }));
        var marks = { same: "  ", added: "+ ", removed: "- " };
        diff.rows.forEach(function (row) {
            $('<div class="ai-sidebar-diff-line"></div>').addClass("ai-sidebar-diff-" + row.type)
                .text(marks[row.type] + row.text).appendTo(view);
        });
        return view;
    }

    /**
     * Show what putting `text` into the selected function node changes, and apply it when the user confirms.
     * Without exactly one selected function node (or with its flow locked) a sentence in `status` says so.
     *
     * @param {string} text the code block's text
     * @param {jQuery} status where to say why nothing can be put in
     * @returns {boolean} whether the dialog was opened
     */
    function offer(text, status) {
        status.empty().hide();
        var node = selectedFunctionNode();
        if (!node) {
            status.text(t("code.selectFunction")).show();
            return false;
        }
        if (RED.workspaces.isLocked && RED.workspaces.isLocked(node.z)) {
            status.text(t("code.functionLocked", { name: nodeName(node) })).show();
            return false;
        }
        var code = codeBlocks().blockCode(text);
        var diff = codeBlocks().lineDiff(node.func || "", code);
        var content = $('<div class="ai-sidebar-put-dialog"></div>');
        $("<p></p>").text(t("code.putIntro", { name: nodeName(node) })).appendTo(content);
        $('<p class="ai-sidebar-diff-summary"></p>')
            .text(t("code.diffLabel", { added: diff.added, removed: diff.removed })).appendTo(content);
        diffView(diff).appendTo(content);
        // A dialog like the editor's own Export / Import one (editor-client clipboard.js: a jQuery UI dialog with
        // the "red-ui-editor-dialog" classes), which has room for the diff even at 1280×720.
        content.appendTo("#red-ui-editor").dialog({
            modal: true,
            title: t("code.putTitle"),
            width: Math.min(720, Math.round(window.innerWidth * 0.9)),
            resizable: false,
            classes: {
                "ui-dialog": "red-ui-editor-dialog ai-sidebar-put-dialog-frame",
                "ui-dialog-titlebar-close": "hide",
                "ui-widget-overlay": "red-ui-editor-dialog"
            },
            close: function () {
                content.dialog("destroy").remove();
            },
            buttons: [
                {
                    text: t("flow.cancel"),
                    class: "ai-sidebar-put-cancel",
                    click: function () {
                        content.dialog("close");
                    }
                },
                {
                    text: t("code.putConfirm"),
                    class: "primary ai-sidebar-put-apply",
                    click: function () {
                        content.dialog("close");
                        // The node may have been deleted while the dialog was open.
                        if (RED.nodes.node(node.id) === node) {
                            apply(node, code);
                            RED.notify($("<p></p>").text(t("code.putDone", { name: nodeName(node) })),
                                { type: "success", timeout: 4000 });
                        }
                    }
                }
            ]
        });
        return true;
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.functionCode = { offer: offer, selectedFunctionNode: selectedFunctionNode };
}());
