"use strict";

/** The example flows shipped in `examples/` (Node-RED's Import → Examples menu) and the repository's own. */

const assert = require("assert");
const fs = require("fs");
const path = require("path");

const packageExamples = path.join(__dirname, "..", "examples");
const repositoryExamples = path.join(__dirname, "..", "..", "examples", "flows.json");

function checkFlow(name, nodes) {
    assert.ok(Array.isArray(nodes) && nodes.length > 0, name);
    const ids = new Set();
    for (const node of nodes) {
        assert.ok(typeof node.id === "string" && typeof node.type === "string", name + ": " + JSON.stringify(node));
        assert.ok(!ids.has(node.id), name + ": duplicate id " + node.id);
        ids.add(node.id);
    }
    for (const node of nodes) {
        for (const port of node.wires || []) {
            for (const target of port) {
                assert.ok(ids.has(target), name + ": " + node.id + " is wired to missing " + target);
            }
        }
        if (node.type === "ai-chat") {
            assert.strictEqual((node.wires || []).length, Number(node.outputs), name + ": outputs of " + node.id);
            assert.ok(!node.config || ids.has(node.config), name + ": ai-chat " + node.id + " uses a missing config");
        }
        assert.ok(!("credentials" in node), name + ": an example must not carry credentials");
    }
}

/**
 * The ai-chat nodes an http in node of `nodes` reaches through the wires, with the http in node.
 *
 * @param {object[]} nodes
 * @returns {{httpIn: object, chat: object}[]}
 */
function chatsBehindEndpoints(nodes) {
    const byId = new Map(nodes.map(function (node) { return [node.id, node]; }));
    const found = [];
    for (const httpIn of nodes.filter(function (node) { return node.type === "http in"; })) {
        const seen = new Set([httpIn.id]);
        const pending = [httpIn];
        while (pending.length) {
            const node = pending.pop();
            if (node.type === "ai-chat") {
                found.push({ httpIn: httpIn, chat: node });
            }
            for (const target of (node.wires || []).flat()) {
                if (!seen.has(target)) {
                    seen.add(target);
                    pending.push(byId.get(target));
                }
            }
        }
    }
    return found;
}

