"use strict";

const assert = require("assert");
const liveReading = require("../resources/chat/live-reading");

describe("live reading of a streamed answer", function () {
    it("reads whole sentences only, each once", function () {
        let step = liveReading.nextReading("The inject node fires. Then the deb", 0, false);
        assert.deepStrictEqual(step, { say: "The inject node fires.", upTo: 22 });
        step = liveReading.nextReading("The inject node fires. Then the debug node shows it.\nNext", step.upTo, false);
        assert.deepStrictEqual(step, { say: "Then the debug node shows it.", upTo: 53 });
    });

    it("reads nothing while a sentence is incomplete, and the rest at the end", function () {
        assert.deepStrictEqual(liveReading.nextReading("Version 4.1 is", 0, false), { say: "", upTo: 0 });
        assert.deepStrictEqual(liveReading.nextReading("Version 4.1 is new", 0, true),
            { say: "Version 4.1 is new", upTo: 18 });
    });

    it("ends sentences at CJK full stops without spaces", function () {
        assert.deepStrictEqual(liveReading.nextReading("这是注入节点。然后", 0, false), { say: "这是注入节点。", upTo: 7 });
    });

    it("does not end a sentence at the line break after a paragraph that is still streaming", function () {
        assert.deepStrictEqual(liveReading.nextReading("Sentence\n", 0, false), { say: "", upTo: 0 });
        assert.deepStrictEqual(liveReading.nextReading("First part\nSecond", 0, false),
            { say: "First part", upTo: 11 });
        assert.deepStrictEqual(liveReading.nextReading("It ends here.", 0, false), { say: "", upTo: 0 });
    });

    it("copes with text that got shorter (a re-render) by reading nothing twice", function () {
        assert.deepStrictEqual(liveReading.nextReading("Short.", 40, false), { say: "", upTo: 6 });
    });
});
