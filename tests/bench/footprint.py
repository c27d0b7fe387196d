"""Footprint of one service worker with default settings (issue 33): cold start to ``/healthz``, resident memory
idle and after 100 chats with tools and retrieval, for each way the service reaches its own MCP server: in its
process over memory streams (the default) and as a stdio child (``MCP_TRANSPORT=stdio``, as before).

Each transport gets a fresh service (fresh port and memory database) against the bench's Node-RED and model
server. Idle is measured once the service's process tree has settled (its background start-up done: the MCP
server's start, the first knowledge refresh); a chat asks the default scenario a question (so the agent runs, with
the knowledge retrieval its router decides) while the scripted model calls one of the service's own MCP server's
tools per chat (round robin over :data:`MCP_TOOLS`), then answers. RSS is ``VmRSS`` of the service and of every
process under it (its MCP child, when there is one), from ``/proc``.

``python -m tests.bench.footprint`` runs it alone (``BENCH_QUICK=1``: 10 chats) and writes
``bench-results/footprint-<date>.json``; ``make bench`` runs it as a phase.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.nodered import REPO, free_port

from . import client
from .stack import SERVICE_TOKEN, Stack, cpu_seconds, memory_kib, own_memory_kib, process_tree, settled

# Tools the service's own MCP server answers (not the service's in-process ones): each chat calls one of them.
MCP_TOOLS = ("get_settings", "get_flows", "list_node_types")
# A change request: the router retrieves the nodes' help for it, and since it needs tools the agent answers, with
# the read tools a caller without write permission is offered.
QUESTION = "Add a delay node to rate-limit the alarms to one message per second"
TRANSPORTS = ("memory", "stdio")


async def chat(http: aiohttp.ClientSession, url: str, number: int) -> dict[str, int]:
    """One agent chat on the service route: counts of its ``tool_result`` events (ok or not), of its ``tool_call``
    events by ``<tool>/<origin>`` (the knowledge retrieval's too), and whether it ended with ``done`` and no
    ``error``."""
    counts = {"tool_ok": 0, "tool_failed": 0, "done": 0, "error": 0}
    body = {"message": f"{QUESTION} [bench footprint-{number}]", "sessionId": f"footprint-{number % 10}"}
    async with http.post(f"{url}/ai-sidebar/stream-chat", json=body,
                         headers={"Authorization": f"Bearer {SERVICE_TOKEN}"}) as answer:
        if answer.status != 200:
            counts["error"] += 1
            return counts
        async for line in answer.content:
            if not line.startswith(b"data: "):
                continue
            event = json.loads(line[6:])
            if event.get("type") == "tool_call":
                key = f"call {event.get('tool')}/{event.get('origin')}"
                counts[key] = counts.get(key, 0) + 1
            elif event.get("type") == "tool_result":
                counts["tool_ok" if event.get("ok") else "tool_failed"] += 1
            elif event.get("type") in ("done", "error"):
                counts[event["type"]] += 1
    return counts


def rss_mb(pid: int) -> dict[str, Any]:
    """VmRSS of ``pid`` alone, of its descendants and of the whole tree, in MB, and how many processes it has."""
    own, total = own_memory_kib(pid, "VmRSS"), memory_kib(pid, "VmRSS")
    # The service's own split (proc(5)): anonymous memory (the heap: what the process holds) and file pages mapped
    # (its libraries, and the memory database's pages SQLite maps: reclaimable, but resident).
    return {"service_mb": round(own / 1024, 1), "children_mb": round((total - own) / 1024, 1),
            "total_mb": round(total / 1024, 1), "processes": len(process_tree(pid)),
            "service_anon_mb": round(own_memory_kib(pid, "RssAnon") / 1024, 1),
            "service_file_mb": round(own_memory_kib(pid, "RssFile") / 1024, 1)}


async def measure(stack: Stack, transport: str, chats: int) -> dict[str, Any]:
    """Cold start, idle RSS and RSS after ``chats`` chats of one fresh service whose MCP server runs over
    ``transport``."""
    service = stack.new_service(free_port(), f"footprint-{transport}", extra={"MCP_TRANSPORT": transport})
    try:
        cold_start = service.start(timeout=60)  # generous: the machine is shared; the figure is what it took
        # CPU to the first /healthz 200 (the MCP server starts in the background, maybe within): what a busy
        # machine's wall time hides.
        cold_cpu = cpu_seconds(service.pid)
        waited = await settled(service.pid, limit=60)
        idle = rss_mb(service.pid)
        stack.model.control("reply", {"words": 12, "token_delay": 0, "tools": list(MCP_TOOLS)})
        totals = {"tool_ok": 0, "tool_failed": 0, "done": 0, "error": 0}
        started = time.monotonic()
        async with client.session(timeout=120) as http:
            for number in range(chats):
                for key, value in (await chat(http, service.url, number)).items():
                    totals[key] = totals.get(key, 0) + value
        seconds = time.monotonic() - started
        await settled(service.pid, limit=30)
        after = rss_mb(service.pid)
    finally:
        stack.model.control("reply", {"words": 8, "token_delay": 0.02})
        service.stop()
    mcp_calls = sum(totals.get(f"call {name}/agent", 0) for name in MCP_TOOLS)
    return {"transport": transport, "mcp_tool_calls": mcp_calls, "cold_start_s": round(cold_start, 2),
            "cold_start_cpu_s": round(cold_cpu, 2),
            "settle_wait_s": round(waited, 1),
            "idle": idle, "after_chats": after, "chats": chats, "chat_seconds": round(seconds, 1), **totals}


async def run(stack: Stack, chats: int = 100) -> dict[str, Any]:
    """:func:`measure` for each of :data:`TRANSPORTS`, with the load average before and after."""
    results: dict[str, Any] = {"load_average_before": os.getloadavg()}
    for transport in TRANSPORTS:
        results[transport] = await measure(stack, transport, chats)
    results["load_average_after"] = os.getloadavg()
    return results


def lines(results: dict[str, Any]) -> list[str]:
    """The footprint table as text."""
    out = [f"Footprint, one worker, default settings (load average {results['load_average_before'][0]:.1f} → "
           f"{results['load_average_after'][0]:.1f})",
           f"{'MCP server':<14}{'cold start (CPU)':>20}{'idle RSS':>22}{'after chats':>24}{'tools ok/failed':>17}"]
    for transport in TRANSPORTS:
        each = results[transport]
        idle, after = each["idle"], each["after_chats"]
        out.append(f"{'in-process' if transport == 'memory' else 'stdio child':<14}{each['cold_start_s']:>9.2f} s "
                   f"({each['cold_start_cpu_s']:.2f} s CPU)"
                   f"{idle['total_mb']:>9.1f} MB ({idle['processes']} proc)"
                   f"{after['total_mb']:>9.1f} MB after {each['chats']:>3}"
                   f"{each['mcp_tool_calls']:>11}{each['tool_ok']:>10}/{each['tool_failed']}")
    return out


async def main() -> int:
    quick = os.environ.get("BENCH_QUICK") == "1"
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-footprint-"))
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    stack = Stack(workdir)
    try:
        print("footprint: starting model server, Node-RED and the service ...", file=sys.stderr, flush=True)
        stack.start()
        stack.service.stop()  # the stack's own service is not measured; each transport gets a fresh one
        results = await run(stack, chats=10 if quick else 100)
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results["date"] = dt.datetime.now().isoformat(timespec="seconds")
    out_dir = REPO / "bench-results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"footprint-{stamp}.json"
    path.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print("\n".join(lines(results)))
    print(f"\nwritten: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
