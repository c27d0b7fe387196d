"""The service's knowledge tools: :func:`service.knowledge.tools.knowledge_tools` over the service's index, which
its refresher keeps fresh with the service's own Node-RED credentials (see :mod:`service.knowledge.refresher`);
the docs are read in the request's language once indexed."""

from __future__ import annotations

from service.knowledge.base import Knowledge
from service.knowledge.tools import knowledge_tools
from service.nodered.tooling import Tool, ToolContext, ToolFailure


async def _resolve(ctx: ToolContext) -> tuple[Knowledge, str]:
    slot = getattr(ctx, "knowledge", None)
    if slot is None or slot.knowledge is None or slot.refresher is None:
        raise ToolFailure("memory_unavailable", key="memory_unavailable.not_opened")
    return slot.knowledge, await slot.refresher.docs_language(getattr(ctx, "language", None))


KNOWLEDGE_TOOLS: tuple[Tool, ...] = knowledge_tools(_resolve)
