"""The concurrency part of ``make bench`` alone (the machine is shared: measure it without the other parts): CPU per
request start and per relayed token by layer, then simultaneous streams, with their targets.

``python -m tests.bench.scale`` (``BENCH_QUICK=1``: a few streams, to check the harness; ``BENCH_STREAMS``: the
levels, comma-separated, default 200). The service's environment is the operator's: ``AI_SIDEBAR_WORKERS`` and
``AI_SIDEBAR_TOKEN_COALESCE_MS`` set here reach it. Writes ``bench-results/scale-<date>.json``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.nodered import REPO

from . import concurrency, cost, replicas
from .report import concurrency_targets, render_concurrency, render_cost, render_replicas, replicas_targets
from .run import QUICK, TOKEN_DELAY, machine
from .stack import Stack


async def main() -> int:
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    out_dir = REPO / "bench-results"
    profiles = out_dir / f"profiles-{stamp}"
    profiles.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-scale-"))
    levels = (5, 10) if QUICK else tuple(int(n) for n in os.environ.get("BENCH_STREAMS", "200").split(","))
    results: dict[str, Any] = {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
                               "quick": QUICK, "service_env": {k: v for k, v in os.environ.items()
                                                               if k.startswith("AI_SIDEBAR_")}}
    stack = Stack(workdir)
    try:
        print("scale: starting model server, Node-RED and the service ...", file=sys.stderr, flush=True)
        stack.start()
        print("scale: CPU per request and per token ...", file=sys.stderr, flush=True)
        results["cost"] = await cost.run(stack, streams=5 if QUICK else 20, rounds=1 if QUICK else 4, words=40,
                                         token_delay=TOKEN_DELAY, profile_dir=profiles, repo=str(REPO))
        print("scale: concurrency ...", file=sys.stderr, flush=True)
        results["concurrency"] = await concurrency.run(stack, levels=levels, words=40, token_delay=TOKEN_DELAY,
                                                       timeout=60,
                                                       paced=(10, 100.0) if QUICK else concurrency.PACED)
        print("scale: two replicas on PostgreSQL ...", file=sys.stderr, flush=True)
        results["replicas"] = await replicas.run(stack, streams=10 if QUICK else max(levels), words=40,
                                                 token_delay=TOKEN_DELAY, timeout=60)
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    path = out_dir / f"scale-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    print("\n".join(render_concurrency(results["concurrency"]) + render_replicas(results["replicas"])
                    + render_cost(results["cost"], max(levels), results["machine"]["cpus"])))
    print("\nTargets:")
    print("\n".join(t.line() for t in concurrency_targets(results["concurrency"], results["cost"],
                                                         results["machine"]["cpus"])
                    + replicas_targets(results["replicas"])))
    print(f"\nwritten: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
