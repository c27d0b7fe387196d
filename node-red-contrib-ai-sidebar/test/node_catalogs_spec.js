"use strict";

/** The ai-chat and ai-config nodes' message catalogs and help, in every language they ship. */

const assert = require("assert");
const fs = require("fs");
const path = require("path");

const nodesDir = path.join(__dirname, "..", "nodes");
const localesDir = path.join(nodesDir, "locales");
// The ten languages of the editor's own catalogs (@node-red/editor-client/locales), as the sidebar plugin ships.
const LANGUAGES = ["en-US", "zh-CN", "zh-TW", "ja", "ko", "es-ES", "pt-BR", "fr", "de", "ru"];
const TYPES = ["ai-chat", "ai-config"];
const editorLocalesDir = path.join(path.dirname(require.resolve("@node-red/editor-client/package.json")), "locales");

function catalog(language, type) {
    return JSON.parse(fs.readFileSync(path.join(localesDir, language, type + ".json"), "utf8"));
}

function flatten(object, prefix) {
    const out = {};
    for (const [key, value] of Object.entries(object)) {
        const name = prefix ? prefix + "." + key : key;
        if (value && typeof value === "object") {
            Object.assign(out, flatten(value, name));
        } else {
            out[name] = value;
        }
    }
    return out;
}

/** A message of the editor's own catalog in a language, falling back to en-US as the editor's i18next does. */
function editorMessage(language, key) {
    for (const lang of [language, "en-US"]) {
        const file = path.join(editorLocalesDir, lang, "editor.json");
        const value = key.split(".").reduce(function (object, part) {
            return object && object[part];
        }, JSON.parse(fs.readFileSync(file, "utf8")));
        if (typeof value === "string") {
            return value;
        }
    }
    throw new Error("the editor has no message " + key);
}

/** The help page's element skeleton (tags with their class, in order) and the sorted texts of its code elements. */
function helpShape(html) {
    return {
        tags: [...html.matchAll(/<(\/?[a-z0-9]+)(?:\s+class="([^"]*)")?[^>]*>/g)].map(function (m) {
            return m[1] + (m[2] ? "." + m[2] : "");
        }),
        code: [...html.matchAll(/<code>([^<]*)<\/code>/g)].map(function (m) { return m[1]; }).sort()
    };
}

function placeholders(text) {
    return (String(text).match(/__[A-Za-z]+__/g) || []).sort();
}

