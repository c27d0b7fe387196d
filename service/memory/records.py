"""What the memory reads back: a saved message (:class:`Turn`), a session's summary (:class:`Summary`), a session as the
API shows it, and the answer for a session the requester does not have (:class:`SessionNotFound`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from service.errors import ServiceError
from service.memory.db import MemoryUnavailable as MemoryUnavailable  # where callers have always found it
from service.memory.db import Row
from service.memory.migrations import MIGRATIONS as MIGRATIONS  # likewise

if TYPE_CHECKING:
    pass


class SessionNotFound(ServiceError):
    """The requester has no session with that id (404 ``session_not_found``); another owner's session of that id
    gives exactly the same answer."""

    def __init__(self, session_id: str):
        super().__init__("session_not_found", status=404, params={"session_id": session_id})


@dataclass(frozen=True)
class Turn:
    """One saved message: ``role`` is ``user`` or ``assistant``; ``created_at`` Unix seconds."""

    id: int
    role: str
    content: str
    metadata: dict[str, Any]
    created_at: float
    # What the sidebar showed of an answer besides its text (service.chat.view); None: not read, or stored before
    # answers kept it.
    events: list[dict[str, Any]] | None = None

    def as_dict(self) -> dict[str, Any]:
        shown = {"id": self.id, "role": self.role, "content": self.content, "metadata": self.metadata,
                 "createdAt": self.created_at}
        if self.events is not None:
            shown["events"] = self.events
        return shown


@dataclass(frozen=True)
class Summary:
    """A session's summary of its messages up to ``through_id`` (written by the model; ``created_at`` Unix
    seconds)."""

    text: str
    through_id: int
    created_at: float


def session_dict(row: Row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "pinned": bool(row["pinned"]), "scenario": row["scenario"],
            "createdAt": row["created_at"], "updatedAt": row["updated_at"]}


# The columns of a message read back as a :class:`Turn` (not PostgreSQL's search vector); the model's reads leave
# out ``events`` (only the sidebar shows them) and the answers that had no text (a fault, a run that waits).
TURN_COLUMNS = "id, message_type, content, metadata, created_at"


SAID = "(message_type = 'user' OR content <> '')"


def turn_from_row(row: Row) -> Turn:
    events = row["events"] if "events" in row.keys() else None
    return Turn(row["id"], row["message_type"], row["content"], json.loads(row["metadata"]), row["created_at"],
                json.loads(events) if events else None)
