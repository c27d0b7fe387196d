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


def adding_columns(table: str, columns: tuple[tuple[str, str], ...]
                   ) -> Callable[[aiosqlite.Connection], Awaitable[None]]:
    """A ``migrate`` for :func:`open_sqlite` adding to ``table`` those of ``columns`` (``(name, declaration)``,
    added after the table's first version) that an older file lacks."""

    async def add_columns(db: aiosqlite.Connection) -> None:
        async with db.execute(f"PRAGMA table_info({table})") as cursor:
            present = {row[1] for row in await cursor.fetchall()}
        for name, declaration in columns:
            if name not in present:
                await db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")

    return add_columns
