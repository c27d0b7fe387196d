"""The memory's backends, opened by what ``DATABASE_URL`` or ``MEMORY_DB_PATH`` names: PostgreSQL
(:mod:`service.memory.postgres`, imported only when used) or SQLite (:class:`service.memory.db.SqliteDatabase`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

from service.memory.db import Database, SqliteDatabase, is_postgres_url

log = logging.getLogger(__name__)

# Opening an SQLite file another process holds locked (a second worker migrating it, a backup, the flow history's
# first capture) waits out SQLite's busy timeout per try (5 s, sqlite3's default) and is tried this many times in
# all before the service gives up and answers without memory: a worker must not lose its memory for its whole life
# to a lock that is gone seconds later.
OPEN_ATTEMPTS = 6
RETRY_PAUSE = 1.0  # seconds between two tries, beside the busy timeout each try waits


def _transient(err: sqlite3.Error) -> bool:
    """Whether ``err`` is SQLite's "database is locked" / "database table is locked" / busy: another connection's
    lock, which goes away (https://sqlite.org/rescode.html#busy)."""
    text = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


async def open_database(target: str | Path) -> Database:
    """Open and migrate the database at ``target``: a ``postgresql://`` URL, or an SQLite file path
    (``":memory:"`` for tests).

    An SQLite file locked by another connection is tried again (:data:`OPEN_ATTEMPTS` tries in all, each waiting
    SQLite's busy timeout), saying so in the log.

    Raises:
        OSError, sqlite3.Error: the SQLite file cannot be created or opened (still locked after the last try).
        MemoryUnavailable: the PostgreSQL server cannot be reached or refuses the migrations.
    """
    if is_postgres_url(target):
        from service.memory.postgres import PostgresDatabase

        return await PostgresDatabase.open(str(target))
    for attempt in range(1, OPEN_ATTEMPTS + 1):
        try:
            return await SqliteDatabase.open(str(target))
        except sqlite3.Error as err:
            if attempt == OPEN_ATTEMPTS or not _transient(err):
                raise
            log.warning("memory database %s is locked by another connection (%s); trying again (%d of %d)",
                        target, err, attempt + 1, OPEN_ATTEMPTS)
            await asyncio.sleep(RETRY_PAUSE)
    raise AssertionError("unreachable")
