/**
 * What the sidebar's "service not reachable" banner shows: the answer of the plugin route
 * `GET <httpAdminRoot>/ai-sidebar/service-status` (contracts of issue 15).
 *
 * Pure: the route (plugins/ai-sidebar.js) finds out whether the service answers, which supervisor runs and whether
 * the package bundles the service's wheel; this module turns that into the commands that start the service for
 * this installation. Nothing here reads a token or an environment value, so nothing secret can reach the answer.
 */
"use strict";

// The service's own default port (service/settings.py, AI_SIDEBAR_PORT) and the port its container listens on.
const SERVICE_PORT = "8765";
const IMAGE = "node-red-ai-sidebar";
// The supervisor keeps at most this many lines of the child's output (contracts of issue 15).
const MAX_LINES = 20;

/**
 * The service URL without user name and password, as it may be shown to the editor user.
 *
 * @param {string} serviceUrl e.g. "http://user:secret@127.0.0.1:8765/ai/"
 * @returns {string} e.g. "http://127.0.0.1:8765/ai"; a URL that cannot be parsed loses anything before an "@"
 */
function displayUrl(serviceUrl) {
    const text = String(serviceUrl || "");
    try {
        const parsed = new URL(text);
        return parsed.origin + parsed.pathname.replace(/\/+$/, "");
    } catch {
        return text.replace(/\/\/[^/]*@/, "//");
    }
}

/**
 * The TCP port the service is expected on, from the plugin's service URL.
 *
 * @param {string} serviceUrl
 * @returns {string} the explicit port, else the scheme's default (80, 443); "8765" when the URL cannot be parsed
 */
function servicePort(serviceUrl) {
    try {
        const parsed = new URL(String(serviceUrl));
        return parsed.port || (parsed.protocol === "https:" ? "443" : "80");
    } catch {
        return SERVICE_PORT;
    }
}

/**
 * The commands that start the service where the plugin looks for it, in the order a user tries them.
 *
 * @param {string} serviceUrl
 * @param {?string} wheel absolute path of the bundled wheel, or null
 * @param {{venv: (string|undefined), nodeRedPort: (number|undefined)}} [where] the virtual environment the wheel goes
 *     into (`<userDir>/ai-sidebar/venv`: Debian's and Ubuntu's system Python refuse `pip install`, PEP 668), and the
 *     port of this Node-RED (for the container, which reaches it on the Docker host)
 * @returns {{id: string, command: string}[]}
 */
function startCommands(serviceUrl, wheel, where) {
    const port = servicePort(serviceUrl);
    const venv = where && where.venv;
    const commands = [];
    if (wheel) {
        commands.push({ id: "pip", command: venv
            ? "python3 -m venv \"" + venv + "\" && \"" + venv + "/bin/pip\" install \"" + wheel + "\""
            : "python3 -m pip install \"" + wheel + "\"" });
    }
    // The console script of the Python distribution (pyproject.toml [project.scripts]).
    commands.push({ id: "run", command: (port === SERVICE_PORT ? "" : "AI_SIDEBAR_PORT=" + port + " ") +
        (wheel && venv ? "\"" + venv + "/bin/ai-sidebar-service\"" : "ai-sidebar-service") });
    // `-e NAME` without a value passes the variable of the user's shell on: no secret is written here. Inside the
    // container the service listens on 0.0.0.0, so it needs the token this Node-RED sends (AI_SIDEBAR_TOKEN), and
    // reaches Node-RED on the Docker host.
    const nodeRedPort = (where && where.nodeRedPort) || 1880;
    commands.push({ id: "docker", command: "docker run --rm -p 127.0.0.1:" + port + ":" + SERVICE_PORT +
        " -e AI_SIDEBAR_TOKEN -e OPENAI_API_KEY -e NODE_RED_URL=http://host.docker.internal:" + nodeRedPort +
        " --add-host=host.docker.internal:host-gateway " + IMAGE });
    commands.push({ id: "supervise", command: wheel && venv
        ? "aiSidebar: { startService: true, python: \"" + venv + "/bin/python\" }"
        : "aiSidebar: { startService: true }" });
    return commands;
}

/**
 * The contract's fields of a supervisor status, and nothing else it may carry.
 *
 * @param {?object} status
 * @returns {?{state: string, pid: ?number, exitCode: ?number, command: string, lastLines: string[]}}
 */
