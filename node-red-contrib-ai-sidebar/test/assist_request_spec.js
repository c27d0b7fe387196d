"use strict";

const assert = require("assert");
const Diff = require("diff");
const assist = require("../resources/assist/assist-request");

const CURRENT = { onStart: "", onMessage: "return msg;", onStop: "" };

describe("the assist request of a node edit dialog", function () {
    it("carries the kind, the trimmed description, the language, the chosen config and only the known context", function () {
        const body = assist.requestBody("function", "  add a timestamp \n", {
            nodeId: "f1", nodeType: "function", name: "", tabId: "t1", code: CURRENT, outputs: 2, libs: []
        }, { language: "de", configId: "cfg1" });
        assert.deepStrictEqual(body, {
            kind: "function", description: "add a timestamp", language: "de", configId: "cfg1",
            context: { nodeId: "f1", nodeType: "function", tabId: "t1", code: CURRENT, outputs: 2, libs: [] }
        });
    });

    it("leaves language and config out when there are none, and refuses a kind the contract does not name", function () {
        assert.deepStrictEqual(assist.requestBody("json", "x", { value: "{}" }), {
            kind: "json", description: "x", context: { value: "{}" }
        });
        assert.throws(function () { assist.requestBody("python", "x", {}); }, /unknown assist kind "python"/);
    });
});

describe("the text shown above a proposal", function () {
    it("keeps what the answer says besides its code blocks, and nothing for an answer that is code only", function () {
        const answer = "Converts the reading.\n\n```javascript on-message\nreturn msg;\n```\n\n\n" +
            "~~~js\nlet a = '```';\n~~~\nThe On Start part resets the count.\n````\n```\nstill code\n````\nEnd.";
        assert.strictEqual(assist.proseOf(answer), "Converts the reading.\n\nThe On Start part resets the count.\nEnd.");
        assert.strictEqual(assist.proseOf("```jsonata\n$sum(x)\n```"), "");
        assert.strictEqual(assist.proseOf("Here:\n```js\nreturn msg;"), "Here:");
        assert.strictEqual(assist.proseOf("No code at all."), "No code at all.");
    });
});

describe("the text streamed into the panel", function () {
    it("leaves out the lines of the model's code fences and keeps the code between them", function () {
        const answer = "Converts the reading.\n```javascript on-message\nreturn msg;\n```\n" +
            "~~~js\nlet a = '```';\n~~~\nEnd.\n```json\n{\"a\": 1";
        assert.strictEqual(assist.withoutFences(answer),
            "Converts the reading.\nreturn msg;\nlet a = '```';\nEnd.\n{\"a\": 1");
        assert.strictEqual(assist.withoutFences("No code at all."), "No code at all.");
    });
});

describe("a function proposal against the dialog's code", function () {
    it("lists only the parts it changes, in the dialog's tab order, each as a line diff", function () {
        const proposed = { onMessage: "msg.ts = Date.now();\nreturn msg;", onStop: "", onStart: "let n = 0;" };
        const changes = assist.changedParts(CURRENT, proposed, Diff);
        assert.deepStrictEqual(changes.map(function (c) { return c.part; }), ["onStart", "onMessage"]);
        assert.deepStrictEqual(changes[1].diff.lines, [
            { kind: "+", text: "msg.ts = Date.now();" },
            { kind: " ", text: "return msg;" }
        ]);
        assert.strictEqual(changes[1].diff.added, 1);
        assert.strictEqual(changes[1].diff.removed, 0);
        assert.strictEqual(changes[0].before, "");
        assert.strictEqual(changes[0].after, "let n = 0;");
    });

    it("keeps the parts a proposal leaves out when merging, and finds nothing to change in the same code", function () {
        const current = { onStart: "let n = 0;", onMessage: "return msg;", onStop: "n = 0;" };
        assert.deepStrictEqual(assist.mergedCode(current, { onMessage: "return null;" }),
            { onStart: "let n = 0;", onMessage: "return null;", onStop: "n = 0;" });
        assert.deepStrictEqual(assist.changedParts(current, { onMessage: "return msg;" }, Diff), []);
    });

    it("cuts a very long diff and says how many lines were left out", function () {
        const long = Array.from({ length: assist.MAX_DIFF_LINES + 25 }, function (_, i) { return "x" + i + ";"; });
        const change = assist.changedParts(CURRENT, { onMessage: long.join("\n") }, Diff)[0];
        assert.strictEqual(change.diff.lines.length, assist.MAX_DIFF_LINES);
        assert.strictEqual(change.diff.omitted, 26);
    });
});

