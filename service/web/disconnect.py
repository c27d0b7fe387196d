"""A request's work cancelled when its client disconnects: the chat stream, the assist stream and the inline
completion (the editor typed on) stop their model request and tools at once instead of running for nobody."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any

from aiohttp import web

DISCONNECT_POLL = 0.2  # seconds between checks that the client is still connected


async def until_client_leaves(request: web.Request, work: Awaitable[Any]) -> None:
    """Run ``work`` (a coroutine or future) for ``request``; when the client disconnects (tab closed, Stop
    pressed, the editor typed on) cancel it within :data:`DISCONNECT_POLL` seconds, so the model request and any
    running tool stop, and raise ``ConnectionResetError``. ``work``'s own exception is raised as it is.

    aiohttp does not cancel handlers on disconnect (``handler_cancellation`` is off by default, aiohttp 3.9+
    "Web handler cancellation"), and a response waiting on a slow model or tool writes nothing that could fail, so
    the transport is watched instead.
    """
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=DISCONNECT_POLL)
            transport = request.transport
            if not task.done() and (transport is None or transport.is_closing()):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise ConnectionResetError("client disconnected")
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
