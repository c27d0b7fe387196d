"use strict";

const assert = require("assert");
const chatRequest = require("../resources/chat/chat-request");

function question(overrides) {
    return Object.assign({
        message: "why does it fail?",
        sessionId: "s1",
        language: "de",
        scenario: "",
        configId: "",
        contextRemoved: false,
        flow: { id: "tab1", label: "Main", subflow: false },
        nodes: [{ id: "n1", type: "function", name: "" }],
        exportTab: function () { return { nodes: [{ id: "n1", type: "function", z: "tab1" }] }; }
    }, overrides);
}

describe("a question's request", function () {
    it("sends the open tab as the editor has it, asks for approved changes to come back to the editor, the selection, the scenario and the AI configuration", function () {
        const request = chatRequest.build(question({ scenario: "debug", configId: "cfg1" }));
        assert.deepStrictEqual(request, { body: {
            message: "why does it fail?", sessionId: "s1", language: "de", apply: "editor", scenario: "debug",
            configId: "cfg1",
            selectedFlow: { id: "tab1", label: "Main" },
            selectedNodes: [{ id: "n1", type: "function", name: "" }],
            flowData: [{ id: "n1", type: "function", z: "tab1" }]
        } });
    });

    it("sends no editor context once the user removed the chip", function () {
        let exported = false;
        const request = chatRequest.build(question({ contextRemoved: true,
            exportTab: function () { exported = true; return { nodes: [] }; } }));
        assert.deepStrictEqual(request.body, { message: "why does it fail?", sessionId: "s1", language: "de",
            apply: "editor", selectedFlow: null, selectedNodes: [] });
        assert.strictEqual(exported, false);
    });

    it("sends attached Debug messages, also with the flow context removed", function () {
        const debug = [{ nodeId: "n1", name: "", topic: "", property: "payload", format: "number", msg: "42" }];
        assert.deepStrictEqual(chatRequest.build(question({ debugMessages: debug })).body.debugMessages, debug);
        assert.deepStrictEqual(chatRequest.build(question({ debugMessages: debug, contextRemoved: true })).body,
            { message: "why does it fail?", sessionId: "s1", language: "de", apply: "editor", selectedFlow: null,
                selectedNodes: [], debugMessages: debug });
        assert.strictEqual("debugMessages" in chatRequest.build(question({ debugMessages: [] })).body, false);
    });

    it("sends the tabs and subflows locked in the editor, also with the flow context removed", function () {
        const locked = function () { return ["tab2", "sf1"]; };
        assert.deepStrictEqual(chatRequest.build(question({ lockedFlows: locked })).body.lockedFlows, ["tab2", "sf1"]);
        assert.deepStrictEqual(chatRequest.build(question({ lockedFlows: locked, contextRemoved: true })).body
            .lockedFlows, ["tab2", "sf1"]);
    });

    it("says how large a tab too large to send is, and sends the question without it", function () {
        const request = chatRequest.build(question({ exportTab: function () { return { bytes: 6291456 }; } }));
        assert.strictEqual(request.flowDataBytes, 6291456);
        assert.strictEqual("flowData" in request.body, false);
        assert.deepStrictEqual(request.body.selectedFlow, { id: "tab1", label: "Main" });
    });

    it("still asks when the export fails, and says why in the console", function () {
        const warned = [];
        const request = chatRequest.build(question({
            exportTab: function () { throw new Error("broken node"); },
            warn: function (text, err) { warned.push(err.message); }
        }));
        assert.strictEqual("flowData" in request.body, false);
        assert.deepStrictEqual(warned, ["broken node"]);
    });

    it("sends no flow while none is open", function () {
        const request = chatRequest.build(question({ flow: null, nodes: [] }));
        assert.strictEqual(request.body.selectedFlow, null);
        assert.strictEqual("flowData" in request.body, false);
    });
});

describe("the question's length counter", function () {
    it("stays hidden below 9,000 characters and counts characters, not UTF-16 units, from there", function () {
        assert.strictEqual(chatRequest.counter("short"), null);
        assert.strictEqual(chatRequest.counter("x".repeat(8999)), null);
        assert.deepStrictEqual(chatRequest.counter("x".repeat(9500)), { count: 9500, max: 10000, over: false });
        // 4,600 emoji are 9,200 UTF-16 units but 4,600 characters, as the service counts them.
        assert.strictEqual(chatRequest.counter("\u{1F600}".repeat(4600)), null);
        assert.deepStrictEqual(chatRequest.counter("  " + "y".repeat(10064) + "\n"), { count: 10064, max: 10000,
            over: true });
    });

    it("counts against the limit the service states, from 90 % of it on", function () {
        assert.strictEqual(chatRequest.counter("x".repeat(1799), 2000), null);
        assert.deepStrictEqual(chatRequest.counter("x".repeat(1800), 2000), { count: 1800, max: 2000, over: false });
        assert.deepStrictEqual(chatRequest.counter("x".repeat(2001), 2000), { count: 2001, max: 2000, over: true });
    });

    it("takes the limit from the service's scenarios answer, and 10,000 while the service is down", function () {
        assert.strictEqual(chatRequest.messageLimit({ scenarios: {}, maxMessageChars: 2500 }), 2500);
        assert.strictEqual(chatRequest.messageLimit(null), 10000);
        // An older service without the field, or a value that is no limit.
        assert.strictEqual(chatRequest.messageLimit({ scenarios: {} }), 10000);
        assert.strictEqual(chatRequest.messageLimit({ maxMessageChars: "5000" }), 10000);
        assert.strictEqual(chatRequest.messageLimit({ maxMessageChars: 0 }), 10000);
    });
});

