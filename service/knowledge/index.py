"""The knowledge tables in SQLite: chunks of both stores, where they came from, and BM25 search (FTS5).

They live in the memory database file (``MEMORY_DB_PATH``) beside the memory's tables, on a connection of their
own, and carry their own schema version in ``knowledge_meta`` (the memory's ``PRAGMA user_version`` is the
memory's alone). A *source* is the unit of reindexing (a node module in one language, a tab, the summary): its
chunks are replaced together, and its ``fingerprint`` says whether they need to be.

Ranking is FTS5's ``bm25()`` (https://sqlite.org/fts5.html#the_bm25_function; lower is better), the title column
weighted above the text, set as the table's ``rank`` so that ``ORDER BY rank LIMIT n`` runs inside FTS5. FTS5
computes the rank of every row a query matches, and ``bm25()`` reads the whole doclist of each phrase to count its
documents, so a search keeps its query to selective terms (see :meth:`search`): terms in more than half the rows
(:mod:`service.knowledge.terms`), whose BM25 inverse document frequency FTS5 clamps to ~0 anyway, are left out; the
rest are ANDed first, ORed when that finds too few. The store and language are an ``UNINDEXED`` column of the FTS
table (filtered without a join; a phrase for them would make ``bm25()`` count the whole store). A
:class:`VectorIndex` may be given to add vector similarity later; results are then fused by reciprocal rank
(Cormack et al., SIGIR 2009).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

from service.knowledge.terms import TermStats
from service.knowledge.text import TOKENIZER, folded, fts_term, is_prefix, query_terms, search_text, term_key
from service.knowledge.vectors import Embedder, EmbeddingIndex

SCHEMA_VERSION = 2
TITLE_WEIGHT, TEXT_WEIGHT = 4.0, 1.0
RRF_K = 60  # reciprocal rank fusion constant (Cormack et al.)
COMMON_SHARE = 0.5  # a term in more than this share of the rows has BM25 idf ~0 (FTS5 clamps it to 1e-6)

MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE knowledge_sources (
        store TEXT NOT NULL,
        language TEXT NOT NULL,
        source TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{{}}',
        chunks INTEGER NOT NULL,
        indexed_at REAL NOT NULL,
        PRIMARY KEY (store, language, source)
    );
    CREATE TABLE knowledge_chunks (
        id INTEGER PRIMARY KEY,
        store TEXT NOT NULL,
        language TEXT NOT NULL,
        source TEXT NOT NULL,
        key TEXT NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{{}}'
    );
    CREATE INDEX knowledge_chunks_source ON knowledge_chunks(store, language, source);
    CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(title, body, tokenize='{TOKENIZER}');
    """,
    # 2: the store and language move into the FTS table (an UNINDEXED ``scope`` column) and the vocabulary becomes
    # readable (document frequencies). The chunks are derived data: the next
    # refresh reads them again from Node-RED (the embeddings, keyed by text, are kept).
    f"""
    DROP TABLE knowledge_chunks_fts;
    DELETE FROM knowledge_chunks;
    DELETE FROM knowledge_sources;
    CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(title, body, scope UNINDEXED, tokenize='{TOKENIZER}');
    INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rank)
        VALUES ('rank', 'bm25({TITLE_WEIGHT}, {TEXT_WEIGHT}, 0.0)');
    CREATE VIRTUAL TABLE knowledge_chunks_vocab USING fts5vocab(knowledge_chunks_fts, 'row');
    """,
)


@dataclass(frozen=True)
class Chunk:
    """A piece of text to index: ``key`` unique within its source, ``title`` weighted above ``text``."""

    key: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """A search result: the chunk, where it came from and its score (BM25, or fused rank; higher is better)."""

    id: int
    store: str
    language: str
    source: str
    key: str
    title: str
    text: str
    metadata: dict[str, Any]
    score: float


@dataclass(frozen=True)
class SourceInfo:
    """One indexed source: its fingerprint, metadata, chunk count and when it was indexed (Unix seconds)."""

    store: str
    language: str
    source: str
    fingerprint: str
    metadata: dict[str, Any]
    chunks: int
    indexed_at: float


