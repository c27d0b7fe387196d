"""Full-text search of the memory: the words a search looks for, a safe FTS5 query from free text, and the search
statements per dialect (SQLite FTS5 with bm25, PostgreSQL with ts_rank)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from service.memory.db import MemoryUnavailable as MemoryUnavailable  # where callers have always found it
from service.memory.migrations import MIGRATIONS as MIGRATIONS  # likewise
from service.memory.migrations import POSTGRESQL, SQLITE

if TYPE_CHECKING:
    pass


def search_words(text: str) -> list[str]:
    """The words of free text a search looks for: at most 16, each of 3+ characters (SQLite's trigram index
    needs three), without quotes or operators."""
    return [w for w in re.findall(r"\w[\w\-.]*", text, flags=re.UNICODE) if len(w) >= 3][:16]


def fts_query(text: str) -> str | None:
    """A safe FTS5 query from free text: each of its :func:`search_words` quoted, all must match.

    Returns ``None`` when nothing searchable is left. Quoting makes FTS5 operators in the user's text inert (and
    PostgreSQL's ``websearch_to_tsquery`` syntax too: each word becomes a quoted phrase).
    """
    words = search_words(text)
    if not words:
        return None
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words)


# Full-text search per dialect: ``messages`` takes (query, owner scope, limit); ``knowledge`` (query, owner scope),
# then an optional category condition and ``ORDER BY rank LIMIT ?``. Lower ``rank`` is better in both.
_HEADLINE = "'StartSel=[, StopSel=], MaxWords=12, MinWords=4, MaxFragments=1, FragmentDelimiter=…'"


SEARCH_SQL: dict[str, dict[str, str]] = {
    SQLITE: {
        "messages": "SELECT s.id AS session_id, m.message_type, m.created_at, bm25(messages_fts) AS rank, "
                    "m.content FROM messages_fts "
                    "JOIN short_term_memory m ON m.id = messages_fts.rowid JOIN sessions s ON s.key = m.session_key "
                    "WHERE messages_fts MATCH ? AND s.owner_kind = ? AND s.owner = ? AND s.conversation = ? "
                    "ORDER BY rank LIMIT ?",
        "knowledge": "SELECT l.key, l.category, l.updated_at, bm25(knowledge_fts) AS rank, "
                     "snippet(knowledge_fts, 1, '[', ']', '…', 12) AS snippet FROM knowledge_fts "
                     "JOIN long_term_memory l ON l.id = knowledge_fts.rowid WHERE knowledge_fts MATCH ? AND "
                     "(l.owner_kind = 'shared' OR (l.owner_kind = ? AND l.owner = ? AND l.conversation = ?))",
    },
    POSTGRESQL: {
        "messages": "SELECT s.id AS session_id, m.message_type, m.created_at, -ts_rank(m.search, q) AS rank, "
                    "m.content FROM websearch_to_tsquery('simple', ?) AS q, short_term_memory m "
                    "JOIN sessions s ON s.key = m.session_key "
                    "WHERE m.search @@ q AND s.owner_kind = ? AND s.owner = ? AND s.conversation = ? "
                    "ORDER BY rank LIMIT ?",
        "knowledge": "SELECT l.key, l.category, l.updated_at, -ts_rank(l.search, q) AS rank, "
                     f"ts_headline('simple', l.value, q, {_HEADLINE}) AS snippet "
                     "FROM websearch_to_tsquery('simple', ?) AS q, long_term_memory l WHERE l.search @@ q AND "
                     "(l.owner_kind = 'shared' OR (l.owner_kind = ? AND l.owner = ? AND l.conversation = ?))",
    },
}
