"use strict";

const assert = require("assert");
const conversation = require("../resources/chat/conversation");

/** A Web Storage of the test's own, as localStorage behaves. */
function memoryStorage() {
    const items = new Map();
    return {
        items: items,
        getItem: function (key) { return items.has(key) ? items.get(key) : null; },
        setItem: function (key, value) { items.set(key, String(value)); },
        removeItem: function (key) { items.delete(key); }
    };
}

function counting() {
    let next = 0;
    return function (bytes) {
        for (let i = 0; i < bytes.length; i += 1) {
            bytes[i] = (next + i) % 256;
        }
        next += 1;
        return bytes;
    };
}

function open(storage, username, fillRandom) {
    return new conversation.Conversation({ storage: conversation.safeStorage(function () { return storage; }),
        username: username, fillRandom: fillRandom || counting() });
}

describe("the sidebar's open conversation", function () {
    it("starts a new unsaved session with a 32 hex digit id when nothing is remembered", function () {
        const storage = memoryStorage();
        const chat = open(storage, undefined);
        assert.strictEqual(chat.sessionId, "000102030405060708090a0b0c0d0e0f");
        assert.strictEqual(chat.isUnsaved(), true);
        assert.strictEqual(storage.items.get("node-red-contrib-ai-sidebar.sessionId"), chat.sessionId);
        assert.strictEqual(storage.items.get("node-red-contrib-ai-sidebar.newSessionId"), chat.sessionId);
    });

    it("reopens the remembered session of the same user after a reload, and keeps users apart", function () {
        const storage = memoryStorage();
        const alice = open(storage, "alice");
        alice.markSaved();
        const bob = open(storage, "bob", function (bytes) { return bytes.fill(255); });
        const again = open(storage, "alice");
        assert.strictEqual(again.sessionId, alice.sessionId);
        assert.strictEqual(again.isUnsaved(), false);
        assert.strictEqual(bob.sessionId, "f".repeat(32));
        assert.strictEqual(storage.items.get("node-red-contrib-ai-sidebar.sessionId:bob"), bob.sessionId);
    });

    it("opening a listed session marks it saved; a new chat is unsaved again", function () {
        const storage = memoryStorage();
        const chat = open(storage, "alice");
        const first = chat.sessionId;
        chat.open("saved-session");
        assert.strictEqual(chat.isUnsaved(), false);
        assert.strictEqual(storage.items.get("node-red-contrib-ai-sidebar.sessionId:alice"), "saved-session");
        chat.start();
        assert.notStrictEqual(chat.sessionId, first);
        assert.strictEqual(chat.isUnsaved(), true);
    });

    it("lasts until the page is reloaded when the browser refuses storage", function () {
        const refusing = {
            getItem: function () { throw new Error("SecurityError"); },
            setItem: function () { throw new Error("QuotaExceededError"); },
            removeItem: function () { throw new Error("SecurityError"); }
        };
        const chat = open(refusing, "alice");
        assert.match(chat.sessionId, /^[0-9a-f]{32}$/);
        chat.markSaved();
        chat.open("other");
        assert.strictEqual(chat.sessionId, "other");
        const noStorage = conversation.safeStorage(function () { throw new Error("no localStorage"); });
        assert.strictEqual(noStorage.get("k"), null);
        noStorage.set("k", "v");
    });

    it("reads the session list again after growing delays, then gives up", function () {
        assert.deepStrictEqual([0, 1, 2, 3, 4].map(conversation.refreshDelay), [300, 700, 1500, 3000, undefined]);
    });
});

describe("the unsent question of each conversation", function () {
    function memoryStorage() {
        const values = {};
        return { values: values, get: function (key) { return key in values ? values[key] : null; },
            set: function (key, value) { if (value === null) { delete values[key]; } else { values[key] = value; } } };
    }

    it("is kept per user and conversation, and forgotten once empty", function () {
        const storage = memoryStorage();
        conversation.saveDraft(storage, "s1", "alice", "half a question");
        conversation.saveDraft(storage, "s2", "alice", "another");
        conversation.saveDraft(storage, "s1", "bob", "bob's");
        assert.strictEqual(conversation.loadDraft(storage, "s1", "alice"), "half a question");
        assert.strictEqual(conversation.loadDraft(storage, "s2", "alice"), "another");
        assert.strictEqual(conversation.loadDraft(storage, "s1", "bob"), "bob's");
        assert.strictEqual(conversation.loadDraft(storage, "s3", "alice"), "");
        assert.ok("node-red-contrib-ai-sidebar.draft:alice:s1" in storage.values);
        conversation.saveDraft(storage, "s1", "alice", "  \n");
        assert.strictEqual(conversation.loadDraft(storage, "s1", "alice"), "");
        assert.strictEqual("node-red-contrib-ai-sidebar.draft:alice:s1" in storage.values, false);
    });

    it("is not kept when longer than 20,000 characters", function () {
        const storage = memoryStorage();
        conversation.saveDraft(storage, "s1", undefined, "x".repeat(20001));
        assert.strictEqual(conversation.loadDraft(storage, "s1"), "");
    });
});