function supervisorView(status) {
    if (!status || typeof status !== "object") {
        return null;
    }
    return {
        state: String(status.state),
        restarting: status.restarting === true,
        pid: typeof status.pid === "number" ? status.pid : null,
        exitCode: typeof status.exitCode === "number" ? status.exitCode : null,
        command: String(status.command || ""),
        lastLines: (Array.isArray(status.lastLines) ? status.lastLines : []).slice(-MAX_LINES).map(String)
    };
}

/**
 * The supervisor outside Node-RED that AI_SIDEBAR_SERVICE_SUPERVISED names (`make run` sets "make run"), as a
 * supervisor status of state "external", or null when none is named.
 *
 * @param {*} by the variable's value
 * @returns {?{state: string, by: string, pid: null, exitCode: null, command: string, lastLines: string[]}}
 */
function externalSupervisor(by) {
    const name = typeof by === "string" ? by.trim().slice(0, 100) : "";
    return name ? { state: "external", by: name, restarting: false, pid: null, exitCode: null, command: "",
        lastLines: [] } : null;
}

/**
 * Whether a supervisor will start the service (again): the plugin's own while it is starting or running it, or
 * waiting to start it again after an unexpected exit (`restarting`), or one outside Node-RED that
 * AI_SIDEBAR_SERVICE_SUPERVISED names. The editor's
 * banner reads the same states from the service-status answer (resources/service-status/service-banner.js).
 *
 * @param {?{state: string, restarting: (boolean|undefined)}} supervisor `status()` of the plugin's supervisor (plugins/lib/supervisor.js), or null
 * @param {string|undefined} supervisedBy AI_SIDEBAR_SERVICE_SUPERVISED
 * @returns {boolean}
 */
function restartExpected(supervisor, supervisedBy) {
    const view = supervisorView(supervisor) || externalSupervisor(supervisedBy);
    return !!view && (view.restarting || ["starting", "running", "external"].indexOf(view.state) !== -1);
}

/**
 * The answer of the service-status route.
 *
 * With a supervisor (the plugin starts the service itself) the banner shows its state and last lines instead of
 * commands; only when it has stopped and the package bundles a wheel is installing that wheel offered, since a
 * missing Python package is the usual reason.
 *
 * @param {object} facts
 * @param {boolean} facts.reachable whether the service answered its /healthz
 * @param {string} facts.serviceUrl the plugin's AI_SIDEBAR_SERVICE_URL
 * @param {?{state: string, pid: ?number, exitCode: ?number, command: string, lastLines: string[]}} facts.supervisor
 *     `status()` of the running supervisor (plugins/lib/supervisor.js), or null
 * @param {?string} facts.wheel absolute path of `<palette dir>/python/*.whl`, or null
 * @param {string} [facts.venv] where the pip command puts the wheel (see startCommands)
 * @param {number} [facts.nodeRedPort] this Node-RED's port (see startCommands)
 * @param {string} [facts.supervisedBy] what restarts the service outside Node-RED (AI_SIDEBAR_SERVICE_SUPERVISED,
 *     e.g. "make run"): without a supervisor of the plugin's own, the answer's supervisor is
 *     `{state: "external", by}` and no command is offered (installing or starting it again would be wrong)
 * @returns {{reachable: boolean, serviceUrl: string, supervisor: ?object,
 *     commands: {id: ("pip"|"run"|"docker"|"supervise"), command: string}[]}}
 */
function serviceStatus(facts) {
    const supervisor = supervisorView(facts.supervisor) || externalSupervisor(facts.supervisedBy);
    let commands;
    if (!supervisor) {
        commands = startCommands(facts.serviceUrl, facts.wheel || null, facts);
    } else if ((supervisor.state === "exited" || supervisor.state === "failed") && facts.wheel) {
        commands = startCommands(facts.serviceUrl, facts.wheel, facts).slice(0, 1);
    } else {
        commands = [];
    }
    return {
        reachable: !!facts.reachable,
        serviceUrl: displayUrl(facts.serviceUrl),
        supervisor: supervisor,
        commands: commands
    };
}

/**
 * The wheel the package bundles (`npm pack` puts it in `<palette dir>/python/`), newest name last.
 *
 * @param {string[]} fileNames the entries of that folder
 * @returns {?string} the chosen file name, or null when there is none
 */
function chooseWheel(fileNames) {
    const wheels = fileNames.filter(function (name) {
        return /\.whl$/.test(name);
    }).sort(function (a, b) {
        return a.localeCompare(b, "en", { numeric: true });
    });
    return wheels.length ? wheels[wheels.length - 1] : null;
}

module.exports = { serviceStatus, restartExpected, startCommands, displayUrl, servicePort, chooseWheel };
