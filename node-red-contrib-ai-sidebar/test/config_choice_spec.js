"use strict";

const assert = require("assert");
const configChoice = require("../resources/config/config-choice");

function format(parts) {
    return parts.name + " (" + parts.detail + ")";
}

describe("the sidebar's choice of AI configuration", function () {
    it("is remembered per Node-RED user", function () {
        assert.strictEqual(configChoice.storageKey("alice"), "node-red-contrib-ai-sidebar.configId:alice");
        assert.strictEqual(configChoice.storageKey(undefined), "node-red-contrib-ai-sidebar.configId");
    });

    it("keeps only the id, name, provider and model of each listed configuration", function () {
        const listed = configChoice.normaliseConfigs([
            { id: "c1", name: " Fast ", provider: "openai", model: "gpt-4o-mini", apiKey: "sk-never-kept" },
            { id: "", name: "no id" },
            null,
            "c3",
            { id: "c2", name: 7 }
        ]);
        assert.deepStrictEqual(listed, [
            { id: "c1", name: "Fast", provider: "openai", model: "gpt-4o-mini" },
            { id: "c2", name: "", provider: "", model: "" }
        ]);
        assert.deepStrictEqual(configChoice.normaliseConfigs({ error: {} }), []);
    });

    it("labels a configuration with its name and provider/model", function () {
        function label(name, provider, model) {
            return configChoice.configLabel({ name: name, provider: provider, model: model }, format);
        }
        assert.strictEqual(label("Fast", "openai", "gpt-4o-mini"), "Fast (openai/gpt-4o-mini)");
        assert.strictEqual(label("Local", "openai-compatible", ""), "Local (openai-compatible)");
        assert.strictEqual(label("", "deepseek", "deepseek-chat"), "deepseek/deepseek-chat");
        assert.strictEqual(label("Bare", "", ""), "Bare");
    });

    it("keeps a remembered configuration that is still deployed", function () {
        assert.deepStrictEqual(configChoice.resolveChoice("c2", [{ id: "c1" }, { id: "c2" }]),
            { id: "c2", missing: false });
    });

    it("falls back to the service default when the remembered configuration is gone, and says so", function () {
        assert.deepStrictEqual(configChoice.resolveChoice("gone", [{ id: "c1" }]), { id: "", missing: true });
        assert.deepStrictEqual(configChoice.resolveChoice("gone", []), { id: "", missing: true });
    });

    it("keeps a remembered configuration the runtime does not run while the editor's flows still hold it", function () {
        // Flows stopped (a missing node type, safe mode): the runtime lists no configuration at all.
        assert.deepStrictEqual(configChoice.resolveChoice("c2", [], true), { id: "c2", missing: false, unlisted: true });
        assert.deepStrictEqual(configChoice.resolveChoice("c2", [{ id: "c2" }], true), { id: "c2", missing: false });
        assert.deepStrictEqual(configChoice.resolveChoice("c2", [], false), { id: "", missing: true });
    });

    it("uses the service default when nothing was chosen", function () {
        assert.deepStrictEqual(configChoice.resolveChoice(null, [{ id: "c1" }]), { id: "", missing: false });
        assert.deepStrictEqual(configChoice.resolveChoice("", []), { id: "", missing: false });
    });
});

describe("when the sidebar reads the deployed configurations again", function () {
    it("reads them once the flows started, not while a deploy has them stopped", function () {
        assert.strictEqual(configChoice.refreshesConfigs({ state: "start", deploy: true }), true);
        assert.strictEqual(configChoice.refreshesConfigs(undefined), true); // a warning cleared
        assert.strictEqual(configChoice.refreshesConfigs({}), true);
        assert.strictEqual(configChoice.refreshesConfigs({ state: "stop", deploy: true }), false);
        assert.strictEqual(configChoice.refreshesConfigs({ state: "stop", error: "missing-types" }), false);
        assert.strictEqual(configChoice.refreshesConfigs({ state: "safe", error: "safe-mode" }), false);
    });
});

describe("the model named in the header", function () {
    const configs = [{ id: "c1", name: "Local", provider: "openai-compatible", model: "llama3" },
        { id: "c2", name: "", provider: "anthropic", model: "" }];

    it("is the chosen ai-config node's, or the service's own when none is chosen", function () {
        assert.deepStrictEqual(configChoice.answeringModel("c1", configs, { provider: "openai", model: "gpt-4o-mini" }),
            { provider: "openai-compatible", model: "llama3", text: "openai-compatible/llama3" });
        assert.deepStrictEqual(configChoice.answeringModel("", configs, { provider: "openai", model: "gpt-4o-mini" }),
            { provider: "openai", model: "gpt-4o-mini", text: "openai/gpt-4o-mini" });
        assert.strictEqual(configChoice.answeringModel("c2", configs, null).text, "anthropic");
    });

    it("names the service's default for a node that names no model, once the service said it", function () {
        const defaults = { anthropic: "claude-sonnet-4-5", "openai-compatible": null };
        assert.deepStrictEqual(configChoice.answeringModel("c2", configs, null, defaults),
            { provider: "anthropic", model: "claude-sonnet-4-5", text: "anthropic/claude-sonnet-4-5" });
        assert.strictEqual(configChoice.answeringModel("c1", configs, null, defaults).text, "openai-compatible/llama3");
        assert.strictEqual(configChoice.answeringModel("c2", configs, null, {}).text, "anthropic");
    });

    it("is unknown until the service said it, or for a node that is not listed", function () {
        assert.strictEqual(configChoice.answeringModel("", configs, null), null);
        assert.strictEqual(configChoice.answeringModel("", configs, { provider: "" }), null);
        assert.strictEqual(configChoice.answeringModel("gone", configs, { provider: "openai", model: "x" }), null);
    });
});
