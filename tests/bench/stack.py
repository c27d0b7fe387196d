"""The processes a benchmark runs against, all on 127.0.0.1: the scripted model server, Node-RED 4.1 with the
palette package and every Node-RED example flow, and the service started as ``python -m service``.

Also the measurements taken from ``/proc``: CPU time and resident memory of a process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.health import wait_healthy
from tests.support.nodered import EXAMPLES_DIR, PALETTE, REPO, NodeRed, free_port

SERVICE_TOKEN = "bench-service-token-0123456789abcdef"
MODEL_API_KEY = "sk-bench-key-for-scripted-server-0001"
BENCH_CONFIG_ID = "bench0aiconfig01"
BENCH_SCENARIO = "bench-chat"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- /proc ---------------------------------------------------------------------------------------------------

def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (``/proc/<pid>/task/<tid>/children``, proc(5)): the service's workers when it
    runs several (``AI_SIDEBAR_WORKERS``); its MCP child (a Node-free Python process) is counted too."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    queue += [int(child) for child in children.read().split()]
        except OSError:
            continue
    return found


def _own_cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return 0.0
    fields = text[text.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its running descendants so far (``/proc/<pid>/stat`` fields 14
    and 15, proc(5))."""
    return sum(_own_cpu_seconds(p) for p in process_tree(pid))


async def settled(pid: int, share: float = 0.05, window: float = 0.5, limit: float = 60.0) -> float:
    """Wait until ``pid``'s process tree uses less than ``share`` of a core over ``window`` seconds (its start-up
    work done: each worker's first knowledge refresh, lazy imports), at most ``limit`` seconds; returns the wait."""
    import asyncio

    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = cpu_seconds(pid)
        await asyncio.sleep(window)
        if cpu_seconds(pid) - before < share * window:
            break
    return time.monotonic() - started


def own_memory_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` size in KiB of ``pid`` alone."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def memory_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` size in KiB, summed over ``pid`` and its descendants: ``VmHWM`` (peak resident
    set) or ``VmRSS`` (now)."""
    total = own_memory_kib(pid, key)
    for child in process_tree(pid)[1:]:
        try:
            total += own_memory_kib(child, key)
        except (OSError, KeyError):
            continue
    return total


def reset_peak_rss(pid: int) -> bool:
    """Reset ``VmHWM`` to the current RSS (writing 5 to ``clear_refs``, proc(5)) of ``pid`` and its descendants;
    False where not allowed."""
    try:
        for each in process_tree(pid):
            with open(f"/proc/{each}/clear_refs", "w") as refs:
                refs.write("5")
        return True
    except OSError:
        return False


# -- flows ---------------------------------------------------------------------------------------------------

def _replace_ids(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_replace_ids(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _replace_ids(v, mapping) for k, v in value.items()}
    return value


@dataclass
class ExampleTab:
    """One tab of the benchmark's flows: the example file it came from and its id and label."""

    source: str
    tab_id: str
    label: str


def example_files() -> list[Path]:
    """Every example flow file Node-RED installs (``@node-red/nodes/examples``), in path order."""
    return sorted(EXAMPLES_DIR.rglob("*.json"))


def bench_flows(disabled: bool = True) -> tuple[list[dict[str, Any]], list[ExampleTab]]:
    """Every Node-RED example file, each on its own tab (a file that brings its own tabs keeps them).

    Ids that an earlier file already used are renamed throughout the later file (wires, ``z``, links, config
    references), so no example is dropped. Tabs are disabled by default: nothing in them runs, so no example
    (inject "once", http request, mqtt, tcp) sends traffic anywhere; the Admin API still returns them whole.
    """
    flows: list[dict[str, Any]] = []
    tabs: list[ExampleTab] = []
    seen: set[str] = set()
    counter = 0
    for path in example_files():
        nodes = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(nodes, list):
            continue
        own_ids = {n["id"] for n in nodes if isinstance(n, dict) and "id" in n}
        outer_tabs = sorted({n["z"] for n in nodes if n.get("z") and n["z"] not in own_ids})
        mapping: dict[str, str] = {}
        for old in sorted(own_ids | set(outer_tabs)):
            if old in seen:
                counter += 1
                mapping[old] = f"bench{counter:06d}.{abs(hash(old)) % 10**6:06d}"
        nodes = [_replace_ids(n, mapping) for n in nodes]
        outer_tabs = [mapping.get(t, t) for t in outer_tabs]
        relative = str(path.relative_to(EXAMPLES_DIR))
        for tab_id in outer_tabs:
            flows.append({"id": tab_id, "type": "tab", "label": path.stem, "disabled": disabled, "info": ""})
            tabs.append(ExampleTab(relative, tab_id, path.stem))
        for node in nodes:
            if node.get("type") == "tab":
                node["disabled"] = disabled
                tabs.append(ExampleTab(relative, node["id"], node.get("label", "")))
        flows.extend(nodes)
        seen |= {n["id"] for n in nodes} | set(outer_tabs)
    return flows, tabs


def tab_export(flows: list[dict[str, Any]], tab_id: str) -> list[dict[str, Any]]:
    """What Node-RED's "export current flow" gives for a tab: the tab, its nodes, the config nodes they use.

    Written independently of ``service.nodered.flows`` so that the prompt check does not trust the code it checks.
    """
    by_id = {n["id"]: n for n in flows}
    tab = by_id[tab_id]
    members = [n for n in flows if n.get("z") == tab_id]
    configs: dict[str, dict[str, Any]] = {}
    queue = list(members)
    while queue:
        node = queue.pop(0)
        for key, value in node.items():
            if key in ("id", "z", "wires", "type", "g") or not isinstance(value, str):
                continue
            target = by_id.get(value)
            if (target is not None and "x" not in target and target.get("z") in (None, "", tab_id)
                    and target.get("type") not in ("tab", "subflow", "group", "junction")
                    and target["id"] not in configs and target not in members):
                configs[target["id"]] = target
                queue.append(target)
    return [tab, *members, *configs.values()]


