"""Service cold start: ``python -m service`` spawned → first 200 from ``/healthz`` (polled every 10 ms), then the
first pure-chat answer's first token (what the first user after a restart waits for).

Measured with the MCP child on (the default: the service starts it before it serves) and off, each on a fresh
port and a fresh memory database.
"""

from __future__ import annotations

import statistics
from typing import Any

from tests.support.health import START_TIMEOUT
from tests.support.nodered import free_port

from . import client
from .latency import QUESTION, pure_chat_bodies
from .stack import SERVICE_TOKEN, Stack


async def run(stack: Stack, runs: int) -> dict[str, Any]:
    stack.model.control("reply", {"words": 4, "token_delay": 0})
    body = pure_chat_bodies(stack).service
    results: dict[str, Any] = {}
    for mcp in (True, False):
        healthy, first_token = [], []
        for number in range(runs):
            service = stack.new_service(free_port(), f"coldstart-{'mcp' if mcp else 'nomcp'}-{number}", mcp=mcp)
            try:
                # The start deadline is the suite's generous one: on a loaded machine a cold start passed 30 s
                # (load average 13, 2026-12-02) and a bench that stops there prints no figure at all.
                healthy.append(service.start(timeout=START_TIMEOUT))
                async with client.session() as http:
                    sample = await client.stream_service(
                        http, f"{service.url}/ai-sidebar/stream-chat",
                        {"message": f"{QUESTION} [bench cold-{number}]", **body},
                        {"Authorization": f"Bearer {SERVICE_TOKEN}"}, "cold", str(number))
                if sample.ok:
                    first_token.append((sample.arrivals[0] / 1e9) - service.started_at)
            finally:
                service.stop()
        results["mcp_on" if mcp else "mcp_off"] = {
            "runs_s": healthy, "median_s": statistics.median(healthy),
            "first_token_after_spawn_s": first_token,
            "first_token_median_s": statistics.median(first_token) if first_token else None}
    return results
