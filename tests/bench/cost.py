"""CPU per request start and per relayed token, split by layer.

Two runs of the same pure chat, ``streams`` at a time for ``rounds`` rounds (few enough at once that the service is
not saturated, so that nothing is coalesced or queued that would not be on a quiet machine):

- one piece per answer: the service's CPU per request (parse, checks, prompt, the model call's set-up, one token,
  ``done``, the saved turn);
- ``words`` pieces per answer: the difference from the first run, per extra piece, is the CPU per relayed token.

Both run under ``py-spy`` (:func:`tests.bench.profiling.profile_pid`); each sample is given to the layer of the
innermost frame that belongs to one (:data:`LAYERS`, by file path), so that a library called by a layer (pydantic,
json) counts for that layer. A layer's CPU is the service's CPU (``/proc``) times its share of the samples.

Then the floor (:mod:`tests.bench.floor`): LangChain's chat model alone streaming the service's last request again.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import client, floor
from .latency import QUESTION, pure_chat_bodies
from .profiling import FRAME, IDLE, profile_pid
from .stack import SERVICE_TOKEN, Stack, cpu_seconds, settled

# (layer, file path prefixes after site-packages/ or the repository root), first match wins per frame.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("SSE writing (service/web/sse.py)", ("service/web/sse.py",)),
    ("our pipeline, usage, tracing, PII (service/)", ("service/",)),
    ("langchain-openai (chunk → message)", ("langchain_openai/",)),
    ("LangChain core (runnables, callbacks, messages)", ("langchain_core/", "langchain/", "langgraph/")),
    ("openai SDK (chunk parsing)", ("openai/",)),
    ("HTTP client to the model (httpx)", ("httpx/", "httpx2/", "httpcore/", "h11/", "anyio/", "sniffio/")),
    ("aiohttp (server and Node-RED client)", ("aiohttp/", "multidict/", "yarl/")),
    ("event loop (asyncio)", ("asyncio/", "selectors.py")),
)
OTHER = "other"


def _path(frame: str, repo_prefix: str) -> str:
    """A frame's file, relative to site-packages, the standard library or the repository."""
    match = FRAME.match(frame.strip())
    if not match:
        return ""
    path = match.group("file")
    for marker in ("site-packages/", "/lib/python3.11/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path[len(repo_prefix):] if path.startswith(repo_prefix) else path


def _layer(path: str) -> str | None:
    for name, prefixes in LAYERS:
        if path.startswith(prefixes):
            return name
    return None


def layer_shares(raw: Path, repo: str) -> dict[str, Any]:
    """Share of non-idle samples per layer in a py-spy ``--format raw`` file (``repo``: the repository root, so
    that the service's own files are recognised)."""
    counts: Counter[str] = Counter()
    total = 0
    prefix = repo.rstrip("/") + "/"
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        frames = [f for f in stack.split(";") if f]
        if not frames or frames[-1].split(" (", 1)[0] in IDLE:
            continue
        samples = int(number)
        total += samples
        layer = OTHER
        for frame in reversed(frames):
            found = _layer(_path(frame, prefix))
            if found is not None:
                layer = found
                break
        counts[layer] += samples
    return {"samples": total, "shares": {name: counts[name] / total if total else 0.0
                                         for name in [*(n for n, _ in LAYERS), OTHER]}}


async def _chats(stack: Stack, streams: int, rounds: int, tag: str) -> dict[str, Any]:
    body = pure_chat_bodies(stack).service
    url = f"{stack.service.url}/ai-sidebar/stream-chat"
    samples = []
    async with client.session(timeout=60) as http:
        for number in range(rounds):
            samples += await asyncio.gather(*(
                client.stream_service(http, url, {"message": f"{QUESTION} [bench {tag}-{number}-{i}]", **body},
                                      {"Authorization": f"Bearer {SERVICE_TOKEN}",
                                       "X-Node-RED-User": f"cost-user-{i}"}, "service/chat", f"{tag}-{number}-{i}")
                for i in range(streams)))
    return {"requests": len(samples), "ok": sum(1 for s in samples if s.ok),
            "pieces": sum(len(s.arrivals) for s in samples if s.ok),
            "events": sum(len(s.events) for s in samples if s.ok)}


async def _measured(stack: Stack, words: int, streams: int, rounds: int, token_delay: float, tag: str,
                    profile: Path, repo: str) -> dict[str, Any]:
    stack.model.control("reply", {"words": words, "token_delay": token_delay})
    pid = stack.service.pid
    cpu: list[float] = []

    async def scenario() -> dict[str, Any]:
        await settled(pid)
        before = cpu_seconds(pid)
        started = time.monotonic()
        outcome = await _chats(stack, streams, rounds, tag)
        outcome["wall_s"] = time.monotonic() - started
        await asyncio.sleep(0.5)  # the last turns are saved after done
        cpu.append(cpu_seconds(pid) - before)
        return outcome

    profiled = await profile_pid(pid, profile, scenario)
    outcome = profiled["scenario"]
    split = layer_shares(profile, repo) if profile.exists() else {"samples": 0, "shares": {}}
    outcome["service_cpu_s"] = cpu[0] if cpu else None
    outcome["layers_cpu_s"] = {name: share * outcome["service_cpu_s"] for name, share in split["shares"].items()}
    outcome["profile_samples"] = split["samples"]
    return outcome


async def run(stack: Stack, *, streams: int, rounds: int, words: int, token_delay: float, profile_dir: Path,
              repo: str) -> dict[str, Any]:
    """CPU per request and per token, in total and per layer (microseconds), with the two runs' outcomes."""
    # Model clients, catalogs, caches built in every worker (connections spread over them) before measuring.
    for number in range(4):  # a new session each time: new connections, which the kernel spreads over workers
        await _chats(stack, streams, 1, f"cost-warm{number}")
    await settled(stack.service.pid)
    one = await _measured(stack, 1, streams, rounds, token_delay, "cost-one", profile_dir / "profile-cost-one.txt",
                          repo)
    many = await _measured(stack, words, streams, rounds, token_delay, "cost-many",
                           profile_dir / "profile-cost-many.txt", repo)
    # The service's own last request to the model (its prompt and tools), streamed again by LangChain alone.
    body = stack.model.control("requests")[-1]
    low = await asyncio.to_thread(floor.run, stack.model, body,
                                  streams=streams, rounds=rounds, words=words)
    requests = max(one["ok"], 1)
    # Each answer of the second run also pays one request's set-up and its first piece: taken out, per answer.
    scale = many["ok"] / requests
    extra_pieces = max(many["pieces"] - many["ok"], 1)

    def per_token(many_cpu: float, one_cpu: float) -> float:
        return 1e6 * (many_cpu - one_cpu * scale) / extra_pieces

    layers = one["layers_cpu_s"]
    per_request = {name: 1e6 * cpu / requests for name, cpu in layers.items()}
    per_piece = {name: per_token(many["layers_cpu_s"].get(name, 0.0), cpu) for name, cpu in layers.items()}
    total_request = 1e6 * (one["service_cpu_s"] or 0.0) / requests
    total_token = per_token(many["service_cpu_s"] or 0.0, one["service_cpu_s"] or 0.0)
    return {"streams_at_once": streams, "rounds": rounds, "words": words,
            "token_delay_ms": token_delay * 1000,
            "per_request_us": {"total": total_request, "layers": per_request},
            "per_token_us": {"total": total_token, "layers": per_piece},
            "events_per_answer": many["events"] / max(many["ok"], 1),
            "langchain_alone": {"per_request_us": low["per_request_us"], "per_token_us": low["per_token_us"],
                                "router_graph_us": low["router_graph_us"], "request_bytes": len(json.dumps(body))},
            "runs": {"one_piece": one, "many_pieces": many}}
