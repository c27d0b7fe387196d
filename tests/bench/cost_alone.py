"""``python -m tests.bench.cost_alone``: the bench's CPU per request start and per relayed token alone (phase 2b of
``make bench``, :mod:`tests.bench.cost`, with the floor of :mod:`tests.bench.floor`), printing the per-layer table and
writing ``bench-results/cost-<date>.json``. ``BENCH_QUICK=1`` runs a few requests only."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from tests.support.nodered import REPO

from . import cost
from .report import render_cost
from .run import QUICK, TOKEN_DELAY, machine
from .stack import Stack


async def main() -> int:
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    profiles = REPO / "bench-results" / f"profiles-{stamp}"
    profiles.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-cost-"))
    results = {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
               "load_average": os.getloadavg()}
    stack = Stack(workdir)
    try:
        stack.start()
        results["cost"] = await cost.run(stack, streams=5 if QUICK else 20, rounds=1 if QUICK else 3, words=40,
                                         token_delay=TOKEN_DELAY, profile_dir=profiles, repo=str(REPO))
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_after"] = os.getloadavg()
    path = REPO / "bench-results" / f"cost-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    print("\n".join(render_cost(results["cost"])))
    print(f"load average before / after: {results['load_average']} / {results['load_average_after']}")
    print(f"written: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
