"""The background tasks of the knowledge stores (term counts, embeddings): how one is stopped."""

from __future__ import annotations

import asyncio
import contextlib


async def stop(task: asyncio.Task | None) -> None:
    """Cancel ``task`` when it is still running and wait until it has ended; ``None`` or a finished task is left.

    The task's own :class:`asyncio.CancelledError` is swallowed; the caller's (when it is cancelled while waiting)
    is not, since ``await`` on a cancelled caller raises before the task's result is read.
    """
    if task is None or task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
