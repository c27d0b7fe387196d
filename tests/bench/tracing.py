"""Tracing off costs ≤ 1 % of throughput (issue 21): chats answered per CPU second by the service as built, with
no OTEL_* variables (tracing off), against the same service with its tracing call sites replaced by bare
pass-throughs, as if the code were absent.

In-process (the app under aiohttp's test server, the scripted model answering at once, no Node-RED), so the
service's own CPU time is all that is measured. Each chat runs a tool (``@tools:get_flow_templates``, then the
answer's model call) or a knowledge search and a model call: every traced site is on the path. The two variants
alternate round by round; the result is the median of the per-round ratios (a shared machine's noise is larger
than the effect, so one pair of runs would say nothing).

``python -m tests.bench.tracing`` prints the JSON; ``make bench`` includes it (``tracing_off``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

import service.chat.retrieval_path as retrieval
import service.tools.registry as registry
import service.web.chat_routes as routes
from service.identity import Identity
from service.nodered.settings import EvidenceSettings
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from tests.support.model_server import Reply, ScriptedModelServer

MESSAGES = ("@tools:get_flow_templates", "How do I use the inject node?")


@contextlib.contextmanager
def tracing_absent() -> Iterator[None]:
    """The tracing call sites as if they were not there: the spans' context managers and the request's
    attributes replaced by functions that do nothing."""
    @contextlib.contextmanager
    def bare(_name: str) -> Iterator[Any]:
        yield lambda hits: None

    saved = (registry.tool_span, retrieval.search_span, routes.describe_caller)
    registry.tool_span, retrieval.search_span = bare, bare  # type: ignore[assignment]
    routes.describe_caller = lambda session_id, identity: None  # type: ignore[assignment]
    try:
        yield
    finally:
        registry.tool_span, retrieval.search_span, routes.describe_caller = saved  # type: ignore[assignment]


async def _chats(client: TestClient, model: ScriptedModelServer, count: int) -> float:
    """CPU seconds of ``count`` chats, one after another."""
    started = time.process_time()
    for number in range(count):
        model.script(Reply(text="Here is what I found, briefly."))
        response = await client.post("/ai-sidebar/stream-chat",
                                     json={"message": MESSAGES[number % len(MESSAGES)], "scenario": "general"})
        assert response.status == 200, await response.text()
        body = await response.read()
        assert b'"type": "done"' in body or b'"type":"done"' in body, body[-300:]
    return time.process_time() - started


def site_cost_us(repeat: int = 200_000) -> float:
    """Microseconds the tracing call sites of one chat cost with tracing off, timed directly: one tool span, two
    search spans and the request's attributes (a chat passes at most these; the request middleware and the model
    callback are not installed while tracing is off)."""
    identity = Identity("user", "bench")

    def one_chat() -> None:
        with registry.tool_span("get_flow"):
            pass
        for _ in range(2):
            with retrieval.search_span("search_node_docs") as found:
                found(3)
        routes.describe_caller("session", identity)
    return 1e6 * timeit.timeit(one_chat, number=repeat) / repeat


async def run(rounds: int = 12, chats: int = 40) -> dict[str, Any]:
    """``rounds`` pairs of ``chats`` chats (tracing off, then code absent, alternating which goes first);
    returns chats per CPU second of each variant (medians) and ``cost_pct``: the median per-round throughput
    lost by tracing off against the code absent (negative: none measurable), and the call sites' own cost per
    chat timed directly (:func:`site_cost_us`), as a share of a chat's CPU time: the noise-free bound."""
    model = ScriptedModelServer()
    model.start()
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-bench-tracing-"))
    settings = Settings(nodered=NodeRedSettings(url="http://127.0.0.1:9"), openai_base_url=model.base_url,
                        openai_api_key="sk-bench-tracing", memory_db_path=workdir / "memory.db",
                        mcp_tools_enabled=False, knowledge_refresh=0,
                        evidence=EvidenceSettings(enabled=False))
    client = TestClient(TestServer(create_app(settings)))
    await client.start_server()
    off, absent, ratios = [], [], []
    try:
        await _chats(client, model, 10)  # warm-up: imports, first connections, caches
        for number in range(rounds):
            order = ("off", "absent") if number % 2 == 0 else ("absent", "off")
            seconds: dict[str, float] = {}
            for variant in order:
                if variant == "absent":
                    with tracing_absent():
                        seconds[variant] = await _chats(client, model, chats)
                else:
                    seconds[variant] = await _chats(client, model, chats)
            off.append(chats / seconds["off"])
            absent.append(chats / seconds["absent"])
            ratios.append(100 * (1 - off[-1] / absent[-1]))
    finally:
        await client.close()
        model.stop()
    per_chat_us = 1e6 / statistics.median(off)
    sites = site_cost_us()
    return {"rounds": rounds, "chats_per_round": chats,
            "site_cost_us_per_chat": round(sites, 2), "site_cost_pct": round(100 * sites / per_chat_us, 4),
            "chats_per_cpu_s": {"tracing_off": round(statistics.median(off), 1),
                                "code_absent": round(statistics.median(absent), 1)},
            "cost_pct": round(statistics.median(ratios), 2),
            "cost_pct_spread": [round(min(ratios), 2), round(max(ratios), 2)]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(*(int(a) for a in sys.argv[1:]))), indent=2))
