"""A fork of a conversation at one of its questions (issues 31 and 35: edit an earlier question and resend).

The fork is a new session of the same owner holding copies of the messages *before* that question, with what the
sidebar showed of each answer (``events``) and their original times; the model then receives exactly those as the
new session's history (:meth:`~service.memory.store.MemoryStore.window`). The forked session stays as it was, later
turns included, and both are listed. The summary of a long session is not copied: the fork's model history is its
copied messages (at most :data:`~service.memory.store.HISTORY_WINDOW` of them, as for any session).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from service.errors import ServiceError
from service.identity import Identity
from service.memory.records import SessionNotFound, session_dict
from service.memory.store import _OWNED, MemoryStore, _scope

_COPIED = "message_type, content, metadata, created_at, events"


@dataclass(frozen=True)
class Fork:
    """What :func:`fork_session` made: the new ``session`` (as the sessions route lists it) and how many messages
    it got (``copied``)."""

    session: dict[str, Any]
    copied: int


async def fork_session(store: MemoryStore, owner: Identity, session_id: str, message_id: int, new_id: str,
                       name: str | None = None) -> Fork:
    """Copy the owner's session ``session_id`` up to (not including) its user message ``message_id`` into a new
    session ``new_id`` named ``name`` (default: the forked session's name), in one transaction.

    Raises:
        SessionNotFound: the owner has no session ``session_id`` (another owner's session gives the same 404).
        ServiceError: 404 ``message_not_found``: ``message_id`` is no question of that session (another session's
            message, an answer, or none); 409 ``session_exists``: the owner already has a session ``new_id``.
        MemoryUnavailable: the database cannot be written.
    """
    scope = _scope(owner)
    source = await store.db.fetchone(f"SELECT * FROM sessions WHERE {_OWNED} AND id = ?", (*scope, session_id))
    if source is None:
        raise SessionNotFound(session_id)
    question = await store.db.fetchone(
        "SELECT id FROM short_term_memory WHERE id = ? AND session_key = ? AND message_type = 'user'",
        (message_id, source["key"]))
    if question is None:
        raise ServiceError("message_not_found", status=404,
                           params={"message_id": message_id, "session_id": session_id})
    if await store.owns(owner, new_id):
        raise ServiceError("session_exists", status=409, params={"session_id": new_id})
    now = time.time()
    new_key = f"(SELECT key FROM sessions WHERE {_OWNED} AND id = ?)"
    await store.db.write([
        ("INSERT INTO sessions(owner_kind, owner, conversation, id, name, scenario, created_at, updated_at) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
         (*scope, new_id, source["name"] if name is None else name, source["scenario"], now, now)),
        (f"INSERT INTO short_term_memory(session_key, {_COPIED}) SELECT {new_key}, {_COPIED} "
         "FROM short_term_memory WHERE session_key = ? AND id < ? ORDER BY id",
         (*scope, new_id, source["key"], message_id)),
    ])
    row = await store.db.fetchone(f"SELECT * FROM sessions WHERE {_OWNED} AND id = ?", (*scope, new_id))
    if row is None:  # deleted in the instant since (the owner's other window)
        raise SessionNotFound(new_id)
    copied = await store.db.scalar("SELECT COUNT(*) FROM short_term_memory WHERE session_key = ?", (row["key"],))
    return Fork(session_dict(row), int(copied or 0))
