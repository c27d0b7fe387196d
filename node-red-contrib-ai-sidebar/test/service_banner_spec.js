"use strict";

const assert = require("assert");
const serviceBanner = require("../resources/service-status/service-banner");

function t(key, options) {
    return options ? key + JSON.stringify(options) : key;
}

describe("the service banner's help", function () {
    it("labels each command the route offers, with how to build the container image", function () {
        const view = serviceBanner.describe({ reachable: false, serviceUrl: "http://127.0.0.1:8766", supervisor: null,
            commands: [
                { id: "run", command: "AI_SIDEBAR_PORT=8766 ai-sidebar-service" },
                { id: "docker", command: "docker run --rm -p 127.0.0.1:8766:8765 -e OPENAI_API_KEY node-red-ai-sidebar" },
                { id: "future", command: "something newer" },
                { id: "supervise" }
            ] }, t);
        assert.deepStrictEqual(view, { supervisor: null, commands: [
            { id: "run", label: "service.command.run", command: "AI_SIDEBAR_PORT=8766 ai-sidebar-service" },
            { id: "docker", label: "service.command.docker", note: "service.dockerBuild",
                command: "docker run --rm -p 127.0.0.1:8766:8765 -e OPENAI_API_KEY node-red-ai-sidebar" }
        ] });
    });

    it("shows the supervised service's state with its exit code and last lines", function () {
        const view = serviceBanner.describe({ supervisor: { state: "failed", pid: null, exitCode: 1,
            command: "python3 -m service", lastLines: ["Traceback", "ModuleNotFoundError: No module named 'aiohttp'"] },
        commands: [] }, t);
        assert.deepStrictEqual(view.supervisor, { text: "service.supervisor.failed{\"pid\":\"\",\"code\":\"1\",\"by\":\"\"}",
            lines: ["Traceback", "ModuleNotFoundError: No module named 'aiohttp'"] });
        assert.strictEqual(serviceBanner.describe({ supervisor: { state: "running", pid: 4242 } }, t).supervisor.text,
            "service.supervisor.running{\"pid\":\"4242\",\"code\":\"\",\"by\":\"\"}");
    });

    it("names what restarts the service outside Node-RED, offers no command, and expects it back", function () {
        const status = { supervisor: { state: "external", by: "make run", pid: null, exitCode: null, lastLines: [] },
            commands: [] };
        assert.deepStrictEqual(serviceBanner.describe(status, t), { supervisor: {
            text: "service.supervisor.external{\"pid\":\"\",\"code\":\"\",\"by\":\"make run\"}", lines: [] },
        commands: [] });
        assert.strictEqual(serviceBanner.restartExpected(status), true);
        assert.strictEqual(serviceBanner.restartExpected({ supervisor: { state: "running" } }), true);
        assert.strictEqual(serviceBanner.restartExpected({ supervisor: { state: "failed" } }), false);
        assert.strictEqual(serviceBanner.restartExpected({ supervisor: null, commands: [] }), false);
        assert.strictEqual(serviceBanner.restartExpected(null), false);
    });

    it("shows nothing more than the error when the route could not be read", function () {
        [undefined, null, "error", { commands: "x", supervisor: { state: "odd" } }].forEach(function (status) {
            assert.deepStrictEqual(serviceBanner.describe(status, t), { supervisor: null, commands: [] });
        });
    });
});
