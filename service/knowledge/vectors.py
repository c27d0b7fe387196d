"""Vector similarity for the knowledge index, when an embedding model is configured (``AI_SIDEBAR_EMBEDDING_MODEL``).

Embeddings are kept in the memory database file beside the chunks (table ``knowledge_embeddings``), keyed by the
embedding model and the SHA-256 of the chunk's text: a chunk is embedded once, and a reindexed source whose text
did not change costs no embedding call. Filling runs in the background after the index changed, never on a
question's path; a question only embeds its own query (bounded by ``query_timeout``; a slow or failing provider
leaves the ranking to FTS5 alone).

Search is exact (cosine similarity over every chunk of the store and language) with numpy over float32 matrices
held in memory: a few thousand help chunks per language and a workspace's chunks are well under a millisecond.
``sqlite-vec`` (the SQLite extension) was the first choice, but needs ``sqlite3.Connection.enable_load_extension``,
which CPython builds without ``--enable-loadable-sqlite-extensions`` (as the one here) lack.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

import aiosqlite

from service.knowledge import background

# numpy (about 0.1 s and 15 MB to import) is imported by the functions that use it: only a configured embedding
# model builds an EmbeddingIndex, so a default start never loads it (issue 33).
if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

TEXT_LIMIT = 6_000     # characters of a chunk embedded (help sections and code are cut, not split)
BATCH = 64             # chunks per embedding request
QUERY_TIMEOUT = 3.0    # seconds a question waits for its query's embedding before FTS5 ranks alone

SCHEMA = """
CREATE TABLE IF NOT EXISTS knowledge_embeddings (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, hash)
);
"""


class Embedder(Protocol):
    """What LangChain's ``Embeddings`` (``OpenAIEmbeddings``, ``GoogleGenerativeAIEmbeddings``) offer."""

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


def text_hash(text: str) -> str:
    """The key of a chunk's embedding: SHA-256 of the text embedded."""
    return hashlib.sha256(text.encode()).hexdigest()


def embedded_text(title: str, text: str) -> str:
    """What is embedded for a chunk: its title, a newline, its text, at most :data:`TEXT_LIMIT` characters."""
    return f"{title}\n{text}"[:TEXT_LIMIT]


