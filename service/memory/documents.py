"""The user's own documents (issue 37), the third knowledge store: manuals, plant conventions, API notes, kept as
chunks of text in the memory database (SQLite or PostgreSQL, one schema: migration 9 of
:data:`service.memory.migrations.MIGRATIONS`) and searched with the memory's full-text search (FTS5's ``bm25()``,
PostgreSQL's ``ts_rank()``; lower ``rank`` is better in both, as in :mod:`service.memory.search`).

A document is **shared** (``owner_kind`` ``shared``: every caller sees it) or **private** to one identity (its kind
and name; a flow node's private documents are its own whatever the conversation). A caller never lists, searches,
replaces or deletes another identity's private document: it is exactly as unknown as one that does not exist.
Who may add, replace or delete a shared one is the caller of :meth:`DocumentStore.put` and
:meth:`DocumentStore.delete` to decide (``may_write``). Every write is one transaction: a document and its chunks
are stored together or not at all.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from service.errors import ServiceError
from service.identity import Identity
from service.memory.db import Database, Row
from service.memory.migrations import POSTGRESQL, SQLITE

SHARED = "shared"
MAX_SEARCH_WORDS = 16  # words of a query searched (the rest of a long question adds little and costs ranking)

_VISIBLE = "(d.owner_kind = 'shared' OR (d.owner_kind = ? AND d.owner = ?))"
_COLUMNS = ("d.id, d.owner_kind, d.name, d.media_type, d.bytes, d.characters, d.chunks, d.added_by_kind, "
            "d.added_by, d.created_at, d.updated_at")
_HIT = "c.id AS chunk_id, c.document_id, c.position, c.section, c.text, d.name, d.owner_kind"
SEARCH_SQL = {
    SQLITE: f"SELECT {_HIT}, bm25(document_chunks_fts) AS rank FROM document_chunks_fts "
            "JOIN document_chunks c ON c.id = document_chunks_fts.rowid JOIN documents d ON d.id = c.document_id "
            f"WHERE document_chunks_fts MATCH ? AND {_VISIBLE} ORDER BY rank LIMIT ?",
    POSTGRESQL: f"SELECT {_HIT}, -ts_rank(c.search, q) AS rank FROM to_tsquery('simple', ?) AS q, "
                  "document_chunks c JOIN documents d ON d.id = c.document_id "
                  f"WHERE c.search @@ q AND {_VISIBLE} ORDER BY rank LIMIT ?",
}


@dataclass(frozen=True)
class DocumentChunk:
    """One piece of a document's text: ``section`` (the heading it is under, or the document's name) and ``text``."""

    section: str
    text: str


@dataclass(frozen=True)
class DocumentHit:
    """A chunk found by :meth:`DocumentStore.search`: its document (id, name, shared or not), position in it, section,
    text and rank (lower is better)."""

    chunk_id: int
    document_id: int
    name: str
    shared: bool
    position: int
    section: str
    text: str
    rank: float


def search_terms(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """The words of free text a document search looks for: runs of 3+ letters or digits, case-folded, without
    ``stopwords`` and repeats, at most :data:`MAX_SEARCH_WORDS`. Only word characters: no query syntax survives."""
    words = dict.fromkeys(w.casefold() for w in re.findall(r"\w{3,}", text, flags=re.UNICODE))
    return [w for w in words if w not in stopwords][:MAX_SEARCH_WORDS]


def _match(terms: list[str], dialect: str) -> str:
    """``terms`` ORed, each also as a prefix ("pump" finds "pumps"): FTS5 ``"pump"* OR ...``, PostgreSQL
    ``'pump':* | ...``. Ranking puts chunks holding more of them first; grading drops the weak ones."""
    if dialect == SQLITE:
        return " OR ".join(f'"{t}"*' for t in terms)
    return " | ".join(f"'{t}':*" for t in terms)


def document_dict(row: Row) -> dict[str, Any]:
    """A document row as the API shows it: ``{id, name, scope: "shared"|"private", mediaType, bytes, characters,
    chunks, createdAt, updatedAt}`` (times in Unix seconds)."""
    return {"id": int(row["id"]), "name": row["name"], "scope": "shared" if row["owner_kind"] == SHARED else "private",
            "mediaType": row["media_type"], "bytes": int(row["bytes"]), "characters": int(row["characters"]),
            "chunks": int(row["chunks"]), "createdAt": row["created_at"], "updatedAt": row["updated_at"]}


def not_found(document_id: int) -> ServiceError:
    """404 ``document_not_found``: no document of that id the caller can see."""
    return ServiceError("document_not_found", status=404, params={"id": document_id})


class DocumentStore:
    """The documents over an open memory :class:`~service.memory.db.Database` (the memory store's ``db``).

    Every method raises :class:`~service.memory.db.MemoryUnavailable` when the database cannot be read or written.
    """

    def __init__(self, db: Database):
        self.db = db

    async def put(self, who: Identity, name: str, shared: bool, media_type: str, size: int,
                  chunks: list[DocumentChunk], per_user: int) -> dict[str, Any]:
        """Add the document ``name`` (shared, or private to ``who``), or replace the one of that name in the same
        scope, with its ``chunks``, in one transaction. ``size`` is the uploaded file's bytes.

        Returns:
            the stored document (:func:`document_dict`) with ``replaced`` (bool).

        Raises:
            ServiceError: 409 ``document_limit`` when ``who`` already added ``per_user`` documents (a replacement
                does not count as another).
        """
        owner = (SHARED, "") if shared else (who.kind, who.name)
        now = time.time()
        characters = sum(len(chunk.text) for chunk in chunks)
        async with self.db.transaction() as tx:
            existing = await tx.fetchall("SELECT id, created_at FROM documents WHERE owner_kind = ? AND owner = ? "
                                         "AND name = ?", (*owner, name))
            if not existing:
                added = await tx.fetchall("SELECT COUNT(*) AS n FROM documents WHERE added_by_kind = ? "
                                          "AND added_by = ?", (who.kind, who.name))
                if int(added[0]["n"]) >= per_user:
                    raise ServiceError("document_limit", status=409, params={"limit": per_user})
            created = existing[0]["created_at"] if existing else now
            if existing:
                # Chunks first: their delete trigger keeps the FTS5 index in step (a cascade would too; explicit reads
                # plainer and is the same on both databases).
                await tx.execute("DELETE FROM document_chunks WHERE document_id = ?", (existing[0]["id"],))
                await tx.execute("DELETE FROM documents WHERE id = ?", (existing[0]["id"],))
            rows = await tx.fetchall(
                "INSERT INTO documents(owner_kind, owner, name, media_type, bytes, characters, chunks, added_by_kind, "
                "added_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (*owner, name, media_type, size, characters, len(chunks), who.kind, who.name, created, now))
            document_id = int(rows[0]["id"])
            for position, chunk in enumerate(chunks):
                await tx.execute("INSERT INTO document_chunks(document_id, position, section, text) "
                                 "VALUES (?, ?, ?, ?)", (document_id, position, chunk.section, chunk.text))
        stored = await self.get(who, document_id)
        assert stored is not None
        return stored | {"replaced": bool(existing)}

    async def get(self, who: Identity, document_id: int) -> dict[str, Any] | None:
        """The document ``document_id`` if ``who`` can see it (shared, or private to ``who``), else ``None``."""
        row = await self.db.fetchone(f"SELECT {_COLUMNS} FROM documents d WHERE d.id = ? AND {_VISIBLE}",
                                     (document_id, who.kind, who.name))
        return document_dict(row) if row is not None else None

    async def delete(self, who: Identity, document_id: int, may_write: bool) -> dict[str, Any]:
        """Delete the document ``document_id`` and its chunks; returns what was deleted.

        Raises:
            ServiceError: 404 ``document_not_found`` (none that ``who`` can see); 403 ``forbidden`` for a shared
                one when not ``may_write``.
        """
        found = await self.get(who, document_id)
        if found is None:
            raise not_found(document_id)
        if found["scope"] == SHARED and not may_write:
            raise ServiceError("forbidden", status=403, key="forbidden.write")
        async with self.db.transaction() as tx:
            await tx.execute("DELETE FROM document_chunks WHERE document_id = ?", (document_id,))
            await tx.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return found

    async def documents(self, who: Identity) -> list[dict[str, Any]]:
        """The documents ``who`` can see (shared ones and their own private ones), by name."""
        rows = await self.db.fetchall(f"SELECT {_COLUMNS} FROM documents d WHERE {_VISIBLE} ORDER BY d.name, d.id",
                                      (who.kind, who.name))
        return [document_dict(row) for row in rows]

    async def holds(self, who: Identity) -> bool:
        """Whether ``who`` can see any document with text (so that a question is worth searching them)."""
        row = await self.db.fetchone(f"SELECT 1 AS one FROM documents d WHERE {_VISIBLE} AND d.chunks > 0 LIMIT 1",
                                     (who.kind, who.name))
        return row is not None

    async def chunks(self, who: Identity, document_id: int) -> list[DocumentChunk]:
        """The chunks of one document ``who`` can see, in order. Raises: ServiceError 404 ``document_not_found``."""
        if await self.get(who, document_id) is None:
            raise not_found(document_id)
        rows = await self.db.fetchall("SELECT section, text FROM document_chunks WHERE document_id = ? "
                                      "ORDER BY position", (document_id,))
        return [DocumentChunk(row["section"], row["text"]) for row in rows]

    async def search(self, who: Identity, terms: list[str], limit: int = 5) -> list[DocumentHit]:
        """The chunks of the documents ``who`` can see that best match ``terms`` (from :func:`search_terms`), best
        first; ``[]`` for no terms."""
        if not terms:
            return []
        rows = await self.db.fetchall(SEARCH_SQL[self.db.dialect],
                                      (_match(terms, self.db.dialect), who.kind, who.name, limit))
        return [DocumentHit(int(row["chunk_id"]), int(row["document_id"]), row["name"], row["owner_kind"] == SHARED,
                            int(row["position"]), row["section"], row["text"], float(row["rank"])) for row in rows]
