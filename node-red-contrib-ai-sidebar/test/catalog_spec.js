"use strict";

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const packageRoot = path.join(__dirname, "..");
// Node-RED registers a plugin's catalog from <plugin dir>/locales/<lang>/<plugin file>.json under the namespace
// "<module>/<plugin name>" (@node-red/registry lib/loader.js, loadNodeLocales).
const localesDir = path.join(packageRoot, "plugins", "locales");
// The ten languages of the editor's own catalogs (@node-red/editor-client/locales) and of the service's scenarios.
const LANGUAGES = ["en-US", "zh-CN", "zh-TW", "ja", "ko", "es-ES", "pt-BR", "fr", "de", "ru"];
// The editor scripts of the sidebar: the plugin's HTML and its parts in resources/ (not the vendored libraries).
const EDITOR_SOURCES = ["plugins/ai-sidebar.html", "resources/shared/admin-api.js", "resources/chat/answer.js",
    "resources/chat/stored-answer.js", "resources/chat/stream-chat.js", "resources/chat/followups.js",
    "resources/chat/flow-blocks.js", "resources/conversations/sessions.js", "resources/config/config-picker.js", "resources/config/setup-card.js", "resources/shared/clipboard.js",
    "resources/shared/function-code.js", "resources/service-status/service-banner.js", "resources/sidebar.js", "resources/approval/approval-card.js",
    "resources/approval/approval-view.js", "resources/approval/approval-outcome.js",
    "resources/assist/assist-panel.js", "resources/assist/assist-function.js", "resources/assist/assist-jsonata.js",
    "resources/assist/assist-json.js"];

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

function editorSource() {
    return EDITOR_SOURCES.map(function (file) {
        return fs.readFileSync(path.join(packageRoot, file), "utf8");
    }).join("\n");
}

describe("sidebar message catalogs", function () {
    const english = catalog("en-US");
    const html = fs.readFileSync(path.join(packageRoot, "plugins", "ai-sidebar.html"), "utf8");
    const source = editorSource();

    it("exist for all ten languages, and for no other", function () {
        assert.deepStrictEqual(fs.readdirSync(localesDir).sort(), LANGUAGES.slice().sort());
    });

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
        const pattern = /"(?:sidebar|context|session|config|history|answer|flow|tool|prompt|action|error|service|approval|assist)\.[\w.-]+"/g;
        const used = source.match(pattern).map(function (quoted) {
            return quoted.slice(1, -1);
        });
        assert.ok(used.length > 60, "expected the sidebar to use its catalog");
        used.filter(function (key) {
            return !/\.$/.test(key);
        }).forEach(function (key) {
            assert.strictEqual(typeof lookup(english, key), "string", "missing en-US key " + key);
        });
    });

    it("translates every error code the relay produces", function () {
        const adminApi = fs.readFileSync(path.join(packageRoot, "resources", "shared", "admin-api.js"), "utf8");
        const codes = /RELAY_ERROR_CODES = (\[[^\]]*\])/.exec(adminApi)[1];
        JSON.parse(codes).forEach(function (code) {
            assert.strictEqual(typeof english.error.codes[code], "string", code);
        });
    });

    it("uses the plugin's i18n namespace in every editor script", function () {
        EDITOR_SOURCES.forEach(function (file) {
            const text = fs.readFileSync(path.join(packageRoot, file), "utf8");
            assert.ok(text.indexOf("\"node-red-contrib-ai-sidebar/ai-sidebar:\"") !== -1, file);
        });
    });

    it("names every command and supervisor state the service-status route may send", function () {
        const banner = require("../resources/service-status/service-banner");
        const route = require("../plugins/lib/service-status");
        const offered = route.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", supervisor: null,
            wheel: "/w.whl" }).commands.map(function (c) { return c.id; });
        assert.deepStrictEqual(offered, banner.COMMAND_IDS);
        LANGUAGES.forEach(function (lang) {
            banner.COMMAND_IDS.forEach(function (id) {
                assert.strictEqual(typeof lookup(catalog(lang), "service.command." + id), "string", lang + " " + id);
            });
            assert.strictEqual(typeof lookup(catalog(lang), "service.notAnswering"), "string", lang + " notAnswering");
            ["starting", "running", "exited", "failed", "external"].forEach(function (state) {
                assert.strictEqual(typeof lookup(catalog(lang), "service.supervisor." + state), "string",
                    lang + " " + state);
            });
        });
    });

    it("labels the sidebar's actions with keys of the catalog", function () {
        const labels = html.match(/label: NS \+ "(action\.[\w]+)"/g) || [];
        assert.strictEqual(labels.length, 3);
        ["action.open", "action.explain", "action.assistFunction"].forEach(function (key) {
            LANGUAGES.forEach(function (lang) {
                assert.strictEqual(typeof lookup(catalog(lang), key), "string", lang + " " + key);
            });
        });
    });
});

