"""Threads a test can watch: aiosqlite runs each connection on a worker thread of its own, which is not a daemon, so
a connection left open keeps the process from exiting (and calls into a closed event loop when collected)."""

from __future__ import annotations

import asyncio
import threading


def aiosqlite_threads() -> set[threading.Thread]:
    """The aiosqlite connection worker threads alive now (aiosqlite/core.py ``_connection_worker_thread``)."""
    return {thread for thread in threading.enumerate() if "_connection_worker_thread" in thread.name}


async def threads_left(before: set[threading.Thread], seconds: float = 5.0) -> set[threading.Thread]:
    """The aiosqlite threads started since ``before`` was taken that are still alive after waiting up to ``seconds``
    (a closed connection's thread ends just after it answers the close)."""
    for _ in range(int(seconds / 0.05)):
        if not aiosqlite_threads() - before:
            break
        await asyncio.sleep(0.05)
    return aiosqlite_threads() - before
