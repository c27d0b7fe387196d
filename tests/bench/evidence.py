"""Runtime evidence under load: Node-RED's debug nodes show 1,000 messages per second for a minute while the service
keeps them (its comms subscription) and answers chats; the service's memory must stay bounded by its evidence
buffer and the chat time to first token move by at most 10 %.

The load: an inject starts a function node that sends 11 messages every 100 ms to 10 debug nodes (1,100 debug
messages per second: Node-RED's comms delivers at most 1,000, 50 messages per 50 ms per connection). A second comms
connection, this benchmark's, counts what Node-RED delivered. Chats are pure chat (no tools), one after the other,
before the burst (baseline) and during it; the service's RSS is sampled every second.

``python -m tests.bench.evidence`` runs it alone (``BENCH_EVIDENCE_SECONDS``, default 60); ``make bench`` runs it
as its last phase with the time its budget leaves.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.nodered import NodeRed, free_port

from . import client
from .latency import QUESTION
from .stack import SERVICE_TOKEN, ModelProcess, ServiceProcess, memory_kib, service_env

TAB, INJECT, SOURCE = "b19e000000000001", "b19e0000000000a1", "b19e0000000000f1"
DEBUG_NODES = [f"b19e0000000000d{n:x}" for n in range(10)]
SENDS_PER_TICK = 10  # every 100 ms, to 10 debug nodes: 1,000 debug messages per second
PURE_CHAT = {"provider": {"provider": "openai", "memory": True, "tools": False}}  # as an ai-config node with tools off


def burst_flows(seconds: float) -> list[dict[str, Any]]:
    """A tab whose inject starts ``seconds`` of 1,100 debug messages per second."""
    code = (f"const end = Date.now() + {int(seconds * 1000)};\nlet seq = 0;\n"
            "const timer = setInterval(() => {\n"
            "    if (Date.now() > end) { clearInterval(timer); return; }\n"
            f"    for (let i = 0; i < {SENDS_PER_TICK}; i++) {{\n"
            "        node.send({payload: {seq: seq++, temperature: 20 + Math.random(), sensor: 'north-3', "
            "ts: Date.now(), password: 'hunter2'}});\n"
            "    }\n}, 100);\nreturn null;")
    debug = [{"id": node_id, "type": "debug", "z": TAB, "name": f"sink {n}", "active": True, "tosidebar": True,
              "console": False, "tostatus": False, "complete": "payload", "targetType": "msg", "statusVal": "",
              "statusType": "auto", "x": 500, "y": 40 + 40 * n, "wires": []} for n, node_id in enumerate(DEBUG_NODES)]
    return [
        {"id": TAB, "type": "tab", "label": "Burst", "disabled": False, "info": ""},
        {"id": INJECT, "type": "inject", "z": TAB, "name": "start", "props": [{"p": "payload"}], "repeat": "",
         "crontab": "", "once": False, "topic": "", "payload": "", "payloadType": "date", "x": 100, "y": 40,
         "wires": [[SOURCE]]},
        {"id": SOURCE, "type": "function", "z": TAB, "name": "burst", "func": code, "outputs": 1, "timeout": 0,
         "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 280, "y": 40, "wires": [DEBUG_NODES]},
        *debug,
    ]


async def count_debug(url: str, counts: list[int], stop: asyncio.Event) -> None:
    """Count the debug messages Node-RED delivers to one comms connection, per second (appended to ``counts``)."""
    ws_url = url.replace("http://", "ws://") + "/comms"
    async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as ws:
        await ws.send_str(json.dumps({"subscribe": "debug"}))
        second, count = time.monotonic() + 1, 0
        while not stop.is_set():
            try:
                message = await ws.receive(timeout=0.2)
            except TimeoutError:
                message = None
            if message is not None and message.type is aiohttp.WSMsgType.TEXT:
                count += sum(1 for item in json.loads(message.data) if item.get("topic") == "debug")
            elif message is not None:
                return
            if time.monotonic() >= second:
                counts.append(count)
                second, count = second + 1, 0


async def chats(service: ServiceProcess, until: float, tag: str, limit: int = 10_000) -> list[float]:
    """Pure chats one after the other until ``until`` (monotonic seconds); their times to first token in ms."""
    ttft: list[float] = []
    async with client.session() as http:
        for number in range(limit):
            if time.monotonic() >= until:
                break
            sample = await client.stream_service(
                http, f"{service.url}/ai-sidebar/stream-chat",
                {"message": f"{QUESTION} [bench {tag}-{number}]", **PURE_CHAT},
                {"Authorization": f"Bearer {SERVICE_TOKEN}"}, tag, str(number))
            if sample.ok:
                ttft.append(sample.ttft_ms)
    return ttft


async def sample_rss(pid: int, samples: list[tuple[float, float]], stop: asyncio.Event, begun: float) -> None:
    while not stop.is_set():
        samples.append((round(time.monotonic() - begun, 1), memory_kib(pid, "VmRSS") / 1024))
        await asyncio.sleep(1)


async def run(workdir: Path, model: ModelProcess, seconds: float = 60, baseline_seconds: float = 15) -> dict[str, Any]:
    """Start a Node-RED with the burst tab and a service on it, measure; both are stopped before returning."""
    model.control("reply", {"words": 4, "token_delay": 0})
    nodered = NodeRed(userdir=workdir / "nodered-evidence", port=free_port(), flows=burst_flows(seconds),
                      with_palette=False)
    port = free_port()
    # No background knowledge refresh: its first run at start would weigh on the baseline and not on the burst.
    env = service_env(port=port, nodered_url=nodered.url, model=model, db_path=workdir / "evidence.db", mcp=False,
                      extra={"AI_SIDEBAR_KNOWLEDGE_REFRESH": "0"})
    service = ServiceProcess(env=env, port=port, log_path=workdir / "service-evidence.log")
    nodered.start(timeout=90)
    try:
        try:
            service.start()
        except RuntimeError as err:
            raise RuntimeError(f"{err}:\n{service.log_path.read_text(errors='replace')[-2000:]}") from None
        await chats(service, time.monotonic() + 5, "warm")  # imports, connections, first model client
        baseline = await chats(service, time.monotonic() + baseline_seconds, "base")
        rss_before = memory_kib(service.pid, "VmRSS") / 1024

        stop = asyncio.Event()
        delivered: list[int] = []
        rss: list[tuple[float, float]] = []
        begun = time.monotonic()
        counter = asyncio.create_task(count_debug(nodered.url, delivered, stop))
        sampler = asyncio.create_task(sample_rss(service.pid, rss, stop, begun))
        async with aiohttp.ClientSession() as http, http.post(f"{nodered.url}/inject/{INJECT}") as answer:
            assert answer.status == 200, await answer.text()
        during = await chats(service, begun + seconds, "burst")
        tool_ms = await read_evidence(service)
        stop.set()
        await asyncio.gather(counter, sampler, return_exceptions=True)
        rss_after = memory_kib(service.pid, "VmRSS") / 1024
    finally:
        service.stop()
        nodered.stop()
    base_p50, during_p50 = _median(baseline), _median(during)
    steady = [mb for at, mb in rss if at >= seconds / 3]
    busy = delivered[2:-2] or delivered
    return {
        "seconds": seconds,
        "debug_messages_per_s": {"median": _median(busy), "min": min(busy, default=None),
                                 "total": sum(delivered)},
        "ttft_ms": {"baseline_p50": base_p50, "burst_p50": during_p50, "baseline_n": len(baseline),
                    "burst_n": len(during),
                    "change_pct": None if not base_p50 or during_p50 is None
                    else round(100 * (during_p50 - base_p50) / base_p50, 1)},
        "rss_mb": {"before": round(rss_before, 1), "peak": round(max((mb for _, mb in rss), default=rss_before), 1),
                   "after": round(rss_after, 1),
                   "growth_after_first_third": round(max(steady) - min(steady), 1) if steady else None},
        "get_debug_messages_ms": tool_ms,
    }


async def read_evidence(service: ServiceProcess) -> dict[str, Any]:
    """Time execute-tool get_debug_messages on the burst tab while the burst runs (60 messages redacted)."""
    async with aiohttp.ClientSession() as http:
        started = time.perf_counter()
        async with http.post(f"{service.url}/ai-sidebar/execute-tool",
                             json={"tool": "get_debug_messages", "params": {"flow_id": TAB}},
                             headers={"Authorization": f"Bearer {SERVICE_TOKEN}"}) as answer:
            data = await answer.json()
        elapsed = round(1000 * (time.perf_counter() - started), 1)
    result = data.get("result") or {}
    shown = result.get("messages") or []
    return {"ms": elapsed, "connected": result.get("connected"), "messages_shown": len(shown),
            "password_redacted": bool(shown) and all("hunter2" not in m["value"] for m in shown)}


def _median(values: list[float] | list[int]) -> float | None:
    return round(statistics.median(values), 1) if values else None


async def main() -> int:
    seconds = float(os.environ.get("BENCH_EVIDENCE_SECONDS", "60"))
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-bench-evidence-"))
    model = ModelProcess().start()
    try:
        result = await run(workdir, model, seconds)
    finally:
        model.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
