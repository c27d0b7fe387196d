"""Added time-to-first-token and per-token relay delay, sidebar route and service route against the model server.

Five paths are asked in turn, round by round (order shuffled per round, same seed every run), so that drift of the
machine affects them alike:

- ``sidebar/chat``: Node-RED plugin route → service → model, pure chat (no tools, so no agent);
- ``service/chat``: the service route → model, the same body the plugin forwards;
- ``model``: the same client straight to the model server (the baseline);
- ``sidebar/agent`` and ``service/agent``: the default scenario, whose tools make the service run its agent.

TTFT is request start → first token at the client. A token's relay delay is its arrival at the client minus the
moment the model server wrote it (both CLOCK_MONOTONIC); tokens after the first are counted. "Added" is a path's
percentile minus the model path's percentile in the same run.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from . import client
from .client import Sample, percentile
from .stack import BENCH_CONFIG_ID, BENCH_SCENARIO, SERVICE_TOKEN, Stack

QUESTION = "How do I rate-limit messages to one per second in Node-RED?"
PATHS = ("sidebar/chat", "service/chat", "model", "sidebar/agent", "service/agent")


@dataclass
class Bodies:
    """The request bodies of the two pure-chat routes; ``mode`` says how pure chat is asked for."""

    sidebar: dict[str, Any]
    service: dict[str, Any]
    mode: str


def pure_chat_bodies(stack: Stack) -> Bodies:
    """With the palette's ``ai-config`` node: the sidebar names the deployed bench node (tools off) and the service
    gets the ``provider`` object the plugin makes of it. Without it: the bench locale's tool-less scenario."""
    if stack.config_node:
        return Bodies({"configId": BENCH_CONFIG_ID},
                      {"provider": {"provider": "openai", "memory": True, "tools": False}},
                      "ai-config node with tools off (provider override)")
    return Bodies({"scenario": BENCH_SCENARIO}, {"scenario": BENCH_SCENARIO},
                  f"scenario {BENCH_SCENARIO!r} without tools (bench locale)")


def verify_paths(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """From the warm-up requests the model received: did the chat paths send no tools and the agent paths some?"""
    seen: dict[str, set[bool]] = {}
    for body in requests:
        messages = body.get("messages") or []
        last = str(messages[-1].get("content", "")) if messages else ""
        for path in PATHS:
            if f"[bench {path.replace('/', '.')}-" in last:
                seen.setdefault(path, set()).add(bool(body.get("tools")))
    return {path: ("tools sent" if seen.get(path) == {True} else "no tools" if seen.get(path) == {False}
                   else "mixed" if seen.get(path) else "not seen") for path in PATHS}


def summarize(samples: list[Sample], emissions: dict[str, list[int]]) -> dict[str, Any]:
    ok = [s for s in samples if s.ok]
    ttft = [s.ttft_ms for s in ok]
    delays: list[float] = []
    first_relay: list[float] = []
    mismatched = 0
    for sample in ok:
        sent = emissions.get(sample.tag, [])
        if len(sent) != len(sample.arrivals):
            mismatched += 1
            continue
        first_relay.append((sample.arrivals[0] - sent[0]) / 1e6)
        delays += [(arrived - left) / 1e6 for arrived, left in zip(sample.arrivals[1:], sent[1:])]
    errors = [s.error or ("no done event" if not s.done else "no token") for s in samples if not s.ok]
    return {
        "requests": len(samples), "errors": len(errors), "error_examples": errors[:3],
        "token_count_mismatch": mismatched,
        "ttft_ms": {"p50": percentile(ttft, 50), "p99": percentile(ttft, 99)},
        "first_token_relay_ms": {"p50": percentile(first_relay, 50), "p99": percentile(first_relay, 99)},
        "token_relay_ms": {"p50": percentile(delays, 50), "p99": percentile(delays, 99), "tokens": len(delays)},
    }


def added(result: dict[str, Any], baseline: dict[str, Any], metric: str) -> dict[str, float | None]:
    out = {}
    for q in ("p50", "p99"):
        value, base = result[metric][q], baseline[metric][q]
        out[q] = None if value is None or base is None else value - base
    return out


async def run(stack: Stack, *, rounds: int, warmup: int, words: int, token_delay: float,
              time_limit: float) -> dict[str, Any]:
    """``rounds`` measured rounds (each asks every path once) after ``warmup`` unmeasured ones, stopping early
    when ``time_limit`` seconds have passed."""
    stack.model.control("reply", {"words": words, "token_delay": token_delay})
    stack.model.control("reset")
    bodies = pure_chat_bodies(stack)
    sidebar_url = f"{stack.nodered.url}/ai-sidebar/stream-chat"
    service_url = f"{stack.service.url}/ai-sidebar/stream-chat"
    service_headers = {"Authorization": f"Bearer {SERVICE_TOKEN}"}
    order = random.Random(20250101)
    samples: dict[str, list[Sample]] = {path: [] for path in PATHS}
    started = time.monotonic()
    done_rounds = 0
    checked: dict[str, Any] = {}
    async with client.session() as http:
        async def ask(path: str, tag: str) -> Sample:
            message = f"{QUESTION} [bench {tag}]"
            if path == "model":
                return await client.stream_model(http, stack.model.base_url, message, path, tag)
            route, kind = path.split("/")
            url, headers = (sidebar_url, {}) if route == "sidebar" else (service_url, service_headers)
            extra = {} if kind == "agent" else (bodies.sidebar if route == "sidebar" else bodies.service)
            return await client.stream_service(http, url, {"message": message, **extra}, headers, path, tag)

        for number in range(warmup + rounds):
            if time.monotonic() - started > time_limit:
                break
            if number == warmup:
                checked = verify_paths(stack.model.control("requests"))
                stack.model.control("reset")
            paths = list(PATHS)
            order.shuffle(paths)
            for path in paths:
                sample = await ask(path, f"{path.replace('/', '.')}-{number}")
                if number >= warmup:
                    samples[path].append(sample)
            if number >= warmup:
                done_rounds += 1
    emissions = stack.model.control("emissions")
    results = {path: summarize(samples[path], emissions) for path in PATHS}
    base = results["model"]
    for path in PATHS:
        if path != "model":
            results[path]["added_ttft_ms"] = added(results[path], base, "ttft_ms")
            results[path]["added_token_relay_ms"] = added(results[path], base, "token_relay_ms")
    return {"rounds": done_rounds, "words": words, "token_delay_ms": token_delay * 1000,
            "pure_chat": bodies.mode, "paths_checked": checked, "seconds": time.monotonic() - started,
            "paths": results}