def _unit(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class EmbeddingIndex:
    """The :class:`~service.knowledge.index.VectorIndex` over an embedding model.

    Args:
        db: the knowledge index's connection (the tables are in the same file).
        embedder: a LangChain embeddings client.
        model: the embedding model's name (part of the cache key: another model's vectors are never mixed in).
        write_lock: the index's write lock (one connection: a commit here must not land inside its transaction).
        query_timeout: seconds :meth:`nearest` waits for the query's embedding.
    """

    def __init__(self, db: aiosqlite.Connection, embedder: Embedder, model: str,
                 write_lock: asyncio.Lock | None = None, query_timeout: float = QUERY_TIMEOUT):
        self._db = db
        self._write_lock = write_lock or asyncio.Lock()
        self._embedder = embedder
        self.model = model
        self.query_timeout = query_timeout
        self._matrices: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._task: asyncio.Task | None = None
        self._again = False
        self.embedded = 0          # chunks embedded since start (for stats and tests)
        self.last_error: str | None = None

    async def setup(self) -> None:
        """Create the embeddings table if missing and load what is already embedded."""
        async with self._write_lock:
            await self._db.executescript(SCHEMA)
            await self._db.commit()
        await self._load()

    def changed(self) -> None:
        """Chunks were written or removed: embed the new ones in the background (one fill at a time; a change
        during a fill runs another after it)."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._fill_until_settled())

    async def _fill_until_settled(self) -> None:
        while True:
            self._again = False
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a provider fault must not end the service; FTS5 keeps answering
                self.last_error = type(err).__name__
                log.warning("knowledge embeddings not computed (%s); ranking uses full text alone", self.last_error)
                return
            if not self._again:
                return

    async def settled(self) -> None:
        """Wait for the background fill, if one runs."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def sync(self) -> int:
        """Embed every chunk whose text has no vector of this model yet, then reload the matrices; returns how
        many chunks were embedded.

        Raises:
            Exception: whatever the embeddings client raised (nothing is stored for the failed batch).
        """
        import numpy as np

        rows = await self._db.execute_fetchall("SELECT title, text FROM knowledge_chunks")
        texts = {text_hash(t): t for t in (embedded_text(row[0], row[1]) for row in rows)}
        known = {row[0] for row in await self._db.execute_fetchall(
            "SELECT hash FROM knowledge_embeddings WHERE model = ?", (self.model,))}
        missing = [(digest, text) for digest, text in texts.items() if digest not in known]
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            vectors = await self._embedder.aembed_documents([text for _, text in batch])
            async with self._write_lock:
                await self._db.executemany(
                    "INSERT OR REPLACE INTO knowledge_embeddings(model, hash, vector) VALUES (?, ?, ?)",
                    [(self.model, digest, np.asarray(vector, dtype=np.float32).tobytes())
                     for (digest, _), vector in zip(batch, vectors)])
                await self._db.commit()
            self.embedded += len(batch)
        await self._load()
        self.last_error = None
        return len(missing)

    async def _load(self) -> None:
        """The matrices of every store and language: chunk ids and their unit vectors."""
        import numpy as np

        rows = await self._db.execute_fetchall(
            "SELECT c.id, c.store, c.language, c.title, c.text FROM knowledge_chunks c")
        vectors: dict[str, bytes] = {row[0]: row[1] for row in await self._db.execute_fetchall(
            "SELECT hash, vector FROM knowledge_embeddings WHERE model = ?", (self.model,))}
        grouped: dict[tuple[str, str], tuple[list[int], list[np.ndarray]]] = {}
        for chunk_id, store, language, title, text in rows:
            blob = vectors.get(text_hash(embedded_text(title, text)))
            if blob is None:
                continue
            ids, found = grouped.setdefault((store, language), ([], []))
            ids.append(chunk_id)
            found.append(np.frombuffer(blob, dtype=np.float32))
        matrices = {}
        for key, (ids, found) in grouped.items():
            if len({v.shape for v in found}) == 1:
                matrices[key] = (np.asarray(ids, dtype=np.int64), _unit(np.vstack(found)))
        self._matrices = matrices

    async def nearest(self, query: str, store: str, language: str, limit: int) -> list[int]:
        """Up to ``limit`` chunk ids of ``store`` in ``language``, most similar to ``query`` first; ``[]`` when
        nothing of them is embedded yet or the query's embedding failed or took longer than ``query_timeout``."""
        import numpy as np

        matrix = self._matrices.get((store, language))
        if matrix is None:
            return []
        ids, vectors = matrix
        try:
            async with asyncio.timeout(self.query_timeout):
                embedded = await self._embedder.aembed_query(query[:TEXT_LIMIT])
        except Exception as err:  # noqa: BLE001 - any provider fault: rank with full text alone
            log.info("query not embedded (%s); ranking uses full text alone", type(err).__name__)
            return []
        query_vector = _unit(np.asarray(embedded, dtype=np.float32))
        if query_vector.shape[0] != vectors.shape[1]:
            return []
        scores = vectors @ query_vector
        count = min(limit, len(ids))
        best = np.argpartition(-scores, count - 1)[:count]
        return [int(ids[i]) for i in best[np.argsort(-scores[best])]]

    def stats(self) -> dict[str, Any]:
        """``{"model", "chunks": embedded chunks held per store/language, "lastError"}``."""
        return {"model": self.model, "lastError": self.last_error,
                "chunks": {f"{store}/{language}" if language else store: len(ids)
                           for (store, language), (ids, _) in self._matrices.items()}}

    async def close(self) -> None:
        """Stop a running fill."""
        await background.stop(self._task)
