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

    it("sends its own completion model and fill-in-the-middle setting, only when set", async function () {
        await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "openai-compatible",
            model: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1", completionModel: " qwen2.5-coder:1.5b ",
            completionFim: "on" }], { cfg: { apiKey: KEY } });
        const settings = helper.getNode("cfg").providerSettings();
        assert.strictEqual(settings.completionModel, "qwen2.5-coder:1.5b");
        assert.strictEqual(settings.completionFim, "on");
        assert.strictEqual(settings.model, "llama3.1");
        // Unset or "auto": nothing is sent, and the service decides (the chat model; FIM for DeepSeek).
        const plain = aiConfigNode.providerSettings({ provider: "deepseek", completionModel: " ", completionFim: "auto" });
        assert.ok(!("completionModel" in plain) && !("completionFim" in plain));
        assert.strictEqual(aiConfigNode.providerSettings({ provider: "openai", completionFim: "off" }).completionFim,
            "off");
        assert.throws(function () {
            aiConfigNode.providerSettings({ provider: "openai", completionFim: "sometimes" });
        }, function (err) {
            return err.code === "invalid_config" && /fill in the middle/.test(err.message);
        });
    });

    it("sends Azure OpenAI's deployment and API version for azure-openai only, and refuses ones Azure would not take",
        async function () {
            await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "azure-openai",
                baseUrl: "https://contoso.openai.azure.com", deployment: " gpt4o-mini-prod ",
                apiVersion: "2025-01-01-preview", model: "gpt-4o-mini" }], { cfg: { apiKey: KEY } });
            assert.deepStrictEqual(helper.getNode("cfg").providerSettings(), {
                provider: "azure-openai", model: "gpt-4o-mini", baseUrl: "https://contoso.openai.azure.com",
                deployment: "gpt4o-mini-prod", apiVersion: "2025-01-01-preview", apiKey: KEY, memory: true,
                tools: true
            });
            // A model configured without tool calling says so; the service then answers without its agent.
            assert.strictEqual(aiConfigNode.providerSettings({ provider: "openai-compatible", toolCalling: false })
                .toolCalling, false);
            assert.ok(!("toolCalling" in aiConfigNode.providerSettings({ provider: "openai", toolCalling: true })));
            // Whether the model takes images: said only when chosen; unset, the service decides by the provider.
            assert.strictEqual(aiConfigNode.providerSettings({ provider: "openai-compatible", images: "true" })
                .images, true);
            assert.strictEqual(aiConfigNode.providerSettings({ provider: "openai", images: "false" }).images, false);
            assert.ok(!("images" in aiConfigNode.providerSettings({ provider: "openai", images: "" })));
            // Another provider keeps fields left over from an earlier choice out of its request.
            assert.deepStrictEqual(aiConfigNode.providerSettings({ provider: "openai", deployment: "x",
                apiVersion: "2024-10-21" }), { provider: "openai", memory: true, tools: true });
            [[{ deployment: "../admin" }, /deployment/], [{ apiVersion: "latest" }, /API version/]]
                .forEach(function ([bad, named]) {
                    assert.throws(function () {
                        aiConfigNode.providerSettings(Object.assign({ provider: "azure-openai" }, bad));
                    }, function (err) {
                        return err.code === "invalid_config" && named.test(err.message);
                    });
                });
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

    it("declares its key and its MCP servers' secrets as password credentials in the runtime and in the editor",
        async function () {
            await helper.load(aiConfigNode, [{ id: "cfg", type: "ai-config", provider: "openai" }]);
            assert.deepStrictEqual(helper._redNodes.getCredentialDefinition("ai-config"),
                { apiKey: { type: "password" }, mcpSecrets: { type: "password" } });
            const editor = fs.readFileSync(path.join(__dirname, "..", "nodes", "ai-config.html"), "utf8");
            assert.match(editor, /credentials:\s*\{\s*apiKey:\s*\{\s*type:\s*"password"\s*\},\s*mcpSecrets:\s*\{\s*type:\s*"password"\s*\}\s*\}/);
        });

    const HEADER = "Bearer mcp-header-value-0007";
    const ENV_VALUE = "tracker-token-value-0008";
    const SERVERS = [
        { id: "s1", name: "docs", transport: "http", url: " https://docs.example.com/mcp ", secrets: ["Authorization"],
            unset: [] },
        { id: "s2", name: "tracker", transport: "stdio", command: "npx", args: "-y tracker-mcp --title \"My board\"",
            secrets: ["TRACKER_TOKEN"], unset: [] }
    ];
    const SECRETS = JSON.stringify({ s1: { Authorization: HEADER }, s2: { TRACKER_TOKEN: ENV_VALUE } });

    it("sends its MCP servers with the secret values from its credentials, and keeps the values out of its " +
        "properties", async function () {
        const flow = [{ id: "cfg", type: "ai-config", provider: "openai", mcpServers: SERVERS }];
        await helper.load(aiConfigNode, flow, { cfg: { apiKey: KEY, mcpSecrets: SECRETS } });
        const settings = helper.getNode("cfg").providerSettings();
        assert.deepStrictEqual(settings.mcpServers, [
            { name: "docs", url: "https://docs.example.com/mcp", headers: { Authorization: HEADER } },
            { name: "tracker", command: "npx", args: ["-y", "tracker-mcp", "--title", "My board"],
                env: { TRACKER_TOKEN: ENV_VALUE } }
        ]);
        // What Node-RED writes to flows.json is the node's properties: names of secrets, never their values.
        const saved = JSON.stringify(flow);
        assert.ok(!saved.includes(HEADER) && !saved.includes(ENV_VALUE));
        assert.ok(!JSON.stringify(helper.getNode("cfg").summary()).includes("mcp"));
    });

    it("sends no mcpServers without servers, and refuses a server the service would refuse, naming it",
        function () {
            assert.ok(!("mcpServers" in aiConfigNode.providerSettings({ provider: "openai", mcpServers: [] })));
            const cases = [
                [[{ id: "a", name: "bad name", transport: "http", url: "https://x" }], /"bad name".*name/],
                [[{ id: "a", name: "a", transport: "http", url: "https://x" },
                    { id: "b", name: "a", transport: "http", url: "https://y" }], /"a" is listed twice/],
                [[{ id: "a", name: "docs", transport: "http", url: "ftp://x" }], /"docs" needs an http/],
                [[{ id: "a", name: "tool", transport: "stdio", command: " " }], /"tool" needs a command/],
                [[{ id: "a", name: "x", transport: "ws", url: "https://x" }], /transport "ws"/],
                [[{ id: "s1", name: "docs", transport: "http", url: "https://x", secrets: ["Authorization", "X-Team"] }],
                    /"docs" has no value for "X-Team"; enter it again/],
                [Array.from({ length: 11 }, function (_, i) {
                    return { id: "s" + i, name: "s" + i, transport: "http", url: "https://x" };
                }), /at most 10/]
            ];
            for (const [servers, named] of cases) {
                assert.throws(function () {
                    aiConfigNode.providerSettings({ provider: "openai", mcpServers: servers },
                        { mcpSecrets: JSON.stringify({ s1: { Authorization: HEADER } }) });
                }, function (err) {
                    assert.strictEqual(err.code, "invalid_config");
                    assert.match(err.message, named);
                    assert.ok(!err.message.includes(HEADER));
                    return true;
                }, JSON.stringify(servers).slice(0, 80));
            }
            assert.throws(function () {
                aiConfigNode.providerSettings({ provider: "openai", mcpServers: SERVERS }, { mcpSecrets: "{not json" });
            }, /secrets are not readable/);
        });
});
