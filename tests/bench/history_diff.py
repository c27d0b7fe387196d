"""The flow history's diff of two deploys of a 500-node workspace (issue 35: ≤ 50 ms p50), measured as
``GET /ai-sidebar/flow-history/diff?from=<rev>&to=<rev>`` does its work: both points resolved from the history in
an SQLite memory database (:func:`service.history.points.resolve`, Node-RED not asked for stored revs) and diffed
(:func:`service.history.diff.flow_diff`). In process, without HTTP (the route adds only its JSON encoding).

Run alone: ``.venv/bin/python -m tests.bench.history_diff`` (prints the targets, writes nothing).
"""

from __future__ import annotations

import asyncio
import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from service.history.diff import flow_diff
from service.history.points import resolve
from service.history.snapshot import kept
from service.history.store import HistoryStore
from service.memory.backends import open_database

from .client import percentile

TABS = 10


def workspace(nodes: int) -> list[dict[str, Any]]:
    """``nodes`` function nodes on :data:`TABS` tabs, each wired to the next on its tab."""
    flows: list[dict[str, Any]] = [{"id": f"tab{t:012d}", "type": "tab", "label": f"Tab {t}", "disabled": False,
                                    "info": ""} for t in range(TABS)]
    for number in range(nodes):
        tab = number % TABS
        following = number + TABS
        flows.append({"id": f"node{number:012d}", "type": "function", "z": f"tab{tab:012d}", "name": f"step {number}",
                      "func": f"msg.payload = (msg.payload || 0) + {number};\nreturn msg;", "outputs": 1,
                      "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": [],
                      "x": 200 + 40 * (number // TABS), "y": 80, "wires": [[f"node{following:012d}"]
                                                                           if following < nodes else []]})
    return flows


def later(flows: list[dict[str, Any]], changes: int) -> list[dict[str, Any]]:
    """``flows`` after an editor's deploy: ``changes`` nodes' code changed, one renamed, one moved, one wire
    added."""
    changed = copy.deepcopy(flows)
    nodes = [node for node in changed if node["type"] == "function"]
    for node in nodes[:changes]:
        node["func"] = node["func"].replace("return msg;", "node.warn(msg.payload);\nreturn msg;")
    nodes[changes]["name"] += " renamed"
    nodes[changes + 1]["x"] += 100
    nodes[changes + 2]["wires"][0].append(nodes[changes + 3]["id"])
    return changed


async def run(nodes: int = 500, changes: int = 5, rounds: int = 60, warmup: int = 5) -> dict[str, Any]:
    """``{"nodes", "changed_nodes", "rounds", "diff_ms": {p50, p95, p99}, "resolve_share"}``: the time of one diff of
    two stored deploys, milliseconds; ``resolve_share`` is the part spent reading both points from the database."""
    with tempfile.TemporaryDirectory(prefix="bench-history-") as workdir:
        db = await open_database(Path(workdir) / "memory.db")
        try:
            store = await HistoryStore.open(db)
            before = workspace(nodes)
            after = later(before, changes)
            await store.save("rev-before", kept(before), origin="editor", at=1_000_000)
            await store.save("rev-after", kept(after), origin="editor", at=1_000_060, counts={})
            totals: list[float] = []
            reads: list[float] = []
            result: dict[str, Any] = {}
            for number in range(warmup + rounds):
                started = time.perf_counter()
                start = await resolve(store, None, "rev-before")  # type: ignore[arg-type]  # stored: no Node-RED
                end = await resolve(store, None, "rev-after")  # type: ignore[arg-type]
                read = time.perf_counter()
                result = flow_diff(start.flows, end.flows)
                done = time.perf_counter()
                if number >= warmup:
                    totals.append(1000 * (done - started))
                    reads.append(1000 * (read - started))
        finally:
            await db.close()
    return {"nodes": nodes, "changed_nodes": changes, "rounds": rounds, "counts": result.get("counts"),
            "diff_ms": {"p50": percentile(totals, 50), "p95": percentile(totals, 95), "p99": percentile(totals, 99)},
            "resolve_share": round(sum(reads) / sum(totals), 2) if totals else None}


def main() -> int:
    from .report import history_targets

    results = asyncio.run(run())
    print(results)
    for target in history_targets({"history_diff": results}):
        print(target.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