describe("what the runtime routes answer", function () {
    it("orders the check's problems by part and line and defaults a missing part to On Message", function () {
        const problems = assist.problemList({ problems: [
            { code: "require_not_in_setup", message: "require('fs')", line: 4, part: "onMessage" },
            { code: "syntax_error", message: "Unexpected token", line: 1, column: 3, part: "onStart" },
            { code: "sandbox_escape", message: "process" },
            "not a problem"
        ] });
        assert.deepStrictEqual(problems.map(function (p) { return [p.part, p.code, p.line]; }), [
            ["onStart", "syntax_error", 1],
            ["onMessage", "sandbox_escape", null],
            ["onMessage", "require_not_in_setup", 4]
        ]);
        assert.deepStrictEqual(assist.problemList({}), []);
    });

    it("asks the sandbox to run the proposed On Message code on one sample", function () {
        assert.deepStrictEqual(assist.sandboxBody("return msg;", { payload: 1 }, 2),
            { code: { onMessage: "return msg;" }, msg: { payload: 1 }, outputs: 2 });
        assert.strictEqual(assist.sandboxBody("", {}, "x").outputs, 1);
    });

    it("groups the sandbox's sends by output port and keeps its logs and error", function () {
        const view = assist.sandboxView({
            outputs: [[{ payload: 1 }, null], [null, { payload: 2 }], [{ payload: 3 }]],
            logs: [{ level: "warn", text: "low" }]
        });
        assert.deepStrictEqual(view.outputs, [
            { port: 1, messages: [{ payload: 1 }, { payload: 3 }] },
            { port: 2, messages: [{ payload: 2 }] }
        ]);
        assert.deepStrictEqual(view.logs, [{ level: "warn", text: "low" }]);
        assert.strictEqual(view.error, null);
        const stopped = assist.sandboxView({ outputs: [], error: { code: "sandbox_timeout", message: "1000 ms" } });
        assert.deepStrictEqual(stopped.error, { code: "sandbox_timeout", message: "1000 ms" });
    });
});

describe("a JSON proposal", function () {
    it("is offered as its text when JSON.parse accepts it", function () {
        assert.deepStrictEqual(assist.jsonProposal({ kind: "json", value: { a: 1 }, text: "{\n  \"a\": 1\n}" }),
            { ok: true, text: "{\n  \"a\": 1\n}", value: { a: 1 } });
    });

    it("is refused with the parser's message when its text is not JSON", function () {
        const checked = assist.jsonProposal({ kind: "json", text: "{a: 1}" });
        assert.strictEqual(checked.ok, false);
        let parserMessage;
        try {
            JSON.parse("{a: 1}");
        } catch (err) {
            parserMessage = err.message;
        }
        assert.strictEqual(checked.message, parserMessage);
    });
});

describe("a JSONata proposal checked with the editor's engine", function () {
    // The editor's `jsonata` (bundled in Node-RED's editor vendor.js, not an npm package here) is exercised by the
    // browser test; this stand-in has its interface: jsonata(text) throws on a parse error, else `assign` and
    // `evaluate` (a promise in JSONata 2).
    function engine(text) {
        if (/\($/.test(text)) {
            const err = new Error("Expected \")\" before end of expression");
            err.code = "S0203";
            throw err;
        }
        const bindings = {};
        return {
            assign: function (name, fn) { bindings[name] = fn; },
            evaluate: function (input) {
                if (text === "$env('X')") {
                    return Promise.resolve(bindings.env("X"));
                }
                if (text === "boom") {
                    return Promise.reject(new Error("T2001 bad operand"));
                }
                return Promise.resolve(text === "msg.payload" ? input.msg.payload : input[text]);
            }
        };
    }

    it("refuses an expression that does not parse, with the parser's message", async function () {
        const check = await assist.checkExpression(engine, "$sum(", "{}");
        assert.deepStrictEqual(check, { ok: false, stage: "parse", message: "Expected \")\" before end of expression",
            runtimeOnly: [] });
    });

    it("evaluates a valid one on the Test tab's message, the old msg. form on {msg: …} as Node-RED does", async function () {
        assert.deepStrictEqual(await assist.checkExpression(engine, "payload", "{\"payload\": 5}"),
            { ok: true, result: 5, noMatch: false, runtimeOnly: [] });
        assert.strictEqual((await assist.checkExpression(engine, "msg.payload", "{\"payload\": 7}")).result, 7);
        assert.strictEqual((await assist.checkExpression(engine, "topic", "{}")).noMatch, true);
    });

    it("says when the test message is not JSON, when evaluation fails and which runtime functions were called",
        async function () {
            assert.strictEqual((await assist.checkExpression(engine, "payload", "{oops")).stage, "message");
            const failed = await assist.checkExpression(engine, "boom", "{}");
            assert.deepStrictEqual([failed.ok, failed.stage, failed.message], [false, "evaluate", "T2001 bad operand"]);
            assert.deepStrictEqual((await assist.checkExpression(engine, "$env('X')", "{}")).runtimeOnly, ["env"]);
        });
});
