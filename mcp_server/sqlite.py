"""Opening the MCP server's own SQLite files (the audit of ``MCP_AUDIT_DB``, the sign-in grants of ``MCP_AUTH_DB``)
the one way both need: connect, wait for a busy lock, create the schema, migrate, record the schema version."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiosqlite

BUSY_TIMEOUT_MS = 5000  # how long a write waits for another connection's lock before "database is locked"


async def open_sqlite(path: str, schema: str, version: int,
                      migrate: Callable[[aiosqlite.Connection], Awaitable[None]] | None = None
                      ) -> aiosqlite.Connection:
    """A connection to the SQLite file at ``path`` (created if needed) with ``schema`` (a script of ``CREATE ...
    IF NOT EXISTS`` statements) applied, then ``migrate(db)`` (for what an older file lacks), then ``PRAGMA
    user_version`` set to ``version``, committed. A failure closes the connection before it propagates.

    Raises:
        OSError, sqlite3.Error: the file cannot be opened or created, or the schema not applied.
    """
    db = await aiosqlite.connect(path)
    try:
        await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        await db.executescript(schema)
        if migrate is not None:
            await migrate(db)
        await db.execute(f"PRAGMA user_version={int(version)}")
        await db.commit()
    except BaseException:
        await db.close()
        raise
    return db
