"""Hostile editor ``flowData`` (megabytes, thousands of subflows): for tests/test_hostile_flow_data.py and the
bench's phase of the same name (tests/bench/hostile.py)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from tests.support.sse import read_events


def many_subflows(subflows: int = 4900) -> list[dict]:
    """One tab holding an instance of each of ``subflows`` subflow definitions of two nodes each
    (~2.5 MB, 19,601 items):
    slicing that rescans every item per subflow is quadratic."""
    flows: list[dict] = [{"id": "hostile-tab", "type": "tab", "label": "hostile"}]
    for number in range(subflows):
        sub = f"sf{number:05d}"
        flows += [
            {"id": sub, "type": "subflow", "name": f"S{number}", "env": [],
             "in": [{"x": 40, "y": 40, "wires": [{"id": f"{sub}a"}]}],
             "out": [{"x": 400, "y": 40, "wires": [{"id": f"{sub}b", "port": 0}]}]},
            {"id": f"{sub}a", "type": "change", "z": sub, "x": 120, "y": 40, "rules": [], "wires": [[f"{sub}b"]]},
            {"id": f"{sub}b", "type": "function", "z": sub, "x": 280, "y": 40, "func": "return msg;",
             "wires": [[]]},
            {"id": f"i{number:05d}", "type": f"subflow:{sub}", "z": "hostile-tab", "x": 100, "y": 40,
             "wires": [[]]},
        ]
    return flows


def megabytes_of_code(nodes: int = 1200) -> list[dict]:
    """One tab small enough to be read, with ~3 MB of function code to redact and shorten."""
    code = "\n".join(f"const value{line} = msg.payload.items[{line}].value * {line}; // token = \"abc{line}\""
                     for line in range(40))
    flows: list[dict] = [{"id": "hostile-tab", "type": "tab", "label": "hostile"}]
    flows += [{"id": f"f{number:05d}", "type": "function", "z": "hostile-tab", "x": 100, "y": 40, "func": code,
               "wires": [[f"f{number + 1:05d}"]]} for number in range(nodes)]
    return flows


@dataclass
class ProbedRequest:
    """A chat request with ``/healthz`` asked again and again while it ran: its SSE events, each probe's latency
    (seconds, in order) and the request's own time (seconds, from sending to the last event)."""

    events: list[dict[str, Any]]
    probes: list[float]
    elapsed: float


async def probed_chat(http: aiohttp.ClientSession, base: str, body: bytes) -> ProbedRequest:
    """POST ``body`` to ``<base>/ai-sidebar/stream-chat`` and, until its stream ends, GET ``<base>/healthz`` one
    probe after the other, as a load balancer's health check would (``http`` carries the service's token).

    Raises:
        AssertionError: the chat is not answered 200, or a probe is not answered 200 with status "ok".
    """
    async def chat() -> list[dict[str, Any]]:
        async with http.post(f"{base}/ai-sidebar/stream-chat", data=body) as response:
            assert response.status == 200, await response.text()
            return await read_events(response)

    started = time.perf_counter()
    task = asyncio.create_task(chat())
    probes: list[float] = []
    while not task.done():
        before = time.perf_counter()
        async with http.get(f"{base}/healthz") as health:
            assert health.status == 200 and (await health.json())["status"] == "ok"
        probes.append(time.perf_counter() - before)
    events = await task
    return ProbedRequest(events, probes, time.perf_counter() - started)


def hostile_body(flow_data: list[dict[str, Any]]) -> bytes:
    """The sidebar's request body asking about the hostile tab of ``flow_data``."""
    return json.dumps({"message": "explain the current flow", "selectedFlow": {"id": "hostile-tab"},
                       "flowData": flow_data, "silent": True}).encode()
