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
 * @returns {Promise<{url: string, userDir: string, log: function(): string,
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

    await waitForLog(/Server now running[\s\S]*Started flows/);
    const root = settings.httpAdminRoot ? settings.httpAdminRoot.replace(/\/?$/, "/") : "/";
    return {
        url: "http://127.0.0.1:" + port + root,
        userDir: userDir,
        log: function () {
            return output;
        },
        waitForLog: waitForLog,
        stop: async function () {
            child.kill();
            await exited;
            fs.rmSync(userDir, { recursive: true, force: true });
        }
    };
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

module.exports = { startNodeRed, nodeRedMain, filesBelow };