def palette_has_config_node() -> bool:
    """Whether the palette package registers the ``ai-config`` node (it decides how pure chat is asked)."""
    package = json.loads((PALETTE / "package.json").read_text(encoding="utf-8"))
    return "ai-config" in (package.get("node-red", {}).get("nodes") or {})


def bench_locales(target: Path) -> Path:
    """A copy of ``locales/`` whose en-US catalog also holds :data:`BENCH_SCENARIO`: the general scenario's
    prompt without tools, so that the sidebar route can ask for pure chat when no ``ai-config`` node exists."""
    shutil.copytree(REPO / "locales", target)
    path = target / "en-US" / "scenarios.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    general = data["scenarios"][data.get("defaultScenario", "general")]
    data["scenarios"][BENCH_SCENARIO] = {"name": "Benchmark chat", "description": "Pure chat, no tools",
                                         "systemPrompt": general["systemPrompt"], "tools": [], "prompts": [],
                                         "keywords": []}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return target


# -- processes -----------------------------------------------------------------------------------------------

def stop_process(process: subprocess.Popen | None, timeout: float = 10) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@dataclass
class ModelProcess:
    """The scripted model server process (:mod:`tests.bench.model_proc`)."""

    process: subprocess.Popen | None = None
    port: int = 0
    control_port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.control_port}/control"

    def start(self) -> ModelProcess:
        self.process = subprocess.Popen([sys.executable, "-m", "tests.bench.model_proc"], cwd=REPO,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the scripted model server did not start")
        ports = json.loads(line)
        self.port, self.control_port = ports["port"], ports["control_port"]
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def control(self, action: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body or {}).encode() if body is not None or action in ("reply", "reset") else None
        request = urllib.request.Request(f"{self.control_url}/{action}", data=data,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())


@dataclass
class ServiceProcess:
    """The service as ``python -m service``, its console script's way."""

    env: dict[str, str]
    port: int
    log_path: Path
    process: subprocess.Popen | None = None
    pid: int = 0
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> float:
        """Start and wait for ``/healthz``; returns seconds from spawn to the first 200."""
        with self.log_path.open("ab") as log:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen([sys.executable, "-m", "service"], env=self.env, cwd=REPO, stdout=log,
                                            stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        ready = wait_healthy(f"{self.url}/healthz", self.process, timeout)
        return ready - self.started_at

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None


def service_env(*, port: int, nodered_url: str, model: ModelProcess, db_path: Path, mcp: bool = True,
                locales: Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The service's environment as an operator would set it, pointed at the bench's Node-RED and model."""
    env = {**os.environ, "AI_SIDEBAR_HOST": "127.0.0.1", "AI_SIDEBAR_PORT": str(port),
           "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "NODE_RED_URL": nodered_url, "AI_PROVIDER": "openai",
           "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": MODEL_API_KEY, "MEMORY_DB_PATH": str(db_path),
           "MCP_TOOLS_ENABLED": "true" if mcp else "false", "AI_SIDEBAR_MAX_STREAMS_PER_USER": "1000",
           "PYTHONUNBUFFERED": "1"}
    if locales is not None:
        env["AI_SIDEBAR_LOCALES_DIR"] = str(locales)
    env.update(extra or {})
    return env


@dataclass
class Stack:
    """Model server, Node-RED and service, started in that order and stopped in reverse."""

    workdir: Path
    mcp: bool = True
    model: ModelProcess = field(default_factory=ModelProcess)
    nodered: NodeRed | None = None
    service: ServiceProcess | None = None
    tabs: list[ExampleTab] = field(default_factory=list)
    flows: list[dict[str, Any]] = field(default_factory=list)
    config_node: bool = False
    locales: Path | None = None

    def start(self) -> Stack:
        self.model.start()
        service_port, nodered_port = free_port(), free_port()
        self.flows, self.tabs = bench_flows()
        self.config_node = palette_has_config_node()
        if self.config_node:
            # A deployed ai-config node with tools off: the sidebar's way to ask for pure chat. No key (the
            # service's own key is used) and no base URL (the service's model server).
            self.flows.append({"id": BENCH_CONFIG_ID, "type": "ai-config", "name": "bench pure chat",
                               "provider": "openai", "model": "", "baseUrl": "", "temperature": "",
                               "maxTokens": "", "memory": True, "tools": False, "scenarios": ""})
        else:
            self.locales = bench_locales(self.workdir / "locales")
        self.nodered = NodeRed(userdir=self.workdir / "nodered", port=nodered_port, flows=self.flows, with_contrib=True,
                               env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}",
                                    "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
        self.nodered.start(timeout=90)
        self.service = self.new_service(service_port, "service")
        self.service.start()
        return self

    def new_service(self, port: int, name: str, **kwargs: Any) -> ServiceProcess:
        env = service_env(port=port, nodered_url=self.nodered.url, model=self.model,
                          db_path=self.workdir / f"{name}.db", mcp=kwargs.pop("mcp", self.mcp),
                          locales=self.locales, **kwargs)
        return ServiceProcess(env=env, port=port, log_path=self.workdir / f"{name}.log")

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
        if self.nodered is not None:
            self.nodered.stop()
        self.model.stop()
