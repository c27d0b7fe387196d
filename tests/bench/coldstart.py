"""Service cold start: ``python -m service`` spawned → first 200 from ``/healthz`` (polled every 10 ms).

Measured with the MCP child on (the default: the service starts it before it serves) and off, each on a fresh
port and a fresh memory database.
"""

from __future__ import annotations

import statistics
from typing import Any

from tests.support.nodered import free_port

from .stack import Stack


def run(stack: Stack, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for mcp in (True, False):
        times = []
        for number in range(runs):
            service = stack.new_service(free_port(), f"coldstart-{'mcp' if mcp else 'nomcp'}-{number}", mcp=mcp)
            try:
                times.append(service.start(timeout=30))
            finally:
                service.stop()
        results["mcp_on" if mcp else "mcp_off"] = {"runs_s": times, "median_s": statistics.median(times)}
    return results
