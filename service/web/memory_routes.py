"""Memory routes (sessions, history, search, templates, stats), always scoped to the requester's identity.

Changing sessions or saving templates needs write permission. An ``ai-chat`` node reaches only its own
conversation's memory, and only when its config turned memory on and the flow set ``msg.sessionId``.
"""

from __future__ import annotations

import json
import re
import uuid

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from service.errors import ServiceError
from service.identity import Identity, request_caller
from service.memory.approvals import ApprovalStore
from service.memory.fork import fork_session
from service.memory.store import MemoryStore
from service.nodered.flows import redact_text, strip_secrets
from service.requests import ID_PATTERN
from service.tools.memory_tools import TEMPLATE_CATEGORY
from service.web.keys import MEMORY
from service.web.schemas import parse_body

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


class SessionFork(BaseModel):
    model_config = ConfigDict(extra="forbid")
    messageId: int = Field(ge=1)
    name: str | None = Field(None, min_length=1, max_length=200)


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


def _owner(request: web.Request, write: bool = False) -> Identity:
    """The identity whose memory the request reads (and, with ``write``, changes).

    Raises:
        ServiceError: 403 ``forbidden``: a read-only caller asks to change something, or an ``ai-chat`` node
            without memory (not turned on, or no ``msg.sessionId``).
    """
    caller = request_caller(request)
    if write:
        caller.require_write()
    if not caller.memory:
        raise ServiceError("forbidden", status=403, key="forbidden.no_memory")
    return caller.identity


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
    """The newest ``limit`` messages of a session (default 50), oldest first (an answer stored with ``events``:
    what the sidebar showed besides its text, :mod:`service.chat.view`), ``summary``: ``{throughId, createdAt}``
    when the session's earlier conversation was summarised (the messages up to ``throughId`` reach the model only
    through the summary), else ``null``, and ``approvals``: what became of the approvals those events show, per run
    id (:meth:`~service.memory.approvals.ApprovalStore.outcomes`)."""
    store, owner, session_id = _store(request), _owner(request), _session_id(request)
    turns = await store.history(owner, session_id, _limit(request))
    summary = await store.summary(owner, session_id)
    run_ids = sorted({event["runId"] for turn in turns for event in turn.events or ()
                      if event.get("type") == "approval_required" and isinstance(event.get("runId"), str)})
    return web.json_response({"sessionId": request.match_info["sessionId"], "messages": [t.as_dict() for t in turns],
                              "summary": {"throughId": summary.through_id, "createdAt": summary.created_at}
                              if summary else None,
                              "approvals": await ApprovalStore(store).outcomes(owner, run_ids)})


@routes.get("/ai-sidebar/memory-stats")
async def memory_stats(request: web.Request) -> web.Response:
    return web.json_response(await _store(request).stats(_owner(request)))


@routes.post("/ai-sidebar/search")
async def search(request: web.Request) -> web.Response:
    """``{query, category?, limit?}`` → BM25-ranked results with snippets, best first."""
    body = await parse_body(request, SearchRequest)
    results = await _store(request).search(_owner(request), body.query, body.category, body.limit)
    return web.json_response({"query": body.query, "results": results})


@routes.get("/ai-sidebar/templates")
async def templates(request: web.Request) -> web.Response:
    entries = await _store(request).knowledge(TEMPLATE_CATEGORY, _owner(request))
    return web.json_response({"templates": [
        {"name": e["metadata"].get("name", e["key"]), "description": e["metadata"].get("description", ""),
         "flow": json.loads(e["value"]), "updatedAt": e["updatedAt"], "shared": e["shared"]}
        for e in entries]})


@routes.post("/ai-sidebar/templates")
async def save_template(request: web.Request) -> web.Response:
    """Save a flow template for the requester (their own template of the same name is replaced; shared templates
    never are). Node credentials and secret values are redacted before anything is stored."""
    owner = _owner(request, write=True)
    body = await parse_body(request, TemplateCreate)
    # A template is shown to the model and kept at rest: it is stored as the model would see it, secrets redacted.
    references = frozenset(node["id"] for node in body.flow if isinstance(node.get("id"), str))
    flow = [strip_secrets(node, references) for node in body.flow]
    saved = await _store(request).put_knowledge(
        body.name, json.dumps(flow, ensure_ascii=False), TEMPLATE_CATEGORY,
        {"name": body.name, "description": redact_text(body.description)}, owner=owner)
    return web.json_response({"name": body.name, **saved}, status=201)


@routes.get("/ai-sidebar/sessions")
async def sessions(request: web.Request) -> web.Response:
    return web.json_response({"sessions": await _store(request).sessions(_owner(request))})


@routes.post("/ai-sidebar/sessions")
async def create_session(request: web.Request) -> web.Response:
    owner = _owner(request, write=True)
    body = await parse_body(request, SessionCreate)
    created = await _store(request).create_session(owner, body.id or uuid.uuid4().hex, body.name,
                                                   body.scenario)
    return web.json_response(created, status=201)


@routes.patch("/ai-sidebar/sessions/{sessionId}")
async def update_session(request: web.Request) -> web.Response:
    owner = _owner(request, write=True)
    body = await parse_body(request, SessionUpdate)
    updated = await _store(request).update_session(owner, _session_id(request), body.name,
                                                   body.pinned)
    return web.json_response(updated)


@routes.post("/ai-sidebar/sessions/{sessionId}/fork")
async def fork(request: web.Request) -> web.Response:
    """``{messageId, name?}`` → 201 ``{sessionId, title, forkedFrom: {sessionId, messageId}, messages}``: a new
    session of the requester holding copies of the messages before their question ``messageId`` (``messages``: how
    many), named ``name`` or as the forked one; the forked session is left as it was (:mod:`service.memory.fork`).
    404 ``session_not_found`` (also another user's session), 404 ``message_not_found`` (no question of that
    session)."""
    owner = _owner(request, write=True)
    body = await parse_body(request, SessionFork)
    session_id = _session_id(request)
    made = await fork_session(_store(request), owner, session_id, body.messageId, uuid.uuid4().hex, body.name)
    return web.json_response({"sessionId": made.session["id"], "title": made.session["name"],
                              "forkedFrom": {"sessionId": session_id, "messageId": body.messageId},
                              "messages": made.copied, "session": made.session}, status=201)


@routes.delete("/ai-sidebar/sessions/{sessionId}")
async def delete_session(request: web.Request) -> web.Response:
    await _store(request).delete_session(_owner(request, write=True), _session_id(request))
    return web.json_response({"deleted": request.match_info["sessionId"]})
