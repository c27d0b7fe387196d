"""The build loop (issue 34) on 10 scripted build tasks, against a real Node-RED 4.1, the service in this process
and the scripted model server: per task the model calls and tool calls, and the time the service adds per loop round
beyond the model's and Node-RED's (target ≤ 50 ms).

Each task is "convert Fahrenheit to Celsius" with its own names and test value: a plan (``propose_plan``), approved
with its changes, builds three nodes (``add_nodes``, listed: no card) and the service checks them on the running flow.
Every other task's first function is wrong (scripted), so its check fails, the model's fix (``update_node``) waits
for its card, is approved, and the second round passes; every third task has no inject of its own and is tested
through a temporary test tab (``test_inject``). A *round* is a check round; a task's rounds are all in its two or
three requests (stream-chat, then one resume per decision).

Time added by the service = each request's wall time (sent until ``done`` read) − the model server's time for the
requests it answered meanwhile (from receiving a request until its answer is written) − the time of the service's
Node-RED calls (:meth:`NodeRedClient._request`) − the time it waits for Node-RED's runtime (a deploy to start, a
triggered message to arrive: :meth:`EvidenceBuffer.started` / :meth:`EvidenceBuffer.arrivals`), divided by the
task's rounds. Localhost hops and the SSE parsing of this client count as the service's. On a shared machine the
wall time grows with the load (the figures say the load average), so the CPU time of this process per round (the
service, this client and the model server's thread; Node-RED runs apart) is given beside it.

Run alone: ``.venv/bin/python -m tests.bench.build_loop`` (prints the figures, writes nothing).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from service.nodered.client import NodeRedClient
from service.nodered.evidence import EvidenceBuffer
from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed, example_flows, free_port
from tests.support.sse import read_events
from tests.support.writable import WRITABLE_EXAMPLES, settings_for

from .client import percentile

TASKS = 10
TARGET_MS = 50.0
HEADERS = {"X-Node-RED-User": "bench"}
FIXED = "msg.payload = Math.round((msg.payload - 32) * 5 / 9 * 100) / 100;\nreturn msg;"
BUGGY = "msg.payload = msg.payload - 32 * 5 / 9;\nreturn msg;"


class TimedModelServer(ScriptedModelServer):
    """The scripted model server, adding up how long it spends on each request (seconds, in :attr:`busy`)."""

    def __init__(self) -> None:
        super().__init__()
        self.busy = 0.0
        self._busy_lock = threading.Lock()

    async def _handle(self, request: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super()._handle(request)
        finally:
            with self._busy_lock:
                self.busy += time.perf_counter() - started


class Timer:
    """Adds up the time spent in the wrapped coroutine functions (Node-RED calls and runtime waits), seconds."""

    def __init__(self) -> None:
        self.spent = 0.0

    def wrap(self, owner: type, name: str) -> Callable[[], None]:
        original = getattr(owner, name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - started

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)


def script_task(model: TimedModelServer, index: int, tab_id: str, nodered: NodeRed) -> None:
    """Script the model for task ``index``: plan and build, then (from its responder, called when the script is
    used up) the fix of a wrong function, built when asked (the deployed function's id is known only then), and the
    last words."""
    fahrenheit = 50 + 10 * index
    celsius = round((fahrenheit - 32) * 5 / 9, 2)
    names = {k: f"bench {k} {index}" for k in ("inject", "function", "debug")}
    with_inject = index % 3 != 2
    check: dict[str, Any] = {"debug": names["debug"], "expect": celsius}
    if with_inject:
        check["inject"] = names["inject"]
    else:
        check["test_inject"] = {"to": names["function"], "payload": fahrenheit, "payloadType": "num"}
    y = 80 + 50 * index
    nodes = [{"id": "f", "type": "function", "name": names["function"], "func": BUGGY if index % 2 else FIXED,
              "outputs": 1, "x": 320, "y": y, "wires": [["d"]]},
             {"id": "d", "type": "debug", "name": names["debug"], "active": True, "tosidebar": True,
              "console": False, "complete": "payload", "targetType": "msg", "x": 520, "y": y, "wires": []}]
    if with_inject:
        nodes.insert(0, {"id": "i", "type": "inject", "name": names["inject"], "props": [{"p": "payload"}],
                         "payload": str(fahrenheit), "payloadType": "num", "repeat": "", "once": False, "x": 120,
                         "y": y, "wires": [["f"]]})
    model.script(
        Reply(tool_calls=[{"name": "propose_plan", "arguments": {"steps": [{
            "title": f"Convert {fahrenheit} °F", "changes": [{"tool": "add_nodes", "target": tab_id}],
            "test": f"{fahrenheit} °F shows {celsius}", "check": check}]}}]),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab_id, "nodes": nodes}}]))
    fixes = [1] if index % 2 else []

    def respond(_body: dict[str, Any]) -> Reply:
        if fixes:
            fixes.pop()
            function = next(n for n in nodered.admin("/flows")["flows"] if n.get("name") == names["function"])
            return Reply(tool_calls=[{"name": "update_node", "arguments": {"node_id": function["id"],
                                                                            "properties": {"func": FIXED}}}])
        return Reply(text=f"{fahrenheit} °F is {celsius} °C.")

    model.responder = respond


async def run_task(client: TestClient, model: TimedModelServer, nodered_time: Timer, index: int, tab_id: str,
                   nodered: NodeRed, token: str) -> dict[str, Any]:
    """One task: its requests' wall time, the model's and Node-RED's share, its model and tool calls and rounds."""
    model.reset()
    script_task(model, index, tab_id, nodered)
    wall = model_busy = nodered_spent = cpu = 0.0
    tool_calls = rounds = 0
    body: dict[str, Any] = {"message": f"build converter {index}", "mode": "plan"}
    path = "/ai-sidebar/stream-chat"
    while True:
        busy_before, spent_before = model.busy, nodered_time.spent
        started, cpu_started = time.perf_counter(), time.process_time()
        response = await client.post(path, json=body, headers={**HEADERS, "Authorization": f"Bearer {token}"})
        if response.status != 200:
            raise RuntimeError(f"task {index}: {path} answered {response.status}: {await response.text()}")
        events = await read_events(response)
        wall += time.perf_counter() - started
        cpu += time.process_time() - cpu_started
        model_busy += model.busy - busy_before
        nodered_spent += nodered_time.spent - spent_before
        tool_calls += sum(1 for e in events if e["type"] == "tool_call")
        rounds += sum(1 for e in events if e["type"] == "check")
        waiting = next((e for e in events if e.get("resumeToken")), None)
        if waiting is None:
            verdict = next((e for e in events if e["type"] == "verdict"), None)
            break
        decision: dict[str, Any] = {"type": "approve", **({"planChanges": True} if waiting["type"] == "plan" else {})}
        path, body = "/ai-sidebar/resume", {"resumeToken": waiting["resumeToken"], "decisions": [decision]}
    added = wall - model_busy - nodered_spent
    return {"task": index, "model_calls": len(model.requests), "tool_calls": tool_calls, "rounds": rounds,
            "verdict": verdict and verdict["status"], "wall_ms": round(1000 * wall, 1),
            "model_ms": round(1000 * model_busy, 1), "nodered_ms": round(1000 * nodered_spent, 1),
            "added_per_round_ms": round(1000 * added / max(rounds, 1), 1),
            "cpu_per_round_ms": round(1000 * cpu / max(rounds, 1), 1)}


async def run(tasks: int = TASKS) -> dict[str, Any]:
    """Start Node-RED, the model server and the service, run ``tasks`` build tasks, return the figures."""
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        nodered = NodeRed(userdir=Path(tmp) / "nodered", port=free_port(), flows=example_flows(WRITABLE_EXAMPLES),
                          with_palette=False)
        nodered.start()
        model = TimedModelServer()
        model.start()
        timer = Timer()
        restore = [timer.wrap(NodeRedClient, "_request"), timer.wrap(EvidenceBuffer, "started"),
                   timer.wrap(EvidenceBuffer, "arrivals")]
        try:
            settings = settings_for(nodered, model, Path(tmp))
            client = TestClient(TestServer(create_app(settings)))
            await client.start_server()
            try:
                buffer = client.app[EVIDENCE]
                deadline = time.monotonic() + 30  # the comms subscription starts with the app; generous when busy
                while not buffer.connected:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the service did not subscribe to Node-RED's comms within 30 s")
                    await asyncio.sleep(0.05)
                tab_id = next(n["id"] for n in nodered.admin("/flows")["flows"] if n["type"] == "tab")
                results = [await run_task(client, model, timer, i, tab_id, nodered,
                                          settings.token.get_secret_value()) for i in range(tasks)]
            finally:
                await client.close()
        finally:
            for undo in restore:
                undo()
            model.stop()
            nodered.stop()
    added = [r["added_per_round_ms"] for r in results]
    cpu = [r["cpu_per_round_ms"] for r in results]
    return {"tasks": results, "done": sum(1 for r in results if r["verdict"] == "done"),
            "model_calls_per_task": sum(r["model_calls"] for r in results) / len(results),
            "tool_calls_per_task": sum(r["tool_calls"] for r in results) / len(results),
            "rounds": sum(r["rounds"] for r in results),
            "added_per_round_ms_p50": percentile(added, 50), "added_per_round_ms_max": max(added),
            "cpu_per_round_ms_p50": percentile(cpu, 50), "load_average": os.getloadavg()[0],
            "target_ms": TARGET_MS}


def main() -> int:
    figures = asyncio.run(run())
    for task in figures["tasks"]:
        print(json.dumps(task))
    summary = {k: v for k, v in figures.items() if k != "tasks"}
    print(json.dumps(summary))
    return 0 if figures["added_per_round_ms_p50"] <= TARGET_MS and figures["done"] == len(figures["tasks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
