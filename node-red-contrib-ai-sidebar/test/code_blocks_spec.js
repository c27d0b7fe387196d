"use strict";

const assert = require("assert");
const codeBlocks = require("../resources/shared/code-blocks");
const flowJson = require("../resources/shared/flow-json");

const FLOW = JSON.stringify([
    { id: "n1", type: "inject", z: "t1", wires: [["n2"]] },
    { id: "n2", type: "debug", z: "t1", wires: [] }
], null, 2);

function classify(text, language) {
    return codeBlocks.classify(text, language, flowJson.parseFlow);
}

describe("code blocks of answers", function () {
    describe("classify", function () {
        it("offers a flow for import whatever its fence says", function () {
            for (const language of ["json", "", "js", "text"]) {
                const kind = classify(FLOW, language);
                assert.strictEqual(kind.kind, "flow", language);
                assert.deepStrictEqual(kind.nodes.map((n) => n.id), ["n1", "n2"]);
            }
        });

        it("says why JSON meant as a flow cannot be imported: a syntax error", function () {
            const broken = FLOW.replace("\"type\": \"debug\"", "\"type\": \"debug\",,");
            const kind = classify(broken, "json");
            assert.strictEqual(kind.kind, "invalidFlow");
            assert.strictEqual(kind.reason, "invalidJson");
            assert.match(kind.detail, /JSON/);
        });

        it("says which item of JSON meant as a flow is not a node", function () {
            const kind = classify(JSON.stringify([{ id: "n1", type: "inject", wires: [] }, { name: "x", wires: [] }]),
                "");
            assert.deepStrictEqual(kind, { kind: "invalidFlow", reason: "notNodes", detail: "2" });
        });

        it("leaves ordinary JSON and JSON under another label as code", function () {
            assert.strictEqual(classify("{\"payload\": 21.5, \"topic\": \"temp\"}", "json").kind, "code");
            assert.strictEqual(classify("[{\"id\": 1, \"type\": ", "yaml").kind, "code");
        });

        it("marks JavaScript, by fence or by the highlighter's guess", function () {
            for (const language of ["javascript", "js", "JavaScript", "node"]) {
                assert.strictEqual(classify("return msg;", language).kind, "javascript", language);
            }
            assert.strictEqual(classify("print(1)", "python").kind, "code");
            assert.strictEqual(classify("msg.payload = 1;", "").kind, "code");
        });
    });

    describe("blockCode", function () {
        it("drops the fence's last line break only", function () {
            assert.strictEqual(codeBlocks.blockCode("a\r\nb\n\n"), "a\nb\n");
            assert.strictEqual(codeBlocks.blockCode("return msg;\n"), "return msg;");
        });
    });

    describe("lineDiff", function () {
        it("keeps common lines and lists removals before additions", function () {
            const diff = codeBlocks.lineDiff("// old\nmsg.payload = 1;\nreturn msg;",
                "// new\nmsg.payload = 1;\nmsg.topic = \"t\";\nreturn msg;");
            assert.deepStrictEqual(diff.rows, [
                { type: "removed", text: "// old" },
                { type: "added", text: "// new" },
                { type: "same", text: "msg.payload = 1;" },
                { type: "added", text: "msg.topic = \"t\";" },
                { type: "same", text: "return msg;" }
            ]);
            assert.strictEqual(diff.added, 2);
            assert.strictEqual(diff.removed, 1);
        });

        it("shows an empty function as all added and identical code as unchanged", function () {
            assert.deepStrictEqual(codeBlocks.lineDiff("", "a\nb"),
                { rows: [{ type: "added", text: "a" }, { type: "added", text: "b" }], added: 2, removed: 0 });
            const same = codeBlocks.lineDiff("a\nb", "a\nb");
            assert.deepStrictEqual([same.added, same.removed], [0, 0]);
        });

        it("does not compare line by line past MAX_DIFF_LINES", function () {
            const long = new Array(codeBlocks.MAX_DIFF_LINES + 1).fill("x").join("\n");
            const diff = codeBlocks.lineDiff(long, "x");
            assert.strictEqual(diff.removed, codeBlocks.MAX_DIFF_LINES + 1);
            assert.strictEqual(diff.added, 1);
        });
    });
});
