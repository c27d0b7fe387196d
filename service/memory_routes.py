"""Memory routes (sessions, history, search, templates, stats), always scoped to the requesting user."""

from __future__ import annotations

import json
import re
import uuid

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from .errors import ServiceError
from .identity import request_user
from .keys import MEMORY
from .memory import MemoryStore
from .memory_tools import TEMPLATE_CATEGORY
from .models import ID_PATTERN, parse_body

routes = web.RouteTableDef()


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=500)
    category: str | None = Field(None, max_length=40)
    limit: int = Field(10, ge=1, le=50)


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(None, pattern=ID_PATTERN)
    name: str = Field("", max_length=200)
    scenario: str | None = Field(None, max_length=64)


class SessionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, min_length=1, max_length=200)
    pinned: bool | None = None


class TemplateCreate(BaseModel):
    """A flow template: ``flow`` is a Node-RED flow export (an array of node objects)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=2000)
    flow: list[dict] = Field(min_length=1, max_length=5000)


def _store(request: web.Request) -> MemoryStore:
    store = request.app[MEMORY].store
    if store is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    return store


def _limit(request: web.Request, default: int = 50, maximum: int = 500) -> int:
    raw = request.query.get("limit", str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= maximum:
        raise ServiceError("invalid_request", key="invalid_request.limit", params={"maximum": maximum})
    return int(raw)


def _session_id(request: web.Request) -> str:
    session_id = request.match_info["sessionId"]
    if not re.match(ID_PATTERN, session_id):
        raise ServiceError("invalid_request", key="invalid_request.session_id")
    return session_id


@routes.get("/ai-sidebar/history/{sessionId}")
async def history(request: web.Request) -> web.Response:
    """The newest ``limit`` messages of a session (default 50), oldest first."""
    turns = await _store(request).history(request_user(request), _session_id(request), _limit(request))
    return web.json_response({"sessionId": request.match_info["sessionId"], "messages": [t.as_dict() for t in turns]})


@routes.get("/ai-sidebar/memory-stats")
async def memory_stats(request: web.Request) -> web.Response:
    return web.json_response(await _store(request).stats(request_user(request)))


@routes.post("/ai-sidebar/search")
async def search(request: web.Request) -> web.Response:
    """``{query, category?, limit?}`` → BM25-ranked results with snippets, best first."""
    body = await parse_body(request, SearchRequest)
    results = await _store(request).search(request_user(request), body.query, body.category, body.limit)
    return web.json_response({"query": body.query, "results": results})


@routes.get("/ai-sidebar/templates")
async def templates(request: web.Request) -> web.Response:
    entries = await _store(request).knowledge(TEMPLATE_CATEGORY, request_user(request))
    return web.json_response({"templates": [
        {"name": e["metadata"].get("name", e["key"]), "description": e["metadata"].get("description", ""),
         "flow": json.loads(e["value"]), "updatedAt": e["updatedAt"], "shared": e["metadata"].get("shared", False)}
        for e in entries]})


@routes.post("/ai-sidebar/templates")
async def save_template(request: web.Request) -> web.Response:
    """Save a flow template for the requesting user (same name replaces it)."""
    body = await parse_body(request, TemplateCreate)
    user = request_user(request)
    saved = await _store(request).put_knowledge(
        f"template:{user}:{body.name}", json.dumps(body.flow, ensure_ascii=False), TEMPLATE_CATEGORY,
        {"name": body.name, "description": body.description}, user=user)
    return web.json_response({"name": body.name, **saved}, status=201)


@routes.get("/ai-sidebar/sessions")
async def sessions(request: web.Request) -> web.Response:
    return web.json_response({"sessions": await _store(request).sessions(request_user(request))})


@routes.post("/ai-sidebar/sessions")
async def create_session(request: web.Request) -> web.Response:
    body = await parse_body(request, SessionCreate)
    created = await _store(request).create_session(request_user(request), body.id or uuid.uuid4().hex, body.name,
                                                   body.scenario)
    return web.json_response(created, status=201)


@routes.patch("/ai-sidebar/sessions/{sessionId}")
async def update_session(request: web.Request) -> web.Response:
    body = await parse_body(request, SessionUpdate)
    updated = await _store(request).update_session(request_user(request), _session_id(request), body.name,
                                                   body.pinned)
    return web.json_response(updated)


@routes.delete("/ai-sidebar/sessions/{sessionId}")
async def delete_session(request: web.Request) -> web.Response:
    await _store(request).delete_session(request_user(request), _session_id(request))
    return web.json_response({"deleted": request.match_info["sessionId"]})
