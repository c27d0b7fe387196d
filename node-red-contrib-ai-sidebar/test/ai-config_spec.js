"use strict";

/** The ai-config node in Node-RED's test runtime (node-red-node-test-helper). */

const assert = require("assert");
const fs = require("fs");
const path = require("path");
const helper = require("node-red-node-test-helper");
const aiConfigNode = require("../nodes/ai-config.js");

helper.init(require("./nodered").nodeRedMain());

const KEY = "sk-config-node-secret-0001";

describe("ai-config node", function () {
    before(function (done) {
        helper.startServer(done);
    });

    after(function (done) {
        helper.stopServer(done);
    });

    afterEach(function () {
        return helper.unload();
    });

    it("builds the service's provider object from its settings and its key", async function () {
        await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", name: "local llama",
            provider: "openai-compatible", model: " llama3.1 ", baseUrl: "http://127.0.0.1:11434/v1",
            temperature: "0.4", maxTokens: "512", memory: false, tools: true,
            scenarios: "learning, development,,learning" }], { cfg: { apiKey: KEY } });
        const node = helper.getNode("cfg");
        assert.deepStrictEqual(node.providerSettings(), {
            provider: "openai-compatible", model: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1",
            temperature: 0.4, maxTokens: 512, apiKey: KEY, memory: false, tools: true,
            scenarios: ["learning", "development"]
        });
        assert.deepStrictEqual(node.summary(),
            { id: "cfg", name: "local llama", provider: "openai-compatible", model: " llama3.1 " });
    });

    it("leaves out settings that are empty, including a key that was never set", async function () {
        await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "anthropic", model: "",
            baseUrl: "", temperature: "", maxTokens: "", memory: true, tools: true, scenarios: "" }]);
        assert.deepStrictEqual(helper.getNode("cfg").providerSettings(),
            { provider: "anthropic", memory: true, tools: true });
    });

    it("treats memory and tools as on unless they are switched off", async function () {
        await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "google" }]);
        assert.deepStrictEqual(helper.getNode("cfg").providerSettings(),
            { provider: "google", memory: true, tools: true });
    });

    it("refuses settings the service would refuse, naming the setting, with code invalid_config", function () {
        const cases = [
            [{ provider: "" }, /provider/],
            [{ provider: " " }, /provider/],
            [{}, /provider/],
            [{ provider: "openai", baseUrl: "ftp://example.org" }, /base URL/],
            [{ provider: "openai", baseUrl: "not a url" }, /base URL/],
            [{ provider: "openai", temperature: "2.5" }, /temperature/],
            [{ provider: "openai", temperature: "-0.1" }, /temperature/],
            [{ provider: "openai", maxTokens: "0" }, /max tokens/],
            [{ provider: "openai", maxTokens: "1.5" }, /max tokens/]
        ];
        for (const [config, named] of cases) {
            assert.throws(function () {
                aiConfigNode.providerSettings(config, { apiKey: KEY });
            }, function (err) {
                assert.strictEqual(err.code, "invalid_config");
                assert.match(err.message, named);
                assert.ok(!err.message.includes(KEY));
                return true;
            }, JSON.stringify(config));
        }
    });

    it("passes scenario keys and the provider as saved: the service owns both lists and checks them", function () {
        assert.deepStrictEqual(aiConfigNode.providerSettings({ provider: "a-new-provider", scenarios: "sales, general" }),
            { provider: "a-new-provider", memory: true, tools: true, scenarios: ["sales", "general"] });
        assert.deepStrictEqual(aiConfigNode.parseScenarios(["general", " ", "general", "learning"]),
            ["general", "learning"]);
    });

    it("keeps no provider or scenario list in the nodes' code: the editor reads them from the service", function () {
        const nodes = path.join(__dirname, "..", "nodes");
        for (const file of ["ai-config.js", "ai-config.html", "ai-chat.js", "ai-chat.html"]) {
            const source = fs.readFileSync(path.join(nodes, file), "utf8");
            for (const key of ["learning", "configuration", "deepseek", "anthropic"]) {
                assert.ok(!source.includes("\"" + key + "\""), file + " names " + key);
            }
            assert.ok(!/10000|10_000|MAX_MESSAGE_CHARS/.test(source), file + " holds the message limit");
        }
        const editor = fs.readFileSync(path.join(nodes, "ai-config.html"), "utf8");
        assert.match(editor, /\$\.getJSON\("ai-sidebar\/scenarios\?lang="/);
    });

    it("declares its key as a password credential in the runtime and in the editor", async function () {
        await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "openai" }]);
        assert.deepStrictEqual(helper._redNodes.getCredentialDefinition("ai-config"),
            { apiKey: { type: "password" } });
        const editor = fs.readFileSync(path.join(__dirname, "..", "nodes", "ai-config.html"), "utf8");
        assert.match(editor, /credentials:\s*\{\s*apiKey:\s*\{\s*type:\s*"password"\s*\}\s*\}/);
    });
});
