"""Opening the memory's SQLite file while another connection holds it locked (a second worker migrating it, a backup):
the open is tried again until the lock is gone, instead of leaving the service without memory for its life."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import pytest

from service.memory import backends
from service.memory.backends import open_database
from service.memory.migrations import MIGRATIONS


async def wait_for_log(caplog, text: str, timeout: float = 120.0) -> None:
    """Until a log record holds ``text`` (each try waits SQLite's 5 s busy timeout; a loaded machine is slower)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not any(text in record.getMessage() for record in caplog.records):
        assert asyncio.get_running_loop().time() < deadline, f"no log line with {text!r}"
        await asyncio.sleep(0.05)


async def test_a_locked_file_is_opened_once_the_lock_is_gone(tmp_path, caplog):
    path = tmp_path / "memory.db"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    caplog.set_level(logging.WARNING, logger=backends.__name__)
    opening = asyncio.create_task(open_database(path))
    try:
        await wait_for_log(caplog, "is locked by another connection")
        assert not opening.done()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    db = await asyncio.wait_for(opening, timeout=120)
    try:
        assert await db.schema_version() == len(MIGRATIONS)
    finally:
        await db.close()


async def test_a_lock_that_stays_fails_after_the_last_try(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(backends, "OPEN_ATTEMPTS", 2)
    monkeypatch.setattr(backends, "RETRY_PAUSE", 0)
    path = tmp_path / "memory.db"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    caplog.set_level(logging.WARNING, logger=backends.__name__)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await open_database(path)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert sum("trying again (2 of 2)" in record.getMessage() for record in caplog.records) == 1


async def test_a_file_that_is_not_a_database_is_not_tried_again(tmp_path, caplog):
    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not an SQLite file" * 100)
    caplog.set_level(logging.WARNING, logger=backends.__name__)
    with pytest.raises(sqlite3.DatabaseError):
        await open_database(path)
    assert not any("trying again" in record.getMessage() for record in caplog.records)
