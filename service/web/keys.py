"""Typed keys for the objects the app shares (aiohttp ``web.AppKey``)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

if TYPE_CHECKING:
    pass

SETTINGS = web.AppKey("settings", "Settings")
HTTP_SESSION = web.AppKey("http_session", aiohttp.ClientSession)
NODERED = web.AppKey("nodered", "NodeRedClient")
MODELS = web.AppKey("models", "ChatModelFactory")
SCENARIOS = web.AppKey("scenarios", "ScenarioCatalog")
STREAMS = web.AppKey("streams", weakref.WeakSet)
TOOLS = web.AppKey("tools", "ToolRegistry")
MEMORY = web.AppKey("memory", "MemorySlot")
LIMITER = web.AppKey("limiter", "StreamLimiter")
MESSAGES = web.AppKey("messages", "MessageCatalog")
