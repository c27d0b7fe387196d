"""The chat streams open now, one row each in the memory database (migration 7), so that the per-user stream limit
holds across replicas sharing one PostgreSQL database (issue 23).

Each replica names itself (a random id) and refreshes ``expires_at`` of its rows every :data:`HEARTBEAT` seconds
while they stream; the rows of a replica that died stop counting :data:`STREAM_TTL` seconds after its last refresh.
Opening a stream counts and inserts under the owner's lock (PostgreSQL: a transaction-scoped advisory lock on the
owner; SQLite: its one writer), so two replicas never both take the last slot.
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

    async def open(self, principal: tuple[str, str], limit: int) -> tuple[str | None, int]:
        """Open a stream of ``principal`` (``(kind, name)``, see ``Identity.principal``) unless it has ``limit``
        open on any replica already. Returns the new row's id (``None``: refused) and how many were open before.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        kind, name = principal
        now = time.time()
        async with self._db.transaction() as tx:
            if self._db.dialect == POSTGRESQL:
                await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (f"{kind}\n{name}",))
            await tx.execute("DELETE FROM open_streams WHERE owner_kind = ? AND owner = ? AND expires_at <= ?",
                             (kind, name, now))
            rows = await tx.fetchall("SELECT COUNT(*) AS n FROM open_streams WHERE owner_kind = ? AND owner = ?",
                                     (kind, name))
            count = int(rows[0]["n"])
            if count >= limit:
                return None, count
            stream_id = uuid.uuid4().hex
            await tx.execute("INSERT INTO open_streams(id, owner_kind, owner, replica, expires_at) "
                             "VALUES (?, ?, ?, ?, ?)", (stream_id, kind, name, self.replica, now + self.ttl))
        return stream_id, count

    async def close(self, stream_id: str) -> None:
        """The stream ended. Raises :class:`MemoryUnavailable` (its row then ages out)."""
        await self._db.write([("DELETE FROM open_streams WHERE id = ?", (stream_id,))])

    async def count(self, principal: tuple[str, str]) -> int:
        """Streams of ``principal`` open on any replica now."""
        return int(await self._db.scalar(
            "SELECT COUNT(*) AS n FROM open_streams WHERE owner_kind = ? AND owner = ? AND expires_at > ?",
            (*principal, time.time())))

    async def heartbeat(self) -> None:
        """Keep this replica's rows counting for another :attr:`ttl` seconds."""
        await self._db.write([("UPDATE open_streams SET expires_at = ? WHERE replica = ?",
                               (time.time() + self.ttl, self.replica))])

    async def forget_replica(self) -> None:
        """Delete this replica's rows (it stops; a stream still open then ends with it)."""
        await self._db.write([("DELETE FROM open_streams WHERE replica = ?", (self.replica,))])
