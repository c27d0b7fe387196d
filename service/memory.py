"""Conversation memory and knowledge in SQLite (aiosqlite): sessions, messages, long-term entries, FTS5 search.

All SQL lives here. One connection, WAL journal, numbered migrations tracked with ``PRAGMA user_version``. Every
method that touches a session takes the ``user`` it belongs to: a user never lists, reads, searches or deletes
another user's sessions (an unknown or foreign session reads as "not found", never "forbidden", so its existence
does not leak).

Times are Unix seconds (float, UTC). Ranking is SQLite FTS5's ``bm25()`` (https://sqlite.org/fts5.html): lower is
better; results are returned best first with ``snippet()`` excerpts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from .errors import ServiceError

HISTORY_WINDOW = 50          # at most this many messages of a session go back to the model
HISTORY_MAX_CHARS = 40_000   # and at most this many characters (newest first)

MIGRATIONS: tuple[str, ...] = (
    # 1: the seed's two tables, sessions, FTS5 over messages and knowledge, kept in sync by triggers.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        user TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        pinned INTEGER NOT NULL DEFAULT 0,
        scenario TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX sessions_user ON sessions(user, updated_at);
    CREATE TABLE short_term_memory (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_type TEXT NOT NULL CHECK (message_type IN ('user', 'assistant')),
        content TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL
    );
    CREATE INDEX short_term_session ON short_term_memory(session_id, id);
    CREATE INDEX short_term_created ON short_term_memory(created_at);
    CREATE TABLE long_term_memory (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL UNIQUE,
        value TEXT NOT NULL,
        category TEXT NOT NULL DEFAULT 'note',
        metadata TEXT NOT NULL DEFAULT '{}',
        user TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX long_term_category ON long_term_memory(category, user);
    CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='short_term_memory', content_rowid='id',
                                                tokenize='trigram');
    CREATE TRIGGER short_term_ai AFTER INSERT ON short_term_memory BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER short_term_ad AFTER DELETE ON short_term_memory BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE VIRTUAL TABLE knowledge_fts USING fts5(key, value, content='long_term_memory', content_rowid='id',
                                                 tokenize='trigram');
    CREATE TRIGGER long_term_ai AFTER INSERT ON long_term_memory BEGIN
        INSERT INTO knowledge_fts(rowid, key, value) VALUES (new.id, new.key, new.value);
    END;
    CREATE TRIGGER long_term_ad AFTER DELETE ON long_term_memory BEGIN
        INSERT INTO knowledge_fts(knowledge_fts, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
    END;
    CREATE TRIGGER long_term_au AFTER UPDATE ON long_term_memory BEGIN
        INSERT INTO knowledge_fts(knowledge_fts, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
        INSERT INTO knowledge_fts(rowid, key, value) VALUES (new.id, new.key, new.value);
    END;
    """,
)


@dataclass
class MemorySlot:
    """Where the app keeps its store: ``None`` until opened, and when the database could not be opened."""

    store: MemoryStore | None = None


class SessionNotFound(ServiceError):
    """No session with that id belongs to the user (404 ``session_not_found``)."""

    def __init__(self, session_id: str):
        super().__init__("session_not_found", f"There is no session {session_id!r} for this user.", 404)


class MemoryUnavailable(ServiceError):
    """The database cannot be written or read (locked, read-only, disk full): 503 ``memory_unavailable``."""

    def __init__(self, detail: str):
        super().__init__("memory_unavailable", f"Conversation memory is unavailable ({detail}); answers still "
                                               "work but are not remembered.", 503)


@dataclass(frozen=True)
class Turn:
    """One saved message: ``role`` is ``user`` or ``assistant``; ``created_at`` Unix seconds."""

    id: int
    role: str
    content: str
    metadata: dict[str, Any]
    created_at: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "content": self.content, "metadata": self.metadata,
                "createdAt": self.created_at}


def _session_dict(row: aiosqlite.Row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "pinned": bool(row["pinned"]), "scenario": row["scenario"],
            "createdAt": row["created_at"], "updatedAt": row["updated_at"]}


def fts_query(text: str) -> str | None:
    """A safe FTS5 query from free text: each word (3+ characters, trigram index) quoted, all must match.

    Returns ``None`` when nothing searchable is left. Quoting makes FTS5 operators in the user's text inert.
    """
    words = [w for w in re.findall(r"\w[\w\-.]*", text, flags=re.UNICODE) if len(w) >= 3]
    if not words:
        return None
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words[:16])