describe("vendored browser libraries", function () {
    it("match the installed marked, dompurify and highlight.js (npm run vendor)", function () {
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
            "resources/node-red-contrib-ai-sidebar/vendor/highlight.js",
            "resources/node-red-contrib-ai-sidebar/vendor/diff.js",
            "resources/node-red-contrib-ai-sidebar/shared/sse-parser.js",
            "resources/node-red-contrib-ai-sidebar/shared/flow-json.js",
            "resources/node-red-contrib-ai-sidebar/chat/config-reuse.js",
            "resources/node-red-contrib-ai-sidebar/shared/admin-api.js",
            "resources/node-red-contrib-ai-sidebar/shared/clipboard.js",
            "resources/node-red-contrib-ai-sidebar/shared/code-blocks.js",
            "resources/node-red-contrib-ai-sidebar/shared/function-code.js",
            "resources/node-red-contrib-ai-sidebar/chat/flow-blocks.js",
            "resources/node-red-contrib-ai-sidebar/shared/code-highlight.js",
            "resources/node-red-contrib-ai-sidebar/shared/markdown.js",
            "resources/node-red-contrib-ai-sidebar/chat/waiting.js",
            "resources/node-red-contrib-ai-sidebar/chat/live-reading.js",
            "resources/node-red-contrib-ai-sidebar/shared/error-codes.js",
            "resources/node-red-contrib-ai-sidebar/shared/node-links.js",
            "resources/node-red-contrib-ai-sidebar/chat/answer-links.js",
            "resources/node-red-contrib-ai-sidebar/chat/notices.js",
            "resources/node-red-contrib-ai-sidebar/chat/notice-view.js",
            "resources/node-red-contrib-ai-sidebar/chat/usage.js",
            "resources/node-red-contrib-ai-sidebar/chat/usage-view.js",
            "resources/node-red-contrib-ai-sidebar/chat/followups.js",
            "resources/node-red-contrib-ai-sidebar/chat/thinking-view.js",
            "resources/node-red-contrib-ai-sidebar/knowledge/knowledge.js",
            "resources/node-red-contrib-ai-sidebar/knowledge/documents-panel.js",
            "resources/node-red-contrib-ai-sidebar/knowledge/knowledge-panel.js",
            "resources/node-red-contrib-ai-sidebar/mcp-grants/grants-panel.js",
            "resources/node-red-contrib-ai-sidebar/history/history.js",
            "resources/node-red-contrib-ai-sidebar/history/project-line.js",
            "resources/node-red-contrib-ai-sidebar/history/history-panel.js",
            "resources/node-red-contrib-ai-sidebar/chat/answer.js",
            "resources/node-red-contrib-ai-sidebar/chat/stored-answer.js",
            "resources/node-red-contrib-ai-sidebar/chat/stream-chat.js",
            "resources/node-red-contrib-ai-sidebar/chat/search-hits.js",
            "resources/node-red-contrib-ai-sidebar/conversations/sessions.js",
            "resources/node-red-contrib-ai-sidebar/conversations/fork.js",
            "resources/node-red-contrib-ai-sidebar/conversations/edit-question.js",
            "resources/node-red-contrib-ai-sidebar/chat/checkpoints.js",
            "resources/node-red-contrib-ai-sidebar/config/config-choice.js",
            "resources/node-red-contrib-ai-sidebar/config/config-picker.js",
            "resources/node-red-contrib-ai-sidebar/chat/mode-choice.js",
            "resources/node-red-contrib-ai-sidebar/config/setup-card.js",
            "resources/node-red-contrib-ai-sidebar/chat/conversation.js",
            "resources/node-red-contrib-ai-sidebar/chat/chat-request.js",
            "resources/node-red-contrib-ai-sidebar/chat/editor-context.js",
            "resources/node-red-contrib-ai-sidebar/chat/node-chips.js",
            "resources/node-red-contrib-ai-sidebar/chat/recent-debug.js",
            "resources/node-red-contrib-ai-sidebar/chat/scenario-choice.js",
            "resources/node-red-contrib-ai-sidebar/mentions/fuzzy.js",
            "resources/node-red-contrib-ai-sidebar/mentions/mention-source.js",
            "resources/node-red-contrib-ai-sidebar/mentions/autocomplete.js",
            "resources/node-red-contrib-ai-sidebar/mentions/mention-chips.js",
            "resources/node-red-contrib-ai-sidebar/mentions/attachment-chips.js",
            "resources/node-red-contrib-ai-sidebar/mentions/slash-commands.js",
            "resources/node-red-contrib-ai-sidebar/mentions/composer-mentions.js",
            "resources/node-red-contrib-ai-sidebar/mentions/node-menu.js",
            "resources/node-red-contrib-ai-sidebar/service-status/service-watch.js",
            "resources/node-red-contrib-ai-sidebar/service-status/service-banner.js",
            "resources/node-red-contrib-ai-sidebar/sidebar-tab.js",
            "resources/node-red-contrib-ai-sidebar/approval/approval-diff.js",
            "resources/node-red-contrib-ai-sidebar/approval/flow-change.js",
            "resources/node-red-contrib-ai-sidebar/approval/applied-watch.js",
            "resources/node-red-contrib-ai-sidebar/approval/build-view.js",
            "resources/node-red-contrib-ai-sidebar/approval/build-cards.js",
            "resources/node-red-contrib-ai-sidebar/approval/approval-parts.js",
            "resources/node-red-contrib-ai-sidebar/approval/approval-view.js",
            "resources/node-red-contrib-ai-sidebar/approval/approval-card.js",
            "resources/node-red-contrib-ai-sidebar/approval/approval-outcome.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-request.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-editors.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-panel.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-function.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-jsonata.js",
            "resources/node-red-contrib-ai-sidebar/assist/assist-json.js",
            "resources/node-red-contrib-ai-sidebar/completion/completion-source.js",
            "resources/node-red-contrib-ai-sidebar/completion/completion-provider.js",
            "resources/node-red-contrib-ai-sidebar/completion/completion-setting.js",
            "resources/node-red-contrib-ai-sidebar/sidebar.js"
        ]);
        assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);
    });

    it("are pinned to exact versions, with their licences next to them", function () {
        const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8"));
        const versions = Object.assign({}, manifest.dependencies, manifest.devDependencies);
        ["marked", "dompurify", "@highlightjs/cdn-assets", "diff"].forEach(function (name) {
            assert.match(versions[name], /^\d+\.\d+\.\d+$/, name + " " + versions[name]);
        });
        ["marked.LICENSE.md", "dompurify.LICENSE", "highlight.js.LICENSE", "diff.LICENSE"].forEach(function (file) {
            assert.ok(fs.statSync(path.join(packageRoot, "resources", "vendor", file)).size > 500, file);
        });
    });
});
