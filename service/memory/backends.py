"""The memory's backends, opened by what ``DATABASE_URL`` or ``MEMORY_DB_PATH`` names: PostgreSQL
(:mod:`service.memory.postgres`, imported only when used) or SQLite (:class:`service.memory.db.SqliteDatabase`)."""

from __future__ import annotations

from pathlib import Path

from service.memory.db import Database, SqliteDatabase, is_postgres_url


async def open_database(target: str | Path) -> Database:
    """Open and migrate the database at ``target``: a ``postgresql://`` URL, or an SQLite file path
    (``":memory:"`` for tests).

    Raises:
        OSError, sqlite3.Error: the SQLite file cannot be created or opened.
        MemoryUnavailable: the PostgreSQL server cannot be reached or refuses the migrations.
    """
    if is_postgres_url(target):
        from service.memory.postgres import PostgresDatabase

        return await PostgresDatabase.open(str(target))
    return await SqliteDatabase.open(str(target))
