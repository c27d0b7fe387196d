"""The service's tool context: the core's :class:`~service.nodered.tooling.ToolContext` plus who asks and their
memory (the core knows neither)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from service.identity import ANONYMOUS, Identity
from service.nodered.tooling import ToolContext

if TYPE_CHECKING:
    from service.knowledge.refresher import KnowledgeSlot
    from service.memory.store import MemoryStore


@dataclass
class ServiceToolContext(ToolContext):
    """A core context with the requester's ``identity`` (whose memory tools read) and ``memory`` (``None``: the
    request keeps no memory, memory tools are not offered), and the service's ``knowledge`` (``None``: not open);
    the request's ``language`` (which docs the knowledge tools read) is the core's. ``run_id`` and ``approval_id``:
    the run a person's decision continues and the approval it answered (``None`` outside a resumed run); the flow
    history records them with the assistant's deploys (:mod:`service.history.capture`)."""

    identity: Identity = ANONYMOUS
    memory: MemoryStore | None = None
    knowledge: KnowledgeSlot | None = None
    run_id: str | None = None
    approval_id: str | None = None
