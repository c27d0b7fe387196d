"""A point in the flow history as the routes and tools take it: a deploy's ``rev``, an ISO 8601 time (the deploy
in force then), or ``now`` (the flows deployed now, read from Node-RED)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from service.history.snapshot import kept
from service.history.store import HistoryStore, iso
from service.nodered.client import NodeRedClient
from service.nodered.messages import CodedError

MAX_POINT = 128  # characters of a point
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class PointError(CodedError):
    """``history_point_invalid`` (400): neither a rev, a time nor ``now``; ``snapshot_not_found`` (404): no
    captured deploy is at that point."""


@dataclass
class Point:
    """A resolved point: ``rev`` and ``time`` (ISO 8601, or ``now``) of the flows, and the flows themselves."""

    rev: str | None
    time: str
    flows: list[dict[str, Any]]

    def label(self) -> dict[str, Any]:
        """``{"rev", "time"}`` for an answer."""
        return {"rev": self.rev, "time": self.time}


def parse_time(text: str) -> float | None:
    """Unix seconds of an ISO 8601 time (``2026-12-02T10:00``, ``...Z``, ``...+01:00``; without an offset UTC), or
    ``None`` when ``text`` is not one."""
    text = text.strip().upper()  # RFC 3339 allows a lowercase "t" and "z"
    if text[17:19] == "60":  # a leap second: the second before it
        text = text[:17] + "59.999" + text[19:].lstrip("0123456789.")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH).total_seconds()  # no overflow at year 1 or 9999, unlike timestamp()


async def resolve(store: HistoryStore, client: NodeRedClient, point: str) -> Point:
    """The flows at ``point``.

    Raises:
        PointError: see the class.
        NodeRedError: ``now`` and Node-RED cannot be read. MemoryUnavailable: the database fails.
    """
    text = (point or "").strip()
    if not text or len(text) > MAX_POINT:
        raise PointError("history_point_invalid", params={"point": text[:MAX_POINT]})
    if text.lower() == "now":
        answer = await client.get_flows()
        # As the history keeps its snapshots, so that a secret compares equal to itself.
        return Point(answer.get("rev"), "now", kept(answer.get("flows") or []))
    flows = await store.flows(text)
    if flows is not None:
        found = await store.snapshot(text)
        return Point(text, iso(found.time) if found else "", flows)
    moment = parse_time(text)
    if moment is None:
        if len(text) >= 16 and all(c in "0123456789abcdef" for c in text.lower()):  # rev-shaped, not captured
            raise PointError("snapshot_not_found", params={"point": text})
        raise PointError("history_point_invalid", params={"point": text})
    snapshot = await store.at(moment)
    if snapshot is None:
        raise PointError("snapshot_not_found", params={"point": text})
    flows = await store.flows(snapshot.rev)
    assert flows is not None
    return Point(snapshot.rev, iso(snapshot.time), flows)