class MemoryStore:
    """Owner of the memory database connection.

    Args:
        path: database file (``MEMORY_DB_PATH``); its folder is created. ``":memory:"`` works for tests.

    Use ``await MemoryStore.open(path)``; ``await store.close()`` is idempotent.
    """

    def __init__(self, db: aiosqlite.Connection, path: str):
        self._db = db
        self.path = path
        # One connection: a transaction must not interleave with another task's statements.
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path) -> MemoryStore:
        path = str(path)
        if path != ":memory:":
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _owner_only(Path(path))
        db = await aiosqlite.connect(path)
        db.row_factory = aiosqlite.Row
        store = cls(db, path)
        await store._setup()
        return store

    async def _setup(self) -> None:
        await self._db.execute("PRAGMA journal_mode=WAL")
        await self._db.execute("PRAGMA foreign_keys=ON")
        await self._db.execute("PRAGMA busy_timeout=2000")
        # Memory-mapped reads: FTS5 ranking touches many pages (make bench: search p50 11.5 ms → 8.2 ms).
        await self._db.execute("PRAGMA mmap_size=268435456")
        version = (await (await self._db.execute("PRAGMA user_version")).fetchone())[0]
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await self._db.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    async def schema_version(self) -> int:
        return (await (await self._db.execute("PRAGMA user_version")).fetchone())[0]

    # -- writing ---------------------------------------------------------------------------------

    async def _write(self, statements: list[tuple[str, tuple]]) -> None:
        """The one write path: all statements in one transaction, or none of them."""
        async with self._write_lock:
            try:
                await self._db.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in statements:
                        await self._db.execute(sql, params)
                except BaseException:
                    await self._db.rollback()
                    raise
                await self._db.commit()
            except sqlite3.Error as err:
                raise MemoryUnavailable(str(err)) from None

    async def _owned(self, session_id: str, user: str) -> aiosqlite.Row | None:
        cursor = await self._db.execute("SELECT * FROM sessions WHERE id = ? AND user = ?", (session_id, user))
        return await cursor.fetchone()

    async def owns(self, user: str, session_id: str) -> bool:
        """Whether ``session_id`` exists and belongs to ``user``."""
        return await self._owned(session_id, user) is not None

    async def _exists(self, session_id: str) -> bool:
        cursor = await self._db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))
        return await cursor.fetchone() is not None

    async def save_turn(self, session_id: str, user: str, question: str, answer: str,
                        metadata: dict[str, Any], scenario: str | None = None, create: bool = True) -> bool:
        """Save the user's message and the assistant's answer together (creating the session when new and
        ``create`` is true). Returns whether the turn was saved: with ``create`` false a session deleted meanwhile
        (the user deleted it while the answer streamed) stays deleted.

        Raises:
            SessionNotFound: the id belongs to another user.
            MemoryUnavailable: the database cannot be written.
        """
        now = time.time()
        meta = json.dumps(metadata, ensure_ascii=False)
        owned = await self._owned(session_id, user) is not None
        if not owned and await self._exists(session_id):
            raise SessionNotFound(session_id)
        if not owned and not create:
            return False
        name = _session_name(question)
        statements = [
            ("INSERT INTO sessions(id, user, name, scenario, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
             "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, "
             "scenario = COALESCE(excluded.scenario, sessions.scenario)",
             (session_id, user, name, scenario, now, now)),
            ("INSERT INTO short_term_memory(session_id, message_type, content, metadata, created_at) "
             "VALUES (?, 'user', ?, ?, ?)", (session_id, question, meta, now)),
        ]
        if answer:
            statements.append(("INSERT INTO short_term_memory(session_id, message_type, content, metadata, "
                               "created_at) VALUES (?, 'assistant', ?, ?, ?)", (session_id, answer, meta, now)))
        await self._write(statements)
        return True

    async def create_session(self, user: str, session_id: str, name: str = "",
                             scenario: str | None = None) -> dict[str, Any]:
        """A new empty session; an id already taken (by anyone) is 409 ``session_exists``."""
        if await self._exists(session_id):
            raise ServiceError("session_exists", f"A session {session_id!r} already exists.", 409)
        now = time.time()
        await self._write([("INSERT INTO sessions(id, user, name, scenario, created_at, updated_at) "
                            "VALUES (?, ?, ?, ?, ?, ?)", (session_id, user, name, scenario, now, now))])
        return _session_dict(await self._owned(session_id, user))

    async def update_session(self, user: str, session_id: str, name: str | None = None,
                             pinned: bool | None = None) -> dict[str, Any]:
        """Rename and/or pin a session. Raises :class:`SessionNotFound`."""
        if await self._owned(session_id, user) is None:
            raise SessionNotFound(session_id)
        statements = []
        if name is not None:
            statements.append(("UPDATE sessions SET name = ? WHERE id = ?", (name, session_id)))
        if pinned is not None:
            statements.append(("UPDATE sessions SET pinned = ? WHERE id = ?", (int(pinned), session_id)))
        if statements:
            await self._write(statements)
        return _session_dict(await self._owned(session_id, user))

    async def delete_session(self, user: str, session_id: str) -> None:
        """Delete a session and its messages. Raises :class:`SessionNotFound`."""
        if await self._owned(session_id, user) is None:
            raise SessionNotFound(session_id)
        await self._write([("DELETE FROM sessions WHERE id = ?", (session_id,))])

    async def put_knowledge(self, key: str, value: str, category: str, metadata: dict[str, Any] | None = None,
                            user: str | None = None) -> dict[str, Any]:
        """Insert or replace a long-term entry (``user`` None: shared, e.g. flow templates)."""
        now = time.time()
        await self._write([(
            "INSERT INTO long_term_memory(key, value, category, metadata, user, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
            "category = excluded.category, metadata = excluded.metadata, updated_at = excluded.updated_at",
            (key, value, category, json.dumps(metadata or {}, ensure_ascii=False), user, now, now))])
        return {"key": key, "category": category, "updatedAt": now}

    async def seed_templates(self, flows: list[dict[str, Any]]) -> int:
        """Store each tab of a flow export as a shared template (key ``template:shared:<label>``) unless one of
        that name exists; returns how many were added."""
        from .flows import slice_flow

        existing = {t["key"] for t in await self.knowledge("template")}
        added = 0
        for tab in (n for n in flows if n.get("type") == "tab"):
            key = f"template:shared:{tab.get('label', tab['id'])}"
            if key in existing:
                continue
            part = slice_flow(flows, tab["id"])
            value = json.dumps([part.tab, *part.nodes, *part.configs], ensure_ascii=False)
            await self.put_knowledge(key, value, "template", {"name": tab.get("label", tab["id"]),
                                                               "description": tab.get("info", ""), "shared": True})
            added += 1
        return added

    async def remove_expired(self, retention_days: int, now: float | None = None) -> int:
        """Delete messages older than ``retention_days`` (pinned sessions kept) and sessions left empty.

        Returns the number of messages removed. ``retention_days`` 0 keeps everything.
        """
        if retention_days <= 0:
            return 0
        cutoff = (now or time.time()) - retention_days * 86_400
        cursor = await self._db.execute(
            "SELECT COUNT(*) FROM short_term_memory WHERE created_at < ? AND session_id IN "
            "(SELECT id FROM sessions WHERE pinned = 0)", (cutoff,))
        count = (await cursor.fetchone())[0]
        await self._write([
            ("DELETE FROM short_term_memory WHERE created_at < ? AND session_id IN "
             "(SELECT id FROM sessions WHERE pinned = 0)", (cutoff,)),
            ("DELETE FROM sessions WHERE pinned = 0 AND updated_at < ? AND NOT EXISTS "
             "(SELECT 1 FROM short_term_memory m WHERE m.session_id = sessions.id)", (cutoff,)),
        ])
        return count

    # -- reading ---------------------------------------------------------------------------------

    async def history(self, user: str, session_id: str, limit: int = 50) -> list[Turn]:
        """The newest ``limit`` messages of a session, oldest first. Raises :class:`SessionNotFound`."""
        if await self._owned(session_id, user) is None:
            raise SessionNotFound(session_id)
        return await self._recent(session_id, limit)

    async def _recent(self, session_id: str, limit: int) -> list[Turn]:
        cursor = await self._db.execute(
            "SELECT * FROM (SELECT * FROM short_term_memory WHERE session_id = ? ORDER BY id DESC LIMIT ?) "
            "ORDER BY id", (session_id, limit))
        return [Turn(r["id"], r["message_type"], r["content"], json.loads(r["metadata"]), r["created_at"])
                for r in await cursor.fetchall()]

    async def window(self, user: str, session_id: str) -> list[Turn]:
        """The turns to send back to the model: at most :data:`HISTORY_WINDOW` messages and
        :data:`HISTORY_MAX_CHARS` characters, newest kept; empty for an unknown or foreign session."""
        if await self._owned(session_id, user) is None:
            return []
        turns = await self._recent(session_id, HISTORY_WINDOW)
        kept: list[Turn] = []
        size = 0
        for turn in reversed(turns):
            size += len(turn.content)
            if size > HISTORY_MAX_CHARS:
                break
            kept.append(turn)
        kept.reverse()
        # Start the window on a user message so the model never sees an answer without its question.
        while kept and kept[0].role != "user":
            kept.pop(0)
        return kept

    async def sessions(self, user: str) -> list[dict[str, Any]]:
        """The user's sessions, pinned first, then most recently updated."""
        cursor = await self._db.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM short_term_memory m WHERE m.session_id = s.id) AS messages "
            "FROM sessions s WHERE user = ? ORDER BY pinned DESC, updated_at DESC", (user,))
        return [{**_session_dict(r), "messages": r["messages"]} for r in await cursor.fetchall()]

    async def search(self, user: str, query: str, category: str | None = None,
                     limit: int = 10) -> list[dict[str, Any]]:
        """BM25-ranked matches among the user's messages (category ``message``) and knowledge entries (any other
        category; shared entries and the user's own), best first, with snippets marked ``[`` … ``]``."""
        match = fts_query(query)
        if match is None:
            return []
        results: list[dict[str, Any]] = []
        if category in (None, "message"):
            cursor = await self._db.execute(
                "SELECT m.id, m.session_id, m.message_type, m.created_at, bm25(messages_fts) AS rank, "
                "snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet FROM messages_fts "
                "JOIN short_term_memory m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id "
                "WHERE messages_fts MATCH ? AND s.user = ? ORDER BY rank LIMIT ?", (match, user, limit))
            results += [{"category": "message", "sessionId": r["session_id"], "role": r["message_type"],
                         "snippet": r["snippet"], "score": -r["rank"], "createdAt": r["created_at"]}
                        for r in await cursor.fetchall()]
        if category != "message":
            sql = ("SELECT l.key, l.category, l.updated_at, bm25(knowledge_fts) AS rank, "
                   "snippet(knowledge_fts, 1, '[', ']', '…', 12) AS snippet FROM knowledge_fts "
                   "JOIN long_term_memory l ON l.id = knowledge_fts.rowid "
                   "WHERE knowledge_fts MATCH ? AND (l.user IS NULL OR l.user = ?)")
            params: list[Any] = [match, user]
            if category is not None:
                sql += " AND l.category = ?"
                params.append(category)
            cursor = await self._db.execute(sql + " ORDER BY rank LIMIT ?", (*params, limit))
            results += [{"category": r["category"], "key": r["key"], "snippet": r["snippet"], "score": -r["rank"],
                         "createdAt": r["updated_at"]} for r in await cursor.fetchall()]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:limit]

    async def knowledge(self, category: str, user: str | None = None) -> list[dict[str, Any]]:
        """Long-term entries of a category visible to ``user`` (shared ones and their own), newest first."""
        cursor = await self._db.execute(
            "SELECT * FROM long_term_memory WHERE category = ? AND (user IS NULL OR user = ?) "
            "ORDER BY updated_at DESC", (category, user))
        return [{"key": r["key"], "value": r["value"], "category": r["category"],
                 "metadata": json.loads(r["metadata"]), "updatedAt": r["updated_at"]}
                for r in await cursor.fetchall()]

    async def stats(self, user: str) -> dict[str, Any]:
        """Counts for ``user`` (sessions, messages), shared knowledge per category, and the database size."""
        async def scalar(sql: str, params: tuple = ()) -> int:
            return (await (await self._db.execute(sql, params)).fetchone())[0]

        categories = await (await self._db.execute(
            "SELECT category, COUNT(*) AS n FROM long_term_memory WHERE user IS NULL OR user = ? GROUP BY category",
            (user,))).fetchall()
        size = Path(self.path).stat().st_size if self.path != ":memory:" and Path(self.path).exists() else 0
        return {
            "sessions": await scalar("SELECT COUNT(*) FROM sessions WHERE user = ?", (user,)),
            "shortTermMemory": await scalar("SELECT COUNT(*) FROM short_term_memory m JOIN sessions s "
                                            "ON s.id = m.session_id WHERE s.user = ?", (user,)),
            "longTermMemory": {r["category"]: r["n"] for r in categories},
            "dbSizeBytes": size,
            "schemaVersion": await self.schema_version(),
        }


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


def _session_name(question: str) -> str:
    first_line = question.strip().splitlines()[0] if question.strip() else ""
    return first_line[:60] + ("…" if len(first_line) > 60 else "")