describe("example flows", function () {
    it("ship \"Ask over HTTP\", \"Change a flow with approval\", \"Explain a flow from a flow\" and \"Explain an " +
        "error\" in the package, each with an ai-chat node", function () {
            const files = fs.readdirSync(packageExamples).filter(function (file) { return file.endsWith(".json"); });
            assert.deepStrictEqual(files.sort(), ["Ask over HTTP.json", "Change a flow with approval.json",
                "Explain a flow from a flow.json", "Explain an error.json"]);
            for (const file of files) {
                const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, file), "utf8"));
                checkFlow(file, nodes);
                assert.ok(nodes.some(function (node) { return node.type === "ai-chat"; }), file);
            }
        });

    it("answer GET /ask through ai-chat, with a catch node that ends the request on errors", function () {
        const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, "Ask over HTTP.json"), "utf8"));
        const byId = new Map(nodes.map(function (node) { return [node.id, node]; }));
        const httpIn = nodes.find(function (node) { return node.type === "http in"; });
        assert.strictEqual(httpIn.url, "/ask");
        const chain = [httpIn];
        while (chain[chain.length - 1].wires && chain[chain.length - 1].wires.length) {
            chain.push(byId.get(chain[chain.length - 1].wires[0][0]));
        }
        assert.deepStrictEqual(chain.map(function (node) { return node.type; }),
            ["http in", "change", "ai-chat", "http response"]);
        const chat = chain[2];
        const catchNode = nodes.find(function (node) { return node.type === "catch"; });
        assert.deepStrictEqual(catchNode.scope, [chat.id]);
    });

    it("ask about the flow they are on through msg.flowId from NR_FLOW_ID", function () {
        const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, "Explain a flow from a flow.json"), "utf8"));
        const rule = nodes.filter(function (node) { return node.type === "change"; })
            .flatMap(function (node) { return node.rules; })
            .find(function (r) { return r.p === "flowId"; });
        assert.deepStrictEqual([rule.to, rule.tot], ["NR_FLOW_ID", "env"]);
        const tabs = new Set(nodes.filter(function (node) { return node.z; }).map(function (node) { return node.z; }));
        assert.strictEqual(tabs.size, 1, "all nodes sit on one tab, the one the question is about");
    });

    it("use a real ai-chat node in the repository's \"Ask the assistant\" tab", function () {
        const flows = JSON.parse(fs.readFileSync(repositoryExamples, "utf8"));
        checkFlow("examples/flows.json", flows);
        const tab = flows.find(function (node) { return node.type === "tab" && node.label === "Ask the assistant"; });
        const onTab = flows.filter(function (node) { return node.z === tab.id; });
        assert.ok(onTab.some(function (node) { return node.type === "ai-chat"; }));
        assert.ok(!onTab.some(function (node) { return /placeholder/i.test(node.name || ""); }));
    });

    it("ship every endpoint anonymous callers could reach disabled, saying how to enable it and what it exposes",
        function () {
            const examples = [
                ["examples/flows.json", JSON.parse(fs.readFileSync(repositoryExamples, "utf8"))],
                ["Ask over HTTP.json", JSON.parse(fs.readFileSync(path.join(packageExamples, "Ask over HTTP.json"),
                    "utf8"))]
            ];
            for (const [name, nodes] of examples) {
                const endpoints = chatsBehindEndpoints(nodes);
                assert.ok(endpoints.length > 0, name);
                for (const { httpIn, chat } of endpoints) {
                    const tab = nodes.find(function (node) { return node.id === httpIn.z; });
                    const disabledBy = httpIn.d === true ? httpIn : tab && tab.disabled === true ? tab : null;
                    assert.ok(disabledBy, name + ": http in " + httpIn.id + " is deployed enabled");
                    const explanation = disabledBy.type === "tab" ? disabledBy.info : nodes.filter(function (node) {
                        return node.type === "comment" && node.z === httpIn.z;
                    }).map(function (node) { return node.info; }).join("\n");
                    for (const needed of [/disabled on purpose/i, /Enabled/, /Deploy/, /without a login/,
                        /adminAuth/, /httpNodeAuth/, /Tools and Memory off/, /another caller's words/]) {
                        assert.match(explanation, needed, name);
                    }
                    assert.strictEqual(chat.tools, false, name + ": tools of " + chat.id);
                    assert.strictEqual(chat.memory, false, name + ": memory of " + chat.id);
                }
            }
        });

    it("explain a function node's error in a catch path (catch → delay → ai-chat → debug) on a tab shipped disabled",
        function () {
            const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, "Explain an error.json"), "utf8"));
            const byId = new Map(nodes.map(function (node) { return [node.id, node]; }));
            const tab = nodes.find(function (node) { return node.type === "tab"; });
            assert.strictEqual(tab.disabled, true);
            for (const needed of [/disabled on purpose/, /Enabled/, /Deploy/, /msg\.error/, /never `msg\.payload`/,
                /redacted/, /Tools on/, /Memory is off/, /catch node .* → ai-chat → debug/]) {
                assert.match(tab.info, needed);
            }
            assert.ok(nodes.every(function (node) { return node.type === "tab" || node.z === tab.id; }));
            const catchNode = nodes.find(function (node) { return node.type === "catch"; });
            const chain = [catchNode];
            while (chain[chain.length - 1].wires && chain[chain.length - 1].wires.length) {
                chain.push(byId.get(chain[chain.length - 1].wires[0][0]));
            }
            assert.deepStrictEqual(chain.map(function (node) { return node.type; }),
                ["catch", "delay", "ai-chat", "debug"]);
            assert.deepStrictEqual([chain[1].pauseType, chain[1].drop], ["rate", true]);
            assert.deepStrictEqual([chain[2].tools, chain[2].memory], [true, false]);
            const watched = catchNode.scope.map(function (id) { return byId.get(id); });
            assert.deepStrictEqual(watched.map(function (node) { return node.type; }), ["function"]);
            assert.match(watched[0].func, /node\.error\(.*, msg\)/);
        });

    it("propose a flow change on a tab shipped disabled: ai-chat → approval output → debug, a canned decision back " +
        "in msg.resume", function () {
        const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, "Change a flow with approval.json"), "utf8"));
        const byId = new Map(nodes.map(function (node) { return [node.id, node]; }));
        const tab = nodes.find(function (node) { return node.type === "tab"; });
        assert.strictEqual(tab.disabled, true);
        for (const needed of [/disabled on purpose/, /Enabled/, /Deploy/, /Allow flow changes/, /msg\.approval/,
            /msg\.resume/, /revision checked/, /dashboard button/, /HTTP endpoint/]) {
            assert.match(tab.info, needed);
        }
        assert.ok(nodes.every(function (node) { return node.type === "tab" || node.z === tab.id; }));
        assert.deepStrictEqual(chatsBehindEndpoints(nodes), []);
        const chat = nodes.find(function (node) { return node.type === "ai-chat"; });
        assert.deepStrictEqual([chat.tools, chat.memory, chat.flows, chat.outputs], [true, false, true, 2]);
        const onApproval = chat.wires[1].map(function (id) { return byId.get(id).type; }).sort();
        assert.deepStrictEqual(onApproval, ["change", "debug"]);
        const decision = nodes.find(function (node) { return node.type === "inject" && node.payloadType === "json"; });
        assert.deepStrictEqual(JSON.parse(decision.payload), { type: "approve" });
        const sender = byId.get(decision.wires[0][0]);
        assert.match(sender.func, /msg\.resume = \{/);
        assert.deepStrictEqual(sender.wires, [[chat.id]]);
    });

    it("turn on only the grants an example needs: tools to explain the flow from an inject node, never memory",
        function () {
            const nodes = JSON.parse(fs.readFileSync(path.join(packageExamples, "Explain a flow from a flow.json"),
                "utf8"));
            assert.deepStrictEqual(chatsBehindEndpoints(nodes), []);
            const chat = nodes.find(function (node) { return node.type === "ai-chat"; });
            assert.deepStrictEqual([chat.tools, chat.memory], [true, false]);
        });
});
