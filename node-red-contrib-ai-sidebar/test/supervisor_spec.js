"use strict";

/**
 * The supervisor (plugins/lib/supervisor.js) running real child processes: small Node.js scripts, and the real
 * Python service started by the plugin inside a real Node-RED (opt-in setting `aiSidebar.startService`).
 */

const assert = require("assert");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { once } = require("events");
const supervisorLib = require("../plugins/lib/supervisor");
const serviceTokenLib = require("../plugins/lib/service-token");
const helpers = require("./helpers");
const { startNodeRed } = require("./nodered");

const VENV_PYTHON = path.join(__dirname, "..", "..", ".venv", "bin", "python");

/** A log that records what it is given, per level. */
function recordingLog() {
    const log = { infos: [], warns: [], errors: [] };
    log.info = function (text) { log.infos.push(text); };
    log.warn = function (text) { log.warns.push(text); };
    log.error = function (text) { log.errors.push(text); };
    return log;
}

/** Resolve with the supervisor's status once it reaches `state`. */
function untilState(supervisor, state) {
    return new Promise(function (resolve) {
        if (supervisor.status().state === state) {
            resolve(supervisor.status());
            return;
        }
        supervisor.on("state", function seen(status) {
            if (status.state === state) {
                supervisor.removeListener("state", seen);
                resolve(status);
            }
        });
    });
}

function untilLine(supervisor, pattern) {
    return new Promise(function (resolve) {
        supervisor.on("line", function seen(line) {
            if (pattern.test(line)) {
                supervisor.removeListener("line", seen);
                resolve(line);
            }
        });
    });
}

function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    } catch (err) {
        return err.code !== "ESRCH";
    }
}

/** A supervisor of `node -e script`. */
function nodeChild(script, options) {
    return supervisorLib.createSupervisor(Object.assign({
        command: process.execPath, args: ["-e", script], log: recordingLog(), restartDelays: [10]
    }, options));
}

