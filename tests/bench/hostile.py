"""A hostile editor ``flowData`` (thousands of subflows; megabytes of function code) against the bench's service:
how long a ``/healthz`` probe, asked again and again while the request runs, waits at most (also as a share of the
request's own time). A service that slices or redacts on its event loop makes a probe wait about as long as the
request (a third of a second to seconds); one that yields keeps it within what the streams' inter-token gap may be
(the target: 50 ms, median of the rounds), as every stream waits as long as the probe.

tests/test_hostile_flow_data.py checks the same requests for their answers; the times are measured here, where a
loaded machine's hiccup is read as a figure and not as a failure. ``python -m tests.bench.hostile`` runs it alone.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.hostile_flows import hostile_body, many_subflows, megabytes_of_code, probed_chat

from .stack import SERVICE_TOKEN, Stack

CASES = {"thousands of subflows": many_subflows, "megabytes of code": megabytes_of_code}


async def run(stack: Stack, rounds: int = 3) -> dict[str, Any]:
    """``rounds`` probed requests per case, one after the other.

    Returns:
        ``{case: {"rounds", "request_ms": [...], "max_probe_ms": [...], "probes": [...], "share_pct": median of
        max probe / request in %}}``
    """
    assert stack.service is not None
    results: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=120)) as http:
        for case, flows in CASES.items():
            body = hostile_body(flows())
            requests, longest, counts = [], [], []
            for _ in range(rounds):
                probed = await probed_chat(http, stack.service.url, body)
                requests.append(round(probed.elapsed * 1000, 1))
                longest.append(round(max(probed.probes) * 1000, 1))
                counts.append(len(probed.probes))
            results[case] = {"rounds": rounds, "request_ms": requests, "max_probe_ms": longest, "probes": counts,
                             "share_pct": round(statistics.median(100 * p / r for p, r in zip(longest, requests)),
                                                1)}
    return results


async def main() -> None:
    stack = Stack(Path(tempfile.mkdtemp(prefix="ai-sidebar-bench-hostile-")))
    stack.start()
    try:
        for case, figures in (await run(stack, rounds=5)).items():
            print(f"{case}: {figures}", file=sys.stdout)
    finally:
        stack.stop()


if __name__ == "__main__":
    asyncio.run(main())