class VectorIndex(Protocol):
    """Vector similarity beside FTS5 (:class:`service.knowledge.vectors.EmbeddingIndex`): told when chunks
    changed (it reads them from the same tables), asked for the nearest chunk ids of a query."""

    def changed(self) -> None:
        """Chunks were written or removed (called after the transaction; must not block)."""

    async def nearest(self, query: str, store: str, language: str, limit: int) -> list[int]:
        """Up to ``limit`` chunk ids of ``store`` in ``language``, nearest first (``[]``: none known)."""

    async def close(self) -> None:
        """Stop background work."""


class KnowledgeIndex:
    """Owner of the knowledge tables' connection. Use ``await KnowledgeIndex.open(path)``; ``close()`` is
    idempotent.

    Args:
        db: an open aiosqlite connection.
        vectors: an optional :class:`VectorIndex` fused into :meth:`search` (see :meth:`attach`).
        path: the database file (``":memory:"``: none), read by the term statistics' scan on a connection of its own.
    """

    def __init__(self, db: aiosqlite.Connection, vectors: VectorIndex | None = None, path: str = ":memory:"):
        self._db = db
        self.vectors = vectors
        self.terms = TermStats(self._reader)
        self._path = path
        self._read_uri = None if path == ":memory:" else Path(path).resolve().as_uri() + "?mode=ro"
        self._closed = False
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path, embedder: Embedder | None = None,
                   embedding_model: str | None = None) -> KnowledgeIndex:
        """Open (creating the tables of a new or older schema) the knowledge tables in the database at ``path``;
        with an ``embedder`` (and its ``embedding_model`` name), vector similarity is fused into the ranking.

        Raises:
            sqlite3.Error: the file is not a database, is damaged, locked or read-only (the connection is closed).
        """
        path = str(path)
        if path != ":memory:":
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = await aiosqlite.connect(path)
        db.row_factory = aiosqlite.Row
        index = cls(db, path=path)
        try:
            await index._setup()
            index.terms.changed()
            if embedder is not None:
                vectors = EmbeddingIndex(db, embedder, embedding_model or "default", index._write_lock)
                await vectors.setup()
                index.vectors = vectors
                vectors.changed()  # chunks indexed before the model was configured get their vectors
        except BaseException:
            # An unclosed connection's worker thread outlives the event loop and calls into it when collected.
            await index.close()
            raise
        return index

    async def _setup(self) -> None:
        await self._db.execute("PRAGMA journal_mode=WAL")
        await self._db.execute("PRAGMA busy_timeout=5000")
        await self._db.execute("CREATE TABLE IF NOT EXISTS knowledge_meta (key TEXT PRIMARY KEY, value TEXT)")
        await self._db.commit()
        version = await self.schema_version()
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await self._db.executescript(
                f"BEGIN; {script}; INSERT OR REPLACE INTO knowledge_meta(key, value) "
                f"VALUES ('schema_version', '{number}'); COMMIT;")

    async def schema_version(self) -> int:
        """The knowledge tables' schema version (0 before the first migration)."""
        rows = list(await self._db.execute_fetchall(
            "SELECT value FROM knowledge_meta WHERE key = 'schema_version'"))
        return int(rows[0][0]) if rows else 0

    async def _reader(self) -> aiosqlite.Connection:
        """A read connection of its own for the term statistics' scan (WAL: it does not wait for writes, and
        searches do not wait behind it); a memory database has only the index's connection."""
        if self._read_uri is None:
            return _Borrowed(self._db)  # type: ignore[return-value]
        return await aiosqlite.connect(self._read_uri, uri=True)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.terms.close()
            if self.vectors is not None:
                await self.vectors.close()
            await self._db.close()

    # -- sources -------------------------------------------------------------------------------------

    async def sources(self, store: str, language: str | None = None) -> dict[str, SourceInfo]:
        """The indexed sources of ``store`` (of one ``language`` when given), by source name."""
        sql = "SELECT * FROM knowledge_sources WHERE store = ?"
        params: tuple[Any, ...] = (store,)
        if language is not None:
            sql += " AND language = ?"
            params += (language,)
        rows = await self._db.execute_fetchall(sql, params)
        return {row["source"]: SourceInfo(row["store"], row["language"], row["source"], row["fingerprint"],
                                          json.loads(row["metadata"]), row["chunks"], row["indexed_at"])
                for row in rows}

    async def replace_source(self, store: str, language: str, source: str, fingerprint: str,
                             chunks: Iterable[Chunk], metadata: dict[str, Any] | None = None) -> int:
        """Replace every chunk of one source in one transaction; returns how many were written."""
        chunks = list(chunks)
        async with self._write_lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                await self._delete_chunks(store, language, source)
                for chunk in chunks:
                    cursor = await self._db.execute(
                        "INSERT INTO knowledge_chunks(store, language, source, key, title, text, metadata) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (store, language, source, chunk.key, chunk.title, chunk.text,
                         json.dumps(chunk.metadata, ensure_ascii=False)))
                    await self._db.execute(
                        "INSERT INTO knowledge_chunks_fts(rowid, title, body, scope) VALUES (?, ?, ?, ?)",
                        (cursor.lastrowid, search_text(chunk.title), search_text(chunk.text),
                         scope_token(store, language)))
                await self._db.execute(
                    "INSERT OR REPLACE INTO knowledge_sources(store, language, source, fingerprint, metadata, "
                    "chunks, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (store, language, source, fingerprint, json.dumps(metadata or {}, ensure_ascii=False),
                     len(chunks), time.time()))
            except BaseException:
                await self._db.rollback()
                raise
            await self._db.commit()
        self._changed()
        return len(chunks)

    async def delete_source(self, store: str, language: str, source: str) -> None:
        """Remove one source and its chunks."""
        async with self._write_lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                await self._delete_chunks(store, language, source)
                await self._db.execute("DELETE FROM knowledge_sources WHERE store = ? AND language = ? AND source = ?",
                                       (store, language, source))
            except BaseException:
                await self._db.rollback()
                raise
            await self._db.commit()
        self._changed()

    def _changed(self) -> None:
        self.terms.changed()
        if self.vectors is not None:
            self.vectors.changed()

    async def _delete_chunks(self, store: str, language: str, source: str) -> list[int]:
        rows = await self._db.execute_fetchall(
            "SELECT id FROM knowledge_chunks WHERE store = ? AND language = ? AND source = ?",
            (store, language, source))
        ids = [row[0] for row in rows]
        if ids:
            await self._db.executemany("DELETE FROM knowledge_chunks_fts WHERE rowid = ?", [(i,) for i in ids])
            await self._db.execute("DELETE FROM knowledge_chunks WHERE store = ? AND language = ? AND source = ?",
                                   (store, language, source))
        return ids

    # -- reading -------------------------------------------------------------------------------------

    async def search(self, query: str, store: str, language: str = "", limit: int = 5,
                     stopwords: Iterable[str] = (), kept: Iterable[str] = ()) -> list[Hit]:
        """The chunks of ``store`` in ``language`` best matching ``query`` (free text), best first.

        Args:
            query: the user's words; FTS5 syntax in it is inert.
            store: ``docs`` or ``workspace``.
            language: the chunks' language (``""`` for the workspace).
            limit: at most this many hits.
            stopwords: words left out of the query.
            kept: words the query keeps though written in Hiragana (:func:`query_terms`).
        """
        terms = query_terms(query, stopwords, kept)
        if not terms:
            return []
        pool = limit * 4 if self.vectors is not None else limit
        scope = scope_token(store, language)
        selective = [t for t in terms if not self.terms.is_common(folded(term_key(t)), is_prefix(t), COMMON_SHARE)]
        hits = await self._ranked(scope, selective or terms, " AND ", pool)
        if len(hits) < pool and len(selective) > 1:
            found = {hit.id for hit in hits}
            hits += [hit for hit in await self._ranked(scope, selective, " OR ", pool) if hit.id not in found]
        hits = hits[:pool]
        if self.vectors is None:
            return hits
        return (await self._fuse(query, store, language, hits, limit))[:limit]

    async def _ranked(self, scope: str, terms: list[str], operator: str, limit: int) -> list[Hit]:
        """The best ``limit`` chunks of ``scope`` matching ``terms`` joined by ``operator``, best first, each scored
        ``-bm25``: ranked by FTS5 and read with their rows in one statement (one call on the connection's thread; the
        ranking's ``LIMIT`` applies before the join, so a broad query joins only its best rows)."""
        rows = await self._db.execute_fetchall(
            "SELECT c.*, r.rank AS fts_rank FROM (SELECT rowid AS id, rank FROM knowledge_chunks_fts "
            "WHERE knowledge_chunks_fts MATCH ? AND scope = ? ORDER BY rank LIMIT ?) AS r "
            "JOIN knowledge_chunks AS c ON c.id = r.id ORDER BY r.rank, c.id",
            (operator.join(fts_term(t) for t in terms), scope, limit))
        return [_hit(row, -row["fts_rank"]) for row in rows]

    async def _fuse(self, query: str, store: str, language: str, hits: list[Hit], limit: int) -> list[Hit]:
        """FTS5's and the vectors' rankings fused by reciprocal rank: score = Σ 1 / (RRF_K + rank)."""
        assert self.vectors is not None
        near = await self.vectors.nearest(query, store, language, limit * 4)
        if not near:
            return hits
        scores: dict[int, float] = {}
        for ranking in ([hit.id for hit in hits], near):
            for rank, chunk_id in enumerate(ranking):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        by_id = {hit.id: hit for hit in hits}
        missing = [i for i in scores if i not in by_id]
        if missing:
            marks = ",".join("?" * len(missing))
            rows = await self._db.execute_fetchall(
                f"SELECT *, 0 AS rank FROM knowledge_chunks WHERE id IN ({marks}) AND store = ? AND language = ?",
                (*missing, store, language))
            by_id.update({row["id"]: _hit(row, 0.0) for row in rows})
        ranked = sorted((i for i in scores if i in by_id), key=lambda i: -scores[i])
        return [Hit(**{**by_id[i].__dict__, "score": scores[i]}) for i in ranked]

    async def holds(self, store: str, language: str) -> bool:
        """Whether ``store`` has any chunk in ``language`` (an index never refreshed has none)."""
        return bool(await self._db.execute_fetchall(
            "SELECT 1 FROM knowledge_sources WHERE store = ? AND language = ? AND chunks > 0 LIMIT 1",
            (store, language)))

    async def chunks(self, store: str, language: str, source: str) -> list[Hit]:
        """Every chunk of one source, in the order written."""
        rows = await self._db.execute_fetchall(
            "SELECT *, 0 AS rank FROM knowledge_chunks WHERE store = ? AND language = ? AND source = ? ORDER BY id",
            (store, language, source))
        return [_hit(row, 0.0) for row in rows]

    async def stats(self) -> dict[str, Any]:
        """``{store: {"sources": n, "chunks": n, "languages": [...], "indexedAt": newest Unix seconds}}``."""
        rows = await self._db.execute_fetchall(
            "SELECT store, COUNT(*) AS sources, SUM(chunks) AS chunks, MAX(indexed_at) AS newest, "
            "GROUP_CONCAT(DISTINCT language) AS languages FROM knowledge_sources GROUP BY store")
        return {row["store"]: {"sources": row["sources"], "chunks": row["chunks"] or 0,
                               "languages": sorted(filter(None, (row["languages"] or "").split(","))),
                               "indexedAt": row["newest"]} for row in rows}


def scope_token(store: str, language: str) -> str:
    """The FTS table's ``scope`` value of ``store`` in ``language``: ``docs/en-US``, ``workspace/``."""
    return f"{store}/{language}"


class _Borrowed:
    """The index's own connection lent to the term statistics' scan (a memory database): closing it is a no-op."""

    def __init__(self, db: aiosqlite.Connection):
        self._db = db

    async def execute(self, sql: str, parameters: Any = ()) -> aiosqlite.Cursor:
        return await self._db.execute(sql, parameters)

    async def close(self) -> None:
        """Nothing: the connection stays the index's."""


def _hit(row: aiosqlite.Row, score: float) -> Hit:
    return Hit(row["id"], row["store"], row["language"], row["source"], row["key"], row["title"], row["text"],
               json.loads(row["metadata"]), score)


@dataclass
class RefreshReport:
    """What one refresh of a store did: sources reindexed and removed (by name), and how many were unchanged."""

    store: str
    language: str = ""
    reindexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.reindexed or self.removed)


def fingerprint(value: Any) -> str:
    """A stable digest of a JSON-able value (what a source was built from)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
