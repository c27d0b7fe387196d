"""Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html): ``data: <json>\\n\\n``
per event, and a ``: ping`` comment every ``ping_interval`` seconds so that proxies keep the stream open."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import web

PING_INTERVAL = 15.0


class EventStream:
    """One open ``text/event-stream`` answer.

    Use ``await stream.prepare(request)``, then ``await stream.send({...})`` per event, then ``await stream.close()``.
    ``send`` raises ``ConnectionResetError`` when the client has gone away.
    """

    def __init__(self, ping_interval: float = PING_INTERVAL):
        self.response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        })
        self._ping_interval = ping_interval
        self._ping_task: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def prepare(self, request: web.Request) -> None:
        await self.response.prepare(request)
        self._ping_task = asyncio.create_task(self._ping())

    async def send(self, event: dict[str, Any]) -> None:
        """Write one event; ``event`` must hold ``type``."""
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        await self._write(f"data: {data}\n\n".encode())

    async def _write(self, chunk: bytes) -> None:
        async with self._lock:
            if self._closed:
                raise ConnectionResetError("the event stream is closed")
            try:
                await self.response.write(chunk)
            except RuntimeError as err:  # aiohttp: write after write_eof, or the transport is gone
                raise ConnectionResetError(str(err)) from None

    async def _ping(self) -> None:
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            while True:
                await asyncio.sleep(self._ping_interval)
                await self._write(b": ping\n\n")

    async def close(self) -> None:
        """Stop pings and finish the answer; safe after a client disconnect and when called twice. Later
        :meth:`send` calls raise ``ConnectionResetError`` (the service shutting down closes open streams)."""
        if self._closed:
            return
        self._closed = True
        if self._ping_task is not None:
            self._ping_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ping_task
            self._ping_task = None
        async with self._lock:
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await self.response.write_eof()
