"use strict";

/**
 * The sidebar's choice of ai-config node: `plugins/lib/provider.js` on its own, then the plugin's routes in a real
 * Node-RED whose flows hold an ai-config node with a key deployed through the Admin API.
 */

const assert = require("assert");
const providerLib = require("../plugins/lib/provider");
const helpers = require("./helpers");
const { startNodeRed, filesBelow, START_TIMEOUT } = require("./nodered");

const KEY = "sk-sidebar-config-key-never-in-the-browser-0007";
// The value of the ai-config node's MCP server header: a secret like the key.
const HEADER = "Bearer mcp-header-never-in-the-browser-0009";

function configNode(id, settings) {
    return {
        id: id,
        type: "ai-config",
        providerSettings: function () {
            return Object.assign({ provider: "openai", apiKey: KEY, memory: true, tools: true }, settings);
        }
    };
}

function nodes(list) {
    const byId = new Map(list.map(function (node) { return [node.id, node]; }));
    return function (id) {
        return byId.get(id) || null;
    };
}

describe("ai-config choice of the sidebar (plugins/lib/provider.js)", function () {
    it("replaces configId by the config node's provider settings, key included", function () {
        const resolved = providerLib.resolveConfig({ message: "hi", configId: "cfg" },
            nodes([configNode("cfg", { model: "gpt-4o-mini" })]));
        assert.deepStrictEqual(resolved, { body: { message: "hi", provider: {
            provider: "openai", apiKey: KEY, memory: true, tools: true, model: "gpt-4o-mini" } } });
    });

    it("leaves a body without configId to the service's environment provider", function () {
        assert.deepStrictEqual(providerLib.resolveConfig({ message: "hi", configId: "" }, nodes([])),
            { body: { message: "hi" } });
    });

    it("drops provider settings sent by the browser, which could point the service's key anywhere", function () {
        const body = { message: "hi", provider: { provider: "openai-compatible", baseUrl: "http://attacker.test" } };
        assert.deepStrictEqual(providerLib.resolveConfig(body, nodes([])), { body: { message: "hi" } });
        assert.ok(body.provider, "the request body itself was changed");
    });

    it("answers 400 config_not_found for an unknown id, a node of another type or an id that is not a string",
        function () {
            const getNode = nodes([{ id: "dbg", type: "debug" }]);
            for (const configId of ["nope", "dbg", 42]) {
                const resolved = providerLib.resolveConfig({ message: "hi", configId: configId }, getNode);
                assert.strictEqual(resolved.status, 400, String(configId));
                assert.strictEqual(resolved.error.error.code, "config_not_found");
            }
        });

    it("answers 400 with the node's own code when its settings are out of range", function () {
        const broken = configNode("cfg");
        broken.providerSettings = function () {
            throw Object.assign(new Error("The ai-config node's temperature must be between 0 and 2; got 3."),
                { code: "invalid_config" });
        };
        const resolved = providerLib.resolveConfig({ message: "hi", configId: "cfg" }, nodes([broken]));
        assert.deepStrictEqual(resolved.error.error.code, "invalid_config");
    });

    it("lists the ai-config nodes that run, by name, without their keys", function () {
        const definitions = [
            { id: "b", type: "ai-config", name: "Zeta", provider: "openai", model: "gpt-4o" },
            { id: "a", type: "ai-config", name: "Alpha", provider: "anthropic" },
            { id: "off", type: "ai-config", name: "In a disabled flow", provider: "google" },
            { id: "t", type: "tab", label: "Flow 1" }
        ];
        const running = nodes([configNode("a"), configNode("b"), { id: "t", type: "tab" }]);
        const list = providerLib.listConfigs(function (callback) {
            definitions.forEach(callback);
        }, running);
        assert.deepStrictEqual(list, [
            { id: "a", name: "Alpha", provider: "anthropic", model: "" },
            { id: "b", name: "Zeta", provider: "openai", model: "gpt-4o" }
        ]);
    });
});

