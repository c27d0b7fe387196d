"""Typed keys for the objects the app shares (aiohttp ``web.AppKey``)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from service.errors import MESSAGES

if TYPE_CHECKING:
    from service.chat.scenarios import ScenarioCatalog
    from service.knowledge.refresher import KnowledgeSlot
    from service.llm.fim import FimModels
    from service.llm.prices import PriceTable
    from service.llm.providers import ChatModelFactory
    from service.memory.store import MemorySlot
    from service.nodered.client import NodeRedClient
    from service.nodered.evidence import EvidenceBuffer
    from service.settings import Settings
    from service.tools.registry import ToolRegistry
    from service.web.limits import StreamLimiter
    from service.web.sse import EventStream
    from service.web.stack import ApprovalSlot, ChatStack

# The string annotations name the value types for a type checker without importing them at run time (the app factory
# imports this module before the modules defining them).
SETTINGS: web.AppKey[Settings] = web.AppKey("settings")
HTTP_SESSION: web.AppKey[aiohttp.ClientSession] = web.AppKey("http_session")
NODERED: web.AppKey[NodeRedClient] = web.AppKey("nodered")
CHAT_MODELS: web.AppKey[ChatModelFactory] = web.AppKey("chat_models")
FIM_MODELS: web.AppKey[FimModels] = web.AppKey("fim_models")
SCENARIOS: web.AppKey[ScenarioCatalog] = web.AppKey("scenarios")
STREAMS: web.AppKey[weakref.WeakSet[EventStream]] = web.AppKey("streams")
TOOLS: web.AppKey[ToolRegistry] = web.AppKey("tools")
MEMORY: web.AppKey[MemorySlot] = web.AppKey("memory")
LIMITER: web.AppKey[StreamLimiter] = web.AppKey("limiter")
KNOWLEDGE: web.AppKey[KnowledgeSlot] = web.AppKey("knowledge")
APPROVALS: web.AppKey[ApprovalSlot] = web.AppKey("approvals")
EVIDENCE: web.AppKey[EvidenceBuffer | None] = web.AppKey("evidence")
PRICES: web.AppKey[PriceTable] = web.AppKey("prices")
CHAT_STACK: web.AppKey[ChatStack] = web.AppKey("chat_stack")

__all__ = ["APPROVALS", "CHAT_MODELS", "CHAT_STACK", "EVIDENCE", "FIM_MODELS", "HTTP_SESSION", "KNOWLEDGE", "LIMITER",
           "MEMORY", "MESSAGES", "NODERED", "PRICES", "SCENARIOS", "SETTINGS", "STREAMS", "TOOLS"]
