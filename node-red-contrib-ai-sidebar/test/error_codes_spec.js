"use strict";

const assert = require("assert");
const errorCodes = require("../resources/shared/error-codes");

describe("stored error codes", function () {
    it("groups the service's codes by what the user can do", function () {
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["llm_error"]), ["model"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["invalid_api_key"]), ["setup"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["rate_limited", "too_many_requests"]), ["busy"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["agent_timeout"]), ["limit"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["nodered_unreachable"]), ["nodered"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["service_disconnected"]), ["connection"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["message_too_long"]), ["request"]);
    });

    it("keeps the order, drops repeats and calls unknown codes other", function () {
        assert.deepStrictEqual(errorCodes.storedErrorKeys(["tool_failed", "llm_timeout", "llm_error", "x"]),
            ["other", "model"]);
        assert.deepStrictEqual(errorCodes.storedErrorKeys(undefined), []);
    });

    it("lists every code in one group only", function () {
        const all = [].concat.apply([], Object.values(errorCodes.GROUPS));
        assert.strictEqual(new Set(all).size, all.length);
    });
});
