/**
 * Pure helpers for Node-RED flow JSON in the sidebar: recognising a flow in an answer's code block, finding the
 * node types the editor does not know, and preparing the editor's version of a tab for the service (`flowData`).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.flowJson`) and in Node.js by the package's
 * tests (`require`). Nothing here touches `RED`; the editor-specific parts are passed in.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.flowJson = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /**
     * Types the editor handles itself rather than through its node registry (workspace tabs, subflow
     * definitions, groups, junctions) plus the core comment node, which every install has.
     */
    const BUILT_IN_TYPES = ["tab", "subflow", "group", "junction", "comment"];

    /** Default cap on `flowData`: the service accepts 4 MB bodies and Node-RED's apiMaxLength defaults to 5 MB. */
    const MAX_FLOW_DATA_BYTES = 2 * 1024 * 1024;

    function isNodeObject(value) {
        return value !== null && typeof value === "object" && !Array.isArray(value) &&
            typeof value.id === "string" && value.id !== "" &&
            typeof value.type === "string" && value.type !== "";
    }

    /**
     * The nodes of a Node-RED flow written as JSON, or null when the text is something else.
     *
     * A flow is a JSON array of objects that each have a string `id` and `type` (the editor's export format), or
     * one such object. Anything else (invalid JSON, an empty array, an array holding other values, a settings
     * object) is not a flow, so ordinary JSON examples in an answer get no Import button.
     *
     * @param {string} text the content of a code block
     * @returns {object[]|null} the nodes, always as an array
     */
    function parseFlow(text) {
        if (typeof text !== "string") {
            return null;
        }
        const trimmed = text.trim();
        const first = trimmed.charAt(0);
        if (first !== "[" && first !== "{") {
            return null;
        }
        let value;
        try {
            value = JSON.parse(trimmed);
        } catch {
            return null;
        }
        if (isNodeObject(value)) {
            return [value];
        }
        if (Array.isArray(value) && value.length > 0 && value.every(isNodeObject)) {
            return value;
        }
        return null;
    }

    /**
     * The node types of `nodes` the editor cannot create, sorted and without repeats.
     *
     * `subflow:<id>` instances are known when the subflow exists in the editor or is defined in `nodes` itself.
     *
     * @param {object[]} nodes flow nodes (from parseFlow)
     * @param {function(string): boolean} isRegistered whether the editor's registry has a type
     *     (`RED.nodes.getType`)
     * @param {function(string): boolean} subflowExists whether the editor has a subflow of that id
     *     (`RED.nodes.subflow`)
     * @returns {string[]}
     */
    function unknownTypes(nodes, isRegistered, subflowExists) {
        const definedSubflows = {};
        nodes.forEach(function (node) {
            if (node.type === "subflow") {
                definedSubflows[node.id] = true;
            }
        });
        const unknown = {};
        nodes.forEach(function (node) {
            const type = node.type;
            if (BUILT_IN_TYPES.indexOf(type) !== -1 || unknown[type]) {
                return;
            }
            if (type.indexOf("subflow:") === 0) {
                const id = type.slice("subflow:".length);
                if (!definedSubflows[id] && !subflowExists(id)) {
                    unknown[type] = true;
                }
                return;
            }
            if (!isRegistered(type)) {
                unknown[type] = true;
            }
        });
        return Object.keys(unknown).sort();
    }

    /**
     * A deep copy of `value` without any property named `credentials`, at any depth.
     *
     * The editor's exports already leave credentials out (`convertNode(n, {credentials: false})`); this makes
     * sure nothing a node keeps under that name ever leaves the browser, whatever future versions export.
     *
     * @param {*} value JSON-compatible data
     * @returns {*}
     */
    function stripCredentials(value) {
        if (Array.isArray(value)) {
            return value.map(stripCredentials);
        }
        if (value !== null && typeof value === "object") {
            const copy = {};
            Object.keys(value).forEach(function (key) {
                if (key !== "credentials") {
                    copy[key] = stripCredentials(value[key]);
                }
            });
            return copy;
        }
        return value;
    }

    /**
     * The number of bytes `text` takes as UTF-8.
     *
     * @param {string} text
     * @returns {number}
     */
    function utf8Length(text) {
        let bytes = 0;
        for (let i = 0; i < text.length; i++) {
            const code = text.charCodeAt(i);
            if (code < 0x80) {
                bytes += 1;
            } else if (code < 0x800) {
                bytes += 2;
            } else if (code >= 0xd800 && code <= 0xdbff) {
                // A surrogate pair is one code point of four bytes.
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    /**
     * The `flowData` to send: the exported nodes without credentials, or null when they are too large.
     *
     * @param {object[]} exported the tab and its nodes, as `RED.nodes.createExportableNodeSet` returns them
     * @param {number} [maxBytes=MAX_FLOW_DATA_BYTES] the largest JSON size to send
     * @returns {{nodes: (object[]|null), bytes: number}} `nodes` is null when the JSON exceeds maxBytes
     */
    function flowData(exported, maxBytes) {
        const limit = maxBytes || MAX_FLOW_DATA_BYTES;
        const nodes = stripCredentials(exported);
        const bytes = utf8Length(JSON.stringify(nodes));
        return { nodes: bytes <= limit ? nodes : null, bytes: bytes };
    }

    // How many node types a collapsed flow block names before "…".
    const SUMMARY_TYPES = 6;

    /**
     * The node types of a flow as a collapsed flow block names them: each type once, in the order it first appears,
     * with "×n" when there are several; tabs are left out (the block's count is of nodes).
     *
     * @param {object[]} nodes parseFlow's result
     * @returns {string} e.g. "inject, function ×2, debug"; "…" after SUMMARY_TYPES types
     */
    function typeSummary(nodes) {
        const counts = new Map();
        nodes.forEach(function (node) {
            if (node.type !== "tab") {
                counts.set(node.type, (counts.get(node.type) || 0) + 1);
            }
        });
        const parts = Array.from(counts, function (entry) {
            return entry[1] > 1 ? entry[0] + " \u00d7" + entry[1] : entry[0];
        });
        return parts.slice(0, SUMMARY_TYPES).join(", ") + (parts.length > SUMMARY_TYPES ? ", \u2026" : "");
    }

    return {
        BUILT_IN_TYPES: BUILT_IN_TYPES,
        typeSummary: typeSummary,
        MAX_FLOW_DATA_BYTES: MAX_FLOW_DATA_BYTES,
        parseFlow: parseFlow,
        unknownTypes: unknownTypes,
        stripCredentials: stripCredentials,
        utf8Length: utf8Length,
        flowData: flowData
    };
}));
