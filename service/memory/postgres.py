"""The memory database on a PostgreSQL server (``DATABASE_URL``), through psycopg 3's async driver and
``psycopg_pool`` (https://www.psycopg.org/psycopg3/docs/advanced/pool.html).

The pool's connections are those LangGraph's ``AsyncPostgresSaver`` requires (autocommit, dict rows, no prepared
statements: langgraph/checkpoint/postgres/aio.py ``from_conn_string``), so the approval checkpointer shares it.
Several replicas may open the same database at once: migrations run under a transaction-scoped advisory lock.

Every connection's ``lock_timeout`` is :data:`~service.memory.db.BUSY_TIMEOUT_MS`, SQLite's busy timeout: a statement
that waits longer for a lock another session holds (a migration, an operator's ``LOCK TABLE``, a stuck transaction)
fails with ``LockNotAvailable``, which becomes :class:`MemoryUnavailable` like every driver error
(https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-LOCK-TIMEOUT). No ``statement_timeout``: a
statement that runs long without waiting for a lock (a full-text search over a large memory) is work, not a fault.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from service.memory.db import BUSY_TIMEOUT_MS, MemoryUnavailable, Row, Statement, Transaction, write_all
from service.memory.migrations import POSTGRESQL, render

# pg_advisory_xact_lock key of the memory schema's migrations (any constant no other application of the database
# uses; these are the ASCII bytes of "aisdmigr").
MIGRATION_LOCK = 0x616973646D696772
POOL_SIZE = (1, 10)  # connections per replica: at least, at most
CONNECT_TIMEOUT = 10.0  # seconds to wait for the first connection at start


async def configure(conn: psycopg.AsyncConnection) -> None:
    """Set up one new connection of the pool (psycopg_pool's ``configure`` callback): ``lock_timeout`` to
    :data:`BUSY_TIMEOUT_MS`. A ``SET`` rather than ``options=-c lock_timeout=...`` in the pool's ``kwargs``: those
    would replace the ``options`` an operator may give in ``DATABASE_URL`` (psycopg's ``make_conninfo``: keyword
    arguments override the connection string's)."""
    await conn.execute(f"SET lock_timeout = {BUSY_TIMEOUT_MS}", prepare=False)


@functools.lru_cache(maxsize=512)
def to_format(sql: str) -> str:
    """``sql`` with the stores' ``?`` placeholders in psycopg's ``%s`` style (a literal ``%`` doubled). The stores'
    SQL never holds a ``?`` inside a string literal."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PostgresTransaction:
    def __init__(self, conn: psycopg.AsyncConnection):
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return (await self._conn.execute(to_format(sql), tuple(params))).rowcount

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return cast(list[Row], await (await self._conn.execute(to_format(sql), tuple(params))).fetchall())


class PostgresDatabase:
    """A connection pool on one PostgreSQL database; ``pool`` is shared with the approval checkpointer."""

    dialect = POSTGRESQL

    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool
        self._closed = False

    @classmethod
    async def open(cls, url: str) -> PostgresDatabase:
        """Connect to ``url`` (``postgresql://user:password@host:port/database``) and migrate the schema.

        Raises:
            MemoryUnavailable: no connection within :data:`CONNECT_TIMEOUT` seconds, or a migration failed (the
                detail never holds the URL's password).
        """
        low, high = POOL_SIZE
        pool = AsyncConnectionPool(url, min_size=low, max_size=high, open=False, name="memory",
                                   kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0},
                                   configure=configure)
        try:
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT)
            db = cls(pool)
            await db._migrate()
        except psycopg.Error as err:
            await pool.close()
            raise MemoryUnavailable(type(err).__name__ + ": " + str(err).split("\n")[0]) from None
        except BaseException:
            await pool.close()
            raise
        return db

    async def _migrate(self) -> None:
        from service.memory.migrations import MIGRATIONS

        async with self.pool.connection() as conn, conn.transaction():
            # Replicas starting together: one migrates, the others wait here, however long it takes, and find the
            # work done. The migration's own statements wait for locks as long as any other.
            await conn.execute("SET LOCAL lock_timeout = 0", prepare=False)
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute(f"SET LOCAL lock_timeout = {BUSY_TIMEOUT_MS}", prepare=False)
            await conn.execute("CREATE TABLE IF NOT EXISTS memory_schema (version INTEGER NOT NULL)")
            row = await (await conn.execute("SELECT version FROM memory_schema")).fetchone()
            if row is None:
                await conn.execute("INSERT INTO memory_schema(version) VALUES (0)")
            version = cast(dict[str, Any], row)["version"] if row is not None else 0
            for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
                script = render(step, POSTGRESQL)
                if script.strip():
                    # Not prepared: a prepared statement holds one command, a script several.
                    await conn.execute(script.encode(), prepare=False)
                await conn.execute("UPDATE memory_schema SET version = %s", (number,))

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        try:
            async with self.pool.connection() as conn:
                return cast(list[Row], await (await conn.execute(to_format(sql), tuple(params))).fetchall())
        except psycopg.Error as err:
            raise MemoryUnavailable(str(err)) from None

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        try:
            async with self.pool.connection() as conn:
                return cast(Row | None, await (await conn.execute(to_format(sql), tuple(params))).fetchone())
        except psycopg.Error as err:
            raise MemoryUnavailable(str(err)) from None

    async def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        assert row is not None, sql
        return next(iter(cast(dict[str, Any], row).values()))

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        try:
            async with self.pool.connection() as conn, conn.transaction():
                yield _PostgresTransaction(conn)
        except psycopg.Error as err:
            # lock_timeout (BUSY_TIMEOUT_MS) passed: SQLSTATE 55P03 lock_not_available
            raise MemoryUnavailable(str(err), busy=err.sqlstate == "55P03") from None

    async def write(self, statements: Sequence[Statement]) -> None:
        await write_all(self, statements)

    def utc_day(self, column: str) -> str:
        return f"to_char(to_timestamp({column}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

    async def schema_version(self) -> int:
        return await self.scalar("SELECT version FROM memory_schema")

    async def size_bytes(self) -> int:
        return await self.scalar("SELECT pg_database_size(current_database())")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.pool.close()
