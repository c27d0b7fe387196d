"""Document frequencies of the knowledge index's common terms, so a search can leave them out of its FTS5 query.

FTS5 ranks every row a query matches and, for ``bm25()``, counts each phrase's documents by reading its whole
doclist: a term in most of 100,000 chunks costs tens of milliseconds and ranks nothing (FTS5 clamps the inverse
document frequency of a term in more than half the rows to 1e-6). Which terms are that common is read from the FTS5
vocabulary (``fts5vocab``, https://sqlite.org/fts5.html#the_fts5vocab_virtual_table_module) in the background after
the index changed (one scan, about 1.5 s at 100,000 chunks, on a connection of its own so questions do not wait
behind it), never on a question's path. Until the first scan ends nothing counts as common: searches are exact,
only slower.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Awaitable, Callable

import aiosqlite

from service.knowledge import background

log = logging.getLogger(__name__)

FEW_ROWS = 2_000  # a term in at most this many rows is cheap to rank, however common it is (not kept here)

Connect = Callable[[], Awaitable[aiosqlite.Connection]]


class TermStats:
    """The terms in more than :data:`FEW_ROWS` rows with their document counts, and the number of rows.

    Args:
        connect: opens the connection the scan reads on (closed after each scan).
    """

    def __init__(self, connect: Connect):
        self._connect = connect
        self._terms: list[str] = []
        self._documents: list[int] = []
        self.rows = 0
        self._task: asyncio.Task | None = None
        self._again = False
        self.last_error: str | None = None

    def changed(self) -> None:
        """The index changed: scan again in the background (one scan at a time; a change during a scan runs
        another after it)."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._scan_until_settled())

    async def settled(self) -> None:
        """Wait for the background scan, if one runs."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _scan_until_settled(self) -> None:
        while True:
            self._again = False
            try:
                await self.scan()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a locked or damaged file: searches stay exact, only slower
                self.last_error = type(err).__name__
                log.warning("knowledge term statistics not read (%s)", self.last_error)
                return
            if not self._again:
                return

    async def scan(self) -> None:
        """Read the common terms and the row count now.

        Raises:
            sqlite3.Error: the tables could not be read.
        """
        db = await self._connect()
        try:
            rows = await db.execute_fetchall(
                "SELECT term, doc FROM knowledge_chunks_vocab WHERE doc > ? ORDER BY term", (FEW_ROWS,))
            counted = list(await db.execute_fetchall("SELECT COUNT(*) FROM knowledge_chunks"))
            total = counted[0][0] if counted else 0  # COUNT(*) always answers one row
        finally:
            await db.close()
        self._terms = [row[0] for row in rows]
        self._documents = [row[1] for row in rows]
        self.rows = total
        self.last_error = None

    def documents(self, term: str, prefix: bool) -> int:
        """How many rows hold ``term`` (as the tokenizer stores it), or for a ``prefix`` the sum over the words it
        prefixes; 0 for a term in at most :data:`FEW_ROWS` rows (or before the first scan)."""
        if not prefix:
            at = bisect.bisect_left(self._terms, term)
            return self._documents[at] if at < len(self._terms) and self._terms[at] == term else 0
        start = bisect.bisect_left(self._terms, term)
        end = bisect.bisect_left(self._terms, term + "\U0010ffff")
        return sum(self._documents[start:end])

    def is_common(self, term: str, prefix: bool, share: float) -> bool:
        """Whether ``term`` is in more than ``share`` of the rows and more than :data:`FEW_ROWS` of them."""
        documents = self.documents(term, prefix)
        return documents > FEW_ROWS and documents > self.rows * share

    async def close(self) -> None:
        """Stop a running scan."""
        await background.stop(self._task)
