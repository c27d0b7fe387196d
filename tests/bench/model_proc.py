"""The scripted model server (:mod:`tests.support.model_server`) as its own process, for benchmarks.

It streams every answer at a fixed token rate and records, per request, when each piece left the server
(``time.monotonic_ns()``, CLOCK_MONOTONIC, which every process on the machine shares), so that a client can tell
how long each token took to reach it over each path. Requests are matched by a tag ``[bench <tag>]`` in the last
message.

A second small HTTP server on the same event loop controls it (all on 127.0.0.1):

- ``POST /control/reply`` ``{"words": int, "token_delay": seconds, "tools": [name, ...]}``: the answer every
  request gets from now on; with ``tools``, a request that offers one of them and holds no tool result yet is
  answered with a call of the next one offered (round robin), the request after the result with the words;
- ``POST /control/reset``: forget recorded requests and emission times;
- ``GET /control/requests``: the request bodies received since the last reset, oldest first;
- ``GET /control/emissions``: ``{tag: [ns, ...]}``, one time per piece, taken right after the piece was written.

Started by :class:`tests.bench.stack.Stack`; prints ``{"port": ..., "control_port": ...}`` on its first stdout line
and runs until its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from tests.support.model_server import Reply, ScriptedModelServer

TAG = re.compile(r"\[bench ([\w.-]+)\]")
WORDS = ("Use", "a", "delay", "node", "in", "rate", "limit", "mode", "set", "to", "one", "message", "per",
         "second,", "then", "wire", "it", "before", "the", "http", "request", "node.")


def answer_pieces(count: int) -> list[str]:
    """``count`` pieces of a plausible answer, one word each (the last without its trailing space)."""
    words = [WORDS[i % len(WORDS)] for i in range(count)]
    return [word + (" " if i < count - 1 else "") for i, word in enumerate(words)]


def timed(pieces: list[str], record: list[int]) -> Iterator[str]:
    """Yield ``pieces``; the server asks for the next piece right after writing the previous one, so the time
    taken on resumption is when that piece left (see ``ScriptedModelServer._handle``)."""
    for piece in pieces:
        yield piece
        record.append(time.monotonic_ns())


class TimedModelServer(ScriptedModelServer):
    """Every request gets ``words`` pieces, ``token_delay`` seconds apart, with emission times recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.words = 8
        self.token_delay = 0.02
        self.emissions: dict[str, list[int]] = {}
        self.tools: list[str] = []
        self._tool_turn = 0

    def _tool_call(self, body: dict[str, Any]) -> Reply | None:
        """A call of the next of :attr:`tools` the request offers, unless it already holds a tool result."""
        offered = {tool.get("function", {}).get("name") for tool in body.get("tools") or []}
        wanted = [name for name in self.tools if name in offered]
        if not wanted or any(m.get("role") == "tool" for m in body.get("messages") or []):
            return None
        with self._lock:
            name = wanted[self._tool_turn % len(wanted)]
            self._tool_turn += 1
        return Reply(tool_calls=[{"name": name, "arguments": {}}])

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        super()._next(body, headers)
        call = self._tool_call(body) if self.tools else None
        if call is not None:
            return call
        messages = body.get("messages") or []
        last = str(messages[-1].get("content", "")) if messages else ""
        match = TAG.search(last)
        record: list[int] = []
        if match:
            with self._lock:
                record = self.emissions.setdefault(match.group(1), [])
        pieces = answer_pieces(self.words)
        return Reply(text="".join(pieces), chunks=timed(pieces, record), token_delay=self.token_delay)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.emissions.clear()


def control_app(server: TimedModelServer) -> web.Application:
    async def reply(request: web.Request) -> web.Response:
        body = await request.json()
        server.words = max(1, min(int(body.get("words", server.words)), 10_000))
        server.token_delay = max(0.0, min(float(body.get("token_delay", server.token_delay)), 5.0))
        server.tools = [str(name) for name in body.get("tools") or []]  # each reply setting anew
        return web.json_response({"words": server.words, "token_delay": server.token_delay, "tools": server.tools})

    async def reset(request: web.Request) -> web.Response:
        server.clear()
        return web.json_response({"ok": True})

    async def requests(request: web.Request) -> web.Response:
        with server._lock:
            return web.json_response(list(server.requests))

    async def emissions(request: web.Request) -> web.Response:
        with server._lock:
            return web.json_response(dict(server.emissions))

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/control/reply", reply)
    app.router.add_post("/control/reset", reset)
    app.router.add_get("/control/requests", requests)
    app.router.add_get("/control/emissions", emissions)
    return app


async def _start_control(server: TimedModelServer) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(control_app(server))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


def main() -> None:
    server = TimedModelServer()
    server.start()
    runner, control_port = asyncio.run_coroutine_threadsafe(_start_control(server), server._loop).result(10)
    print(json.dumps({"port": server.port, "control_port": control_port}), flush=True)
    sys.stdin.read()  # the parent closes our stdin (or goes away) to stop us
    asyncio.run_coroutine_threadsafe(runner.cleanup(), server._loop).result(10)
    server.stop()


if __name__ == "__main__":
    main()