describe("ai-config choice in a real Node-RED", function () {
    this.timeout(30000);
    let service;
    let nodeRed;

    function post(route, body) {
        return helpers.request(nodeRed.url + route, {
            method: "POST",
            headers: { "Content-Type": "application/json", "Node-RED-Deployment-Type": "full" },
            body: JSON.stringify(body)
        });
    }

    before(async function () {
        this.timeout(START_TIMEOUT + 30000);
        service = await helpers.fakeService();
        service.handler = function (req, res) {
            res.writeHead(200, { "Content-Type": "text/event-stream" });
            res.end("data: {\"type\":\"done\",\"sessionId\":\"s\"}\n\n");
        };
        nodeRed = await startNodeRed({
            settings: { credentialSecret: "a-credential-secret-for-tests" },
            env: { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "svc-token" }
        });
        // Deployed as the editor deploys: the key travels once, inline, and Node-RED stores it encrypted.
        // Node-RED answers the deploy before the new flows have started.
        const restarted = nodeRed.waitForLog(/Started flows/, nodeRed.log().length);
        const deployed = await post("flows", [
            { id: "tab1", type: "tab", label: "AI" },
            { id: "cfg1", type: "ai-config", name: "Team OpenAI", provider: "openai", model: "gpt-4o-mini",
                baseUrl: "", temperature: "", maxTokens: "", memory: true, tools: true, scenarios: "",
                mcpServers: [{ id: "srv1", name: "docs", transport: "http", url: "https://docs.example.com/mcp",
                    secrets: ["Authorization"], unset: [] }],
                credentials: { apiKey: KEY, mcpSecrets: JSON.stringify({ srv1: { Authorization: HEADER } }) } }
        ]);
        const answer = await helpers.readBody(deployed.res);
        assert.strictEqual(deployed.res.statusCode, 204, answer);
        await restarted;
    });

    after(async function () {
        if (nodeRed) {
            await nodeRed.stop();
        }
        await helpers.close(service.server);
    });

    it("lists the deployed ai-config nodes for the sidebar's picker, without the key", async function () {
        const { res } = await helpers.request(nodeRed.url + "ai-sidebar/configs");
        const text = await helpers.readBody(res);
        assert.strictEqual(res.statusCode, 200);
        assert.deepStrictEqual(JSON.parse(text),
            [{ id: "cfg1", name: "Team OpenAI", provider: "openai", model: "gpt-4o-mini" }]);
        assert.ok(!text.includes(KEY));
    });

    it("sends the chosen node's settings and key to the service in place of configId", async function () {
        const response = await post("ai-sidebar/stream-chat", { message: "hi", configId: "cfg1" });
        await helpers.readBody(response.res);
        assert.strictEqual(response.res.statusCode, 200);
        const sent = JSON.parse(service.requests[service.requests.length - 1].body);
        assert.deepStrictEqual(sent, { message: "hi", provider: {
            provider: "openai", model: "gpt-4o-mini", apiKey: KEY, memory: true, tools: true,
            mcpServers: [{ name: "docs", url: "https://docs.example.com/mcp", headers: { Authorization: HEADER } }] } });
    });

    it("answers 400 config_not_found for an id that is not a deployed ai-config node, asking nothing", async function () {
        const before = service.requests.length;
        const response = await post("ai-sidebar/stream-chat", { message: "hi", configId: "tab1" });
        const body = JSON.parse(await helpers.readBody(response.res));
        assert.strictEqual(response.res.statusCode, 400);
        assert.strictEqual(body.error.code, "config_not_found");
        assert.strictEqual(service.requests.length, before);
    });

    it("never lets the key or an MCP server's header value reach the editor, the log or a file in clear",
        async function () {
            const { res } = await helpers.request(nodeRed.url + "flows");
            const flows = await helpers.readBody(res);
            assert.match(flows, /"cfg1"/);
            assert.match(flows, /"secrets":\["Authorization"\]/);
            const credentials = await helpers.request(nodeRed.url + "credentials/ai-config/cfg1");
            const shown = await helpers.readBody(credentials.res);
            assert.deepStrictEqual(JSON.parse(shown), { has_apiKey: true, has_mcpSecrets: true });
            for (const secret of [KEY, HEADER.split(" ")[1]]) {
                assert.ok(!flows.includes(secret), "GET /flows shows " + secret);
                assert.ok(!nodeRed.log().includes(secret), "the Node-RED log shows " + secret);
                for (const [file, content] of filesBelow(nodeRed.userDir)) {
                    assert.ok(!content.includes(secret), file + " holds " + secret + " in clear");
                }
            }
        });
});

describe("ai-config picker route with adminAuth", function () {
    this.timeout(30000);
    let nodeRed;

    before(async function () {
        this.timeout(START_TIMEOUT + 30000);
        // bcrypt hash of "password123", cost 8.
        const hash = "$2b$08$csiBv0OuTq/UfZKBKMGbZuSpnadzvqMh939k1ErqcB41dXLq/cl3q";
        nodeRed = await startNodeRed({
            settings: { adminAuth: { type: "credentials", users: [{ username: "viewer", password: hash,
                permissions: "read" }] } },
            flows: [{ id: "cfg1", type: "ai-config", name: "Team", provider: "openai" }]
        });
    });

    after(async function () {
        if (nodeRed) {
            await nodeRed.stop();
        }
    });

    it("refuses the list without a token and gives it to a read-only user", async function () {
        const anonymous = await helpers.request(nodeRed.url + "ai-sidebar/configs");
        await helpers.readBody(anonymous.res);
        assert.strictEqual(anonymous.res.statusCode, 401);
        const login = await helpers.request(nodeRed.url + "auth/token", {
            method: "POST",
            headers: { "Content-Type": "application/x-www-form-urlencoded" },
            body: "client_id=node-red-admin&grant_type=password&scope=read&username=viewer&password=password123"
        });
        const token = JSON.parse(await helpers.readBody(login.res)).access_token;
        const viewer = await helpers.request(nodeRed.url + "ai-sidebar/configs",
            { headers: { "Authorization": "Bearer " + token } });
        assert.strictEqual(viewer.res.statusCode, 200);
        assert.deepStrictEqual(JSON.parse(await helpers.readBody(viewer.res)),
            [{ id: "cfg1", name: "Team", provider: "openai", model: "" }]);
    });
});
