"""Conversation memory and knowledge: sessions, messages, long-term entries, full-text search, in SQLite (the
embedded default) or PostgreSQL (``DATABASE_URL``) through :mod:`service.memory.db`; the schema is
:data:`service.memory.migrations.MIGRATIONS`.

The store's SQL is written once for both databases; only full-text search differs (:data:`SEARCH_SQL`). Every
method that touches a session takes the owner's :class:`~service.identity.Identity`, stored as three columns
(kind, name, conversation): an owner never lists, reads, searches or deletes another owner's sessions, and session
ids are unique per owner, so another owner's session is exactly as unknown as one that does not exist.

Times are Unix seconds (float, UTC). Ranking is SQLite FTS5's ``bm25()`` (https://sqlite.org/fts5.html) or
PostgreSQL's ``ts_rank()`` over a ``websearch_to_tsquery()`` with ``ts_headline()`` excerpts
(https://www.postgresql.org/docs/current/textsearch-controls.html); results are returned best first.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.errors import ServiceError
from service.identity import Identity
from service.memory.backends import open_database
from service.memory.db import Database, Row
from service.memory.db import MemoryUnavailable as MemoryUnavailable  # where callers have always found it
from service.memory.migrations import MIGRATIONS as MIGRATIONS  # likewise
from service.memory.migrations import SQLITE
from service.memory.records import SAID, TURN_COLUMNS, SessionNotFound, Summary, Turn, session_dict, turn_from_row
from service.memory.search import SEARCH_SQL, fts_query, search_words
from service.memory.snippets import snippet

if TYPE_CHECKING:
    from service.llm.usage import TurnUsage

HISTORY_WINDOW = 50          # at most this many messages of a session go back to the model
HISTORY_MAX_CHARS = 40_000   # and at most this many characters (newest first)
# At most this many unsummarised messages are read for summarisation (a session older than summaries, imported).
HISTORY_BACKLOG = 1_000


@dataclass
class MemorySlot:
    """Where the app keeps its store: ``None`` until opened, and when the database could not be opened."""

    store: MemoryStore | None = None


class MemoryStore:
    """The memory over an open :class:`~service.memory.db.Database` (``db``, which the approvals and usage stores
    share).

    Use ``await MemoryStore.open(target)``; ``await store.close()`` is idempotent.
    """

    def __init__(self, db: Database):
        self.db = db

    @classmethod
    async def open(cls, target: str | Path) -> MemoryStore:
        """Open and migrate the database ``target``: a ``postgresql://`` URL (``DATABASE_URL``) or an SQLite file
        (``MEMORY_DB_PATH``; its folder is created; ``":memory:"`` works for tests).

        Raises:
            OSError, sqlite3.Error: the SQLite file cannot be created or opened.
            MemoryUnavailable: the PostgreSQL server cannot be reached or migrated.
        """
        return cls(await open_database(target))

    async def close(self) -> None:
        await self.db.close()

    async def schema_version(self) -> int:
        return await self.db.schema_version()

    async def _write(self, statements: list[tuple[str, tuple]]) -> None:
        """The one write path: all statements in one transaction, or none of them (:class:`MemoryUnavailable`)."""
        await self.db.write(statements)

    async def _owned(self, owner: Identity, session_id: str) -> Row | None:
        return await self.db.fetchone(f"SELECT * FROM sessions WHERE {_OWNED} AND id = ?",
                                      (*_scope(owner), session_id))

    async def _existing(self, owner: Identity, session_id: str) -> Row:
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
                        usage: TurnUsage | None = None, events: list[dict[str, Any]] | None = None) -> bool:
        """Save the user's message and the assistant's answer together (creating the owner's session when new and
        ``create`` is true), with the turn's token ``usage`` in the same transaction. Returns whether the turn was
        saved: with ``create`` false a session deleted meanwhile (the user deleted it while the answer streamed)
        stays deleted (its usage is recorded without it).

        ``events`` is what the sidebar showed of the answer besides its text (:mod:`service.chat.view`, secrets
        already redacted): kept with the answer, which is stored also without text when there are any (an error,
        an approval card), so that the reopened conversation shows them; the model never gets such an answer.

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
        if answer or events:
            statements.append(("INSERT INTO short_term_memory(session_key, message_type, content, metadata, "
                               f"created_at, events) VALUES ({session}, 'assistant', ?, ?, ?, ?)",
                               (*scope, session_id, answer, meta, now, _events(events))))
        await self._write(statements)
        return True

    async def record_usage(self, owner: Identity, session_id: str, usage: TurnUsage) -> None:
        """Record the token usage of a turn that is not saved (a ``silent`` request, a caller without memory).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        await self._write([_usage_insert(owner, session_id, usage, time.time(), "NULL", ())])

    async def append_answer(self, session_id: str, owner: Identity, answer: str, metadata: dict[str, Any],
                            events: list[dict[str, Any]] | None = None) -> bool:
        """Add an assistant message to the owner's existing session (a run that continued after an approval), with
        what the sidebar showed besides its text (``events``, as for :meth:`save_turn`); ``False`` when the
        session no longer exists or there is neither ``answer`` nor ``events``.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        row = await self._owned(owner, session_id)
        if row is None or not (answer or events):
            return False
        now = time.time()
        await self._write([
            ("INSERT INTO short_term_memory(session_key, message_type, content, metadata, created_at, events) "
             "VALUES (?, 'assistant', ?, ?, ?, ?)",
             (row["key"], answer, json.dumps(metadata, ensure_ascii=False), now, _events(events))),
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
        return session_dict(await self._existing(owner, session_id))

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
        return session_dict(await self._existing(owner, session_id))

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
        count = await self.db.scalar(
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
        """The newest ``limit`` messages of the owner's session, oldest first, each with what the sidebar showed
        besides its text (``events``; ``None`` for messages stored before it was kept). Raises
        :class:`SessionNotFound`."""
        row = await self._owned(owner, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        rows = await self.db.fetchall(
            f"SELECT * FROM (SELECT {TURN_COLUMNS}, events FROM short_term_memory WHERE session_key = ? "
            "ORDER BY id DESC LIMIT ?) AS newest ORDER BY id", (row["key"], limit))
        return [turn_from_row(r) for r in rows]

    async def _recent(self, session_key: int, limit: int) -> list[Turn]:
        """The newest ``limit`` messages the model may read (answers with text), oldest first."""
        rows = await self.db.fetchall(
            f"SELECT * FROM (SELECT {TURN_COLUMNS} FROM short_term_memory WHERE session_key = ? AND {SAID} "
            "ORDER BY id DESC LIMIT ?) AS newest ORDER BY id", (session_key, limit))
        return [turn_from_row(r) for r in rows]

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
        rows = await self.db.fetchall(
            f"SELECT * FROM (SELECT {TURN_COLUMNS} FROM short_term_memory WHERE session_key = ? AND id > ? AND {SAID} "
            "ORDER BY id DESC LIMIT ?) AS newest ORDER BY id",
            (row["key"], summary.through_id if summary else 0, HISTORY_BACKLOG))
        return summary, [turn_from_row(r) for r in rows]

    async def summary(self, owner: Identity, session_id: str) -> Summary | None:
        """The owner's session's summary, ``None`` when it has none. Raises :class:`SessionNotFound`."""
        return await self._summary((await self._existing(owner, session_id))["key"])

    async def _summary(self, session_key: int) -> Summary | None:
        found = await self.db.fetchone(
            "SELECT summary, through_id, created_at FROM session_summaries WHERE session_key = ?", (session_key,))
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
        rows = await self.db.fetchall(
            "SELECT s.*, (SELECT COUNT(*) FROM short_term_memory m WHERE m.session_key = s.key) AS messages "
            f"FROM sessions s WHERE {_OWNED} ORDER BY pinned DESC, updated_at DESC", _scope(owner))
        return [{**session_dict(r), "messages": r["messages"]} for r in rows]

    async def search(self, owner: Identity, query: str, category: str | None = None,
                     limit: int = 10) -> list[dict[str, Any]]:
        """Ranked matches among the owner's messages (category ``message``) and knowledge entries (any other
        category; shared entries and the owner's own), best first, with snippets marked ``[`` … ``]``. Every word
        of ``query`` (3+ characters) must match; search operators in it are plain text."""
        words = search_words(query)
        if not words:
            return []
        sql = SEARCH_SQL[self.db.dialect]
        match = fts_query(query) if self.db.dialect == SQLITE else " ".join(f'"{w}"' for w in words)
        scope = _scope(owner)
        results: list[dict[str, Any]] = []
        if category in (None, "message"):
            rows = await self.db.fetchall(sql["messages"], (match, *scope, limit))
            results += [{"category": "message", "sessionId": r["session_id"], "role": r["message_type"],
                         "snippet": snippet(r["content"], words), "score": -r["rank"],
                         "createdAt": r["created_at"]} for r in rows]
        if category != "message":
            knowledge = sql["knowledge"]
            params: list[Any] = [match, *scope]
            if category is not None:
                knowledge += " AND l.category = ?"
                params.append(category)
            rows = await self.db.fetchall(knowledge + " ORDER BY rank LIMIT ?", (*params, limit))
            results += [{"category": r["category"], "key": r["key"], "snippet": r["snippet"], "score": -r["rank"],
                         "createdAt": r["updated_at"]} for r in rows]
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
        rows = await self.db.fetchall(sql + ") ORDER BY updated_at DESC", params)
        return [{"key": r["key"], "value": r["value"], "category": r["category"],
                 "metadata": json.loads(r["metadata"]), "updatedAt": r["updated_at"],
                 "shared": r["owner_kind"] == "shared"}
                for r in rows]

    async def stats(self, owner: Identity) -> dict[str, Any]:
        """Counts for ``owner`` (sessions, messages), knowledge per category (shared and the owner's), and the
        database size."""
        scalar = self.db.scalar
        scope = _scope(owner)
        categories = await self.db.fetchall(
            f"SELECT category, COUNT(*) AS n FROM long_term_memory WHERE owner_kind = 'shared' OR ({_OWNED}) "
            "GROUP BY category", scope)
        size = await self.db.size_bytes()
        return {
            "sessions": await scalar(f"SELECT COUNT(*) FROM sessions WHERE {_OWNED}", scope),
            "shortTermMemory": await scalar("SELECT COUNT(*) FROM short_term_memory m JOIN sessions s ON "
                                            "s.key = m.session_key WHERE s.owner_kind = ? AND s.owner = ? AND "
                                            "s.conversation = ?", scope),
            "longTermMemory": {r["category"]: r["n"] for r in categories},
            "dbSizeBytes": size,
            "schemaVersion": await self.schema_version(),
        }


def _events(events: list[dict[str, Any]] | None) -> str | None:
    """The ``events`` column of a message: JSON, or NULL when nothing besides text was shown."""
    return json.dumps(events, ensure_ascii=False) if events else None


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


def _session_name(question: str) -> str:
    first_line = question.strip().splitlines()[0] if question.strip() else ""
    return first_line[:60] + ("…" if len(first_line) > 60 else "")
