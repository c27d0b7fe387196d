"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const packageRoot = path.join(__dirname, "..");
// Node-RED registers a plugin's catalog from <plugin dir>/locales/<lang>/<plugin file>.json under the namespace
// "<module>/<plugin name>" (@node-red/registry lib/loader.js, loadNodeLocales).
const localesDir = path.join(packageRoot, "plugins", "locales");
const LANGUAGES = ["en-US", "zh-CN", "es-ES", "de", "fr", "ja"];

function catalog(lang) {
    return JSON.parse(fs.readFileSync(path.join(localesDir, lang, "ai-sidebar.json"), "utf8"));
}

function keysOf(object, prefix) {
    return Object.keys(object).reduce(function (keys, key) {
        const name = prefix ? prefix + "." + key : key;
        return typeof object[key] === "object" ? keys.concat(keysOf(object[key], name)) : keys.concat([name]);
    }, []).sort();
}

function lookup(object, key) {
    return key.split(".").reduce(function (value, part) {
        return value && typeof value === "object" ? value[part] : undefined;
    }, object);
}

describe("sidebar message catalogs", function () {
    const english = catalog("en-US");
    const html = fs.readFileSync(path.join(packageRoot, "plugins", "ai-sidebar.html"), "utf8");

    LANGUAGES.filter(function (lang) { return lang !== "en-US"; }).forEach(function (lang) {
        it("has the same keys in " + lang + " as in en-US", function () {
            assert.deepStrictEqual(keysOf(catalog(lang)), keysOf(english));
        });

        it("keeps every __placeholder__ of en-US in " + lang, function () {
            const translated = catalog(lang);
            keysOf(english).forEach(function (key) {
                const wanted = (lookup(english, key).match(/__\w+__/g) || []).sort();
                const found = (lookup(translated, key).match(/__\w+__/g) || []).sort();
                assert.deepStrictEqual(found, wanted, lang + " " + key);
            });
        });
    });

    it("defines every key the sidebar asks for", function () {
        const used = html.match(/"(?:sidebar|context|tool|error)\.[\w.-]+"/g).map(function (quoted) {
            return quoted.slice(1, -1);
        });
        assert.ok(used.length > 20, "expected the sidebar to use its catalog");
        used.filter(function (key) {
            return !/\.$/.test(key);
        }).forEach(function (key) {
            assert.strictEqual(typeof lookup(english, key), "string", "missing en-US key " + key);
        });
    });

    it("translates every error code the relay produces", function () {
        const codes = /RELAY_ERROR_CODES = (\[[^\]]*\])/.exec(html)[1];
        JSON.parse(codes).forEach(function (code) {
            assert.strictEqual(typeof english.error.codes[code], "string", code);
        });
    });

    it("uses the plugin's i18n namespace", function () {
        assert.ok(html.indexOf("\"node-red-contrib-ai-sidebar/ai-sidebar:\"") !== -1);
    });
});

describe("vendored browser libraries", function () {
    it("match the installed marked and dompurify (npm run vendor)", function () {
        execFileSync(process.execPath, [path.join(packageRoot, "scripts", "vendor.js"), "--check"], { stdio: "pipe" });
    });

    it("are loaded from the package's resources, never from a CDN", function () {
        const html = fs.readFileSync(path.join(packageRoot, "plugins", "ai-sidebar.html"), "utf8");
        const sources = (html.match(/<script src="[^"]+"/g) || []).map(function (tag) {
            return tag.slice(13, -1);
        });
        assert.deepStrictEqual(sources, [
            "resources/node-red-contrib-ai-sidebar/vendor/marked.js",
            "resources/node-red-contrib-ai-sidebar/vendor/purify.js",
            "resources/node-red-contrib-ai-sidebar/sse-parser.js"
        ]);
    });
});
