"use strict";

const assert = require("assert");
const configReuse = require("../resources/chat/config-reuse");

// Registry entries as Node-RED 4.1 declares them (core network/10-mqtt.html, 05-tls.html), cut to the properties
// these tests use; `mqtt in` points at its broker through a `type` default like every config reference.
const REGISTRY = {
    "mqtt-broker": {
        category: "config",
        defaults: {
            name: { value: "" },
            broker: { value: "", required: true },
            port: { value: 1883 },
            tls: { type: "tls-config", required: false },
            clientid: { value: "" },
            usetls: { value: false },
            keepalive: { value: 60 },
            cleansession: { value: true },
            birthMsg: { value: {} }
        }
    },
    "tls-config": {
        category: "config",
        defaults: { name: { value: "" }, cert: { value: "" }, verifyservercert: { value: true } }
    },
    "exclusive-config": { category: "config", exclusive: true, defaults: { name: { value: "" } } },
    "mqtt in": {
        category: "network",
        defaults: { name: { value: "" }, topic: { value: "" }, broker: { type: "mqtt-broker", required: true } }
    },
    "debug": { category: "common", defaults: { name: { value: "" } } }
};

function definitionOf(type) {
    return REGISTRY[type] || null;
}

// The broker of the project's example flow, as the editor holds it after loading the flows (examples/flows.json).
const LOCAL_BROKER = {
    id: "8a500c5619c34daf", type: "mqtt-broker", name: "Local broker", broker: "localhost", port: "1883",
    clientid: "", usetls: false, keepalive: "60", cleansession: true, birthMsg: {}, users: [{ id: "ff5ea8f517c944b2" }],
    _def: REGISTRY["mqtt-broker"], changed: false, dirty: false, valid: true, info: "notes", x: 0, y: 0
};

/** An answer's flow: an `mqtt in` node reading through `broker` (a config node written as the model wrote it). */
function answerFlow(broker) {
    return [
        { id: "in1", type: "mqtt in", z: "tab1", name: "readings", topic: "sensors/#", broker: broker.id, x: 100,
            y: 80, wires: [["dbg1"]] },
        { id: "dbg1", type: "debug", z: "tab1", name: "", x: 300, y: 80, wires: [] },
        broker
    ];
}

function sameAsLocal(changes) {
    return Object.assign({ id: "brk1", type: "mqtt-broker", name: "Local broker", broker: "localhost", port: 1883 },
        changes || {});
}

function plan(nodes, existing, options) {
    return configReuse.planReuse(nodes, existing, definitionOf, options);
}

function apply(nodes, result, taken) {
    let next = 0;
    return configReuse.applyPlan(nodes, result, function (id) {
        return (taken || []).indexOf(id) !== -1;
    }, function () {
        next += 1;
        return "fresh" + next;
    }, definitionOf);
}

