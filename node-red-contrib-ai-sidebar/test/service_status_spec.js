"use strict";

const assert = require("assert");
const status = require("../plugins/lib/service-status");

const WHEEL = "/home/nr/.node-red/node_modules/node-red-contrib-ai-sidebar/python/" +
    "node_red_ai_sidebar-0.1.0-py3-none-any.whl";

describe("the service status behind the banner", function () {
    it("offers the bundled wheel, the service on its default port, the container and the opt-in setting", function () {
        const answer = status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", supervisor: null,
            wheel: WHEEL });
        assert.deepStrictEqual(answer, {
            reachable: false,
            serviceUrl: "http://127.0.0.1:8765",
            supervisor: null,
            commands: [
                { id: "pip", command: "python3 -m pip install \"" + WHEEL + "\"" },
                { id: "run", command: "ai-sidebar-service" },
                { id: "docker", command: "docker run --rm -p 127.0.0.1:8765:8765 -e AI_SIDEBAR_TOKEN -e OPENAI_API_KEY " +
                    "-e NODE_RED_URL=http://host.docker.internal:1880 --add-host=host.docker.internal:host-gateway " +
                    "node-red-ai-sidebar" },
                { id: "supervise", command: "aiSidebar: { startService: true }" }
            ]
        });
    });

    it("installs the wheel into a virtual environment in the user dir and supervises that Python", function () {
        const venv = "/home/nr/.node-red/ai-sidebar/venv";
        const commands = status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", supervisor: null,
            wheel: WHEEL, venv: venv, nodeRedPort: 1990 }).commands;
        assert.deepStrictEqual(commands.map(function (c) { return c.command; }), [
            "python3 -m venv \"" + venv + "\" && \"" + venv + "/bin/pip\" install \"" + WHEEL + "\"",
            "\"" + venv + "/bin/ai-sidebar-service\"",
            "docker run --rm -p 127.0.0.1:8765:8765 -e AI_SIDEBAR_TOKEN -e OPENAI_API_KEY " +
                "-e NODE_RED_URL=http://host.docker.internal:1990 --add-host=host.docker.internal:host-gateway " +
                "node-red-ai-sidebar",
            "aiSidebar: { startService: true, python: \"" + venv + "/bin/python\" }"
        ]);
    });

    it("starts the service on the port of the service URL when it is not the default", function () {
        const commands = status.serviceStatus({ reachable: false, serviceUrl: "http://localhost:8766/", supervisor: null,
            wheel: null }).commands;
        assert.deepStrictEqual(commands.map(function (c) { return c.id; }), ["run", "docker", "supervise"]);
        assert.strictEqual(commands[0].command, "AI_SIDEBAR_PORT=8766 ai-sidebar-service");
        assert.match(commands[1].command, /^docker run --rm -p 127\.0\.0\.1:8766:8765 -e AI_SIDEBAR_TOKEN /);
    });

    it("takes the scheme's port for a URL without one", function () {
        assert.strictEqual(status.servicePort("https://proxy.example/ai"), "443");
        assert.strictEqual(status.servicePort("http://proxy.example"), "80");
        assert.strictEqual(status.servicePort("not a url"), "8765");
    });

    it("never shows the user name or password of the service URL", function () {
        const answer = status.serviceStatus({ reachable: false, serviceUrl: "http://svc:s3cret-pass@10.0.0.5:9000/ai/",
            supervisor: null, wheel: null });
        assert.strictEqual(answer.serviceUrl, "http://10.0.0.5:9000/ai");
        assert.doesNotMatch(JSON.stringify(answer), /s3cret|svc:/);
        assert.strictEqual(status.displayUrl("http//svc:s3cret@bad"), "http//bad");
    });

    it("shows a running supervisor's state and output instead of commands", function () {
        const answer = status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", wheel: WHEEL,
            supervisor: { state: "starting", pid: 4242, exitCode: null, command: "python3 -m service",
                lastLines: ["Loading..."], env: { OPENAI_API_KEY: "sk-should-never-show" } } });
        assert.deepStrictEqual(answer.supervisor, { state: "starting", restarting: false, pid: 4242, exitCode: null,
            command: "python3 -m service", lastLines: ["Loading..."] });
        assert.deepStrictEqual(answer.commands, []);
        assert.doesNotMatch(JSON.stringify(answer), /sk-should-never-show/);
    });

    it("names what restarts the service outside Node-RED instead of commands (make run)", function () {
        const answer = status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", wheel: WHEEL,
            supervisor: null, supervisedBy: " make run " });
        assert.deepStrictEqual(answer.supervisor, { state: "external", by: "make run", restarting: false, pid: null,
            exitCode: null, command: "", lastLines: [] });
        assert.deepStrictEqual(answer.commands, []);
        // The plugin's own supervisor is the one to show when both are there; an empty name is none.
        assert.strictEqual(status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765",
            supervisor: { state: "running", pid: 1 }, supervisedBy: "make run" }).supervisor.state, "running");
        assert.strictEqual(status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765",
            supervisor: null, supervisedBy: "  " }).supervisor, null);
    });

    it("offers the wheel after a supervised service failed, keeping its last twenty lines", function () {
        const lines = Array.from({ length: 25 }, function (_, i) { return "line " + i; });
        const answer = status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765", wheel: WHEEL,
            supervisor: { state: "failed", pid: null, exitCode: 1, command: "python3 -m service", lastLines: lines } });
        assert.deepStrictEqual(answer.commands, [{ id: "pip", command: "python3 -m pip install \"" + WHEEL + "\"" }]);
        assert.strictEqual(answer.supervisor.lastLines.length, 20);
        assert.strictEqual(answer.supervisor.lastLines[19], "line 24");
        assert.deepStrictEqual(status.serviceStatus({ reachable: false, serviceUrl: "http://127.0.0.1:8765",
            wheel: null, supervisor: { state: "exited", exitCode: 0, lastLines: [] } }).commands, []);
    });

    it("expects a restart while a supervisor starts or runs the service, or one outside Node-RED names itself",
        function () {
            assert.strictEqual(status.restartExpected({ state: "running", pid: 12 }, undefined), true);
            assert.strictEqual(status.restartExpected({ state: "starting" }, undefined), true);
            assert.strictEqual(status.restartExpected(null, "make run"), true);
            // The plugin's own supervisor gave up: the user must act, whatever the environment says.
            assert.strictEqual(status.restartExpected({ state: "failed", exitCode: 1 }, "make run"), false);
            assert.strictEqual(status.restartExpected({ state: "exited", exitCode: 0 }, undefined), false);
            // Its child exited unexpectedly and is started again after a delay.
            assert.strictEqual(status.restartExpected({ state: "exited", exitCode: 1, restarting: true }, undefined),
                true);
            assert.strictEqual(status.restartExpected(null, "  "), false);
            assert.strictEqual(status.restartExpected(null, undefined), false);
        });

    it("chooses the newest wheel of the python folder and ignores other files", function () {
        assert.strictEqual(status.chooseWheel(["README", "node_red_ai_sidebar-0.9.0-py3-none-any.whl",
            "node_red_ai_sidebar-0.10.0-py3-none-any.whl"]), "node_red_ai_sidebar-0.10.0-py3-none-any.whl");
        assert.strictEqual(status.chooseWheel([".gitkeep"]), null);
    });
});
