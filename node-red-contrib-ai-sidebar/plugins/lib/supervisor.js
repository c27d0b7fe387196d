/**
 * Run the companion service as a child process of Node-RED and keep it running (opt-in: `aiSidebar.startService`
 * in settings.js).
 *
 * `createSupervisor` starts one child, keeps the last lines of its output, restarts it with a growing delay when it
 * exits without being asked to, and gives up (state "failed") after several exits in a row that each came soon after
 * their start: a missing module or a port already in use does not fix itself. The child is ended when the Node-RED
 * process exits, so no service outlives the Node-RED that started it.
 *
 * The plugin publishes the supervisor it runs as `module.exports.current` (null when the setting is off), for the
 * `ai-sidebar/service-status` route.
 */
"use strict";

const { spawn } = require("child_process");
const EventEmitter = require("events");

const MAX_LINES = 20;
// Delays before each restart in a row; the last one repeats. A run that lasted STABLE_MS resets the series.
const RESTART_DELAYS_MS = [1000, 2000, 5000, 10000, 30000];
const STABLE_MS = 30000;
const MAX_QUICK_EXITS = 5;
// How long stop() waits after SIGTERM before SIGKILL (aiohttp's run_app ends on SIGTERM after closing its sites).
const KILL_AFTER_MS = 10000;
// Environment variables whose values are secrets: never shown in the kept output lines.
const SECRET_NAME = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL/i;

/**
 * Replace in `text` every value of a secret-named variable of `env` by "***".
 *
 * @param {string} text
 * @param {string[]} secrets the values to hide
 * @returns {string}
 */
function redact(text, secrets) {
    return secrets.reduce(function (result, secret) {
        return result.split(secret).join("***");
    }, text);
}

/**
 * Create a supervisor for one child process; nothing runs before `start()`.
 *
 * @param {object} options
 * @param {string} options.command the program (e.g. "python3"), looked up in PATH
 * @param {string[]} [options.args] its arguments
 * @param {object} [options.env] the child's whole environment (default: this process's)
 * @param {string} [options.cwd] its working directory
 * @param {{info: function(string), warn: function(string), error: function(string), debug: function(string)=}}
 *     [options.log] e.g. RED.log; the child's output lines go to `debug`
 * @param {number[]} [options.restartDelays] delays in ms before restarts in a row (default 1, 2, 5, 10, 30 s)
 * @param {number} [options.stableMs] a run this long resets the restart series (default 30 s)
 * @returns {EventEmitter & {start: function(): void, stop: function(): Promise<void>, status: function(): object}}
 *     an emitter of "state" (the new `status()`) on every change of state and "line" (a kept output line)
 */
