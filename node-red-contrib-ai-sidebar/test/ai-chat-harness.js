"use strict";

/**
 * What the ai-chat node's specs share: the node module with its message catalog as Node-RED loads it, Node-RED's
 * test runtime (node-red-node-test-helper) started once per file, a fresh scripted stand-in for the service per test
 * (helpers.fakeService) that the node reaches through AI_SIDEBAR_SERVICE_URL, and the service's event framing.
 */

const path = require("path");
const helper = require("node-red-node-test-helper");
const { nodeRedMain } = require("./nodered");
// The i18n of the Node-RED under test (with NODE_RED_HOME another install than this package's devDependency).
const { i18n } = require(require.resolve("@node-red/util", { paths: [nodeRedMain()] }));
const aiChatModule = require("../nodes/ai-chat.js");
const helpers = require("./helpers");

helper.init(nodeRedMain());

const NAMESPACE = "node-red-contrib-ai-sidebar/ai-chat";

/**
 * The ai-chat module with its message catalog, as Node-RED loads it: the test helper's `RED._` returns the key
 * itself, so messages are translated here the way Node-RED's node API does (namespace of the node set).
 */
function aiChatNode(RED) {
    RED._ = function (key, values) {
        return i18n._(NAMESPACE + ":" + key, values);
    };
    return aiChatModule(RED);
}

/** One server-sent event as the service writes it. */
function frame(event) {
    return "data: " + JSON.stringify(event) + "\n\n";
}

/** A handler answering with an event stream: the given events, then `done` (with the fields of `done`). */
function streamAnswer(events, done) {
    return function (req, res) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.end(events.map(frame).join("") + frame(Object.assign({ type: "done" }, done)));
    };
}

/** Resolve with the next message the helper node `id` receives. */
function nextMessage(id) {
    return new Promise(function (resolve) {
        helper.getNode(id).once("input", resolve);
    });
}

/**
 * Register the mocha hooks of a describe block: the test runtime for the block, a scripted service per test, the
 * node's environment pointing at it with `token`. The returned object's `service` is the current test's.
 *
 * @param {string} token the service token the node sends (AI_SIDEBAR_TOKEN)
 * @returns {{service: ?object}}
 */
function runtimeAndService(token) {
    const stack = { service: null };
    before(async function () {
        await new Promise(function (resolve) {
            helper.startServer(resolve);
        });
        await i18n.registerMessageCatalog(NAMESPACE, path.join(__dirname, "..", "nodes", "locales"), "ai-chat.json");
    });
    after(function (done) {
        helper.stopServer(done);
    });
    beforeEach(async function () {
        stack.service = await helpers.fakeService();
        process.env.AI_SIDEBAR_SERVICE_URL = stack.service.url;
        process.env.AI_SIDEBAR_TOKEN = token;
    });
    afterEach(async function () {
        await helper.unload();
        await helpers.close(stack.service.server);
        delete process.env.AI_SIDEBAR_SERVICE_URL;
        delete process.env.AI_SIDEBAR_TOKEN;
    });
    return stack;
}

/** Fail when the helper node `id` receives anything. */
function never(id) {
    helper.getNode(id).on("input", function (msg) {
        throw new Error(id + " received " + JSON.stringify(msg));
    });
}

module.exports = {
    helper, i18n, NAMESPACE, aiChatNode, frame, streamAnswer, nextMessage, never, runtimeAndService
};
