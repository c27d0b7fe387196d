"""Token usage and cost per turn, read back (issue 21): budgets and ``GET /ai-sidebar/usage``, over the
``turn_usage`` table of migration 4 in :mod:`service.memory.store` (which writes it with each turn).

A caller's usage is that of its identity's kind and name (an editor user, the anonymous editor, an ``ai-chat``
node across its conversations). Days are UTC days.
"""

from __future__ import annotations

from typing import Any, Literal

from service.identity import Identity
from service.memory.db import Database, Row
from service.memory.store import MemoryStore

UsageGrouping = Literal["session", "user", "day"]
_GROUP_KEYS: dict[str, str] = {"session": "owner_kind, owner, session_id", "user": "owner_kind, owner", "day": "day"}
# Turns of a model without a price (portable: PostgreSQL sums no booleans).
_UNPRICED = "SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END)"


class UsageStore:
    """Reads of the ``turn_usage`` table over an open :class:`MemoryStore` (its database)."""

    def __init__(self, store: MemoryStore):
        self._store = store

    @property
    def _db(self) -> Database:
        return self._store.db

    async def tokens_since(self, owner: Identity, since: float) -> int:
        """Input plus output tokens ``owner`` used since ``since`` (Unix seconds)."""
        where, params = _filter(owner, since, None)
        return int(await self._db.scalar(
            f"SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens FROM turn_usage{where}", params))

    async def totals(self, by: UsageGrouping, owner: Identity | None, since: float | None = None,
                     session_id: str | None = None) -> list[dict[str, Any]]:
        """Token and cost totals of the recorded turns grouped ``by`` session, user or UTC day (``YYYY-MM-DD``),
        most recently used first. ``owner`` limits them to that caller's turns; ``None`` counts everyone's.

        Each row: its keys (``day``; or ``user`` ``{kind, name}``, and ``sessionId`` by session), then ``turns``,
        ``inputTokens``, ``outputTokens``, ``cost`` (USD, the sum over the priced turns; ``None`` when no turn
        was priced) and ``unpricedTurns`` (turns of a model without a price).
        """
        where, params = _filter(owner, since, session_id)
        keys = _GROUP_KEYS[by]
        # Only the grouped columns are selected (PostgreSQL refuses any other bare column).
        columns = f"{self._db.utc_day('created_at')} AS day" if by == "day" else keys
        found = await self._db.fetchall(
            f"SELECT {columns}, COUNT(*) AS turns, "
            "SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(cost) AS cost, "
            f"{_UNPRICED} AS unpriced, MAX(created_at) AS last_at "
            f"FROM turn_usage{where} GROUP BY {keys} ORDER BY last_at DESC, MAX(id) DESC", params)
        rows = []
        for r in found:
            row: dict[str, Any] = {"day": r["day"]} if by == "day" else {
                "user": {"kind": r["owner_kind"], "name": r["owner"]}}
            if by == "session":
                row["sessionId"] = r["session_id"]
            rows.append({**row, **_totals(r)})
        return rows

    async def total(self, owner: Identity | None, since: float | None = None,
                    session_id: str | None = None) -> dict[str, Any]:
        """The totals of :meth:`totals` over all the matching turns, as one row without keys."""
        where, params = _filter(owner, since, session_id)
        row = await self._db.fetchone(
            "SELECT COUNT(*) AS turns, COALESCE(SUM(input_tokens), 0) AS input_tokens, "
            "COALESCE(SUM(output_tokens), 0) AS output_tokens, SUM(cost) AS cost, "
            f"COALESCE({_UNPRICED}, 0) AS unpriced FROM turn_usage{where}", params)
        assert row is not None  # an aggregate always answers one row
        return _totals(row)


def _filter(owner: Identity | None, since: float | None, session_id: str | None) -> tuple[str, tuple[Any, ...]]:
    conditions: list[str] = []
    params: list[Any] = []
    if owner is not None:
        conditions.append("owner_kind = ? AND owner = ?")
        params += [owner.kind, owner.name]
    if since is not None:
        conditions.append("created_at >= ?")
        params.append(since)
    if session_id is not None:
        conditions.append("session_id = ?")
        params.append(session_id)
    return (" WHERE " + " AND ".join(conditions) if conditions else ""), tuple(params)


def _totals(row: Row) -> dict[str, Any]:
    return {"turns": row["turns"], "inputTokens": row["input_tokens"], "outputTokens": row["output_tokens"],
            "cost": row["cost"], "unpricedTurns": row["unpriced"]}
