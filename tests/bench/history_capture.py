"""The flow history's capture against a real Node-RED 4.1 and the service as a process (issue 35): what 200 deploys
of a 500-node workspace, a few nodes changed each, keep in the memory database against 200 full copies (target
≤ 5 %), and whether capturing delays the deploy: ``POST /flows`` (deployment type ``nodes``, the editor's "modified
nodes") timed with the service's capture on, then with the same service started with ``AI_SIDEBAR_FLOW_HISTORY=false``,
p50 and p95 side by side (the capture off first, after 10 unmeasured deploys that warm Node-RED up).

With the capture on, each deploy waits until the service kept it before the next (as a person deploys: the capture
reads the flows once per new ``rev``, and deploys faster than that read are kept as one); the storage is
:meth:`service.history.store.HistoryStore.storage` of the service's SQLite file, read from this process. The sizes of
a full copy are its compact JSON characters, as ``tests/test_flow_history.py`` counts them.

Run alone: ``.venv/bin/python -m tests.bench.history_capture`` (prints the targets, writes nothing).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from service.history.store import HistoryStore
from service.memory.backends import open_database
from tests.support.nodered import NodeRed, free_port

from .client import percentile
from .history_diff import workspace
from .stack import ModelProcess, ServiceProcess, service_env

V2 = {"Node-RED-API-Version": "v2"}


def touch(flows: list[dict[str, Any]], round_number: int, changes: int) -> None:
    """Change the code of ``changes`` function nodes of ``flows`` in place, different ones each round."""
    nodes = [node for node in flows if node["type"] == "function"]
    for k in range(changes):
        node = nodes[(round_number * 7 + k * 13) % len(nodes)]
        node["func"] += f"\n// change {round_number}.{k}"


async def post_flows(http: aiohttp.ClientSession, url: str, flows: list[dict[str, Any]]) -> tuple[str, float]:
    """Deploy ``flows`` over the current rev; returns the new rev and the ``POST /flows`` time, milliseconds."""
    async with http.get(f"{url}/flows", headers=V2) as answer:
        rev = (await answer.json())["rev"]
    started = time.perf_counter()
    async with http.post(f"{url}/flows", json={"rev": rev, "flows": flows},
                         headers={**V2, "Node-RED-Deployment-Type": "nodes"}) as answer:
        body = await answer.json()
        elapsed = 1000 * (time.perf_counter() - started)
    if answer.status != 200:
        raise RuntimeError(f"deploy refused: {answer.status} {body}")
    return body["rev"], elapsed


async def captured(store: HistoryStore, rev: str, timeout: float = 30.0) -> None:
    """Wait until the service kept ``rev`` (polling its database); raises TimeoutError."""
    deadline = time.monotonic() + timeout
    while not await store.has(rev):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the service did not keep {rev} within {timeout} s")
        await asyncio.sleep(0.01)


def summary(samples: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(samples, 50), "p95": percentile(samples, 95)}


async def run(deploys: int = 200, nodes: int = 500, changes: int = 3, off_deploys: int | None = None,
              warmup: int = 10) -> dict[str, Any]:
    """``{"nodes", "deploys", "changed_per_deploy", "storage": {snapshots, parts, bytes, full_copy_bytes, ratio},
    "deploy_ms": {"capture_on": {p50, p95}, "capture_off": {p50, p95}}}``: ``ratio`` the stored bytes over
    ``deploys`` full copies (0-1); the deploy times in milliseconds (``off_deploys`` deploys with the capture off,
    default as many, after ``warmup`` unmeasured ones). The storage holds the state kept when the service connected
    too (``snapshots`` is ``deploys`` + 1), counted against the ``deploys`` full copies all the same."""
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as name:
        workdir = Path(name)
        flows = workspace(nodes)
        nodered = NodeRed(userdir=workdir / "nodered", port=free_port(), flows=flows, with_palette=False)
        nodered.start(timeout=90)
        service: ServiceProcess | None = None
        db_path = workdir / "service.db"
        try:
            def start_service(history: bool) -> ServiceProcess:
                port = free_port()
                env = service_env(port=port, nodered_url=nodered.url, model=ModelProcess(), db_path=db_path,
                                  mcp=False, extra={"AI_SIDEBAR_FLOW_HISTORY": "true" if history else "false"})
                started = ServiceProcess(env=env, port=port, log_path=workdir / "service.log")
                started.start()
                return started

            full_copy = len(json.dumps(flows, separators=(",", ":")))
            on: list[float] = []
            off: list[float] = []
            # The capture off first, after unmeasured deploys that warm Node-RED up; then on, for the same count.
            service = start_service(False)
            async with aiohttp.ClientSession() as http:
                for round_number in range(-warmup, off_deploys or deploys):
                    touch(flows, round_number, changes)
                    elapsed = (await post_flows(http, nodered.url, flows))[1]
                    if round_number >= 0:
                        off.append(elapsed)
            service.stop()
            service = start_service(True)
            db = await open_database(db_path)
            try:
                store = await HistoryStore.open(db)
                async with aiohttp.ClientSession() as http:
                    for round_number in range(deploys):
                        touch(flows, 10_000 + round_number, changes)
                        rev, elapsed = await post_flows(http, nodered.url, flows)
                        on.append(elapsed)
                        await captured(store, rev)
                    usage = await store.storage()
            finally:
                await db.close()
        finally:
            if service is not None:
                service.stop()
            nodered.stop()
    return {"nodes": nodes, "deploys": deploys, "changed_per_deploy": changes,
            "storage": {**usage, "full_copy_bytes": full_copy, "ratio": usage["bytes"] / (deploys * full_copy)},
            "deploy_ms": {"capture_on": summary(on), "capture_off": summary(off)}}


def main() -> int:
    from .report import capture_targets

    results = asyncio.run(run())
    print(results)
    for target in capture_targets({"history_capture": results}):
        print(target.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
