"""The memory database behind one API: SQLite (aiosqlite, the embedded default) or PostgreSQL (psycopg 3, when
``DATABASE_URL`` is set; :mod:`service.memory.postgres`).

The stores write their SQL once, with ``?`` placeholders, and read rows by column name; a backend runs it on its
driver, turns the driver's errors into :class:`MemoryUnavailable`, and says where the dialects differ
(:attr:`Database.dialect`, :meth:`Database.utc_day`). Migrations are :data:`service.memory.migrations.MIGRATIONS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias, cast

import aiosqlite

from service.errors import ServiceError
from service.memory.migrations import SQLITE, render

# A result row, read by column name: sqlite3.Row (SQLite) or a dict (psycopg's dict_row).
Row: TypeAlias = sqlite3.Row | dict[str, Any]
Statement = tuple[str, Sequence[Any]]


# How long a statement waits for a lock another connection holds, in milliseconds, before the memory is unavailable:
# SQLite's busy_timeout, PostgreSQL's lock_timeout (service.memory.postgres).
BUSY_TIMEOUT_MS = 5000


def driver_errors() -> tuple[type[Exception], ...]:
    """The base error classes of the database drivers loaded in this process: ``sqlite3.Error`` always,
    ``psycopg.Error`` once psycopg is imported. Only a ``DATABASE_URL`` imports psycopg (:mod:`service.memory.postgres`,
    about 50 ms and 10 MB), and no psycopg error can be raised before it is, so a SQLite service never loads it."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


class MemoryUnavailable(ServiceError):
    """The database cannot be written or read (locked, read-only, disk full, server unreachable): 503
    ``memory_unavailable``."""

    def __init__(self, detail: str, busy: bool = False):
        super().__init__("memory_unavailable", status=503, params={"detail": detail})
        #: Another connection held a lock past the busy timeout (SQLite's SQLITE_BUSY/SQLITE_LOCKED, PostgreSQL's
        #: lock_not_available 55P03): the database works and is contended; asking again may succeed.
        self.busy = busy


# SQLite's primary result codes for a lock held elsewhere (https://sqlite.org/rescode.html#busy, #locked).
_SQLITE_BUSY_CODES = frozenset({5, 6})


def sqlite_unavailable(err: sqlite3.Error) -> MemoryUnavailable:
    """``err`` as :class:`MemoryUnavailable`, ``busy`` when its primary result code says a lock was held elsewhere
    (``sqlite3.Error.sqlite_errorcode``, Python 3.11+; extended codes keep the primary one in their low byte)."""
    code = getattr(err, "sqlite_errorcode", None)
    return MemoryUnavailable(str(err), busy=code is not None and code & 0xFF in _SQLITE_BUSY_CODES)


class Transaction(Protocol):
    """Statements inside one open transaction (:meth:`Database.transaction`)."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""
        ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run one statement that returns rows (a SELECT, or a write with ``RETURNING``)."""
        ...


class Database(Protocol):
    """A memory database: ``dialect`` is ``sqlite`` or ``postgresql``; every method raises
    :class:`MemoryUnavailable` when the driver fails."""

    dialect: str

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row of a query that always answers one row (``COUNT(*)``)."""
        ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Transaction]:
        """All statements run inside it commit together when the block ends, or none when it raises."""
        ...

    async def write(self, statements: Sequence[Statement]) -> None:
        """Run ``statements`` in one transaction."""
        ...

    def utc_day(self, column: str) -> str:
        """SQL for the UTC day (``YYYY-MM-DD``) of a Unix-seconds column."""
        ...

    async def schema_version(self) -> int: ...

    async def size_bytes(self) -> int:
        """Bytes the database takes (SQLite: the file; PostgreSQL: the whole database)."""
        ...

    async def close(self) -> None:
        """Idempotent."""
        ...


def is_postgres_url(target: str | Path) -> bool:
    """Whether ``target`` (``DATABASE_URL`` or ``MEMORY_DB_PATH``) names a PostgreSQL server."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


async def write_all(db: Database, statements: Sequence[Statement]) -> None:
    """:meth:`Database.write` for backends: every statement in one :meth:`Database.transaction`."""
    async with db.transaction() as tx:
        for sql, params in statements:
            await tx.execute(sql, params)


class _SqliteTransaction:
    def __init__(self, conn: aiosqlite.Connection):
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return (await self._conn.execute(sql, tuple(params))).rowcount

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return await _read(self._conn, sql, params)


