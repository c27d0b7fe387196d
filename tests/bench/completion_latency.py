"""Added latency of an inline completion (issue 39: ≤ 15 ms p50, ≤ 40 ms p99 beyond the model's own time):
``POST /ai-sidebar/complete`` on the service and through the Node-RED plugin's relay, against the same request
straight to the scripted model server, round by round in shuffled order (the same seed every run). A path's time is
request start → whole answer received; "added" is a path's percentile minus the model path's percentile in the same
run. The model answers a few words at once (no token delay), as a completion model would.

Then the keystroke → request ratio (issue 39: 100 keystrokes typed at 8 per second send ≤ 10 model requests): a
Node.js script (``completion_typing.js``) types into the editor's own completion source (its debounce, cancellation
and cache) against the plugin's route, and the scripted model server counts the requests it received.

Run alone: ``.venv/bin/python -m tests.bench.completion_latency`` (starts its own stack; prints the targets).
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.nodered import NODE_BINARY

from . import client
from .client import percentile
from .stack import SERVICE_TOKEN, Stack

TYPING_SCRIPT = Path(__file__).with_name("completion_typing.js")

PATHS = ("sidebar/complete", "service/complete", "model")
BODY = {"kind": "function", "before": "const reading = ", "after": "\nreturn msg;", "part": "onMessage",
        "nodeType": "function", "name": "convert"}


async def _timed(http, path: str, stack: Stack, body: dict[str, Any]) -> float | None:
    """Milliseconds of one request on ``path``, or ``None`` when it failed."""
    assert stack.service is not None and stack.nodered is not None
    started = time.perf_counter()
    if path == "model":
        sample = await client.stream_model(http, stack.model.base_url, "complete: const reading = ", path, "")
        return 1000 * (time.perf_counter() - started) if sample.done and sample.error is None else None
    url = (f"{stack.service.url}/ai-sidebar/complete" if path == "service/complete"
           else f"{stack.nodered.url}/ai-sidebar/complete")
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}"} if path == "service/complete" else {}
    async with http.post(url, json=body, headers=headers) as answer:
        body = await answer.json()
        if answer.status != 200 or not body.get("completion"):
            return None
    return 1000 * (time.perf_counter() - started)


async def run(stack: Stack, rounds: int = 200, warmup: int = 10, words: int = 4,
              time_limit: float = 90.0) -> dict[str, Any]:
    """``{"rounds", "paths": {path: {"ok", "ms": {p50, p95, p99}, "added_ms": {p50, p95, p99}}}}`` (milliseconds;
    ``added_ms`` absent for the model path). Stops early after ``time_limit`` seconds."""
    stack.model.control("reply", {"words": words, "token_delay": 0})
    # As the editor asks: for the deployed function node being edited (its wiring read from the 114 tabs' flows).
    function = next((node["id"] for node in stack.flows if node.get("type") == "function"), None)
    body = {**BODY, "nodeId": function} if function else BODY
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    failed = dict.fromkeys(PATHS, 0)
    order = list(PATHS)
    shuffle = random.Random(39)
    deadline = time.monotonic() + time_limit
    done = 0
    async with client.session() as http:
        for number in range(warmup + rounds):
            if time.monotonic() > deadline:
                break
            shuffle.shuffle(order)
            for path in order:
                took = await _timed(http, path, stack, body)
                if number < warmup:
                    continue
                if took is None:
                    failed[path] += 1
                else:
                    times[path].append(took)
            done += number >= warmup
    quantiles = {path: {f"p{q}": percentile(values, q) for q in (50, 95, 99)} for path, values in times.items()}
    paths: dict[str, Any] = {}
    for path in PATHS:
        paths[path] = {"ok": len(times[path]), "failed": failed[path], "ms": quantiles[path]}
        if path != "model":
            paths[path]["added_ms"] = {key: None if value is None or quantiles["model"][key] is None
                                       else value - quantiles["model"][key] for key, value in quantiles[path].items()}
    return {"rounds": done, "words": words, "paths": paths}


def typing(stack: Stack, keystrokes: int = 100, per_second: float = 8.0) -> dict[str, Any]:
    """``keystrokes`` typed at ``per_second`` into the editor's completion source against the plugin's route:
    ``{keystrokes, seconds, sent, answered, lateMs, failed, modelRequests}`` (``sent``: requests the source sent,
    ``modelRequests``: requests the model server received meanwhile; ``lateMs``: the worst keystroke's delay behind
    its schedule on this machine)."""
    assert stack.nodered is not None
    stack.model.control("reset")
    # A bound on a hang only: the typing itself takes keystrokes / per_second seconds.
    run = subprocess.run([NODE_BINARY, str(TYPING_SCRIPT), stack.nodered.url, str(keystrokes), str(per_second)],
                         capture_output=True, text=True, timeout=keystrokes / per_second + 120, check=False)
    if run.returncode != 0:
        return {"error": run.stderr.strip()[-500:]}
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["modelRequests"] = len(stack.model.control("requests"))
    return result


async def _alone() -> int:
    from .report import completion_targets

    with tempfile.TemporaryDirectory(prefix="bench-completion-") as workdir:
        stack = Stack(Path(workdir), mcp=False)
        try:
            stack.start()
            results = await run(stack)
            results["typing"] = await asyncio.to_thread(typing, stack)
        finally:
            stack.stop()
    print(results)
    for target in completion_targets({"completion": results}):
        print(target.line())
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_alone()))
