"use strict";

/**
 * The function-check of proposed function node code (contracts20): parsed as Node-RED wraps it, with acorn.
 */

const assert = require("assert");
const { checkFunction } = require("../plugins/lib/function-check");

function codes(problems) {
    return problems.map(function (p) {
        return [p.code, p.part, p.line];
    });
}

describe("function-check", function () {
    it("finds nothing in good code that returns and awaits at the top level, as a function node body may", function () {
        const code = "const reading = await Promise.resolve(msg.payload);\n" +
            "global.set(\"last\", reading);\nconst limit = global.get(\"limit\") || flow.get(\"limit\");\n" +
            "msg.process = { global: 1 };\nif (reading > limit) {\n    return [msg, null];\n}\nreturn [null, msg];";
        assert.deepStrictEqual(checkFunction({ onMessage: code, onStart: "flow.set(\"limit\", 10);" }, []), []);
    });

    it("flags a require of a module not on the Setup tab, and names what to do", function () {
        const problems = checkFunction({ onMessage: "const day = require(\"dayjs\");\nreturn msg;" },
            [{ var: "moment", module: "moment" }]);
        assert.deepStrictEqual(codes(problems), [["require_not_in_setup", "onMessage", 1]]);
        assert.strictEqual(problems[0].column, 12);
        assert.match(problems[0].message, /Setup tab/);
        assert.match(problems[0].message, /"dayjs"/);
    });

    it("tells to use the Setup tab's variable for a module that is there", function () {
        const problems = checkFunction({ onMessage: "const m = require('moment');\nreturn msg;" },
            [{ var: "momentLib", module: "moment" }]);
        assert.deepStrictEqual(codes(problems), [["sandbox_escape", "onMessage", 1]]);
        assert.match(problems[0].message, /momentLib/);
    });

    it("names a syntax error with acorn's message and its line in the part", function () {
        const problems = checkFunction({ onMessage: "return msg;", onStop: "// tidy up\nlet x = ;\n" }, []);
        assert.deepStrictEqual(codes(problems), [["syntax_error", "onStop", 2]]);
        assert.strictEqual(problems[0].message, "Unexpected token");
        assert.strictEqual(problems[0].column, 8);
    });

    it("flags a send from a callback without node.done, and not when node.done is called", function () {
        const late = "setTimeout(function () {\n    node.send(msg);\n}, 100);\nreturn null;";
        const problems = checkFunction({ onMessage: late }, []);
        assert.deepStrictEqual(codes(problems), [["async_without_done", "onMessage", 2]]);
        assert.match(problems[0].message, /node\.done\(\)/);
        const finished = "setTimeout(() => {\n    node.send(msg);\n    node.done();\n}, 100);\nreturn null;";
        assert.deepStrictEqual(checkFunction({ onMessage: finished }, []), []);
        assert.deepStrictEqual(checkFunction({ onMessage: "node.send(msg);\nreturn null;" }, []), []);
    });

    it("flags process, globalThis, a bare global, require and dynamic import as sandbox escapes", function () {
        const code = "process.exit();\nconst g = globalThis;\nconst h = global;\nconst r = require;\n" +
            "await import('fs');\nreturn msg;";
        assert.deepStrictEqual(codes(checkFunction({ onMessage: code }, [])), [
            ["sandbox_escape", "onMessage", 1], ["sandbox_escape", "onMessage", 2], ["sandbox_escape", "onMessage", 3],
            ["sandbox_escape", "onMessage", 4], ["sandbox_escape", "onMessage", 5]]);
    });
});
