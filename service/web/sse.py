"""Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html): ``data: <json>\\n\\n``
per event, and a ``: ping`` comment every ``ping_interval`` seconds so that proxies keep the stream open.

``token`` events that come within ``coalesce`` seconds of the last one written are joined into one (their
``content`` concatenated, in order): a stream's first token and any token after a pause go out at once, the rest at
most ``coalesce`` later; ``thinking`` events (a reasoning model's thoughts, their ``text``) likewise. Every other
event, and a token after thoughts or thoughts after a token, first writes what is pending, so events are never
reordered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from typing import Any

from aiohttp import web

PING_INTERVAL = 15.0
# The events joined when they come close together, and the field whose text is concatenated.
JOINED = {"token": "content", "thinking": "text"}


def encode(event: dict[str, Any]) -> bytes:
    """One event as its ``data:`` block."""
    return f"data: {json.dumps(event, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


class EventStream:
    """One open ``text/event-stream`` answer.

    Use ``await stream.prepare(request)``, then ``await stream.send({...})`` per event, then ``await stream.close()``.
    ``send`` raises ``ConnectionResetError`` when the client has gone away (for a token held back to be joined,
    the next ``send`` raises it). ``coalesce``: seconds within which ``token`` (or ``thinking``) events are joined
    (0: never).
    """

    def __init__(self, ping_interval: float = PING_INTERVAL, coalesce: float = 0.0):
        self.response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        })
        self._ping_interval = ping_interval
        self._ping_task: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._coalesce = coalesce
        self._pending: list[str] = []
        self._pending_type = "token"  # the type of the held-back events: token (content) or thinking (text)
        self._last_token = -math.inf  # loop time at which the last token event was handed to the writer
        self._timer: asyncio.TimerHandle | None = None
        self._flusher: asyncio.Task | None = None
        self._failed = False

    async def prepare(self, request: web.Request) -> None:
        await self.response.prepare(request)
        self._ping_task = asyncio.create_task(self._ping())

    async def send(self, event: dict[str, Any]) -> None:
        """Write one event; ``event`` must hold ``type``. A ``{type: token, content}`` event may be held back up to
        ``coalesce`` seconds and joined with the tokens after it."""
        if self._failed:
            raise ConnectionResetError("the event stream is closed")
        kind = event.get("type")
        if self._coalesce > 0 and kind in JOINED and len(event) == 2:
            if self._pending and kind != self._pending_type:
                await self.flush()
            loop = asyncio.get_running_loop()
            now = loop.time()
            if self._pending or now - self._last_token < self._coalesce:
                if self._closed:
                    raise ConnectionResetError("the event stream is closed")
                self._pending_type = kind
                self._pending.append(str(event.get(JOINED[kind], "")))
                if self._timer is None:
                    self._timer = loop.call_at(self._last_token + self._coalesce, self._flush_soon)
                return
            self._last_token = now
        else:
            await self.flush()
        await self._write(encode(event))

    def _flush_soon(self) -> None:
        self._timer = None
        self._flusher = asyncio.create_task(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        try:
            await self.flush()
        except ConnectionResetError:
            self._failed = True  # the next send tells the caller

    async def flush(self) -> None:
        """Write the held-back tokens (or thoughts) as one ``token`` (``thinking``) event now (nothing when none are
        held)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        # Taken before the first await: whatever is sent after this call is queued on the lock behind it.
        content, self._pending = "".join(self._pending), []
        self._last_token = asyncio.get_running_loop().time()
        kind = self._pending_type
        await self._write(encode({"type": kind, JOINED[kind]: content}))

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
        """Write what is held back, stop pings and finish the answer; safe after a client disconnect and when called
        twice. Later :meth:`send` calls raise ``ConnectionResetError`` (the service shutting down closes open
        streams)."""
        if self._closed:
            return
        with contextlib.suppress(ConnectionResetError):
            await self.flush()
        self._closed = True
        if self._ping_task is not None:
            self._ping_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ping_task
            self._ping_task = None
        async with self._lock:
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await self.response.write_eof()
