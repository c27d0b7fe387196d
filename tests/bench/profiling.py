"""Profiles where a target is missed.

- CPU: ``py-spy record --pid`` attaches to the running (warmed-up) service while the missed scenario is
  replayed, and stops on SIGINT. :func:`top_frames` reads its raw (collapsed stack) output: "self" is where the CPU
  was when sampled, "inclusive" the share of samples in which a function was anywhere on the stack.
- Cold start: ``python -X importtime`` of what the service and its MCP child import before they answer.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.support.nodered import REPO

FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
# Functions on every sample of a running aiohttp service; they say nothing about where the time goes.
ALWAYS = frozenset({"run_app", "run_forever", "_run_once", "run_until_complete", "<module>", "main", "run",
                    "_run_module_as_main", "_run_code", "_run"})
# Leaf functions that mean "waiting" (the event loop's poll, a worker thread's queue): not CPU, left out.
IDLE = frozenset({"EpollSelector.select", "_connection_worker_thread", "Condition.wait", "Event.wait",
                  "Thread._wait_for_tstate_lock", "Queue.get", "_worker", "epoll_wait", "select_epoll_poll_impl",
                  "pthread_cond_wait", "pthread_cond_timedwait"})


def _function(frame: str) -> str:
    return frame.split(" (", 1)[0]


def _short(frame: str) -> str:
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match.group("file")
    for marker in ("site-packages/", f"{REPO}/", "/lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match.group('function')} ({path})"


def top_frames(raw: Path, count: int = 12) -> dict[str, Any]:
    """Top functions by self and by inclusive samples from a py-spy ``--format raw`` file (waiting left out)."""
    self_samples: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = idle = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        samples = int(number)
        frames = [_short(f) for f in stack.split(";") if f]
        if not frames or _function(frames[-1]) in IDLE:
            idle += samples
            continue
        total += samples
        self_samples[frames[-1]] += samples
        for frame in set(frames):
            inclusive[frame] += samples

    def share(counter: Counter[str]) -> list[dict[str, Any]]:
        rows = []
        for frame, samples in counter.most_common():
            if _function(frame).rsplit(".", 1)[-1] in ALWAYS:
                continue
            rows.append({"frame": frame, "percent": round(100 * samples / max(total, 1), 1)})
            if len(rows) == count:
                break
        return rows

    return {"samples": total, "idle_samples_left_out": idle, "self": share(self_samples),
            "inclusive": share(inclusive)}


async def profile_pid(pid: int, output: Path, scenario: Callable[[], Awaitable[Any]], rate: int = 250,
                      native: bool = False) -> dict[str, Any]:
    """Sample ``pid`` with py-spy while ``scenario`` runs; returns the scenario's outcome and the top frames.

    ``native`` adds C frames (SQLite, libc), for work that Python hands to a C library.
    """
    spy = Path(sys.executable).with_name("py-spy")
    log = output.with_suffix(".log")
    with log.open("wb") as sink:
        # --subprocesses: the service's workers (AI_SIDEBAR_WORKERS) are children of the pid given.
        recorder = subprocess.Popen([str(spy), "record", "--pid", str(pid), "--subprocesses", "--format", "raw",
                                     "--rate", str(rate),
                                     # Native unwinding needs the process paused at each sample.
                                     *(["--native"] if native else ["--nonblocking"]), "-o", str(output)],
                                    stdout=sink, stderr=subprocess.STDOUT)
    await asyncio.sleep(1.0)  # attach before the scenario starts
    try:
        outcome = await scenario()
    finally:
        recorder.send_signal(signal.SIGINT)
        try:
            recorder.wait(30)
        except subprocess.TimeoutExpired:
            recorder.kill()
            recorder.wait(5)
    if not output.exists():
        return {"scenario": outcome, "error": f"py-spy wrote no profile: {log.read_text(errors='replace')[-300:]}"}
    return {"scenario": outcome, **top_frames(output)}


def import_profile(module: str, count: int = 8) -> dict[str, Any]:
    """``python -X importtime -c "import <module>"``: the total, the module's direct imports by cumulative time,
    and the modules whose own import code (self time) is slowest."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    rows = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, name = line[len("import time:"):].split("|")
        rows.append((len(name) - len(name.lstrip(" ")), int(own), int(cumulative), name.strip()))
    target = next((row for row in rows if row[3] == module), None)
    if target is None:
        return {"module": module, "error": run.stderr[-300:]}
    index = rows.index(target)
    # Children are listed before their parent, one indent level deeper.
    children, position = [], index - 1
    while position >= 0 and rows[position][0] > target[0]:
        if rows[position][0] == target[0] + 2:
            children.append(rows[position])
        position -= 1
    return {"module": module, "total_ms": round(target[2] / 1000, 1),
            "direct_imports": [{"import": name, "ms": round(cum / 1000, 1)}
                               for _, _, cum, name in sorted(children, key=lambda r: -r[2])[:count]],
            "slowest_self": [{"import": name, "ms": round(own / 1000, 1)}
                             for _, own, _, name in sorted(rows[position + 1:index + 1], key=lambda r: -r[1])[:count]]}
