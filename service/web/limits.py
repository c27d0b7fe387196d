"""Per-user concurrency: how many chat streams one Node-RED user may have open at once, in this process or, with
a shared database (PostgreSQL, several replicas), across all replicas."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Hashable

from service.errors import ServiceError
from service.memory.db import MemoryUnavailable
from service.memory.streams import OpenStreams

log = logging.getLogger(__name__)

# Seconds a stream waits for a contended database to count it across workers and replicas before it is counted in
# this process alone (each attempt itself waits up to the busy timeout, service.memory.db.BUSY_TIMEOUT_MS).
SHARED_PATIENCE = 30.0


class StreamLimiter:
    """Counts open streams per user; :meth:`slot` refuses one over ``max_per_user`` with 429 ``too_many_requests``.

    Alone it counts this process's streams (single event loop: ``slot`` never awaits between the check and the
    increment). After :meth:`share` it counts the streams of every replica in the database instead; when the
    database cannot be reached it falls back to this process's count (chat keeps working without memory).
    """

    def __init__(self, max_per_user: int):
        self.max_per_user = max_per_user
        self._open: Counter[Hashable] = Counter()
        self.shared: OpenStreams | None = None

    def share(self, streams: OpenStreams | None) -> None:
        """Count in ``streams`` (``None``: in this process again)."""
        self.shared = streams

    def open_streams(self, user: Hashable) -> int:
        """Streams of ``user`` open in this process."""
        return self._open[user]

    async def _open_shared(self, shared: OpenStreams, user: tuple[str, str]) -> str | None:
        """:meth:`OpenStreams.open`, asked again while the database is only contended (``MemoryUnavailable.busy``:
        another worker or replica held its lock past the busy timeout, as on a busy machine) for up to
        :data:`SHARED_PATIENCE` seconds; counting alone would let a second stream through."""
        deadline = time.monotonic() + SHARED_PATIENCE
        while True:
            try:
                return await shared.open(user, self.max_per_user)
            except MemoryUnavailable as err:
                if not err.busy or time.monotonic() >= deadline:
                    raise
                log.info("open streams: the database is busy (%s), asking again", err.message)

    @contextlib.asynccontextmanager
    async def slot(self, user: tuple[str, str]) -> AsyncIterator[None]:
        """Hold one of ``user``'s stream slots (``Identity.principal``) while the block runs.

        Raises:
            ServiceError: 429 ``too_many_requests`` with ``count``, the streams open already.
        """
        row = None
        if self.shared is not None:
            try:
                row = await self._open_shared(self.shared, user)
                if row is None:
                    raise ServiceError("too_many_requests", status=429,
                                       params={"count": await self.shared.count(user)})
            except MemoryUnavailable as err:
                log.warning("open streams not counted across replicas: %s", err.message)
        if row is None and self._open[user] >= self.max_per_user:
            raise ServiceError("too_many_requests", status=429, params={"count": self._open[user]})
        self._open[user] += 1
        try:
            yield
        finally:
            self._open[user] -= 1
            if self._open[user] <= 0:
                del self._open[user]
            if row is not None and self.shared is not None:
                try:
                    await asyncio.shield(self.shared.close(row))
                except MemoryUnavailable as err:  # the row ages out with its replica's heartbeat gone
                    log.warning("open stream row not deleted: %s", err.message)