function createSupervisor(options) {
    const args = options.args || [];
    const env = options.env || process.env;
    const log = options.log || { info: function () {}, warn: function () {}, error: function () {} };
    const restartDelays = options.restartDelays || RESTART_DELAYS_MS;
    const stableMs = options.stableMs === undefined ? STABLE_MS : options.stableMs;
    const secrets = Object.keys(env).filter(function (name) {
        return SECRET_NAME.test(name) && env[name] && env[name].length >= 4;
    }).map(function (name) { return env[name]; });
    const commandLine = [options.command].concat(args).join(" ");
    const supervisor = new EventEmitter();

    let state = "exited";
    let child = null;
    let exitCode = null;
    let lines = [];
    let quickExits = 0;
    let restartTimer = null;
    let stopping = null;

    function setState(next) {
        state = next;
        supervisor.emit("state", supervisor.status());
    }

    function keep(stream) {
        let partial = "";
        stream.setEncoding("utf8");
        stream.on("data", function (chunk) {
            const parts = (partial + chunk).split(/\r?\n/);
            partial = parts.pop();
            parts.forEach(addLine);
        });
        stream.on("end", function () {
            if (partial) {
                addLine(partial);
            }
        });
    }

    function addLine(line) {
        const shown = redact(line, secrets);
        lines.push(shown);
        if (lines.length > MAX_LINES) {
            lines = lines.slice(-MAX_LINES);
        }
        if (log.debug) {
            log.debug("[ai-sidebar] service: " + shown);
        }
        supervisor.emit("line", shown);
    }

    function run() {
        restartTimer = null;
        exitCode = null;
        const startedAt = Date.now();
        const current = spawn(options.command, args, { env: env, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
        child = current;
        setState("starting");
        keep(current.stdout);
        keep(current.stderr);
        current.on("spawn", function () {
            log.info("[ai-sidebar] the service runs as process " + current.pid);
            setState("running");
        });
        current.on("error", function (err) {
            // Only a failed spawn (e.g. ENOENT) leaves no "exit" to follow.
            if (current.pid === undefined) {
                child = null;
                log.error("[ai-sidebar] could not start the service (" + commandLine + "): " + err.message +
                    "; set aiSidebar.python in settings.js to a Python with node-red-ai-sidebar installed.");
                setState("failed");
            }
        });
        current.on("exit", function (code, signal) {
            child = null;
            exitCode = code;
            if (stopping) {
                setState("exited");
                return;
            }
            quickExits = Date.now() - startedAt < stableMs ? quickExits + 1 : 0;
            const how = code === null ? "signal " + signal : "code " + code;
            const last = lines.length ? " Its last output: " + lines[lines.length - 1] : "";
            if (quickExits >= MAX_QUICK_EXITS) {
                log.error("[ai-sidebar] the service (" + commandLine + ") exited with " + how + ", " + quickExits +
                    " times in a row soon after starting; not restarting it." + last);
                setState("failed");
                return;
            }
            const delay = restartDelays[Math.min(Math.max(quickExits - 1, 0), restartDelays.length - 1)];
            log.warn("[ai-sidebar] the service (" + commandLine + ") exited unexpectedly with " + how +
                "; restarting it in " + (delay / 1000) + " s." + last);
            restartTimer = setTimeout(run, delay);
            setState("exited");
        });
    }

    function killOnExit() {
        if (child) {
            child.kill("SIGTERM");
        }
    }

    /** Start the child (no-op while one runs or a restart is pending). */
    supervisor.start = function () {
        if (child || restartTimer) {
            return;
        }
        stopping = null;
        quickExits = 0;
        process.on("exit", killOnExit);
        log.info("[ai-sidebar] starting the service: " + commandLine);
        run();
    };

    /**
     * Stop the child and any pending restart: SIGTERM, then SIGKILL after 10 s.
     *
     * @returns {Promise<void>} resolved once the child has exited
     */
    supervisor.stop = function () {
        process.removeListener("exit", killOnExit);
        if (restartTimer) {
            clearTimeout(restartTimer);
            restartTimer = null;
        }
        if (!child) {
            return Promise.resolve();
        }
        if (!stopping) {
            const current = child;
            stopping = new Promise(function (resolve) {
                const killer = setTimeout(function () {
                    current.kill("SIGKILL");
                }, KILL_AFTER_MS);
                current.once("exit", function () {
                    clearTimeout(killer);
                    resolve();
                });
            });
            current.kill("SIGTERM");
        }
        return stopping;
    };

    /**
     * @returns {{state: ("starting"|"running"|"exited"|"failed"), restarting: boolean, pid: ?number,
     *     exitCode: ?number, command: string, lastLines: string[]}} the child's state (`restarting`: it exited
     *     unexpectedly and is started again after a delay); `lastLines` holds at most 20 lines of its output, secret
     *     environment values replaced by "***"
     */
    supervisor.status = function () {
        return {
            state: state,
            restarting: restartTimer !== null,
            pid: child && child.pid !== undefined ? child.pid : null,
            exitCode: exitCode,
            command: commandLine,
            lastLines: lines.slice()
        };
    };

    return supervisor;
}

/**
 * The supervised service's environment: Node-RED's own, plus where the service listens (the plugin's service URL),
 * the token the plugin sends, the memory database in Node-RED's user directory and, unless set, Node-RED's Admin
 * API URL from its settings.
 *
 * @param {object} options
 * @param {object} options.env the Node-RED process's environment
 * @param {string} options.serviceUrl the URL the plugin relays to (its port becomes AI_SIDEBAR_PORT)
 * @param {string} [options.serviceToken] AI_SIDEBAR_TOKEN for the service
 * @param {{userDir: string, uiPort?: number, uiHost?: string, httpAdminRoot?: (string|false), https?: object}}
 *     options.settings Node-RED's runtime settings
 * @returns {object} the child's environment
 */
function serviceEnvironment(options) {
    const settings = options.settings;
    const url = new URL(options.serviceUrl);
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    const result = Object.assign({}, options.env, {
        AI_SIDEBAR_PORT: port,
        MEMORY_DB_PATH: require("path").join(settings.userDir, "ai-sidebar", "memory.db")
    });
    if (options.serviceToken) {
        result.AI_SIDEBAR_TOKEN = options.serviceToken;
    }
    if (!result.NODE_RED_URL) {
        const root = typeof settings.httpAdminRoot === "string" ? settings.httpAdminRoot.replace(/\/+$/, "") : "";
        const host = !settings.uiHost || settings.uiHost === "0.0.0.0" || settings.uiHost === "::"
            ? "127.0.0.1" : settings.uiHost;
        result.NODE_RED_URL = (settings.https ? "https" : "http") + "://" +
            (host.indexOf(":") === -1 ? host : "[" + host + "]") + ":" + (settings.uiPort || 1880) + root;
    }
    return result;
}

module.exports = {
    createSupervisor: createSupervisor,
    serviceEnvironment: serviceEnvironment,
    /** The supervisor the plugin runs, or null when `aiSidebar.startService` is off. */
    current: null
};