describe("config nodes of an imported flow", function () {
    describe("differences", function () {
        it("finds none between nodes that differ only in id, scope, position, notes and editor bookkeeping",
            function () {
                const imported = { id: "other", type: "mqtt-broker", z: "tab9", x: 10, y: 20, info: "",
                    name: "Local broker", broker: "localhost", port: "1883", keepalive: 60, birthMsg: {} };
                assert.deepStrictEqual(configReuse.differences(REGISTRY["mqtt-broker"], imported, LOCAL_BROKER), []);
            });

        it("counts a property the flow leaves out as its default, and a number as equal to its decimal text",
            function () {
                assert.deepStrictEqual(configReuse.differences(REGISTRY["mqtt-broker"], sameAsLocal(), LOCAL_BROKER),
                    []);
                assert.deepStrictEqual(configReuse.differences(REGISTRY["mqtt-broker"],
                    sameAsLocal({ port: "1884", keepalive: " ", cleansession: "true" }), LOCAL_BROKER),
                ["port", "keepalive", "cleansession"]);
            });

        it("names every behavioural property that differs, a disabled node and credentials of its own", function () {
            const imported = sameAsLocal({ name: "Greenhouse", broker: "broker.greenhouse.local", d: true,
                birthMsg: { retain: true }, credentials: { user: "grower", password: "" } });
            assert.deepStrictEqual(configReuse.differences(REGISTRY["mqtt-broker"], imported, LOCAL_BROKER),
                ["name", "broker", "birthMsg", "d", "credentials"]);
        });

        it("takes no reference, an empty one and null for the same", function () {
            ["", null, undefined].forEach(function (tls) {
                assert.deepStrictEqual(configReuse.differences(REGISTRY["mqtt-broker"], sameAsLocal({ tls: tls }),
                    LOCAL_BROKER), [], String(tls));
            });
        });
    });

    describe("planReuse and applyPlan", function () {
        it("leave out a broker that is the same as an existing one and point its users at that one", function () {
            const nodes = answerFlow(sameAsLocal());
            const result = plan(nodes, [LOCAL_BROKER], { scope: "tab1" });
            assert.deepStrictEqual(result.replacements, { brk1: LOCAL_BROKER.id });
            assert.deepStrictEqual(result.reused.map(function (r) { return [r.imported.id, r.existing.id]; }),
                [["brk1", LOCAL_BROKER.id]]);
            assert.deepStrictEqual(result.conflicts, []);
            const imported = apply(nodes, result, [LOCAL_BROKER.id]);
            assert.deepStrictEqual(imported.map(function (n) { return n.id; }), ["in1", "dbg1"]);
            assert.strictEqual(imported[0].broker, LOCAL_BROKER.id);
            assert.deepStrictEqual(imported[0].wires, [["dbg1"]]);
            assert.strictEqual(nodes[0].broker, "brk1", "the parsed flow is not changed");
        });

        it("re-use the broker of the first import when the same answer is imported again", function () {
            // What Node-RED added the first time: the answer's broker under a new id, with the defaults applied.
            const first = Object.assign({}, LOCAL_BROKER, sameAsLocal({ name: "Greenhouse", broker: "gh.local" }),
                { id: "c0ffee0000000001", port: 1883, keepalive: 60, clientid: "", usetls: false,
                    cleansession: true, birthMsg: {}, users: [] });
            const nodes = answerFlow(sameAsLocal({ name: "Greenhouse", broker: "gh.local" }));
            const result = plan(nodes, [LOCAL_BROKER, first], { scope: "tab1" });
            assert.deepStrictEqual(result.replacements, { brk1: first.id });
            assert.deepStrictEqual(result.conflicts, []);
            assert.strictEqual(apply(nodes, result)[0].broker, first.id);
        });

        it("prefer an existing node of the very id the flow names when several are the same", function () {
            const twin = Object.assign({}, LOCAL_BROKER, { id: "twin" });
            const nodes = answerFlow(sameAsLocal({ id: LOCAL_BROKER.id }));
            assert.deepStrictEqual(plan(nodes, [twin, LOCAL_BROKER], { scope: "tab1" }).replacements,
                { [LOCAL_BROKER.id]: LOCAL_BROKER.id });
        });

        it("ask about a broker that differs from every existing one, the closest first", function () {
            const far = Object.assign({}, LOCAL_BROKER, { id: "far", name: "Cloud", broker: "cloud.example",
                port: 8883, usetls: true });
            const nodes = answerFlow(sameAsLocal({ broker: "broker.greenhouse.local" }));
            const result = plan(nodes, [far, LOCAL_BROKER], { scope: "tab1" });
            assert.deepStrictEqual(result.replacements, {});
            assert.strictEqual(result.conflicts.length, 1);
            assert.strictEqual(result.conflicts[0].imported.id, "brk1");
            assert.deepStrictEqual(result.conflicts[0].candidates.map(function (c) {
                return [c.existing.id, c.differences];
            }), [[LOCAL_BROKER.id, ["broker"]], ["far", ["name", "broker", "port", "usetls"]]]);
        });

        it("follow the user's answer: use the chosen existing node, or add the imported one", function () {
            const nodes = answerFlow(sameAsLocal({ broker: "broker.greenhouse.local" }));
            const reuse = plan(nodes, [LOCAL_BROKER], { scope: "tab1", decisions: { brk1: LOCAL_BROKER.id } });
            assert.deepStrictEqual([reuse.replacements, reuse.conflicts], [{ brk1: LOCAL_BROKER.id }, []]);
            assert.strictEqual(apply(nodes, reuse)[0].broker, LOCAL_BROKER.id);
            const keep = plan(nodes, [LOCAL_BROKER], { scope: "tab1", decisions: { brk1: configReuse.KEEP } });
            assert.deepStrictEqual([keep.replacements, keep.conflicts], [{}, []]);
            assert.deepStrictEqual(apply(nodes, keep), nodes);
        });

        it("add a config node of a type the workspace does not have without asking", function () {
            const nodes = answerFlow(sameAsLocal());
            const result = plan(nodes, [], { scope: "tab1" });
            assert.deepStrictEqual([result.replacements, result.reused, result.conflicts], [{}, [], []]);
            assert.deepStrictEqual(apply(nodes, result), nodes);
        });

        it("consider config nodes of another tab out of reach, and ones of the target tab in reach", function () {
            const elsewhere = Object.assign({}, LOCAL_BROKER, { z: "tab2" });
            const nodes = answerFlow(sameAsLocal());
            assert.deepStrictEqual(plan(nodes, [elsewhere], { scope: "tab1" }).replacements, {});
            assert.deepStrictEqual(plan(nodes, [elsewhere], { scope: "tab1" }).conflicts, []);
            const here = Object.assign({}, LOCAL_BROKER, { z: "tab1" });
            assert.deepStrictEqual(plan(nodes, [here], { scope: "tab1" }).replacements, { brk1: LOCAL_BROKER.id });
            assert.deepStrictEqual(plan(nodes, [here], { scope: null }).replacements, {});
        });

        it("never share an exclusive config node", function () {
            const existing = { id: "ex1", type: "exclusive-config", name: "" };
            const nodes = [{ id: "ex2", type: "exclusive-config", name: "" }];
            assert.deepStrictEqual(plan(nodes, [existing], { scope: "tab1" }),
                { replacements: {}, reused: [], conflicts: [] });
        });

        it("match a broker whose TLS config was itself replaced, in any order", function () {
            const tls = { id: "tlsOld", type: "tls-config", name: "Greenhouse CA", cert: "/ca.pem" };
            const broker = Object.assign({}, LOCAL_BROKER, { id: "brkOld", tls: "tlsOld", usetls: true });
            const nodes = [
                { id: "in1", type: "mqtt in", z: "tab1", broker: "brk2", wires: [] },
                sameAsLocal({ id: "brk2", tls: "tls2", usetls: true }),
                { id: "tls2", type: "tls-config", name: "Greenhouse CA", cert: "/ca.pem" }
            ];
            const result = plan(nodes, [LOCAL_BROKER, broker, tls], { scope: "tab1" });
            assert.deepStrictEqual(result.replacements, { tls2: "tlsOld", brk2: "brkOld" });
            assert.deepStrictEqual(apply(nodes, result), [{ id: "in1", type: "mqtt in", z: "tab1", broker: "brkOld",
                wires: [] }]);
        });

        it("give a config node that is added a new id when its id is taken, and point its users at it", function () {
            // The model copied the workspace's broker id but changed the broker: Node-RED alone would silently keep
            // the existing node of that id and drop the answer's settings.
            const nodes = answerFlow(sameAsLocal({ id: LOCAL_BROKER.id, broker: "broker.greenhouse.local" }));
            const result = plan(nodes, [LOCAL_BROKER], { scope: "tab1", decisions: { [LOCAL_BROKER.id]: null } });
            const imported = apply(nodes, result, [LOCAL_BROKER.id, "fresh1"]);
            assert.deepStrictEqual(imported.map(function (n) { return n.id; }), ["in1", "dbg1", "fresh2"]);
            assert.strictEqual(imported[0].broker, "fresh2");
            assert.strictEqual(imported[2].broker, "broker.greenhouse.local");
        });

        it("repoint a subflow instance's config env variable and array references", function () {
            const nodes = [
                { id: "sf1", type: "subflow:abc", z: "tab1", env: [
                    { name: "BROKER", type: "conf-type", value: "brk1" },
                    { name: "TEXT", type: "str", value: "brk1" }
                ], wires: [] },
                { id: "multi", type: "debug", z: "tab1", brokers: ["brk1", "other"], wires: [] },
                sameAsLocal()
            ];
            const imported = apply(nodes, plan(nodes, [LOCAL_BROKER], { scope: "tab1" }));
            assert.deepStrictEqual(imported[0].env, [
                { name: "BROKER", type: "conf-type", value: LOCAL_BROKER.id },
                { name: "TEXT", type: "str", value: "brk1" }
            ]);
            assert.deepStrictEqual(imported[1].brokers, [LOCAL_BROKER.id, "other"]);
        });
    });
});