describe("service supervisor", function () {
    let supervisor;

    afterEach(async function () {
        if (supervisor) {
            await supervisor.stop();
            supervisor = null;
        }
    });

    it("starts the child, reports it running with its pid and keeps its output lines", async function () {
        const script = "console.log('ready'); console.error('on stderr'); setInterval(() => {}, 1000);";
        supervisor = nodeChild(script);
        assert.strictEqual(supervisor.status().state, "exited");
        const seen = untilLine(supervisor, /on stderr/);
        supervisor.start();
        const running = await untilState(supervisor, "running");
        assert.ok(Number.isInteger(running.pid) && alive(running.pid));
        assert.strictEqual(running.exitCode, null);
        assert.strictEqual(running.command, process.execPath + " -e " + script);
        await seen;
        assert.deepStrictEqual(supervisor.status().lastLines.sort(), ["on stderr", "ready"]);
    });

    it("restarts a child that exits unexpectedly and says so in the log", async function () {
        const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "supervisor-")), "ran-once");
        // The first run crashes with code 3; the restarted one stays up.
        const log = recordingLog();
        supervisor = nodeChild("const fs = require('fs'); const m = " + JSON.stringify(marker) + ";" +
            "if (!fs.existsSync(m)) { fs.writeFileSync(m, ''); console.log('crashing'); process.exit(3); }" +
            "setInterval(() => {}, 1000);", { log: log });
        supervisor.start();
        const first = await untilState(supervisor, "running");
        const exited = await untilState(supervisor, "exited");
        assert.strictEqual(exited.exitCode, 3);
        assert.strictEqual(exited.pid, null);
        // Waiting to start it again: the relay says so ("being started again"), and so does the banner.
        assert.strictEqual(exited.restarting, true);
        const second = await untilState(supervisor, "running");
        assert.notStrictEqual(second.pid, first.pid);
        assert.ok(alive(second.pid));
        assert.strictEqual(log.warns.length, 1);
        assert.match(log.warns[0], /exited unexpectedly with code 3; restarting it in 0\.01 s\. Its last output: crashing$/);
        fs.rmSync(path.dirname(marker), { recursive: true, force: true });
    });

    it("logs the unexpected exit with its code and the restart delay", async function () {
        const log = recordingLog();
        supervisor = nodeChild("console.log('last words'); process.exit(4);", { log: log, restartDelays: [10, 20] });
        supervisor.start();
        await untilState(supervisor, "exited");
        assert.deepStrictEqual(log.warns, ["[ai-sidebar] the service (" + supervisor.status().command +
            ") exited unexpectedly with code 4; restarting it in 0.01 s. Its last output: last words"]);
    });

    it("gives up after five quick exits in a row", async function () {
        const log = recordingLog();
        supervisor = nodeChild("process.exit(2);", { log: log, restartDelays: [1] });
        supervisor.start();
        const failed = await untilState(supervisor, "failed");
        assert.strictEqual(failed.exitCode, 2);
        assert.strictEqual(failed.restarting, false);
        assert.strictEqual(log.warns.length, 4);
        assert.strictEqual(log.errors.length, 1);
        assert.match(log.errors[0], /exited with code 2, 5 times in a row soon after starting; not restarting it/);
        assert.strictEqual(log.infos.filter(function (line) { return /runs as process/.test(line); }).length, 5);
    });

    it("reports a command that cannot start as failed", async function () {
        const log = recordingLog();
        supervisor = supervisorLib.createSupervisor({ command: "/nonexistent/python3", args: ["-m", "service"],
            log: log });
        supervisor.start();
        const failed = await untilState(supervisor, "failed");
        assert.strictEqual(failed.pid, null);
        assert.strictEqual(failed.command, "/nonexistent/python3 -m service");
        assert.match(log.errors[0], /could not start the service \(\/nonexistent\/python3 -m service\): .*ENOENT/);
    });

    it("stop() ends the child and no restart follows", async function () {
        const log = recordingLog();
        supervisor = nodeChild("setInterval(() => {}, 1000);", { log: log });
        supervisor.start();
        const { pid } = await untilState(supervisor, "running");
        await supervisor.stop();
        assert.strictEqual(alive(pid), false);
        assert.strictEqual(supervisor.status().state, "exited");
        assert.strictEqual(supervisor.status().pid, null);
        assert.deepStrictEqual(log.warns, []);
    });

    it("keeps only the last 20 lines, with secret environment values hidden", async function () {
        const env = Object.assign({}, process.env, { AI_SIDEBAR_TOKEN: "tok-0123456789", AI_SIDEBAR_PORT: "8765" });
        supervisor = nodeChild("for (let i = 1; i <= 30; i++) console.log('line ' + i + ' ' + " +
            "process.env.AI_SIDEBAR_TOKEN + ' ' + process.env.AI_SIDEBAR_PORT); console.log('end');" +
            "setInterval(() => {}, 1000);", { env: env });
        const seen = untilLine(supervisor, /^end$/);
        supervisor.start();
        await seen;
        const lines = supervisor.status().lastLines;
        assert.strictEqual(lines.length, 20);
        assert.strictEqual(lines[0], "line 12 *** 8765");
        assert.strictEqual(lines[19], "end");
        assert.ok(!JSON.stringify(supervisor.status()).includes("tok-0123456789"));
    });

    it("ends the child when this process exits", async function () {
        // A parent Node.js that starts a supervised child, prints its pid and exits.
        const parent = require("child_process").spawn(process.execPath, ["-e",
            "const s = require(" + JSON.stringify(require.resolve("../plugins/lib/supervisor")) + ").createSupervisor(" +
            "{command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)']});" +
            "s.on('state', (st) => { if (st.state === 'running') { console.log(st.pid); process.exit(0); } });" +
            "s.start();"], { stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        parent.stdout.on("data", function (chunk) { out += chunk; });
        await once(parent, "close");
        const pid = Number(out.trim());
        assert.ok(pid > 0, out);
        await untilGone(pid);
    });
});

/**
 * Resolve once no process has `pid`. A process that is not our child cannot be awaited: this polls, bounded by the
 * test's timeout.
 */
async function untilGone(pid) {
    while (alive(pid)) {
        await new Promise(function (resolve) { setTimeout(resolve, 50); });
    }
}

describe("the plugin's supervised service (aiSidebar.startService)", function () {
    // Starts Node-RED and the real Python service (imports LangChain: several seconds on a busy machine).
    this.timeout(120000);

    it("starts the service, relays a chat stream to it, and ends it with Node-RED", async function () {
        if (!fs.existsSync(VENV_PYTHON)) {
            this.skip();
        }
        const serviceUrl = await helpers.unusedUrl();
        const token = "supervised-service-token-0123";
        const nodeRed = await startNodeRed({
            settings: {
                aiSidebar: { startService: true, python: VENV_PYTHON },
                logging: { console: { level: "debug" } }
            },
            env: {
                AI_SIDEBAR_SERVICE_URL: serviceUrl, AI_SIDEBAR_TOKEN: token, MCP_TOOLS_ENABLED: "false",
                AI_PROVIDER: "openai", OPENAI_API_KEY: "", NODE_RED_URL: ""
            }
        });
        let stopped = false;
        let pid = null;
        // The service ends after Node-RED (SIGTERM as Node-RED exits) and may still write its database files in the
        // user directory meanwhile: remove that only once it is gone.
        function serviceGone() {
            return pid ? untilGone(pid) : Promise.resolve();
        }
        try {
            await nodeRed.waitForLog(/\[ai-sidebar\] service: .*Running on http:\/\/127\.0\.0\.1:/);
            pid = Number(/\[ai-sidebar\] the service runs as process (\d+)/.exec(nodeRed.log())[1]);
            assert.ok(fs.existsSync(path.join(nodeRed.userDir, "ai-sidebar", "memory.db")));
            assert.ok(!nodeRed.log().includes(token), "the token must not reach the Node-RED log");

            const { res } = await helpers.request(nodeRed.url + "ai-sidebar/stream-chat", {
                method: "POST", headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ message: "hello" })
            });
            const body = await helpers.readBody(res);
            assert.strictEqual(res.statusCode, 200, body);
            assert.match(res.headers["content-type"], /^text\/event-stream/);
            const events = body.split("\n\n").filter(function (part) { return part.startsWith("data: "); })
                .map(function (part) { return JSON.parse(part.slice(6)); });
            assert.deepStrictEqual(events.map(function (e) { return e.type; }), ["error", "done"]);
            assert.strictEqual(events[0].code, "provider_not_configured");

            await nodeRed.stop(serviceGone);
            stopped = true;
        } finally {
            if (!stopped) {
                await nodeRed.stop(serviceGone);
            }
        }
    });
});

