"""``make bench``: run every benchmark once against a real Node-RED and the service on 127.0.0.1, print a table
with each target's PASS/MISS, write ``bench-results/bench-<date>.json``, and profile the service where a target is
missed. Every loop is bounded in count and time; the whole run stays under :data:`TIME_BUDGET` seconds.

``BENCH_QUICK=1`` runs a few requests per benchmark only (to check the harness, not to measure).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.nodered import NODERED_HOME, REPO

from . import (
    build_loop,
    coldstart,
    completion_latency,
    concurrency,
    cost,
    evidence,
    footprint,
    history_capture,
    history_diff,
    hostile,
    knowledge,
    latency,
    memory_search,
    profiling,
    prompt_size,
    replicas,
    router,
    tracing,
)
from .baseline import compare_with_readme
from .baseline import lines as baseline_lines
from .client import Sample, stream_service
from .report import Target, evaluate, render
from .stack import SERVICE_TOKEN, Stack

TIME_BUDGET = 570.0   # seconds; `make bench` must finish in 10 minutes on the 2-core machine
TOKEN_DELAY = 0.02    # seconds between pieces: a model streaming 50 tokens per second
QUICK = os.environ.get("BENCH_QUICK") == "1"


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    version = json.loads((NODERED_HOME / "package.json").read_text())["version"]
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory_gb": round(os.sysconf("SC_PAGE_SIZE") *
                                                                    os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "python": platform.python_version(), "node": subprocess.run(["node", "--version"], capture_output=True,
                                                                          text=True).stdout.strip(),
            "node_red": version, "kernel": platform.release()}


async def sequential_chats(stack: Stack, count: int, agent: bool) -> dict[str, Any]:
    """The latency scenario replayed on the service route only (for a profile)."""
    from . import client

    bodies = latency.pure_chat_bodies(stack)
    samples: list[Sample] = []
    async with client.session() as http:
        for number in range(count):
            body = {"message": f"{latency.QUESTION} [bench p-{number}]", **({} if agent else bodies.service)}
            samples.append(await stream_service(http, f"{stack.service.url}/ai-sidebar/stream-chat", body,
                                                {"Authorization": f"Bearer {SERVICE_TOKEN}"}, "service", str(number)))
    ttft = sorted(s.ttft_ms for s in samples if s.ok)
    return {"requests": count, "ok": len(ttft), "ttft_p50_ms": ttft[len(ttft) // 2] if ttft else None}


async def main() -> int:
    begun = time.monotonic()
    deadline = begun + TIME_BUDGET
    left = lambda: deadline - time.monotonic()  # noqa: E731
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    out_dir = REPO / "bench-results"
    out_dir.mkdir(exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="ai-sidebar-bench-"))
    results: dict[str, Any] = {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
                               "quick": QUICK, "timings_s": {}}

    def phase_done(name: str, started: float) -> None:
        results["timings_s"][name] = round(time.monotonic() - started, 1)
        print(f"  {name}: {results['timings_s'][name]} s", file=sys.stderr, flush=True)

    stack = Stack(workdir)
    try:
        started = time.monotonic()
        print("bench: starting model server, Node-RED and the service ...", file=sys.stderr, flush=True)
        stack.start()
        results["stack"] = {"example_tabs": len(stack.tabs), "flows_nodes": len(stack.flows),
                            "mcp_tools_enabled": stack.mcp, "ai_config_node": stack.config_node}
        phase_done("start", started)

        started = time.monotonic()
        print("bench: 1. added latency ...", file=sys.stderr, flush=True)
        results["latency"] = await latency.run(stack, rounds=8 if QUICK else 200, warmup=2 if QUICK else 10,
                                               words=6, token_delay=TOKEN_DELAY, time_limit=min(230, left() - 300))
        phase_done("latency", started)

        started = time.monotonic()
        print("bench: 2. concurrency ...", file=sys.stderr, flush=True)
        results["concurrency"] = await concurrency.run(stack, levels=(5, 10) if QUICK else (50, 100, 200),
                                                       words=40, token_delay=TOKEN_DELAY, timeout=60,
                                                       paced=(10, 100.0) if QUICK else concurrency.PACED)
        phase_done("concurrency", started)

        started = time.monotonic()
        print("bench: 2b. CPU per request and per token, by layer ...", file=sys.stderr, flush=True)
        cost_profiles = out_dir / f"profiles-{stamp}"
        cost_profiles.mkdir(parents=True, exist_ok=True)
        results["cost"] = await cost.run(stack, streams=5 if QUICK else 20, rounds=1 if QUICK else 3, words=40,
                                         token_delay=TOKEN_DELAY, profile_dir=cost_profiles, repo=str(REPO))
        phase_done("cost", started)

        started = time.monotonic()
        if left() >= 300:
            print("bench: 2c. two replicas on PostgreSQL ...", file=sys.stderr, flush=True)
            results["replicas"] = await replicas.run(stack, streams=10 if QUICK else 200, words=40,
                                                     token_delay=TOKEN_DELAY, timeout=60)
        else:
            results["replicas"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("replicas", started)

        started = time.monotonic()
        print("bench: 3. prompt size ...", file=sys.stderr, flush=True)
        results["prompt_size"] = await prompt_size.run(stack)
        phase_done("prompt_size", started)

        started = time.monotonic()
        print("bench: 4. memory search ...", file=sys.stderr, flush=True)
        profiles_dir = out_dir / f"profiles-{stamp}"
        profiles_dir.mkdir(parents=True, exist_ok=True)
        results["memory_search"] = await memory_search.run(
            messages=2_000 if QUICK else 100_000, searches=50 if QUICK else 560,
            fill_limit=min(150, max(30, left() - 200)), search_limit=40, target_p50_ms=10,
            profile_to=profiles_dir / "profile-memory-search.txt")
        phase_done("memory_search", started)

        started = time.monotonic()
        print("bench: 5. knowledge index ...", file=sys.stderr, flush=True)
        results["knowledge"] = await knowledge.run(stack.nodered.url, chunks=5_000 if QUICK else 100_000,
                                                   rounds=1 if QUICK else 3, workdir=workdir / "knowledge")
        phase_done("knowledge", started)

        started = time.monotonic()
        print("bench: 4. cold start ...", file=sys.stderr, flush=True)
        results["cold_start"] = await coldstart.run(stack, runs=2 if QUICK else 5)
        phase_done("cold_start", started)

        started = time.monotonic()
        if left() >= 150:
            print("bench: 4b. footprint, one worker: idle and after 100 chats with tools ...", file=sys.stderr,
                  flush=True)
            results["footprint"] = await footprint.run(stack, chats=10 if QUICK else 100)
        else:
            results["footprint"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("footprint", started)

        started = time.monotonic()
        seconds = 10 if QUICK else min(60, left() - 60)
        if seconds >= 10:
            print(f"bench: 6. runtime evidence ({seconds:.0f} s of 1,000 debug messages/s) ...", file=sys.stderr,
                  flush=True)
            results["evidence"] = await evidence.run(workdir, stack.model, seconds,
                                                     baseline_seconds=5 if QUICK else 15)
        else:
            results["evidence"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("evidence", started)

        started = time.monotonic()
        if left() >= 120:
            print("bench: 7. tracing off against the code absent ...", file=sys.stderr, flush=True)
            results["tracing_off"] = await tracing.run(rounds=2 if QUICK else 6, chats=10 if QUICK else 30)
        else:
            results["tracing_off"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("tracing_off", started)

        started = time.monotonic()
        if left() >= 90:
            print("bench: 8. router graph, labelled requests ...", file=sys.stderr, flush=True)
            results["router"] = await router.run(stack.nodered.url)
        else:
            results["router"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("router", started)

        started = time.monotonic()
        print("bench: 9. flow history diff and capture, inline completion ...", file=sys.stderr, flush=True)
        results["history_diff"] = await history_diff.run(rounds=10 if QUICK else 60)
        if left() >= 150:
            results["history_capture"] = await history_capture.run(deploys=20 if QUICK else 200)
        else:
            results["history_capture"] = {"skipped": "no time left in the 10-minute budget"}
        if left() >= 30:
            results["completion"] = await completion_latency.run(stack, rounds=10 if QUICK else 200,
                                                                 time_limit=min(90, left() - 20))
            if left() >= 30:  # 100 keystrokes at 8/s: 12.5 s of typing
                results["completion"]["typing"] = await asyncio.to_thread(completion_latency.typing, stack)
        else:
            results["completion"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("history_completion", started)

        started = time.monotonic()
        if left() >= 60:
            print("bench: 10. build loop, scripted build tasks ...", file=sys.stderr, flush=True)
            results["build_loop"] = await build_loop.run(tasks=3 if QUICK else build_loop.TASKS)
        else:
            results["build_loop"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("build_loop", started)

        started = time.monotonic()
        if left() >= 30:
            print("bench: 11. hostile flowData, /healthz probed all along ...", file=sys.stderr, flush=True)
            results["hostile"] = await hostile.run(stack, rounds=1 if QUICK else 3)
        else:
            results["hostile"] = {"skipped": "no time left in the 10-minute budget"}
        phase_done("hostile", started)

        targets = evaluate(results)
        results["targets"] = [t.as_dict() for t in targets]
        # A smoke run's sizes (messages searched, streams, runs) are not the README's: nothing to compare.
        results["baseline"] = ({"skipped": "BENCH_QUICK=1: a smoke run's sizes are not the README's"} if QUICK
                               else compare_with_readme(results, REPO / "README.md"))
        results["profiles"] = await profile_misses(stack, targets, left, profiles_dir)
        if "profile" in results["memory_search"]:
            profile = results["memory_search"].pop("profile")
            profile["raw_profile"] = str(Path(profile["raw_profile"]).relative_to(REPO))
            results["profiles"]["memory-search"] = profile
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results["timings_s"]["total"] = round(time.monotonic() - begun, 1)
    path = out_dir / f"bench-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    print(render(results, targets))
    print("\n" + "\n".join(baseline_lines(results["baseline"])))
    print(f"\nwritten: {path.relative_to(REPO)}  ({results['timings_s']['total']} s)")
    return 0


async def profile_misses(stack: Stack, targets: list[Target], left, keep: Path) -> dict[str, Any]:
    """Replay each missed scenario under py-spy while time is left (Node-RED's share is not profiled: it is the
    difference between the sidebar and service rows); the cold start gets an import-time profile."""
    missed = {t.group for t in targets if not t.passed}
    scenarios = []
    if "latency" in missed:
        scenarios.append(("latency-service-chat", stack.service.pid, 6,
                          lambda: sequential_chats(stack, 20 if QUICK else 150, False)))
    if "concurrency" in missed:
        streams = 10 if QUICK else 200
        scenarios.append((f"concurrency-{streams}", stack.service.pid, 40,
                          lambda: concurrency.level(stack, streams, 40, timeout=60)))
    profiles: dict[str, Any] = {}
    for name, pid, words, scenario in scenarios:
        if left() < 45:
            profiles[name] = {"skipped": "no time left in the 10-minute budget"}
            continue
        print(f"bench: profiling {name} ...", file=sys.stderr, flush=True)
        stack.model.control("reply", {"words": max(words, 1), "token_delay": TOKEN_DELAY})
        output = keep / f"profile-{name}.txt"
        profiles[name] = await profiling.profile_pid(pid, output, scenario)
        profiles[name]["raw_profile"] = str(output.relative_to(REPO))
    if "cold_start" in missed:
        profiles["cold-start-imports"] = {"service": profiling.import_profile("service.web.app"),
                                          "mcp_child": profiling.import_profile("mcp_server.__main__")}
    return profiles


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