async def _read(conn: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> list[Row]:
    """Every row of ``sql``, run and read in one call on the connection's thread.

    Not ``execute`` and then ``fetchall``: between the two another task's statement runs on the same connection, and
    a ``BEGIN IMMEDIATE`` then finds this SELECT's read snapshot open; when another process has written since, it
    fails at once with "database is locked" (SQLITE_BUSY_SNAPSHOT, https://sqlite.org/rescode.html#busy_snapshot:
    no busy wait helps). Seen with two workers on one file under load.
    """
    return list(await conn.execute_fetchall(sql, tuple(params)))


class SqliteDatabase:
    """One aiosqlite connection (WAL journal, foreign keys on); writes take one lock so that a transaction never
    interleaves with another task's statements. The file is created readable by its owner only."""

    dialect = SQLITE

    def __init__(self, conn: aiosqlite.Connection, path: str):
        self._conn = conn
        self.path = path
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, path: str) -> SqliteDatabase:
        """Open (creating its folder and file) and migrate the database file ``path``."""
        if path != ":memory:":
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _owner_only(Path(path))
        conn = await aiosqlite.connect(path)
        conn.row_factory = aiosqlite.Row
        db = cls(conn, path)
        try:
            await db._setup()
        except BaseException:
            await conn.close()
            raise
        return db

    async def _setup(self) -> None:
        from service.memory.migrations import MIGRATIONS

        await self._conn.execute("PRAGMA journal_mode=WAL")
        await self._conn.execute("PRAGMA foreign_keys=ON")
        # WAL with synchronous=NORMAL: a commit is not flushed to disk at once (a power cut may lose the last turns,
        # a crash of the service loses none; https://sqlite.org/pragma.html#pragma_synchronous): no fsync per
        # request for its open-stream row and its turn while several workers take turns at the write lock.
        await self._conn.execute("PRAGMA synchronous=NORMAL")
        # Several workers share the file (AI_SIDEBAR_WORKERS defaults to the CPU count): a write waits up to 5 s for
        # another process's lock, then fails as memory_unavailable.
        await self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # Memory-mapped reads: FTS5 ranking touches many pages (make bench: search p50 11.5 ms → 8.2 ms).
        await self._conn.execute("PRAGMA mmap_size=268435456")
        version = await self.schema_version()
        for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
            await self._conn.executescript(f"BEGIN; {render(step, SQLITE)}; PRAGMA user_version={number}; COMMIT;")

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        try:
            return await _read(self._conn, sql, params)
        except sqlite3.Error as err:
            raise sqlite_unavailable(err) from None

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        assert row is not None, sql
        return cast(sqlite3.Row, row)[0]

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield _SqliteTransaction(self._conn)
                except BaseException:
                    await self._conn.rollback()
                    raise
                await self._conn.commit()
            except sqlite3.Error as err:
                raise sqlite_unavailable(err) from None

    async def write(self, statements: Sequence[Statement]) -> None:
        """Run ``statements`` in one transaction, in one call on the connection's thread (not a call per
        statement and for BEGIN and COMMIT: each call is a wake-up of that thread and of the event loop).

        aiosqlite (0.22, pinned) has no public call that runs several statements with parameters;
        ``Connection._execute`` is the one its own ``execute`` and ``commit`` use to run a function on its thread.
        """
        bound = [(sql, tuple(params)) for sql, params in statements]
        async with self._lock:
            try:
                await self._conn._execute(_write_on_thread, self._conn._conn, bound)
            except sqlite3.Error as err:
                raise sqlite_unavailable(err) from None

    def utc_day(self, column: str) -> str:
        return f"date({column}, 'unixepoch')"

    async def schema_version(self) -> int:
        return await self.scalar("PRAGMA user_version")

    async def size_bytes(self) -> int:
        return await asyncio.to_thread(_file_size, self.path)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._conn.close()


def _file_size(path: str) -> int:
    """Bytes of the database file (0 for an in-memory database or a file not created yet)."""
    return Path(path).stat().st_size if path != ":memory:" and Path(path).exists() else 0


def _write_on_thread(conn: sqlite3.Connection, statements: list[tuple[str, tuple]]) -> None:
    """:meth:`SqliteDatabase.write` on the connection's own thread: BEGIN IMMEDIATE, the statements, COMMIT, or
    ROLLBACK and the error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _owner_only(path: Path) -> None:
    """Create the database file readable by its owner only (conversations are private), or tighten an existing one.
    SQLite gives the -wal and -shm files the database file's permissions."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            file.chmod(0o600)
        except OSError:  # absent, or not ours to change: SQLite decides whether it can be used
            pass