describe("ai-chat and ai-config catalogs and help", function () {
    it("ship a catalog and a help page per node for each of the ten languages, and no other language", function () {
        assert.deepStrictEqual(fs.readdirSync(localesDir).sort(), LANGUAGES.slice().sort());
        for (const language of LANGUAGES) {
            for (const type of TYPES) {
                for (const extension of [".json", ".html"]) {
                    assert.ok(fs.existsSync(path.join(localesDir, language, type + extension)),
                        language + "/" + type + extension);
                }
            }
        }
    });

    for (const type of TYPES) {
        const english = flatten(catalog("en-US", type));
        for (const language of LANGUAGES.slice(1)) {
            it("have the same " + type + " keys and __placeholders__ in " + language + " as in en-US", function () {
                const translated = flatten(catalog(language, type));
                assert.deepStrictEqual(Object.keys(translated).sort(), Object.keys(english).sort());
                for (const key of Object.keys(english)) {
                    assert.deepStrictEqual(placeholders(translated[key]), placeholders(english[key]), key);
                }
            });
        }
    }

    it("define every message key the ai-chat runtime uses", function () {
        const source = fs.readFileSync(path.join(nodesDir, "ai-chat.js"), "utf8");
        const english = flatten(catalog("en-US", "ai-chat"));
        const errors = new Set();
        for (const match of source.matchAll(/nodeError\([^,]+,\s*(?:"([a-z_]+)"|err\.code)/g)) {
            if (match[1]) {
                errors.add(match[1]);
            }
        }
        errors.add("service_disconnected");
        errors.add("service_bad_answer");
        for (const match of source.matchAll(/RED\._\("ai-chat\.errors\.([a-z_]+)"/g)) {
            errors.add(match[1]);
        }
        assert.ok(errors.size > 10, "found too few error keys: " + [...errors]);
        for (const key of errors) {
            assert.ok(english["ai-chat.errors." + key], "ai-chat.errors." + key);
        }
        for (const match of source.matchAll(/showStatus\("([a-z-]+)"\)/g)) {
            assert.ok(english["ai-chat.status." + match[1]], "ai-chat.status." + match[1]);
        }
        for (const status of ["waiting", "streaming", "done", "error"]) {
            assert.ok(english["ai-chat.status." + status], status);
        }
    });

    it("define every data-i18n key of the edit dialogs", function () {
        for (const type of TYPES) {
            const html = fs.readFileSync(path.join(nodesDir, type + ".html"), "utf8");
            const english = flatten(catalog("en-US", type));
            const keys = [...html.matchAll(/data-i18n="(?:\[[a-z]+\])?([^"]+)"/g)].map(function (m) { return m[1]; });
            assert.ok(keys.length > 5, type);
            for (const key of keys) {
                assert.ok(english[key], type + ": " + key);
            }
        }
    });

    it("write help in Node-RED's form: ai-chat with Inputs, Outputs and Details, message properties listed",
        function () {
            for (const language of LANGUAGES) {
                const chat = fs.readFileSync(path.join(localesDir, language, "ai-chat.html"), "utf8");
                assert.match(chat, /data-help-name="ai-chat"/, language);
                assert.strictEqual((chat.match(/<h3>/g) || []).length, 4,
                    language + ": Inputs, Outputs, Details, References");
                assert.strictEqual((chat.match(/<dl class="message-properties">/g) || []).length, 4, language);
                assert.match(chat, /<ol class="node-ports">/, language);
                for (const property of ["payload", "sessionId", "scenario", "language", "flowId", "tools", "usage"]) {
                    assert.match(chat, new RegExp("<dt( class=\"optional\")?>" + property + " "),
                        language + ": " + property);
                }
                const config = fs.readFileSync(path.join(localesDir, language, "ai-config.html"), "utf8");
                assert.match(config, /data-help-name="ai-config"/, language);
                assert.match(config, /<dl class="message-properties">/, language);
            }
        });

    it("say in every language's ai-chat help and dialog that tools and memory are off unless ticked, that @tools: " +
        "never runs from a flow, and what a flow endpoint exposes", function () {
        const dialog = fs.readFileSync(path.join(nodesDir, "ai-chat.html"), "utf8");
        assert.match(dialog, /tools: \{ value: false \}/);
        assert.match(dialog, /memory: \{ value: false \}/);
        for (const key of ["ai-chat.label.tools", "ai-chat.label.memory", "ai-chat.hint.grants"]) {
            assert.ok(dialog.includes("data-i18n=\"" + key + "\""), key);
        }
        for (const language of LANGUAGES) {
            const help = fs.readFileSync(path.join(localesDir, language, "ai-chat.html"), "utf8");
            const labels = catalog(language, "ai-chat")["ai-chat"].label;
            for (const needed of ["@tools:", "forbidden", "http in", "adminAuth", "httpNodeAuth", "NODE_RED_USERNAME",
                "msg.sessionId"]) {
                assert.ok(help.includes(needed), language + ": " + needed);
            }
            assert.ok(!help.includes("flow:&lt;"), language + ": the old shared flow:<node id> identity");
            assert.ok(labels.tools && labels.memory, language);
        }
    });

    it("tell in every language's dialog and help to leave the AI config on the editor's own \"none\", and that " +
        "the editor shows \"Add new <AI config>...\" instead while no ai-config node exists", function () {
        // The editor's config-node select offers editor.addNewType with the config node's paletteLabel when there is
        // no config node of the type yet, and editor.inputs.none otherwise; both save no config node
        // (@node-red/editor-client src/js/ui/editor.js, updateConfigNodeSelect).
        for (const language of LANGUAGES) {
            const none = editorMessage(language, "editor.inputs.none");
            const paletteLabel = catalog(language, "ai-config")["ai-config"].paletteLabel;
            const addNew = editorMessage(language, "editor.addNewType").replace("__type__", paletteLabel);
            const hint = catalog(language, "ai-chat")["ai-chat"].hint.config;
            assert.ok(hint.includes(none), language + ": " + hint + " names " + none);
            assert.ok(hint.includes(addNew), language + ": " + hint + " names " + addNew);
            const help = fs.readFileSync(path.join(localesDir, language, "ai-chat.html"), "utf8");
            assert.ok(help.includes("<i>" + none + "</i>"), language + ": the help names <i>" + none + "</i>");
        }
    });

    it("quote in every language's help and catch-path hint the default question the runtime asks in it", function () {
        const { DEFAULT_QUESTIONS } = require("../nodes/lib/caught-error.js");
        assert.deepStrictEqual(Object.keys(DEFAULT_QUESTIONS).sort(), LANGUAGES.slice().sort());
        for (const language of LANGUAGES) {
            const help = fs.readFileSync(path.join(localesDir, language, "ai-chat.html"), "utf8");
            const hint = catalog(language, "ai-chat")["ai-chat"].hint.catchPath;
            assert.ok(help.includes(DEFAULT_QUESTIONS[language]), language + ": help");
            assert.ok(hint.includes(DEFAULT_QUESTIONS[language]), language + ": hint");
        }
    });

    for (const type of TYPES) {
        const english = helpShape(fs.readFileSync(path.join(localesDir, "en-US", type + ".html"), "utf8"));
        for (const language of LANGUAGES.slice(1)) {
            it("keep the " + type + " help's elements and untranslated code of en-US in " + language, function () {
                const translated = helpShape(fs.readFileSync(path.join(localesDir, language, type + ".html"), "utf8"));
                assert.deepStrictEqual(translated.code, english.code);
                assert.deepStrictEqual(translated.tags.filter(function (tag) { return !/^\/?(i|b)$/.test(tag); }),
                    english.tags.filter(function (tag) { return !/^\/?(i|b)$/.test(tag); }));
            });
        }
    }
});
