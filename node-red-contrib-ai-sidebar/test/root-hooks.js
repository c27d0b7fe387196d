/**
 * Mocha root hooks (https://mochajs.org/#root-hook-plugins), loaded by .mocharc.json: after the whole run, stop
 * every Node-RED a spec started and did not stop (a `before` hook that timed out while Node-RED was starting never
 * gets its Node-RED back); its child process would otherwise keep mocha running for ever.
 */
"use strict";

const { stopAll } = require("./nodered");

exports.mochaHooks = {
    afterAll: async function () {
        await stopAll();
    }
};
