"""Flow history in the memory database (SQLite or PostgreSQL, :mod:`service.memory.db`): one row per deployed
``rev`` and the content-addressed parts of :mod:`service.history.snapshot`.

The tables are created here, ``IF NOT EXISTS``, when the history opens (not a numbered migration: the history is a
separate feature that may be turned off). Several replicas on one PostgreSQL database capture the same deploy at
once: the ``rev`` primary key keeps one snapshot, parts are written ``ON CONFLICT DO NOTHING``. The SQLite file keeps
the memory database's owner-only permissions (the snapshots are as sensitive as flows.json).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from service.history.snapshot import Cut, join, split
from service.memory.db import Database

Origin = Literal["assistant", "editor", "api"]
CHUNK = 400  # hashes per IN (...) query

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS flow_history_parts (
        hash TEXT PRIMARY KEY,
        body TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS flow_history_snapshots (
        rev TEXT PRIMARY KEY,
        captured_at DOUBLE PRECISION NOT NULL,
        user_name TEXT,
        origin TEXT NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        manifests TEXT NOT NULL,
        counts TEXT NOT NULL DEFAULT '{}',
        detail TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX IF NOT EXISTS flow_history_time ON flow_history_snapshots(captured_at)",
)


@dataclass(frozen=True)
class Snapshot:
    """One deploy as listed: ``rev`` (Node-RED's flows revision), ``time`` (Unix seconds the service captured it),
    ``user`` (who deployed, when known: only the assistant's own deploys say), ``origin``, ``pinned``, ``counts``
    (``{"added", "removed", "changed"}`` flow objects against the snapshot before it; empty for the first one
    captured, when there was none before it) and ``detail`` (the assistant's deploys: ``{"tool", "summary"}``)."""

    rev: str
    time: float
    user: str | None
    origin: str
    pinned: bool
    counts: dict[str, int]
    detail: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The route's shape: ``{"rev", "time" (ISO 8601 UTC), "user", "origin", "pinned", "first", "counts",
        "detail"}``; ``first`` is true (and ``counts`` null) for the first state captured, which had nothing before
        it to count against."""
        return {"rev": self.rev, "time": iso(self.time), "user": self.user, "origin": self.origin,
                "pinned": self.pinned, "first": self.first, "counts": None if self.first else self.counts,
                "detail": self.detail}

    @property
    def first(self) -> bool:
        """Whether this is the first state the history captured (saved without counts)."""
        return not self.counts


def iso(seconds: float) -> str:
    """Unix ``seconds`` as ISO 8601 UTC with milliseconds (``2026-12-02T03:40:00.123Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


class HistoryStore:
    """The flow history of one Node-RED in database ``db``; every method raises
    :class:`~service.memory.db.MemoryUnavailable` when the database fails."""

    def __init__(self, db: Database):
        self.db = db

    @classmethod
    async def open(cls, db: Database) -> HistoryStore:
        """The history in ``db``, its tables created when missing."""
        async with db.transaction() as tx:
            for statement in SCHEMA:
                await tx.execute(statement)
        return cls(db)

    async def has(self, rev: str) -> bool:
        """Whether ``rev`` is captured."""
        return await self.db.fetchone("SELECT rev FROM flow_history_snapshots WHERE rev = ?", (rev,)) is not None

    async def save(self, rev: str, flows: list[dict[str, Any]] | Cut, *, origin: Origin, user: str | None = None,
                   counts: dict[str, int] | None = None, detail: dict[str, Any] | None = None,
                   at: float | None = None) -> bool:
        """Store the flows of ``rev`` (as read, or already cut by :func:`~service.history.snapshot.split`: each object
        is kept before it is stored); the parts already stored are not written again. ``counts`` ``None``: the
        first state captured (:attr:`Snapshot.first`). Returns whether this call stored it (``False``: another
        replica or an earlier call had)."""
        cut = flows if isinstance(flows, Cut) else split(flows)
        manifests, parts = cut.manifests, cut.parts
        known = await self._known(list(parts))
        async with self.db.transaction() as tx:
            for key, body in parts.items():
                if key not in known:
                    await tx.execute("INSERT INTO flow_history_parts (hash, body) VALUES (?, ?) "
                                     "ON CONFLICT DO NOTHING", (key, body))
            changed = await tx.execute(
                "INSERT INTO flow_history_snapshots (rev, captured_at, user_name, origin, manifests, counts, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (rev, time.time() if at is None else at, user, origin, json.dumps(manifests),
                 json.dumps(counts or {}), json.dumps(detail or {})))
        return changed > 0

    async def mark_assistant(self, rev: str, user: str | None, detail: dict[str, Any]) -> None:
        """Record that the assistant deployed ``rev`` (for ``user``, with ``detail``), when another path captured
        it first as an editor deploy."""
        await self.db.write([("UPDATE flow_history_snapshots SET origin = 'assistant', user_name = ?, detail = ? "
                              "WHERE rev = ?", (user, json.dumps(detail), rev))])

    async def pin(self, rev: str, pinned: bool) -> bool:
        """Pin (kept whatever the retention) or unpin ``rev``; ``False`` when it is not captured."""
        async with self.db.transaction() as tx:
            return await tx.execute("UPDATE flow_history_snapshots SET pinned = ? WHERE rev = ?",
                                    (1 if pinned else 0, rev)) > 0

    async def listing(self, limit: int = 100, before: float | None = None) -> list[Snapshot]:
        """Up to ``limit`` snapshots, newest first (captured before ``before``, Unix seconds, when given)."""
        rows = await self.db.fetchall(
            "SELECT rev, captured_at, user_name, origin, pinned, counts, detail FROM flow_history_snapshots "
            "WHERE captured_at < ? ORDER BY captured_at DESC LIMIT ?",
            (1e18 if before is None else before, limit))
        return [Snapshot(row["rev"], float(row["captured_at"]), row["user_name"], row["origin"],
                         bool(row["pinned"]), json.loads(row["counts"]), json.loads(row["detail"])) for row in rows]

    async def latest(self) -> Snapshot | None:
        """The newest snapshot, or ``None``."""
        found = await self.listing(1)
        return found[0] if found else None

    async def snapshot(self, rev: str) -> Snapshot | None:
        """The listing entry of ``rev``, or ``None``."""
        row = await self.db.fetchone(
            "SELECT rev, captured_at, user_name, origin, pinned, counts, detail FROM flow_history_snapshots "
            "WHERE rev = ?", (rev,))
        if row is None:
            return None
        return Snapshot(row["rev"], float(row["captured_at"]), row["user_name"], row["origin"], bool(row["pinned"]),
                        json.loads(row["counts"]), json.loads(row["detail"]))

    async def at(self, moment: float) -> Snapshot | None:
        """The snapshot deployed at Unix time ``moment``: the newest captured at or before it, or ``None``."""
        found = await self.listing(1, before=moment + 1e-6)
        return found[0] if found else None

    async def flows(self, rev: str) -> list[dict[str, Any]] | None:
        """The flows of ``rev`` as ``GET /flows`` returned them (without credentials), or ``None``."""
        row = await self.db.fetchone("SELECT manifests FROM flow_history_snapshots WHERE rev = ?", (rev,))
        if row is None:
            return None
        manifests = json.loads(row["manifests"])
        parts = await self._bodies(manifests)
        inner = [key for manifest in manifests for key in json.loads(parts[manifest])]
        parts.update(await self._bodies(inner))
        return join(manifests, parts)

    async def apply_retention(self, keep: int, days: float, now: float | None = None) -> int:
        """Remove the snapshots beyond the newest ``keep`` or older than ``days`` (0: no age limit), pinned ones
        kept, then the parts no snapshot uses. Returns how many snapshots were removed."""
        now = time.time() if now is None else now
        rows = await self.db.fetchall("SELECT rev, captured_at, pinned FROM flow_history_snapshots "
                                      "ORDER BY captured_at DESC")
        cutoff = now - days * 86_400 if days > 0 else float("-inf")
        doomed = [row["rev"] for index, row in enumerate(rows)
                  if not row["pinned"] and (index >= keep or float(row["captured_at"]) < cutoff)]
        if not doomed:
            return 0
        await self.db.write([("DELETE FROM flow_history_snapshots WHERE rev = ?", (rev,)) for rev in doomed])
        await self._collect()
        return len(doomed)

    async def storage(self) -> dict[str, int]:
        """``{"snapshots", "parts", "bytes"}``: rows and the characters of every stored text (parts and the
        snapshots' manifest lists), for retention checks and the bench."""
        snapshots = await self.db.scalar("SELECT COUNT(*) FROM flow_history_snapshots")
        parts = await self.db.scalar("SELECT COUNT(*) FROM flow_history_parts")
        part_bytes = await self.db.scalar("SELECT COALESCE(SUM(LENGTH(body) + LENGTH(hash)), 0) "
                                          "FROM flow_history_parts")
        row_bytes = await self.db.scalar("SELECT COALESCE(SUM(LENGTH(manifests) + LENGTH(rev) + LENGTH(counts) + "
                                         "LENGTH(detail) + 32), 0) FROM flow_history_snapshots")
        return {"snapshots": int(snapshots), "parts": int(parts), "bytes": int(part_bytes) + int(row_bytes)}

    async def _collect(self) -> None:
        """Delete the parts no remaining snapshot reaches (manifests, then the objects they list)."""
        manifests = {key for row in await self.db.fetchall("SELECT manifests FROM flow_history_snapshots")
                     for key in json.loads(row["manifests"])}
        bodies = await self._bodies(list(manifests))
        used = manifests | {key for body in bodies.values() for key in json.loads(body)}
        stored = [row["hash"] for row in await self.db.fetchall("SELECT hash FROM flow_history_parts")]
        unused = [key for key in stored if key not in used]
        for start in range(0, len(unused), CHUNK):
            chunk = unused[start:start + CHUNK]
            await self.db.write([(f"DELETE FROM flow_history_parts WHERE hash IN ({','.join('?' * len(chunk))})",
                                  chunk)])

    async def _known(self, keys: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start:start + CHUNK]
            rows = await self.db.fetchall(
                f"SELECT hash FROM flow_history_parts WHERE hash IN ({','.join('?' * len(chunk))})", chunk)
            found.update(row["hash"] for row in rows)
        return found

    async def _bodies(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), CHUNK):
            chunk = unique[start:start + CHUNK]
            rows = await self.db.fetchall(
                f"SELECT hash, body FROM flow_history_parts WHERE hash IN ({','.join('?' * len(chunk))})", chunk)
            found.update((row["hash"], row["body"]) for row in rows)
        return found
