/**
 * Links from an answer to the canvas: node ids and names in the answer's text (node-links.js decides which) and the
 * `sources` of knowledge tool results, under their tool card. A node link reveals the node (`RED.view.reveal`,
 * which also opens its tab, or the tab itself); a help source opens that type's help in the Help sidebar; a source
 * whose node is no longer in the workspace reads as plain text.
 *
 * Editor-only script: registers `NodeRedAiSidebar.answerLinks` (`decorate(element)`, `sources(list)`).
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    // Text inside these is never linked: code blocks (flow JSON, code), links and the sidebar's own controls.
    var SKIP = "pre, a, button, .ai-sidebar-node-link, .ai-sidebar-flow-bar, .ai-sidebar-code-bar";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function nodeLinks() {
        return window.NodeRedAiSidebar.nodeLinks;
    }

    /** Whether a node, tab, subflow or group of this id is in the workspace. */
    function exists(id) {
        return !!(RED.nodes.node(id) || RED.nodes.workspace(id) || RED.nodes.subflow(id) ||
            (RED.nodes.group && RED.nodes.group(id)));
    }

    /** The workspace's flow nodes, tabs, subflows and groups as node-links.js reads them. */
    function workspaceItems() {
        var items = [];
        RED.nodes.eachNode(function (node) {
            items.push({ id: node.id, name: node.name, type: node.type });
        });
        RED.nodes.eachWorkspace(function (tab) {
            items.push({ id: tab.id, name: tab.label, type: "tab" });
        });
        RED.nodes.eachSubflow(function (subflow) {
            items.push({ id: subflow.id, name: subflow.name, type: "subflow" });
        });
        if (RED.nodes.eachGroup) {
            RED.nodes.eachGroup(function (group) {
                items.push({ id: group.id, name: group.name, type: "group" });
            });
        }
        return items;
    }

    function isNodeType(word) {
        return !!RED.nodes.getType(word);
    }

    /** Show a node (or tab, subflow, group) of the workspace; a node on another tab opens that tab first. */
    function reveal(id) {
        if (exists(id)) {
            RED.view.reveal(id);
        }
    }

    function nodeLink(text, target) {
        var label = t("answer.reveal", { name: target.name || target.id });
        return $('<a href="#" class="ai-sidebar-node-link"></a>')
            .attr("data-node-id", target.id)
            .attr("title", label).attr("aria-label", label + " (" + text + ")")
            .text(text)
            .on("click", function (event) {
                event.preventDefault();
                reveal(target.id);
            });
    }

    /** Replace the parts of one text node that name something with links. */
    function linkTextNode(node, found) {
        var text = node.nodeValue;
        var links = nodeLinks().findLinks(text, found);
        if (!links.length) {
            return;
        }
        var fragment = document.createDocumentFragment();
        var at = 0;
        links.forEach(function (link) {
            if (link.start > at) {
                fragment.appendChild(document.createTextNode(text.slice(at, link.start)));
            }
            fragment.appendChild(nodeLink(link.text, link)[0]);
            at = link.end;
        });
        if (at < text.length) {
            fragment.appendChild(document.createTextNode(text.slice(at)));
        }
        node.parentNode.replaceChild(fragment, node);
    }

    /**
     * Turn the node ids and names in an answer's text blocks into links (once the text is final). Code blocks are
     * left alone; an inline code span becomes a link only when it is all one id or name.
     *
     * @param {jQuery} element the answer's message element
     */
    function decorate(element) {
        var blocks = element.find(".ai-sidebar-text");
        if (!blocks.length) {
            return;
        }
        var found = nodeLinks().targets(workspaceItems(), isNodeType);
        if (!found.pattern && !found.quotedPattern) {
            return;
        }
        blocks.each(function () {
            $(this).find("code").each(function () {
                var code = $(this);
                if (code.closest(SKIP).length) {
                    return;
                }
                var target = nodeLinks().codeTarget(code.text(), found);
                if (target) {
                    var link = nodeLink(code.text(), target).empty().insertBefore(code);
                    code.appendTo(link);
                }
            });
            var walker = document.createTreeWalker(this, NodeFilter.SHOW_TEXT, {
                acceptNode: function (node) {
                    return $(node.parentNode).closest(SKIP + ", code").length ? NodeFilter.FILTER_REJECT :
                        NodeFilter.FILTER_ACCEPT;
                }
            });
            var textNodes = [];
            while (walker.nextNode()) {
                textNodes.push(walker.currentNode);
            }
            textNodes.forEach(function (node) {
                linkTextNode(node, found);
            });
        });
    }

    /**
     * The "Sources" line of a knowledge tool's result (contracts16 A), or null when it lists none.
     *
     * @param {object[]} list the tool_result event's `sources`
     * @returns {?jQuery}
     */
    function sources(list) {
        var links = nodeLinks().sourceLinks(list, exists);
        if (!links.length) {
            return null;
        }
        var line = $('<div class="ai-sidebar-sources"></div>')
            .append($('<span class="ai-sidebar-sources-label"></span>').text(t("answer.sources") + ":"));
        links.forEach(function (link) {
            var text = link.kind === "help" ? t("answer.helpSource", { type: link.type }) :
                link.name + (link.tab ? " (" + link.tab + ")" : "");
            var item;
            if (link.kind === "help") {
                item = $('<a href="#" class="ai-sidebar-source ai-sidebar-source-help"></a>')
                    .attr("data-node-type", link.type)
                    .on("click", function (event) {
                        event.preventDefault();
                        RED.sidebar.help.show(link.type);
                    });
                $('<i class="fa fa-book" aria-hidden="true"></i>').appendTo(item);
            } else if (link.gone) {
                item = $('<span class="ai-sidebar-source ai-sidebar-source-gone"></span>')
                    .attr("data-node-id", link.id).attr("title", t("answer.goneSource"));
                text += " " + t("answer.goneSource");
            } else {
                item = $('<a href="#" class="ai-sidebar-source ai-sidebar-source-node"></a>')
                    .attr("data-node-id", link.id).attr("title", t("answer.reveal", { name: link.name }))
                    .on("click", function (event) {
                        event.preventDefault();
                        reveal(link.id);
                    });
                $('<i class="fa fa-crosshairs" aria-hidden="true"></i>').appendTo(item);
            }
            item.append(document.createTextNode(" " + text)).appendTo(line);
        });
        return line;
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.answerLinks = { decorate: decorate, sources: sources, reveal: reveal };
}());
