"use strict";

const assert = require("assert");
const nodeLinks = require("../resources/shared/node-links");

const WORKSPACE = [
    { id: "a1b2c3d4e5f60718", name: "Parse reading", type: "function" },
    { id: "0f1e2d3c4b5a6978", name: "Store", type: "change" },
    { id: "1111222233334444", name: "Store", type: "function" },
    { id: "9999888877776666", name: "debug", type: "debug" },
    { id: "tab1.abc", name: "Sensors", type: "tab" },
    { id: "5555666677778888", name: "", type: "inject" },
    { id: "ab", name: "OK", type: "inject" },
    { id: "e1e2e3e4e5e6e7e8", name: "error", type: "http response" }
];

function isNodeType(word) {
    return ["debug", "function", "change", "inject"].includes(word);
}

function linked(text) {
    return nodeLinks.findLinks(text, nodeLinks.targets(WORKSPACE, isNodeType)).map((link) => [link.text, link.id]);
}

describe("node links in answers", function () {
    it("links node ids and names that exactly one node has", function () {
        assert.deepStrictEqual(linked("Node a1b2c3d4e5f60718 feeds \"Parse reading\", then 5555666677778888."), [
            ["a1b2c3d4e5f60718", "a1b2c3d4e5f60718"], ["Parse reading", "a1b2c3d4e5f60718"],
            ["5555666677778888", "5555666677778888"]]);
    });

    it("links a tab by its label and an id with a dot, even before a full stop", function () {
        assert.deepStrictEqual(linked("On Sensors the tab is tab1.abc."), [["Sensors", "tab1.abc"],
            ["tab1.abc", "tab1.abc"]]);
    });

    it("leaves a name two nodes share, a name that is a node type, short names and other case alone", function () {
        assert.deepStrictEqual(linked("Store the value; the debug node says OK; parse reading."), []);
        // The ambiguous name's nodes are still linked by id.
        assert.deepStrictEqual(linked("0f1e2d3c4b5a6978 and 1111222233334444"), [
            ["0f1e2d3c4b5a6978", "0f1e2d3c4b5a6978"], ["1111222233334444", "1111222233334444"]]);
    });

    it("needs the match to stand alone: no letter, digit or _ around it", function () {
        assert.deepStrictEqual(linked("xa1b2c3d4e5f60718 a1b2c3d4e5f607189 Parse readings Parse reading_2"), []);
        assert.deepStrictEqual(linked("(Parse reading)"), [["Parse reading", "a1b2c3d4e5f60718"]]);
        assert.deepStrictEqual(linked("msg.Sensors and Sensors.topic but Sensors."), [["Sensors", "tab1.abc"]]);
    });

    it("links a name that reads as an ordinary word only where the answer quotes it", function () {
        assert.deepStrictEqual(linked("On error the report error node logs the error."), []);
        assert.deepStrictEqual(linked("The \"error\" node answers; so does \u201cerror\u201d, 'error' and \u300cerror\u300d."), [
            ["error", "e1e2e3e4e5e6e7e8"], ["error", "e1e2e3e4e5e6e7e8"], ["error", "e1e2e3e4e5e6e7e8"],
            ["error", "e1e2e3e4e5e6e7e8"]]);
        // In order with the other links, and as an inline code span.
        assert.deepStrictEqual(linked("\"error\" after Parse reading"), [["error", "e1e2e3e4e5e6e7e8"],
            ["Parse reading", "a1b2c3d4e5f60718"]]);
        assert.strictEqual(nodeLinks.codeTarget("error", nodeLinks.targets(WORKSPACE, isNodeType)).id,
            "e1e2e3e4e5e6e7e8");
    });

    it("finds nothing in an empty workspace", function () {
        assert.deepStrictEqual(nodeLinks.findLinks("a1b2c3d4e5f60718", nodeLinks.targets([])), []);
    });

    it("links an inline code span only when it is all one id or name", function () {
        const found = nodeLinks.targets(WORKSPACE, isNodeType);
        assert.strictEqual(nodeLinks.codeTarget(" a1b2c3d4e5f60718 ", found).id, "a1b2c3d4e5f60718");
        assert.strictEqual(nodeLinks.codeTarget("Parse reading", found).id, "a1b2c3d4e5f60718");
        assert.strictEqual(nodeLinks.codeTarget("{\"id\":\"a1b2c3d4e5f60718\",\"type\":\"function\"}", found), null);
    });

    it("turns sources into help and node links, a node no longer there into plain text", function () {
        const links = nodeLinks.sourceLinks([
            { kind: "node-help", type: "csv", module: "node-red", version: "4.1.15", section: "Inputs" },
            { kind: "node-help", type: "csv", module: "node-red", version: "4.1.15", section: "Outputs" },
            { kind: "workspace", id: "a1b2c3d4e5f60718", tab: "Sensors", name: "Parse reading", nodeType: "function" },
            { kind: "workspace", id: "tab1.abc", tab: "Sensors", name: null, nodeType: "tab" },
            { kind: "workspace", id: "deadbeefdeadbeef", tab: null, name: null, nodeType: "change" },
            { kind: "something-new", id: "x" }, null
        ], (id) => id !== "deadbeefdeadbeef");
        assert.deepStrictEqual(links, [
            { kind: "help", type: "csv", name: "csv", tab: null, gone: false },
            { kind: "node", id: "a1b2c3d4e5f60718", name: "Parse reading", tab: "Sensors", gone: false },
            { kind: "node", id: "tab1.abc", name: "tab", tab: null, gone: false },
            { kind: "node", id: "deadbeefdeadbeef", name: "change", tab: null, gone: true }
        ]);
        assert.deepStrictEqual(nodeLinks.sourceLinks(undefined, () => true), []);
    });
});