describe("the supervised service without AI_SIDEBAR_TOKEN in Node-RED's environment (issue 29)", function () {
    this.timeout(120000);

    it("gets a generated token kept in the user directory (0600), so another caller's identity headers are refused",
        async function () {
            if (!fs.existsSync(VENV_PYTHON)) {
                this.skip();
            }
            const serviceUrl = await helpers.unusedUrl();
            const nodeRed = await startNodeRed({
                settings: {
                    aiSidebar: { startService: true, python: VENV_PYTHON }, logging: { console: { level: "debug" } }
                },
                env: {
                    AI_SIDEBAR_SERVICE_URL: serviceUrl, AI_SIDEBAR_TOKEN: "", MCP_TOOLS_ENABLED: "false",
                    AI_PROVIDER: "openai", OPENAI_API_KEY: "", NODE_RED_URL: ""
                }
            });
            let pid = null;
            try {
                await nodeRed.waitForLog(/\[ai-sidebar\] service: .*Running on http:\/\/127\.0\.0\.1:/);
                pid = Number(/\[ai-sidebar\] the service runs as process (\d+)/.exec(nodeRed.log())[1]);
                const file = serviceTokenLib.tokenPath(nodeRed.userDir);
                const token = fs.readFileSync(file, "utf8").trim();
                assert.match(token, /^[A-Za-z0-9_-]{43}$/);
                assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600);
                assert.ok(!nodeRed.log().includes(token), "the token must not reach the Node-RED log");

                // another local process, naming itself admin with write permission
                const direct = await helpers.request(serviceUrl.replace(/\/$/, "") + "/ai-sidebar/sessions", {
                    method: "GET", headers: { "X-Node-RED-User": "admin", "X-AI-Sidebar-Permission": "write" }
                });
                const directBody = await helpers.readBody(direct.res);
                assert.strictEqual(direct.res.statusCode, 401, directBody);
                assert.strictEqual(JSON.parse(directBody).error.code, "unauthorized");

                // the editor, through the plugin's relay, which sends the generated token
                const relayed = await helpers.request(nodeRed.url + "ai-sidebar/sessions", { method: "GET" });
                const relayedBody = await helpers.readBody(relayed.res);
                assert.strictEqual(relayed.res.statusCode, 200, relayedBody);

                // the same token after a restart of Node-RED's plugin: read from the file, not made anew
                assert.strictEqual(serviceTokenLib.serviceToken({}, {
                    userDir: nodeRed.userDir, aiSidebar: { startService: true }
                }).token, token);
            } finally {
                await nodeRed.stop(function () { return pid ? untilGone(pid) : Promise.resolve(); });
            }
        });
});

describe("service-token", function () {
    it("uses Node-RED's AI_SIDEBAR_TOKEN when set, makes none without startService, keeps one per user directory",
        function () {
            const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "ai-sidebar-token-"));
            try {
                const supervised = { userDir: userDir, aiSidebar: { startService: true } };
                assert.deepStrictEqual(serviceTokenLib.serviceToken({ AI_SIDEBAR_TOKEN: "given" }, supervised),
                    { token: "given", generated: false });
                assert.deepStrictEqual(serviceTokenLib.serviceToken({}, { userDir: userDir }),
                    { token: undefined, generated: false });
                const first = serviceTokenLib.serviceToken({}, supervised);
                assert.strictEqual(first.generated, true);
                assert.strictEqual(serviceTokenLib.serviceToken({}, supervised).token, first.token);
                const file = serviceTokenLib.tokenPath(userDir);
                fs.chmodSync(file, 0o644);
                assert.strictEqual(serviceTokenLib.serviceToken({}, supervised).token, first.token);
                assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600);
                assert.strictEqual(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
                assert.deepStrictEqual(fs.readdirSync(path.dirname(file)), ["service-token"]);
            } finally {
                fs.rmSync(userDir, { recursive: true, force: true });
            }
        });
});
