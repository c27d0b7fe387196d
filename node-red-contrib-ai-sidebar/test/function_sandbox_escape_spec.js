"use strict";

/**
 * Escape attempts through the real `POST /ai-sidebar/function-sandbox` route of a real Node-RED (issue 29): code
 * the static check lets through looks for an object of the host realm (stack exhaustion around the bridge
 * functions, constructor chains through what the stubs throw, `this`, `Function('return this')`) and, if it finds
 * one, reaches `process.getBuiltinModule` to write a file, spawn a process or open a socket, at once and again in
 * leftovers (promise jobs, timers) that would run after the answer. Each effect is checked where it would land: the
 * file system, a marker the spawned process would write, a real TCP listener. Then limits: an endless loop and a
 * runaway allocation end with their own error codes and Node-RED goes on answering.
 */

const assert = require("assert");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const helpers = require("./helpers");
const { startNodeRed, START_TIMEOUT } = require("./nodered");

/**
 * Function node code that tries every known way to a host `Function` and runs `payload` (source using `proc`,
 * the host's `process`; it may return a promise the run then waits for) with the first it finds; the same
 * attempts are left behind in a promise job and in timers, and the code throws so that the answer goes out
 * before them.
 */
function escapeCode(payload) {
    return `
let HostFunction = null;
const look = function (value) {
    try {
        const F = value && value.constructor && value.constructor.constructor;
        if (typeof F === "function" && F !== Function && !HostFunction) { HostFunction = F; }
    } catch (e) { /* keep looking */ }
};
// Stubs that call the bridge without ending the run (an answer would end the run before the escape).
const probes = [function () { node.status({}); }, function () { node.warn("x"); }];
const dig = function (probe) {
    try { dig(probe); } catch (overflow) { look(overflow); }
    if (!HostFunction) { try { probe(); } catch (thrown) { look(thrown); } }
};
const attempt = function () {
    probes.forEach(function (probe) {
        try { dig(probe); } catch (overflow) { look(overflow); }
    });
    try { const loop = {}; loop.loop = loop; node.send(loop); } catch (thrown) { look(thrown); }
    look(this);
    try { look(Function("return this")()); } catch (e) { look(e); }
    try { look(this.constructor.constructor("return this")()); } catch (e) { look(e); }
    const outer = (function () { return this; })() || {};
    const proc = HostFunction ? HostFunction("return process")() : outer["pro" + "cess"];
    if (proc && typeof proc.getBuiltinModule === "function") {
        ${payload}
    }
    return null;
};
Promise.resolve().then(attempt);
setTimeout(attempt, 0);
setTimeout(attempt, 50);
const escaped = attempt();
if (escaped) {
    return escaped.then(function () { throw new Error("answered before the leftovers"); });
}
throw new Error("answered before the leftovers");
`;
}

/** The pids of Node-RED's sandbox children still alive (Linux /proc). */
function sandboxChildren(parentPid) {
    return fs.readdirSync("/proc").filter(function (entry) {
        return /^\d+$/.test(entry);
    }).filter(function (pid) {
        try {
            const status = fs.readFileSync(path.join("/proc", pid, "status"), "utf8");
            const cmdline = fs.readFileSync(path.join("/proc", pid, "cmdline"), "utf8");
            return new RegExp("^PPid:\\s+" + parentPid + "$", "m").test(status) && cmdline.includes("sandbox-child");
        } catch {
            return false;   // it ended while we looked
        }
    });
}

/** Wait until no sandbox process of Node-RED is left: whatever the code left behind has had its chance to run. */
async function sandboxGone(parentPid) {
    const deadline = Date.now() + 10000;
    while (sandboxChildren(parentPid).length) {
        assert.ok(Date.now() < deadline, "a sandbox process outlived its answer by 10 s");
        await new Promise(function (resolve) { setImmediate(resolve); });
    }
}

