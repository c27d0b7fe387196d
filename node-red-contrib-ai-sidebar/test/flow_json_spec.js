"use strict";

const assert = require("assert");
const flowJson = require("../resources/shared/flow-json");

const INJECT_DEBUG = [
    { id: "a1", type: "inject", z: "t1", wires: [["a2"]] },
    { id: "a2", type: "debug", z: "t1", wires: [] }
];

function registryOf(types) {
    return function (type) {
        return types.indexOf(type) !== -1;
    };
}

function noSubflows() {
    return false;
}

describe("flow JSON in answers", function () {
    describe("typeSummary", function () {
        it("names each node type once, in order, with how many when several, and no tabs", function () {
            const nodes = [{ id: "t", type: "tab" }, { id: "a", type: "inject" }, { id: "b", type: "function" },
                { id: "c", type: "function" }, { id: "d", type: "debug" }];
            assert.strictEqual(flowJson.typeSummary(nodes), "inject, function \u00d72, debug");
        });

        it("ends with an ellipsis after six types", function () {
            const nodes = ["a", "b", "c", "d", "e", "f", "g"].map((type) => ({ id: type, type: type }));
            assert.strictEqual(flowJson.typeSummary(nodes), "a, b, c, d, e, f, \u2026");
        });
    });

    describe("parseFlow", function () {
        it("reads an array of nodes with id and type as a flow", function () {
            assert.deepStrictEqual(flowJson.parseFlow(JSON.stringify(INJECT_DEBUG, null, 2)), INJECT_DEBUG);
        });

        it("reads one node object as a flow of one node", function () {
            assert.deepStrictEqual(flowJson.parseFlow(" {\"id\":\"n\",\"type\":\"function\"}\n"),
                [{ id: "n", type: "function" }]);
        });

        it("does not take other JSON for a flow", function () {
            ["[]", "{}", "[1, 2]", "{\"payload\": 1}", "[{\"id\": \"x\"}]", "[{\"type\": \"debug\"}]",
                "[{\"id\": \"x\", \"type\": \"debug\"}, 3]", "[{\"id\": 5, \"type\": \"debug\"}]",
                "{\"id\": \"\", \"type\": \"debug\"}", "\"text\"", "null"].forEach(function (text) {
                assert.strictEqual(flowJson.parseFlow(text), null, text);
            });
        });

        it("does not take code or half-streamed JSON for a flow", function () {
            ["msg.payload = 1;\nreturn msg;", "[{\"id\": \"a\", \"type\": \"inject\"", "", "npm install x"]
                .forEach(function (text) {
                    assert.strictEqual(flowJson.parseFlow(text), null, text);
                });
            assert.strictEqual(flowJson.parseFlow(undefined), null);
        });
    });

    describe("unknownTypes", function () {
        it("finds nothing when the registry knows every type", function () {
            assert.deepStrictEqual(flowJson.unknownTypes(INJECT_DEBUG, registryOf(["inject", "debug"]), noSubflows), []);
        });

        it("lists each unknown type once, sorted", function () {
            const nodes = INJECT_DEBUG.concat([
                { id: "b1", type: "zz-sensor" }, { id: "b2", type: "influxdb out" }, { id: "b3", type: "zz-sensor" }
            ]);
            assert.deepStrictEqual(flowJson.unknownTypes(nodes, registryOf(["inject", "debug"]), noSubflows),
                ["influxdb out", "zz-sensor"]);
        });

        it("accepts tabs, subflow definitions, groups, junctions and comments without asking the registry", function () {
            const nodes = ["tab", "subflow", "group", "junction", "comment"].map(function (type, index) {
                return { id: "n" + index, type: type };
            });
            assert.deepStrictEqual(flowJson.unknownTypes(nodes, registryOf([]), noSubflows), []);
        });

        it("accepts subflow instances of a subflow in the editor or in the flow itself, and no other", function () {
            const nodes = [
                { id: "sf1", type: "subflow" },
                { id: "i1", type: "subflow:sf1" },
                { id: "i2", type: "subflow:existing" },
                { id: "i3", type: "subflow:missing" }
            ];
            const exists = function (id) {
                return id === "existing";
            };
            assert.deepStrictEqual(flowJson.unknownTypes(nodes, registryOf([]), exists), ["subflow:missing"]);
        });
    });

    describe("flowData", function () {
        it("removes credentials at any depth and keeps everything else", function () {
            const exported = [
                { id: "t", type: "tab", label: "Flow" },
                { id: "c", type: "mqtt-broker", broker: "localhost", credentials: { user: "u", password: "p" } },
                { id: "n", type: "function", func: "return msg;", extra: [{ credentials: { token: "x" }, keep: 1 }] }
            ];
            const result = flowJson.flowData(exported);
            assert.deepStrictEqual(result.nodes, [
                { id: "t", type: "tab", label: "Flow" },
                { id: "c", type: "mqtt-broker", broker: "localhost" },
                { id: "n", type: "function", func: "return msg;", extra: [{ keep: 1 }] }
            ]);
            assert.doesNotMatch(JSON.stringify(result.nodes), /credentials|password|"p"/);
            assert.ok(exported[1].credentials, "the editor's own objects are left untouched");
        });

        it("skips a tab whose JSON is larger than the cap, reporting its size", function () {
            const big = [{ id: "n", type: "function", func: "x".repeat(2000) }];
            const result = flowJson.flowData(big, 1000);
            assert.strictEqual(result.nodes, null);
            assert.ok(result.bytes > 2000);
            assert.ok(flowJson.flowData(big).nodes, "2 MB by default");
            assert.strictEqual(flowJson.MAX_FLOW_DATA_BYTES, 2 * 1024 * 1024);
        });

        it("measures the size in UTF-8 bytes", function () {
            assert.strictEqual(flowJson.utf8Length("aé€😀"), 1 + 2 + 3 + 4);
            assert.strictEqual(flowJson.utf8Length("节点"), 6);
        });
    });
});
