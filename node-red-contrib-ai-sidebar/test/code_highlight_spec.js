"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const codeHighlight = require("../resources/shared/code-highlight");

const packageRoot = path.join(__dirname, "..");

/** The vendored highlight.js as the editor runs it: a plain script in a window of its own. */
function loadVendoredHighlight() {
    const window = {};
    window.self = window;
    vm.createContext(window);
    vm.runInContext(fs.readFileSync(path.join(packageRoot, "resources", "vendor", "highlight.js"), "utf8"), window,
        { filename: "resources/vendor/highlight.js" });
    return window;
}

/** The text a browser shows for highlight.js markup: tags dropped, the five escapes it writes undone. */
function shownText(html) {
    return html.replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, "\"")
        .replace(/&#x27;/g, "'").replace(/&amp;/g, "&");
}

function tagsOf(html) {
    return (html.match(/<[^>]*>/g) || []).filter(function (tag) {
        return tag !== "</span>";
    });
}

const SAMPLES = {
    json: "{\n  \"id\": \"a1\",\n  \"type\": \"inject\",\n  \"repeat\": 5,\n  \"once\": true\n}",
    javascript: "// Convert to Celsius\nconst celsius = (msg.payload - 32) * 5 / 9;\nmsg.payload = celsius;\n" +
        "return msg;",
    yaml: "services:\n  nodered:\n    image: nodered/node-red:4.1\n    ports:\n      - \"1880:1880\"",
    bash: "#!/bin/bash\nnpm install node-red-contrib-ai-sidebar && echo \"done\" > /tmp/log",
    python: "def celsius(fahrenheit):\n    return (fahrenheit - 32) * 5 / 9\n\nprint(celsius(212))",
    sql: "SELECT id, name FROM sensors WHERE temperature > 30 ORDER BY name;"
};

describe("code highlighting in answers", function () {
    const window = loadVendoredHighlight();
    const hljs = window.NodeRedAiSidebar.vendor.hljs;

    describe("the vendored highlight.js", function () {
        it("registers as NodeRedAiSidebar.vendor.hljs and defines no global of its own", function () {
            assert.strictEqual(typeof hljs.highlight, "function");
            assert.deepStrictEqual(Object.keys(window).sort(), ["NodeRedAiSidebar", "self"]);
        });

        it("is the pinned version, a build with the languages answers use", function () {
            const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8"));
            assert.strictEqual(hljs.versionString, manifest.devDependencies["@highlightjs/cdn-assets"]);
            ["json", "javascript", "typescript", "yaml", "bash", "shell", "python", "sql", "xml", "css", "ini"]
                .forEach(function (language) {
                    assert.ok(hljs.getLanguage(language), language);
                });
        });
    });

    describe("languageOf", function () {
        it("reads the language marked writes for a fence", function () {
            assert.strictEqual(codeHighlight.languageOf("language-json"), "json");
            assert.strictEqual(codeHighlight.languageOf("foo language-JavaScript bar"), "javascript");
            assert.strictEqual(codeHighlight.languageOf("lang-c++"), "c++");
        });

        it("is empty for a block without a language", function () {
            assert.strictEqual(codeHighlight.languageOf(""), "");
            assert.strictEqual(codeHighlight.languageOf(null), "");
            assert.strictEqual(codeHighlight.languageOf("hljs"), "");
        });
    });

    describe("highlightCode", function () {
        Object.keys(SAMPLES).forEach(function (language) {
            it("highlights " + language + " into hljs spans that show exactly the original text", function () {
                const result = codeHighlight.highlightCode(hljs, SAMPLES[language], language);
                assert.strictEqual(result.language, language);
                assert.match(result.html, /<span class="hljs-[\w-]+/);
                assert.strictEqual(shownText(result.html), SAMPLES[language]);
            });
        });

        it("accepts the usual aliases (js, sh, yml, py)", function () {
            ["js", "sh", "yml", "py"].forEach(function (alias) {
                assert.ok(codeHighlight.highlightCode(hljs, "x = 1", alias), alias);
            });
        });

        it("escapes markup in the code, so that only spans with a class come out", function () {
            const code = "<img src=x onerror=\"alert(1)\"><script>alert(2)</script> & \"quotes\" 'single'";
            ["xml", "javascript", "json", "plaintext"].forEach(function (language) {
                const result = codeHighlight.highlightCode(hljs, code, language);
                tagsOf(result.html).forEach(function (tag) {
                    assert.match(tag, /^<span class="[\w\s-]+">$/, language + ": " + tag);
                });
                assert.strictEqual(shownText(result.html), code, language);
            });
        });

        it("leaves a block labelled with a language it does not know plain", function () {
            assert.strictEqual(codeHighlight.highlightCode(hljs, "some text", "klingon"), null);
        });

        it("guesses the language of an unlabelled block when it is clear, and leaves prose plain", function () {
            const flow = codeHighlight.highlightCode(hljs, SAMPLES.json, "");
            assert.strictEqual(flow.language, "json");
            const script = codeHighlight.highlightCode(hljs, SAMPLES.javascript + "\nfunction f(a) { return a; }", "");
            assert.strictEqual(script.language, "javascript");
            assert.strictEqual(codeHighlight.highlightCode(hljs, "Restart Node-RED", ""), null);
        });

        it("leaves blocks too large to highlight on every streamed frame plain", function () {
            const big = "{\"a\": 1}\n".repeat(Math.ceil(codeHighlight.MAX_HIGHLIGHT_CHARS / 9) + 1);
            assert.strictEqual(codeHighlight.highlightCode(hljs, big, "json"), null);
            const medium = "{\"a\": 1}\n".repeat(Math.ceil(codeHighlight.MAX_GUESS_CHARS / 9) + 1);
            assert.strictEqual(codeHighlight.highlightCode(hljs, medium, ""), null);
            assert.ok(codeHighlight.highlightCode(hljs, medium, "json"));
        });

        it("does nothing without highlight.js or without text", function () {
            assert.strictEqual(codeHighlight.highlightCode(null, "x", "json"), null);
            assert.strictEqual(codeHighlight.highlightCode(hljs, "", "json"), null);
        });
    });
});
