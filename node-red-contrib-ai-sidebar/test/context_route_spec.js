"use strict";

/**
 * `POST /ai-sidebar/context` (issue 36, the set_context write tool) inside a real Node-RED with adminAuth and two
 * context stores: a value set is what Node-RED's own `GET /context/...` reads back; a read-only user and an
 * anonymous caller get 401; a bad key, value, tab or store is refused naming the field, and nothing is set.
 */

const assert = require("assert");
const helpers = require("./helpers");
const { startNodeRed, START_TIMEOUT } = require("./nodered");

const FLOWS = [
    { id: "t1", type: "tab", label: "Sensors" },
    { id: "t2", type: "tab", label: "Parked", disabled: true },
    { id: "i1", type: "inject", z: "t1", name: "tick", repeat: "", once: false, x: 100, y: 80, wires: [] }
];

describe("context route", function () {
    this.timeout(20000);
    let nodeRed;
    let service;

    before(async function () {
        this.timeout(START_TIMEOUT + 30000);
        service = await helpers.fakeService();
        // bcrypt hash of "password123", cost 8.
        const hash = "$2b$08$csiBv0OuTq/UfZKBKMGbZuSpnadzvqMh939k1ErqcB41dXLq/cl3q";
        nodeRed = await startNodeRed({
            flows: FLOWS,
            settings: {
                adminAuth: { type: "credentials", users: [
                    { username: "admin", password: hash, permissions: "*" },
                    { username: "viewer", password: hash, permissions: "read" }] },
                contextStorage: { default: { module: "memory" }, file: { module: "memory" } }
            },
            env: { AI_SIDEBAR_SERVICE_URL: service.url, AI_SIDEBAR_TOKEN: "" }
        });
    });

    after(async function () {
        if (nodeRed) {
            await nodeRed.stop();
        }
        await helpers.close(service.server);
    });

    function token(username, scope) {
        return helpers.adminToken(nodeRed.url, username, scope);
    }

    function call(method, route, body, accessToken) {
        return helpers.jsonRequest(nodeRed.url + route, method, body, accessToken);
    }

    /** The value Node-RED's own Admin API reads at a context key (its `msg` is the value as JSON text). */
    async function read(route, accessToken) {
        const answer = await call("GET", route, undefined, accessToken);
        assert.strictEqual(answer.status, 200, JSON.stringify(answer.body));
        return answer.body;
    }

    it("sets a flow value and a global value in a chosen store, read back through /context", async function () {
        const admin = await token("admin", "*");
        const value = { limit: 30, rooms: ["kitchen", "hall"], on: true };
        let answer = await call("POST", "ai-sidebar/context",
            { scope: "flow", flow: "t1", key: "settings", value: value }, admin);
        assert.deepStrictEqual([answer.status, answer.body],
            [200, { scope: "flow", flow: "t1", store: "default", key: "settings" }]);
        const flowValue = await read("context/flow/t1/settings?store=default", admin);
        assert.deepStrictEqual(JSON.parse(flowValue.msg), value);
        // The whole store's answer is keyed by the store's name (the shape the checks below rely on).
        assert.ok((await read("context/flow/t1?store=default", admin)).default.settings);

        answer = await call("POST", "ai-sidebar/context",
            { scope: "global", key: "threshold", store: "file", value: 21.5 }, admin);
        assert.deepStrictEqual([answer.status, answer.body],
            [200, { scope: "global", store: "file", key: "threshold" }]);
        assert.strictEqual((await read("context/global/threshold?store=file", admin)).msg, "21.5");
        // The other store was not written.
        const defaultStore = await read("context/global?store=default", admin);
        assert.strictEqual((defaultStore.default || {}).threshold, undefined);

        // A property path sets inside the value, as flow.set does.
        answer = await call("POST", "ai-sidebar/context",
            { scope: "flow", flow: "t1", key: "settings.limit", value: 45 }, admin);
        assert.strictEqual(answer.status, 200);
        assert.deepStrictEqual(JSON.parse((await read("context/flow/t1/settings?store=default", admin)).msg),
            Object.assign({}, value, { limit: 45 }));
    });

    it("refuses a read-only user and an anonymous caller with 401", async function () {
        const viewer = await token("viewer", "read");
        const body = { scope: "global", key: "sneaky", value: 1 };
        assert.strictEqual((await call("POST", "ai-sidebar/context", body, viewer)).status, 401);
        assert.strictEqual((await call("POST", "ai-sidebar/context", body)).status, 401);
        const admin = await token("admin", "*");
        assert.deepStrictEqual((await read("context/global?store=default", admin)).default || {}, {});
    });

    it("refuses a bad key, value, scope, tab or store naming the field, and sets nothing", async function () {
        const admin = await token("admin", "*");
        const cases = [
            [{ scope: "flow", flow: "t1", key: "$parent.x", value: 1 }, "key"],
            [{ scope: "flow", flow: "t1", key: "#:(file)::x", value: 1 }, "key"],
            [{ scope: "flow", flow: "t1", key: "", value: 1 }, "key"],
            [{ scope: "flow", flow: "t1", key: "x" }, "value"],
            [{ scope: "node", flow: "t1", key: "x", value: 1 }, "scope"],
            [{ scope: "flow", key: "x", value: 1 }, "flow"],
            [{ scope: "flow", flow: "nope", key: "x", value: 1 }, "flow"],
            [{ scope: "flow", flow: "i1", key: "x", value: 1 }, "flow"],
            [{ scope: "flow", flow: "t2", key: "x", value: 1 }, "flow"],
            [{ scope: "global", flow: "t1", key: "x", value: 1 }, "flow"],
            [{ scope: "global", key: "x", store: "redis", value: 1 }, "store"]
        ];
        for (const [body, field] of cases) {
            const answer = await call("POST", "ai-sidebar/context", body, admin);
            assert.strictEqual(answer.status, 400, JSON.stringify(body));
            assert.strictEqual(answer.body.error.code, "invalid_request");
            assert.ok(answer.body.error.message.indexOf("field " + field + " ") !== -1,
                JSON.stringify(body) + ": " + answer.body.error.message);
        }
        const flow = await read("context/flow/t1?store=default", admin);
        assert.strictEqual((flow.default || {}).x, undefined);
        const global = await read("context/global?store=default", admin);
        assert.strictEqual((global.default || {}).x, undefined);
    });
});
