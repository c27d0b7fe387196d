"use strict";

const assert = require("assert");
const usage = require("../resources/chat/usage");

describe("tokens and cost in the sidebar", function () {
    it("formats an answer's usage with grouped counts and the cost in US dollars", function () {
        assert.deepStrictEqual(usage.usageParts({ inputTokens: 12345, outputTokens: 678, cost: 0.0012345 }, "en-US"),
            { input: "12,345", output: "678", cost: "$0.00123", priced: true });
        assert.deepStrictEqual(usage.usageParts({ inputTokens: 1200, outputTokens: 3, cost: 2.5 }, "de"),
            { input: "1.200", output: "3", cost: "2,50\u00a0$", priced: true });
        assert.strictEqual(usage.formatCost(0, "en-US"), "$0.00");
    });

    it("shows a dash for a model without a price, never a guess", function () {
        assert.deepStrictEqual(usage.usageParts({ inputTokens: 10, outputTokens: 2, cost: null }, "en-US"),
            { input: "10", output: "2", cost: "\u2014", priced: false });
    });

    it("shows nothing when the service reported no usage", function () {
        assert.strictEqual(usage.usageParts(undefined), null);
        assert.strictEqual(usage.usageParts(null), null);
        assert.strictEqual(usage.usageParts({ cost: 0.1 }), null);
        assert.strictEqual(usage.usageParts({ inputTokens: "10", outputTokens: 2, cost: null }), null);
    });

    it("takes the open conversation's row from the totals by session, none without turns", function () {
        const body = { by: "session", scope: "own", total: { turns: 3 }, totals: [
            { sessionId: "other", user: { kind: "user", name: "alice" }, turns: 1, inputTokens: 5, outputTokens: 1,
                cost: null, unpricedTurns: 1 },
            { sessionId: "s-1", user: { kind: "user", name: "alice" }, turns: 2, inputTokens: 900, outputTokens: 40,
                cost: 0.01, unpricedTurns: 0 }
        ] };
        assert.strictEqual(usage.sessionTotals(body, "s-1").inputTokens, 900);
        assert.strictEqual(usage.sessionTotals(body, "missing"), null);
        assert.strictEqual(usage.sessionTotals({ totals: [{ sessionId: "s-2", turns: 0 }] }, "s-2"), null);
        assert.strictEqual(usage.sessionTotals({}, "s-1"), null);
        assert.strictEqual(usage.sessionQuery("a b/c"), "ai-sidebar/usage?by=session&sessionId=a%20b%2Fc");
    });
});
