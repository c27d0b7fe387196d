"""The chat streams open now, one row each in the memory database (migration 7), so that the per-user stream limit
holds across replicas sharing one PostgreSQL database (issue 23).

Each replica names itself (a random id) and refreshes ``expires_at`` of its rows every :data:`HEARTBEAT` seconds
while they stream (and deletes every replica's expired rows); the rows of a replica that died stop counting
:data:`STREAM_TTL` seconds after its last refresh. Opening a stream counts and inserts in one statement under the
owner's lock (PostgreSQL: a transaction-scoped advisory lock on the owner; SQLite: its one writer), so two replicas
never both take the last slot.
"""

from __future__ import annotations

import time
import uuid

from service.memory.db import Database
from service.memory.migrations import POSTGRESQL

STREAM_TTL = 60.0  # seconds a stream's row counts after its replica last refreshed it
HEARTBEAT = 20.0  # seconds between refreshes


class OpenStreams:
    """The open streams of every replica over one database; this replica's rows carry ``replica``."""

    def __init__(self, db: Database, replica: str | None = None, ttl: float = STREAM_TTL):
        self._db = db
        self.replica = replica or uuid.uuid4().hex
        self.ttl = ttl

    async def open(self, principal: tuple[str, str], limit: int) -> str | None:
        """Open a stream of ``principal`` (``(kind, name)``, see ``Identity.principal``) unless it has ``limit``
        open on any replica already. Returns the new row's id (``None``: refused; :meth:`count` says how many).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        kind, name = principal
        now = time.time()
        stream_id = uuid.uuid4().hex
        async with self._db.transaction() as tx:
            if self._db.dialect == POSTGRESQL:
                await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (f"{kind}\n{name}",))
            # One statement counts and inserts (one round trip to the database; expired rows are deleted by
            # the heartbeat): SQLite runs it under the write lock its transaction took, PostgreSQL under the
            # owner's advisory lock.
            inserted = await tx.execute(
                "INSERT INTO open_streams(id, owner_kind, owner, replica, expires_at) SELECT ?, ?, ?, ?, ? "
                "WHERE (SELECT COUNT(*) FROM open_streams WHERE owner_kind = ? AND owner = ? AND expires_at > ?) < ?",
                (stream_id, kind, name, self.replica, now + self.ttl, kind, name, now, limit))
        return stream_id if inserted else None

    async def close(self, stream_id: str) -> None:
        """The stream ended. Raises :class:`MemoryUnavailable` (its row then ages out)."""
        await self._db.write([("DELETE FROM open_streams WHERE id = ?", (stream_id,))])

    async def count(self, principal: tuple[str, str]) -> int:
        """Streams of ``principal`` open on any replica now."""
        return int(await self._db.scalar(
            "SELECT COUNT(*) AS n FROM open_streams WHERE owner_kind = ? AND owner = ? AND expires_at > ?",
            (*principal, time.time())))

    async def heartbeat(self) -> None:
        """Keep this replica's rows counting for another :attr:`ttl` seconds, and delete every replica's expired
        rows (a replica that died)."""
        now = time.time()
        await self._db.write([
            ("UPDATE open_streams SET expires_at = ? WHERE replica = ?", (now + self.ttl, self.replica)),
            ("DELETE FROM open_streams WHERE expires_at <= ?", (now,))])

    async def forget_replica(self) -> None:
        """Delete this replica's rows (it stops; a stream still open then ends with it)."""
        await self._db.write([("DELETE FROM open_streams WHERE replica = ?", (self.replica,))])
