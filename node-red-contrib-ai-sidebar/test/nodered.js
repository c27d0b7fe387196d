/**
 * A real Node-RED for the tests: the `node-red` devDependency (or the `node-red` package directory NODE_RED_HOME
 * names, run by the Node.js binary NODE_RED_NODE; `make test` sets both for its Node-RED 5 pass) started as a child
 * process on a free loopback port, with this package symlinked into a temporary user directory, as `make run`
 * installs it.
 */
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawn } = require("child_process");
const helpers = require("./helpers");

const packageRoot = path.join(__dirname, "..");
// How long Node-RED may take to start its flows; a `before` hook that starts one allows START_TIMEOUT + 30 s.
// About 3 s on a quiet machine; over 30 s was seen for Node-RED 5 while `make test` ran its three parallel passes.
const START_TIMEOUT = 60000;
// Every Node-RED started and not yet stopped: a child left running (its start abandoned by a hook's timeout)
// would keep mocha from ever exiting, so the root hook (test/root-hooks.js) stops them after the run.
const running = new Set();

function nodeRedHome() {
    if (process.env.NODE_RED_HOME) {
        return process.env.NODE_RED_HOME;
    }
    return path.dirname(require.resolve("node-red/package.json"));
}

/** The runtime module of the Node-RED under test, for node-red-node-test-helper's `helper.init`. */
function nodeRedMain() {
    const home = nodeRedHome();
    return path.join(home, require(path.join(home, "package.json")).main);
}

/**
 * Start Node-RED and resolve once its flows have started.
 *
 * @param {object} [options]
 * @param {object} [options.settings] user settings written to settings.js
 * @param {object} [options.env] extra environment variables
 * @param {object[]} [options.flows] the flow file's content
 * @param {number} [options.startTimeout=START_TIMEOUT] milliseconds to wait for "Started flows"; then the child is
 *     killed and the promise rejects with Node-RED's log
 * @returns {Promise<{url: string, userDir: string, pid: number, log: function(): string,
 *     waitForLog: function(RegExp, number=): Promise<void>, stop: function(): Promise<void>}>}
 */
async function startNodeRed(options) {
    options = options || {};
    const settings = options.settings || {};
    const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "ai-sidebar-test-"));
    fs.mkdirSync(path.join(userDir, "node_modules"));
    fs.symlinkSync(packageRoot, path.join(userDir, "node_modules", "node-red-contrib-ai-sidebar"), "dir");
    fs.writeFileSync(path.join(userDir, "flows.json"), JSON.stringify(options.flows || []));
    fs.writeFileSync(path.join(userDir, "settings.js"), "module.exports = " + JSON.stringify(Object.assign({
        uiHost: "127.0.0.1",
        flowFile: "flows.json",
        telemetry: { enabled: false },
        editorTheme: { tours: false, projects: { enabled: false } }
    }, settings)) + ";\n");
    const port = Number(new URL(await helpers.unusedUrl()).port);
    const node = process.env.NODE_RED_NODE || process.execPath;
    const child = spawn(node, [path.join(nodeRedHome(), "red.js"), "-u", userDir, "-p", String(port)], {
        env: Object.assign({}, process.env, options.env),
        stdio: ["ignore", "pipe", "pipe"]
    });
    let output = "";
    const watchers = new Set();
    const exited = new Promise(function (resolve) {
        child.on("exit", resolve);
    });
    function onData(chunk) {
        output += chunk;
        watchers.forEach(function (check) {
            check();
        });
    }
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);

    /**
     * Resolve once the log written after `from` (a length of the log) matches `pattern`.
     *
     * @param {RegExp} pattern
     * @param {number} [from=0]
     * @returns {Promise<void>}
     */
    function waitForLog(pattern, from) {
        return new Promise(function (resolve, reject) {
            function check() {
                if (pattern.test(output.slice(from || 0))) {
                    watchers.delete(check);
                    resolve();
                }
            }
            watchers.add(check);
            exited.then(function (code) {
                watchers.delete(check);
                reject(new Error("Node-RED exited with " + code + ":\n" + output));
            });
            check();
        });
    }

    /**
     * Stop Node-RED, wait for its exit and remove its user directory.
     *
     * @param {string} [signal="SIGTERM"]
     * @param {function(): Promise<void>} [beforeRemoving] awaited after the exit, before the user directory goes: a
     *     process Node-RED started (the supervised service) may still be writing there while it shuts down
     */
    async function stop(signal, beforeRemoving) {
        running.delete(stop);
        child.kill(signal);
        await exited;
        if (beforeRemoving) {
            await beforeRemoving();
        }
        // Retried: a file appearing while the tree is removed (ENOTEMPTY) is not worth a failed test.
        fs.rmSync(userDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    }
    running.add(stop);

    const startTimeout = options.startTimeout || START_TIMEOUT;
    let timer;
    const late = new Promise(function (resolve, reject) {
        timer = setTimeout(function () {
            reject(new Error("Node-RED did not start its flows within " + startTimeout / 1000 + " s:\n" + output));
        }, startTimeout);
    });
    try {
        await Promise.race([waitForLog(/Server now running[\s\S]*Started flows/), late]);
    } catch (err) {
        await stop("SIGKILL");
        throw err;
    } finally {
        clearTimeout(timer);
    }
    const root = settings.httpAdminRoot ? settings.httpAdminRoot.replace(/\/?$/, "/") : "/";
    return {
        url: "http://127.0.0.1:" + port + root,
        userDir: userDir,
        pid: child.pid,
        log: function () {
            return output;
        },
        waitForLog: waitForLog,
        /**
         * @param {function(): Promise<void>} [beforeRemoving] see `stop` above
         * @returns {Promise<void>}
         */
        stop: function (beforeRemoving) {
            return stop(undefined, beforeRemoving);
        }
    };
}

/** Stop every Node-RED still running (test/root-hooks.js calls it after the whole run). */
async function stopAll() {
    await Promise.all(Array.from(running, function (stop) {
        return stop("SIGKILL");
    }));
}

/**
 * Every file below a directory (symlinks not followed), as `[path, content]`.
 *
 * @param {string} dir
 * @returns {[string, Buffer][]}
 */
function filesBelow(dir) {
    const found = [];
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) {
            found.push(...filesBelow(full));
        } else if (entry.isFile()) {
            found.push([full, fs.readFileSync(full)]);
        }
    }
    return found;
}

module.exports = { startNodeRed, stopAll, nodeRedMain, filesBelow, START_TIMEOUT };