describe("what follows an answer", function () {
    it("puts a refused question back in the empty input and does not wait for its session", function () {
        assert.deepStrictEqual(chatRequest.afterAnswer({ failed: true, received: false, stopped: false,
            fromInput: true, inputEmpty: true }),
        { restoreInput: true, retry: true, markSaved: false, expectSaved: false, setup: false });
        assert.strictEqual(chatRequest.afterAnswer({ failed: true, received: false, stopped: false,
            fromInput: true, inputEmpty: false }).restoreInput, false);
        // An action's question (explain selection) comes back too, to be changed and sent again.
        assert.strictEqual(chatRequest.afterAnswer({ failed: true, received: false, stopped: false,
            fromInput: false, inputEmpty: true }).restoreInput, true);
    });

    it("marks the session saved once some of the answer came, and waits for the list to name it", function () {
        assert.deepStrictEqual(chatRequest.afterAnswer({ failed: false, received: true, stopped: false,
            fromInput: true, inputEmpty: true }),
        { restoreInput: false, retry: false, markSaved: true, expectSaved: true, setup: false });
        // Failed or cut off after some text: Retry is offered.
        assert.deepStrictEqual(chatRequest.afterAnswer({ failed: true, received: true, stopped: false,
            fromInput: true, inputEmpty: true }),
        { restoreInput: false, retry: true, markSaved: true, expectSaved: true, setup: false });
    });

    it("waits for a stopped answer's session to be saved even when nothing of it came", function () {
        assert.deepStrictEqual(chatRequest.afterAnswer({ failed: false, received: false, stopped: true,
            fromInput: true, inputEmpty: true }),
        { restoreInput: false, retry: true, markSaved: false, expectSaved: true, setup: false });
    });
});

describe("a question sent again (Retry, switch to Agent)", function () {
    it("sends the mode chosen with the question", function () {
        assert.strictEqual(chatRequest.build(question({ mode: "ask" })).body.mode, "ask");
        assert.strictEqual("mode" in chatRequest.build(question({})).body, false);
    });

    it("keeps the question and its context but takes the AI configuration and mode chosen now", function () {
        const first = chatRequest.build(question({ configId: "old", mode: "ask" }));
        first.contextView = { text: "Main" };
        const again = chatRequest.again(first, { configId: "new", mode: "agent" });
        assert.strictEqual(again.body.configId, "new");
        assert.strictEqual(again.body.mode, "agent");
        assert.strictEqual(again.body.message, "why does it fail?");
        assert.deepStrictEqual(again.body.flowData, first.body.flowData);
        assert.strictEqual(again.contextView, first.contextView);
        // The first request is left as it went out.
        assert.strictEqual(first.body.configId, "old");
        assert.strictEqual(first.body.mode, "ask");
    });

    it("goes back to the service default when no configuration is chosen now", function () {
        const first = chatRequest.build(question({ configId: "old" }));
        assert.strictEqual("configId" in chatRequest.again(first, { configId: "" }).body, false);
    });
});

describe("after an answer that met a provider fault", function () {
    const ended = { failed: true, received: false, stopped: false, fromInput: true, inputEmpty: true };

    it("offers the setup card when the model is not set up or refused the key", function () {
        assert.strictEqual(chatRequest.afterAnswer(Object.assign({ errorCodes: ["provider_not_configured"] }, ended))
            .setup, true);
        assert.strictEqual(chatRequest.afterAnswer(Object.assign({ errorCodes: ["invalid_api_key"] }, ended)).setup,
            true);
    });

    it("does not for other faults", function () {
        assert.strictEqual(chatRequest.afterAnswer(Object.assign({ errorCodes: ["rate_limited"] }, ended)).setup,
            false);
        assert.strictEqual(chatRequest.afterAnswer(ended).setup, false);
    });
});

describe("Up and Down in the question input (issue 31)", function () {
    it("Up in an empty input recalls the last question, Down while it is unchanged empties the input", function () {
        assert.strictEqual(chatRequest.recall("ArrowUp", "", "why does it fail?", null), "why does it fail?");
        assert.strictEqual(chatRequest.recall("ArrowDown", "why does it fail?", "why does it fail?",
            "why does it fail?"), "");
    });

    it("leaves the keys to the textarea in a typed or edited text, and without a question to recall", function () {
        assert.strictEqual(chatRequest.recall("ArrowUp", "draft", "why does it fail?", null), null);
        assert.strictEqual(chatRequest.recall("ArrowUp", "", "", null), null);
        assert.strictEqual(chatRequest.recall("ArrowDown", "why does it fail? now", "why does it fail?",
            "why does it fail?"), null);
        // Down without an Up before it: the text may be the same, but it was typed.
        assert.strictEqual(chatRequest.recall("ArrowDown", "why does it fail?", "why does it fail?", null), null);
        assert.strictEqual(chatRequest.recall("Enter", "", "why does it fail?", null), null);
    });
});

describe("the tries a Retry replaced", function () {
    it("are a failed or stopped question and its answer followed by the same question; a Regenerate keeps both", function () {
        const history = [
            { role: "user", content: "How many outputs?", metadata: { errors: ["llm_error"] } },
            { role: "user", content: "How many outputs?", metadata: {} },
            { role: "assistant", content: "Two.", metadata: {} },
            { role: "user", content: "Explain it", metadata: {} },
            { role: "assistant", content: "It is cut", metadata: { stopped: true } },
            { role: "user", content: "Explain it", metadata: {} },
            { role: "assistant", content: "It splits.", metadata: {} },
            { role: "user", content: "Explain it", metadata: {} },
            { role: "assistant", content: "It splits messages.", metadata: {} }
        ];
        assert.deepStrictEqual(Array.from(chatRequest.replacedTries(history)), [0, 3, 4]);
    });
});
