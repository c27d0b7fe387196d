"""The measuring client: one streaming chat request, with the arrival time of every token.

The same code reads the three paths: the sidebar route (Node-RED plugin → service), the service route and the
model server's OpenAI stream. Lines are recognised by their bytes; a service ``token`` event may carry several of
the model's pieces (the service coalesces pieces that arrive within a few ms, ``AI_SIDEBAR_TOKEN_COALESCE_MS``), so
its ``content`` is decoded to count them: the scripted model's pieces are one word each, all but the last with a
trailing space (:func:`tests.bench.model_proc.answer_pieces`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

SERVICE_TOKEN_EVENT = b'data: {"type":"token"'
SERVICE_ERROR_EVENT = b'"type":"error"'
SERVICE_DONE_EVENT = b'data: {"type":"done"'
MODEL_TOKEN = b'"delta": {"content": "'
MODEL_DONE = b"data: [DONE]"


@dataclass
class Sample:
    """One streamed answer: start and arrival times (``time.monotonic_ns``), outcome.

    ``arrivals`` has one time per model piece (the pieces of one coalesced event share its time), ``events`` one per
    ``token`` event: the gaps a reader sees are between events.
    """

    path: str
    tag: str
    started: int
    arrivals: list[int] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    done: bool = False
    status: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.done and self.error is None and bool(self.arrivals)

    @property
    def ttft_ms(self) -> float:
        return (self.arrivals[0] - self.started) / 1e6

    def gaps_ms(self) -> list[float]:
        """Milliseconds between consecutive ``token`` events (what a reader sees as a pause)."""
        times = self.events or self.arrivals
        return [(b - a) / 1e6 for a, b in zip(times, times[1:])]


def pieces(line: bytes) -> int:
    """How many of the scripted model's pieces one ``data: {"type":"token",...}`` line carries (at least 1)."""
    content = json.loads(line[len(b"data: "):]).get("content", "")
    return max(1, content.count(" ") + (0 if content.endswith(" ") else 1))


def session(limit: int = 0, timeout: float = 60) -> aiohttp.ClientSession:
    """A client session with keep-alive connections (as a browser keeps them) and no connection cap."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit, limit_per_host=0),
                                 timeout=aiohttp.ClientTimeout(total=timeout))


async def stream_service(http: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str],
                         path: str, tag: str) -> Sample:
    """POST a stream-chat body to ``url`` (service or sidebar route) and time every ``token`` event."""
    sample = Sample(path, tag, time.monotonic_ns())
    try:
        async with http.post(url, json=body, headers=headers) as answer:
            sample.status = answer.status
            if answer.status != 200:
                sample.error = f"HTTP {answer.status}: {(await answer.text())[:200]}"
                return sample
            async for line in answer.content:
                if line.startswith(SERVICE_TOKEN_EVENT):
                    now = time.monotonic_ns()
                    sample.events.append(now)
                    sample.arrivals.extend([now] * pieces(line))
                elif line.startswith(SERVICE_DONE_EVENT):
                    sample.done = True
                elif SERVICE_ERROR_EVENT in line and sample.error is None:
                    sample.error = line.decode(errors="replace").strip()[:300]
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        sample.error = f"{type(err).__name__}: {err}"
    return sample


async def stream_model(http: aiohttp.ClientSession, base_url: str, message: str, path: str, tag: str) -> Sample:
    """The same question straight to the model server's OpenAI-compatible stream (the baseline)."""
    body = {"model": "gpt-4o-mini", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": message}]}
    sample = Sample(path, tag, time.monotonic_ns())
    try:
        async with http.post(f"{base_url}/chat/completions", json=body,
                             headers={"Authorization": "Bearer sk-bench"}) as answer:
            sample.status = answer.status
            async for line in answer.content:
                if MODEL_TOKEN in line:
                    sample.arrivals.append(time.monotonic_ns())
                elif line.startswith(MODEL_DONE):
                    sample.done = True
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        sample.error = f"{type(err).__name__}: {err}"
    return sample


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