describe("function sandbox escapes", function () {
    this.timeout(30000);
    let nodeRed;
    let listener;
    let connections;
    let workDir;

    before(async function () {
        this.timeout(START_TIMEOUT + 30000);
        workDir = fs.mkdtempSync(path.join(os.tmpdir(), "ai-sidebar-escape-"));
        connections = 0;
        listener = net.createServer(function (socket) {
            connections += 1;
            socket.destroy();
        });
        await new Promise(function (resolve) { listener.listen(0, "127.0.0.1", resolve); });
        nodeRed = await startNodeRed({ env: { AI_SIDEBAR_SERVICE_URL: await helpers.unusedUrl() } });
    });

    after(async function () {
        if (nodeRed) {
            await nodeRed.stop();
        }
        if (listener) {
            listener.close();
        }
        fs.rmSync(workDir, { recursive: true, force: true });
    });

    /** Run `code` through the route; resolves with the answer once the sandbox process is gone. */
    async function run(code, timeoutMs) {
        const { res } = await helpers.request(nodeRed.url + "ai-sidebar/function-sandbox", {
            method: "POST", headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ code: { onMessage: code }, msg: { payload: 1 }, timeoutMs: timeoutMs || 2000 })
        });
        assert.strictEqual(res.statusCode, 200);
        const answer = JSON.parse(await helpers.readBody(res));
        await sandboxGone(nodeRed.pid);
        return answer;
    }

    it("cannot create a file", async function () {
        const marker = path.join(workDir, "written");
        const answer = await run(escapeCode(
            `proc.getBuiltinModule("fs").writeFileSync(${JSON.stringify(marker)}, "escaped");`));
        assert.strictEqual(fs.existsSync(marker), false, "the sandboxed code wrote " + marker);
        // The static check let it through: it ran, and ended with its own error.
        assert.deepStrictEqual(answer.error, { code: "sandbox_error", message: "Error: answered before the leftovers" });
    });

    it("cannot spawn a process", async function () {
        const marker = path.join(workDir, "spawned");
        const script = "require('fs').writeFileSync(" + JSON.stringify(marker) + ", 'spawned')";
        const answer = await run(escapeCode(`proc.getBuiltinModule("child_process").spawnSync(proc.execPath,
            ["-e", ${JSON.stringify(script)}]);`));
        assert.strictEqual(answer.error.code, "sandbox_error");
        assert.strictEqual(fs.existsSync(marker), false, "a process spawned by the sandboxed code wrote " + marker);
    });

    it("cannot open a socket", async function () {
        const port = listener.address().port;
        // Node's TCP binding issues connect() at once: the kernel completes the handshake with the listener even if
        // the escaped code is stopped right after (the public net.connect waits for a tick that may never come).
        const answer = await run(escapeCode(`const tcp = proc.binding("tcp_wrap");
            const request = new tcp.TCPConnectWrap();
            request.oncomplete = function () {};
            new tcp.TCP(tcp.constants.SOCKET).connect(request, "127.0.0.1", ${port});`));
        assert.strictEqual(answer.error.code, "sandbox_error");
        // A connection the code opened was established before the answer; the listener gets a turn to accept it.
        await new Promise(function (resolve) { setTimeout(resolve, 0); });
        assert.strictEqual(connections, 0, "the sandboxed code connected to the test's listener");
    });

    it("stops an endless loop and a runaway allocation at their limits, and Node-RED answers on", async function () {
        const loopStarted = Date.now();
        const loop = await run("while (true) {}", 300);
        assert.deepStrictEqual(loop.error.code, "sandbox_timeout");
        // Far above the 300 ms asked for (the process's start and a busy machine), far below a hang.
        assert.ok(Date.now() - loopStarted < 8000, "took " + (Date.now() - loopStarted) + " ms");
        const memory = await run("const keep = [];\nwhile (true) {\n    keep.push(new Array(100000).fill(1));\n}",
            2000);
        assert.strictEqual(memory.error.code, "sandbox_memory");
        assert.match(memory.error.message, /MB/);
        const { res } = await helpers.request(nodeRed.url + "settings");
        assert.strictEqual(res.statusCode, 200);
        assert.ok(JSON.parse(await helpers.readBody(res)).version);
    });
});
