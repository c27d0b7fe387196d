"""Streaming chats to the service at once: completed, errors, inter-token gaps, service CPU and peak RSS.

Each chat is a different Node-RED user (``X-Node-RED-User``) on its own connection; all start together once
every client task is ready, or (the paced level, issue 33) one after the other at a fixed arrival rate. The
pure-chat body is the one the sidebar forwards (see :mod:`tests.bench.latency`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from . import client
from .client import Sample, percentile
from .latency import QUESTION, pure_chat_bodies
from .stack import SERVICE_TOKEN, ServiceProcess, Stack, cpu_seconds, memory_kib, reset_peak_rss, settled

PACED = (200, 100.0)  # issue 33: 200 chats arriving at 100 per second (2 cores, default workers)


async def _sample_rss(pids: list[int], peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], sum(memory_kib(pid, "VmRSS") for pid in pids))
        except (OSError, KeyError):
            return
        try:
            await asyncio.wait_for(stop.wait(), 0.05)
        except TimeoutError:
            pass


def listen_overflows() -> int:
    """TcpExt ListenOverflows (connections dropped because an accept queue was full), /proc/net/netstat."""
    lines = open("/proc/net/netstat").read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:]))).get("ListenOverflows", 0)
    return 0


async def level(stack: Stack, streams: int, words: int, timeout: float,
                services: list[ServiceProcess] | None = None, arrivals_per_s: float | None = None) -> dict[str, Any]:
    """``streams`` chats at once; every one must stream ``words`` tokens and end with ``done``. With several
    ``services`` (replicas; default the stack's one), chat ``i`` goes to ``services[i % len(services)]``, and their
    CPU and memory are summed. With ``arrivals_per_s``, chat ``i`` starts ``i / arrivals_per_s`` seconds after the
    first instead of with it (each chat's time to first token counts from its own start)."""
    services = services or [stack.service]
    pids = [service.pid for service in services]
    for pid in pids:
        await settled(pid)
    body = pure_chat_bodies(stack).service
    hwm_reset = all([reset_peak_rss(pid) for pid in pids])
    peak_sampled = [sum(memory_kib(pid, "VmRSS") for pid in pids)]
    model_pid = stack.model.process.pid
    cpu_before = {"service": sum(cpu_seconds(pid) for pid in pids), "model": cpu_seconds(model_pid),
                  "bench client": time.process_time()}
    overflows = listen_overflows()
    gate = asyncio.Event()
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(pids, peak_sampled, stop))
    async with client.session(timeout=timeout) as http:
        async def one(index: int) -> Sample:
            await gate.wait()
            if arrivals_per_s:
                await asyncio.sleep(max(0.0, started + index / arrivals_per_s - time.monotonic()))
            headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": f"bench-user-{index}"}
            tag = f"c{streams}-{index}"
            url = f"{services[index % len(services)].url}/ai-sidebar/stream-chat"
            return await client.stream_service(http, url, {"message": f"{QUESTION} [bench {tag}]", **body},
                                               headers, "service/chat", tag)

        started = 0.0
        tasks = [asyncio.create_task(one(i)) for i in range(streams)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        gate.set()
        try:
            samples = await asyncio.wait_for(asyncio.gather(*tasks), timeout)
        except TimeoutError:
            for task in tasks:
                task.cancel()
            samples = [t.result() for t in tasks if t.done() and not t.cancelled() and t.exception() is None]
        wall = time.monotonic() - started
    stop.set()
    await sampler
    cpu = {"service": sum(cpu_seconds(pid) for pid in pids) - cpu_before["service"],
           "model": cpu_seconds(model_pid) - cpu_before["model"],
           "bench client": time.process_time() - cpu_before["bench client"]}
    completed = [s for s in samples if s.ok and len(s.arrivals) == words]
    events = sum(len(s.events) for s in completed)
    errors = streams - len(completed)
    gaps = [gap for s in completed for gap in s.gaps_ms()]
    ttft = [s.ttft_ms for s in completed]
    examples = sorted({(s.error or f"{len(s.arrivals)} of {words} tokens, done={s.done}")[:200]
                       for s in samples if s not in completed})[:3]
    return {
        "streams": streams, "arrivals_per_s": arrivals_per_s, "completed": len(completed), "errors": errors,
        "error_examples": examples,
        "token_events_per_answer": events / len(completed) if completed else None,
        "wall_s": wall, "listen_overflows": listen_overflows() - overflows,
        "inter_token_gap_ms": {"p50": percentile(gaps, 50), "p99": percentile(gaps, 99), "max": max(gaps or [0])},
        "ttft_ms": {"p50": percentile(ttft, 50), "p99": percentile(ttft, 99)},
        "cpu_s": cpu, "service_cpu_percent_of_one_core": 100 * cpu["service"] / wall if wall else None,
        "service_peak_rss_mb": (sum(memory_kib(pid, "VmHWM") for pid in pids) if hwm_reset
                                else peak_sampled[0]) / 1024,
        "peak_rss_source": "VmHWM (reset before the level)" if hwm_reset else "VmRSS sampled every 50 ms",
        "service_peak_rss_mb_sampled": peak_sampled[0] / 1024,
    }


async def model_ttft(stack: Stack, requests: int = 20) -> dict[str, Any]:
    """The model server's own time to first token, asked directly one request at a time (the baseline of the
    time-to-first-token target)."""
    async with client.session() as http:
        samples = [await client.stream_model(http, stack.model.base_url, f"{QUESTION} [bench model-{i}]", "model",
                                             f"model-{i}") for i in range(requests)]
    ttft = [s.ttft_ms for s in samples if s.done and s.arrivals]
    return {"requests": requests, "p50": percentile(ttft, 50), "p99": percentile(ttft, 99)}


async def run(stack: Stack, *, levels: tuple[int, ...], words: int, token_delay: float,
              timeout: float, paced: tuple[int, float] | None = None) -> dict[str, Any]:
    """The ``levels`` (chats starting at once), then ``paced``: ``(streams, arrivals per second)`` arriving one
    after the other (issue 33: 200 at 100 per second)."""
    stack.model.control("reply", {"words": words, "token_delay": token_delay})
    stack.model.control("reset")
    model = await model_ttft(stack)
    rss_at_start = memory_kib(stack.service.pid, "VmRSS") / 1024
    results = []
    for streams in levels:
        results.append(await level(stack, streams, words, timeout))
        stack.model.control("reset")
        await asyncio.sleep(1.0)  # let the service save the last turns and close connections
    answer = {"words": words, "token_delay_ms": token_delay * 1000, "model_ttft_ms": model,
              "service_rss_at_start_mb": rss_at_start, "levels": results}
    if paced is not None:
        answer["paced"] = await level(stack, paced[0], words, timeout, arrivals_per_s=paced[1])
        stack.model.control("reset")
        await asyncio.sleep(1.0)
    return answer
