"""Conversation memory and knowledge in SQLite (aiosqlite): sessions, messages, long-term entries, FTS5 search.

All SQL lives here. One connection, WAL journal, numbered migrations tracked with ``PRAGMA user_version``. Every
method that touches a session takes the owner's :class:`~service.identity.Identity`, stored as three columns
(kind, name, conversation): an owner never lists, reads, searches or deletes another owner's sessions, and session
ids are unique per owner, so another owner's session is exactly as unknown as one that does not exist.

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
from typing import TYPE_CHECKING, Any

import aiosqlite

from service.errors import ServiceError
from service.identity import Identity

if TYPE_CHECKING:
    from service.llm.usage import TurnUsage

HISTORY_WINDOW = 50          # at most this many messages of a session go back to the model
HISTORY_MAX_CHARS = 40_000   # and at most this many characters (newest first)
# At most this many unsummarised messages are read for summarisation (a session older than summaries, imported).
HISTORY_BACKLOG = 1_000

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
    # 2: identities in separate columns (kind, owner, conversation) instead of one ``user`` string, so that no name
    # can be read as another namespace's (issue 14): session ids are unique per owner, knowledge keys per owner and
    # category. The old anonymous ``default`` becomes the anonymous editor; rows of ``flow:<node id>`` are deleted,
    # because an editor user of that name wrote to the same rows and a flow node's memory now needs a conversation
    # that old rows never had. Messages keep their ids, so the message index stays valid.
    """
    DELETE FROM short_term_memory WHERE session_id IN (SELECT id FROM sessions WHERE user LIKE 'flow:%');
    DELETE FROM sessions WHERE user LIKE 'flow:%';
    DELETE FROM long_term_memory WHERE user LIKE 'flow:%';
    CREATE TABLE sessions_v2 (
        key INTEGER PRIMARY KEY,
        owner_kind TEXT NOT NULL CHECK (owner_kind IN ('user', 'anonymous', 'flow')),
        owner TEXT NOT NULL,
        conversation TEXT NOT NULL DEFAULT '',
        id TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        pinned INTEGER NOT NULL DEFAULT 0,
        scenario TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        UNIQUE (owner_kind, owner, conversation, id)
    );
    INSERT INTO sessions_v2(owner_kind, owner, id, name, pinned, scenario, created_at, updated_at)
        SELECT CASE WHEN user = 'default' THEN 'anonymous' ELSE 'user' END,
               CASE WHEN user = 'default' THEN '' ELSE user END, id, name, pinned, scenario, created_at, updated_at
        FROM sessions;
    CREATE TABLE short_term_memory_v2 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_key INTEGER NOT NULL REFERENCES sessions_v2(key) ON DELETE CASCADE,
        message_type TEXT NOT NULL CHECK (message_type IN ('user', 'assistant')),
        content TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL
    );
    INSERT INTO short_term_memory_v2(id, session_key, message_type, content, metadata, created_at)
        SELECT m.id, s.key, m.message_type, m.content, m.metadata, m.created_at
        FROM short_term_memory m JOIN sessions_v2 s ON s.id = m.session_id;
    DROP TABLE short_term_memory;
    DROP TABLE sessions;
    ALTER TABLE sessions_v2 RENAME TO sessions;
    ALTER TABLE short_term_memory_v2 RENAME TO short_term_memory;
    CREATE INDEX sessions_owner ON sessions(owner_kind, owner, conversation, updated_at);
    CREATE INDEX short_term_session ON short_term_memory(session_key, id);
    CREATE INDEX short_term_created ON short_term_memory(created_at);
    CREATE TRIGGER short_term_ai AFTER INSERT ON short_term_memory BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER short_term_ad AFTER DELETE ON short_term_memory BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TABLE long_term_memory_v2 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        owner_kind TEXT NOT NULL CHECK (owner_kind IN ('shared', 'user', 'anonymous', 'flow')),
        owner TEXT NOT NULL DEFAULT '',
        conversation TEXT NOT NULL DEFAULT '',
        category TEXT NOT NULL DEFAULT 'note',
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        UNIQUE (owner_kind, owner, conversation, category, key)
    );
    INSERT OR IGNORE INTO long_term_memory_v2(id, owner_kind, owner, category, key, value, metadata, created_at,
                                              updated_at)
        SELECT id, CASE WHEN user IS NULL THEN 'shared' WHEN user = 'default' THEN 'anonymous' ELSE 'user' END,
               CASE WHEN user IS NULL OR user = 'default' THEN '' ELSE user END, category,
               CASE WHEN substr(key, 1, length(prefix)) = prefix THEN substr(key, length(prefix) + 1) ELSE key END,
               value, metadata, created_at, updated_at
        FROM (SELECT *, category || ':' || COALESCE(user, 'shared') || ':' AS prefix FROM long_term_memory)
        ORDER BY updated_at DESC;
    DROP TABLE long_term_memory;
    ALTER TABLE long_term_memory_v2 RENAME TO long_term_memory;
    CREATE INDEX long_term_owner ON long_term_memory(category, owner_kind, owner, conversation);
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
    INSERT INTO knowledge_fts(knowledge_fts) VALUES ('rebuild');
    """,
    # 3: approvals a run waits for before a write (issue 18; one run may wait several times): the resume token only
    # as its SHA-256, the owner as the three identity columns; and the audit of every decision on a write, by a
    # person or by policy.
    """
    CREATE TABLE approval_runs (
        approval_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        owner_kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        conversation TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL CHECK (kind IN ('agent', 'direct', 'execute')),
        session_id TEXT,
        actions TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'resumed')),
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        resumed_at REAL
    );
    CREATE INDEX approval_runs_owner ON approval_runs(owner_kind, owner, conversation, status, created_at);
    CREATE TABLE approval_audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL DEFAULT '',
        tool TEXT NOT NULL,
        args TEXT NOT NULL DEFAULT '{}',
        summary TEXT NOT NULL DEFAULT '',
        decision TEXT NOT NULL CHECK (decision IN ('approve', 'edit', 'reject')),
        decided_by TEXT NOT NULL CHECK (decided_by IN ('user', 'policy')),
        owner_kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        conversation TEXT NOT NULL DEFAULT '',
        message TEXT,
        created_at REAL NOT NULL
    );
    CREATE INDEX approval_audit_owner ON approval_audit(owner_kind, owner, conversation, created_at);
    CREATE INDEX approval_audit_call ON approval_audit(run_id, tool_call_id);
    """,
    # 4: token usage and cost of each turn that called a model (issue 21), with the provider and the model asked
    # for; ``message_id`` is the turn's question when the turn was saved. The owner is the three identity columns
    # (a flow node without a conversation too: its tokens are spent all the same). Rows hold no text and outlive
    # the messages (retention, a deleted session): what was spent stays counted.
    """
    CREATE TABLE turn_usage (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        owner_kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        conversation TEXT NOT NULL DEFAULT '',
        session_id TEXT NOT NULL,
        message_id INTEGER,
        provider TEXT NOT NULL,
        model TEXT,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL,
        created_at REAL NOT NULL
    );
    CREATE INDEX turn_usage_owner ON turn_usage(owner_kind, owner, created_at);
    CREATE INDEX turn_usage_created ON turn_usage(created_at);
    """,
    # 5: the summary of a session's earlier turns (issue 22): one per session, covering its messages up to
    # ``through_id``; the turns after it go to the model verbatim. Replaced when the conversation is summarised again.
    """
    CREATE TABLE session_summaries (
        session_key INTEGER PRIMARY KEY REFERENCES sessions(key) ON DELETE CASCADE,
        summary TEXT NOT NULL,
        through_id INTEGER NOT NULL,
        created_at REAL NOT NULL
    );
    """,
    # 6: the resume tokens of approvals purged after they expired, only as their SHA-256 and the expiry: such a
    # token keeps getting 410 approval_expired (not 404) after its run's rows and checkpoints are gone.
    """
    CREATE TABLE approval_expired (
        token_hash TEXT PRIMARY KEY,
        expired_at REAL NOT NULL
    );
    CREATE INDEX approval_runs_expiry ON approval_runs(status, expires_at);
    """,
)


@dataclass
class MemorySlot:
    """Where the app keeps its store: ``None`` until opened, and when the database could not be opened."""

    store: MemoryStore | None = None


class SessionNotFound(ServiceError):
    """The requester has no session with that id (404 ``session_not_found``); another owner's session of that id
    gives exactly the same answer."""

    def __init__(self, session_id: str):
        super().__init__("session_not_found", status=404, params={"session_id": session_id})


class MemoryUnavailable(ServiceError):
    """The database cannot be written or read (locked, read-only, disk full): 503 ``memory_unavailable``."""

    def __init__(self, detail: str):
        super().__init__("memory_unavailable", status=503, params={"detail": detail})


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


@dataclass(frozen=True)
class Summary:
    """A session's summary of its messages up to ``through_id`` (written by the model; ``created_at`` Unix
    seconds)."""

    text: str
    through_id: int
    created_at: float


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
        self._closed = False
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
        version = await self._scalar("PRAGMA user_version")
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await self._db.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._db.close()

    async def schema_version(self) -> int:
        return await self._scalar("PRAGMA user_version")

    async def _scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first column of the first row of a query that always answers one row (``COUNT(*)``, a PRAGMA)."""
        row = await (await self._db.execute(sql, params)).fetchone()
        assert row is not None, sql
        return row[0]

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

    async def _owned(self, owner: Identity, session_id: str) -> aiosqlite.Row | None:
        cursor = await self._db.execute(f"SELECT * FROM sessions WHERE {_OWNED} AND id = ?",
                                        (*_scope(owner), session_id))
        return await cursor.fetchone()

    async def _existing(self, owner: Identity, session_id: str) -> aiosqlite.Row:
        """The session row of ``owner``. Raises :class:`SessionNotFound` (it was deleted meanwhile)."""
        row = await self._owned(owner, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        return row

    async def owns(self, owner: Identity, session_id: str) -> bool:
        """Whether ``owner`` has a session ``session_id`` (another owner's session of that id is not theirs)."""
        return await self._owned(owner, session_id) is not None

    async def save_turn(self, session_id: str, owner: Identity, question: str, answer: str,
                        metadata: dict[str, Any], scenario: str | None = None, create: bool = True,
                        usage: TurnUsage | None = None) -> bool:
        """Save the user's message and the assistant's answer together (creating the owner's session when new and
        ``create`` is true), with the turn's token ``usage`` in the same transaction. Returns whether the turn was
        saved: with ``create`` false a session deleted meanwhile (the user deleted it while the answer streamed)
        stays deleted (its usage is recorded without it).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        now = time.time()
        meta = json.dumps(metadata, ensure_ascii=False)
        if not create and await self._owned(owner, session_id) is None:
            if usage is not None:
                await self.record_usage(owner, session_id, usage)
            return False
        scope = _scope(owner)
        session = f"(SELECT key FROM sessions WHERE {_OWNED} AND id = ?)"
        statements = [
            ("INSERT INTO sessions(owner_kind, owner, conversation, id, name, scenario, created_at, updated_at) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(owner_kind, owner, conversation, id) DO UPDATE SET "
             "updated_at = excluded.updated_at, scenario = COALESCE(excluded.scenario, sessions.scenario)",
             (*scope, session_id, _session_name(question), scenario, now, now)),
            ("INSERT INTO short_term_memory(session_key, message_type, content, metadata, created_at) "
             f"VALUES ({session}, 'user', ?, ?, ?)", (*scope, session_id, question, meta, now)),
        ]
        if usage is not None:
            # The question just inserted: the newest user message of the session, inside this transaction.
            statements.append(_usage_insert(owner, session_id, usage, now, "(SELECT MAX(id) FROM short_term_memory "
                                            f"WHERE message_type = 'user' AND session_key = {session})",
                                            (*scope, session_id)))
        if answer:
            statements.append(("INSERT INTO short_term_memory(session_key, message_type, content, metadata, "
                               f"created_at) VALUES ({session}, 'assistant', ?, ?, ?)",
                               (*scope, session_id, answer, meta, now)))
        await self._write(statements)
        return True

    async def record_usage(self, owner: Identity, session_id: str, usage: TurnUsage) -> None:
        """Record the token usage of a turn that is not saved (a ``silent`` request, a caller without memory).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        await self._write([_usage_insert(owner, session_id, usage, time.time(), "NULL", ())])

    async def append_answer(self, session_id: str, owner: Identity, answer: str, metadata: dict[str, Any]) -> bool:
        """Add an assistant message to the owner's existing session (a run that continued after an approval);
        ``False`` when the session no longer exists or ``answer`` is empty.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        row = await self._owned(owner, session_id)
        if row is None or not answer:
            return False
        now = time.time()
        await self._write([
            ("INSERT INTO short_term_memory(session_key, message_type, content, metadata, created_at) "
             "VALUES (?, 'assistant', ?, ?, ?)", (row["key"], answer, json.dumps(metadata, ensure_ascii=False), now)),
            ("UPDATE sessions SET updated_at = ? WHERE key = ?", (now, row["key"])),
        ])
        return True

    async def create_session(self, owner: Identity, session_id: str, name: str = "",
                             scenario: str | None = None) -> dict[str, Any]:
        """A new empty session; an id the owner already has is 409 ``session_exists`` (ids are per owner, so
        another owner's session of the same id neither blocks nor shows)."""
        if await self._owned(owner, session_id) is not None:
            raise ServiceError("session_exists", status=409, params={"session_id": session_id})
        now = time.time()
        await self._write([("INSERT INTO sessions(owner_kind, owner, conversation, id, name, scenario, created_at, "
                            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (*_scope(owner), session_id, name, scenario, now, now))])
        return _session_dict(await self._existing(owner, session_id))

    async def update_session(self, owner: Identity, session_id: str, name: str | None = None,
                             pinned: bool | None = None) -> dict[str, Any]:
        """Rename and/or pin a session. Raises :class:`SessionNotFound`."""
        row = await self._owned(owner, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if name is not None:
            statements.append(("UPDATE sessions SET name = ? WHERE key = ?", (name, row["key"])))
        if pinned is not None:
            statements.append(("UPDATE sessions SET pinned = ? WHERE key = ?", (int(pinned), row["key"])))
        if statements:
            await self._write(statements)
        return _session_dict(await self._existing(owner, session_id))

    async def delete_session(self, owner: Identity, session_id: str) -> None:
        """Delete a session and its messages. Raises :class:`SessionNotFound`."""
        row = await self._owned(owner, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        await self._write([("DELETE FROM sessions WHERE key = ?", (row["key"],))])

    async def put_knowledge(self, key: str, value: str, category: str, metadata: dict[str, Any] | None = None,
                            owner: Identity | None = None) -> dict[str, Any]:
        """Insert or replace the owner's long-term entry ``key`` of ``category`` (``owner`` None: shared with
        everyone, e.g. the seeded flow templates; no owner can write a shared entry)."""
        now = time.time()
        await self._write([(
            "INSERT INTO long_term_memory(owner_kind, owner, conversation, category, key, value, metadata, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(owner_kind, owner, conversation, category, key) DO UPDATE SET value = excluded.value, "
            "metadata = excluded.metadata, updated_at = excluded.updated_at",
            (*_scope(owner), category, key, value, json.dumps(metadata or {}, ensure_ascii=False), now, now))])
        return {"key": key, "category": category, "updatedAt": now}

    async def seed_templates(self, flows: list[dict[str, Any]]) -> int:
        """Store each tab of a flow export as a shared template (key: the tab's label) unless a shared one of that
        name exists; returns how many were added."""
        from service.nodered.flows import index_flows, slice_flow

        existing = {t["key"] for t in await self.knowledge("template")}
        index = index_flows(flows)  # once for every tab: slicing an index stays linear
        added = 0
        for tab in (n for n in flows if n.get("type") == "tab"):
            key = str(tab.get("label", tab["id"]))
            if key in existing:
                continue
            part = slice_flow(index, tab["id"])
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
        count = await self._scalar(
            "SELECT COUNT(*) FROM short_term_memory WHERE created_at < ? AND session_key IN "
            "(SELECT key FROM sessions WHERE pinned = 0)", (cutoff,))
        await self._write([
            ("DELETE FROM short_term_memory WHERE created_at < ? AND session_key IN "
             "(SELECT key FROM sessions WHERE pinned = 0)", (cutoff,)),
            ("DELETE FROM sessions WHERE pinned = 0 AND updated_at < ? AND NOT EXISTS "
             "(SELECT 1 FROM short_term_memory m WHERE m.session_key = sessions.key)", (cutoff,)),
        ])
        return count

    # -- reading ---------------------------------------------------------------------------------

    async def history(self, owner: Identity, session_id: str, limit: int = 50) -> list[Turn]:
        """The newest ``limit`` messages of the owner's session, oldest first. Raises :class:`SessionNotFound`."""
        row = await self._owned(owner, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        return await self._recent(row["key"], limit)

    async def _recent(self, session_key: int, limit: int) -> list[Turn]:
        cursor = await self._db.execute(
            "SELECT * FROM (SELECT * FROM short_term_memory WHERE session_key = ? ORDER BY id DESC LIMIT ?) "
            "ORDER BY id", (session_key, limit))
        return [Turn(r["id"], r["message_type"], r["content"], json.loads(r["metadata"]), r["created_at"])
                for r in await cursor.fetchall()]

    async def window(self, owner: Identity, session_id: str) -> list[Turn]:
        """The turns to send back to the model: at most :data:`HISTORY_WINDOW` messages and
        :data:`HISTORY_MAX_CHARS` characters, newest kept; empty for a session the owner does not have."""
        row = await self._owned(owner, session_id)
        if row is None:
            return []
        turns = await self._recent(row["key"], HISTORY_WINDOW)
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

    async def conversation(self, owner: Identity, session_id: str) -> tuple[Summary | None, list[Turn]]:
        """What summarisation starts from: the session's stored summary (``None``: none yet) and every message
        after it, oldest first (at most the newest :data:`HISTORY_BACKLOG`); ``(None, [])`` for a session the owner
        does not have."""
        row = await self._owned(owner, session_id)
        if row is None:
            return None, []
        summary = await self._summary(row["key"])
        cursor = await self._db.execute(
            "SELECT * FROM (SELECT * FROM short_term_memory WHERE session_key = ? AND id > ? ORDER BY id DESC "
            "LIMIT ?) ORDER BY id", (row["key"], summary.through_id if summary else 0, HISTORY_BACKLOG))
        turns = [Turn(r["id"], r["message_type"], r["content"], json.loads(r["metadata"]), r["created_at"])
                 for r in await cursor.fetchall()]
        return summary, turns

    async def summary(self, owner: Identity, session_id: str) -> Summary | None:
        """The owner's session's summary, ``None`` when it has none. Raises :class:`SessionNotFound`."""
        return await self._summary((await self._existing(owner, session_id))["key"])

    async def _summary(self, session_key: int) -> Summary | None:
        cursor = await self._db.execute(
            "SELECT summary, through_id, created_at FROM session_summaries WHERE session_key = ?", (session_key,))
        found = await cursor.fetchone()
        return Summary(found["summary"], found["through_id"], found["created_at"]) if found else None

    async def save_summary(self, owner: Identity, session_id: str, text: str, through_id: int) -> bool:
        """Keep ``text`` as the summary of the owner's session up to message ``through_id`` (replacing the one
        before); ``False`` when the session no longer exists.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        row = await self._owned(owner, session_id)
        if row is None:
            return False
        await self._write([
            ("INSERT INTO session_summaries(session_key, summary, through_id, created_at) VALUES (?, ?, ?, ?) "
             "ON CONFLICT(session_key) DO UPDATE SET summary = excluded.summary, through_id = excluded.through_id, "
             "created_at = excluded.created_at", (row["key"], text, through_id, time.time())),
        ])
        return True

    async def sessions(self, owner: Identity) -> list[dict[str, Any]]:
        """The owner's sessions, pinned first, then most recently updated."""
        cursor = await self._db.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM short_term_memory m WHERE m.session_key = s.key) AS messages "
            f"FROM sessions s WHERE {_OWNED} ORDER BY pinned DESC, updated_at DESC", _scope(owner))
        return [{**_session_dict(r), "messages": r["messages"]} for r in await cursor.fetchall()]

    async def search(self, owner: Identity, query: str, category: str | None = None,
                     limit: int = 10) -> list[dict[str, Any]]:
        """BM25-ranked matches among the owner's messages (category ``message``) and knowledge entries (any other
        category; shared entries and the owner's own), best first, with snippets marked ``[`` … ``]``."""
        match = fts_query(query)
        if match is None:
            return []
        scope = _scope(owner)
        results: list[dict[str, Any]] = []
        if category in (None, "message"):
            cursor = await self._db.execute(
                "SELECT s.id AS session_id, m.message_type, m.created_at, bm25(messages_fts) AS rank, "
                "snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet FROM messages_fts "
                "JOIN short_term_memory m ON m.id = messages_fts.rowid JOIN sessions s ON s.key = m.session_key "
                "WHERE messages_fts MATCH ? AND s.owner_kind = ? AND s.owner = ? AND s.conversation = ? "
                "ORDER BY rank LIMIT ?", (match, *scope, limit))
            results += [{"category": "message", "sessionId": r["session_id"], "role": r["message_type"],
                         "snippet": r["snippet"], "score": -r["rank"], "createdAt": r["created_at"]}
                        for r in await cursor.fetchall()]
        if category != "message":
            sql = ("SELECT l.key, l.category, l.updated_at, bm25(knowledge_fts) AS rank, "
                   "snippet(knowledge_fts, 1, '[', ']', '…', 12) AS snippet FROM knowledge_fts "
                   "JOIN long_term_memory l ON l.id = knowledge_fts.rowid WHERE knowledge_fts MATCH ? AND "
                   "(l.owner_kind = 'shared' OR (l.owner_kind = ? AND l.owner = ? AND l.conversation = ?))")
            params: list[Any] = [match, *scope]
            if category is not None:
                sql += " AND l.category = ?"
                params.append(category)
            cursor = await self._db.execute(sql + " ORDER BY rank LIMIT ?", (*params, limit))
            results += [{"category": r["category"], "key": r["key"], "snippet": r["snippet"], "score": -r["rank"],
                         "createdAt": r["updated_at"]} for r in await cursor.fetchall()]
        results.sort(key=lambda r: r["score"], reverse=True)
        return results[:limit]

    async def knowledge(self, category: str, owner: Identity | None = None) -> list[dict[str, Any]]:
        """Long-term entries of a category: the shared ones and, with ``owner``, the owner's own; newest first.
        ``shared`` tells them apart (an owner's entry may have the name of a shared one)."""
        sql = "SELECT * FROM long_term_memory WHERE category = ? AND (owner_kind = 'shared'"
        params: tuple = (category,)
        if owner is not None:
            sql += f" OR ({_OWNED})"
            params += _scope(owner)
        cursor = await self._db.execute(sql + ") ORDER BY updated_at DESC", params)
        return [{"key": r["key"], "value": r["value"], "category": r["category"],
                 "metadata": json.loads(r["metadata"]), "updatedAt": r["updated_at"],
                 "shared": r["owner_kind"] == "shared"}
                for r in await cursor.fetchall()]

    async def stats(self, owner: Identity) -> dict[str, Any]:
        """Counts for ``owner`` (sessions, messages), knowledge per category (shared and the owner's), and the
        database size."""
        scalar = self._scalar

        scope = _scope(owner)
        categories = await (await self._db.execute(
            f"SELECT category, COUNT(*) AS n FROM long_term_memory WHERE owner_kind = 'shared' OR ({_OWNED}) "
            "GROUP BY category", scope)).fetchall()
        size = await asyncio.to_thread(_file_size, self.path)
        return {
            "sessions": await scalar(f"SELECT COUNT(*) FROM sessions WHERE {_OWNED}", scope),
            "shortTermMemory": await scalar("SELECT COUNT(*) FROM short_term_memory m JOIN sessions s ON "
                                            "s.key = m.session_key WHERE s.owner_kind = ? AND s.owner = ? AND "
                                            "s.conversation = ?", scope),
            "longTermMemory": {r["category"]: r["n"] for r in categories},
            "dbSizeBytes": size,
            "schemaVersion": await self.schema_version(),
        }


def _usage_insert(owner: Identity, session_id: str, usage: TurnUsage, now: float, message: str,
                  message_params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """The INSERT of one turn's usage; ``message`` is SQL for the question's message id (``NULL``: not saved)."""
    return ("INSERT INTO turn_usage(owner_kind, owner, conversation, message_id, session_id, provider, model, "
            f"input_tokens, output_tokens, cost, created_at) VALUES (?, ?, ?, {message}, ?, ?, ?, ?, ?, ?, ?)",
            (owner.kind, owner.name, owner.conversation or "", *message_params, session_id, usage.provider,
             usage.model, usage.input_tokens, usage.output_tokens, usage.cost, now))


# Rows of one owner: the three columns of an identity (see _scope), never one joined string.
_OWNED = "owner_kind = ? AND owner = ? AND conversation = ?"


def _scope(owner: Identity | None) -> tuple[str, str, str]:
    """``(owner_kind, owner, conversation)`` of an identity; ``None`` is the shared scope.

    Raises:
        ValueError: a flow node without a conversation, which has no memory (callers check
            ``Identity.remembers`` first).
    """
    if owner is None:
        return "shared", "", ""
    if not owner.remembers:
        raise ValueError("a flow node without a conversation has no memory")
    return owner.kind, owner.name, owner.conversation or ""


def _file_size(path: str) -> int:
    """Bytes of the database file (0 for an in-memory database or a file not created yet)."""
    return Path(path).stat().st_size if path != ":memory:" and Path(path).exists() else 0


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
