"""The service's OpenAPI 3.1 description, served at ``/openapi.json``.

Request bodies come from the pydantic models the handlers validate with, so the description cannot drift from
what is enforced; a test compares the paths here with the routes the app registers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from service import __version__
from service.assist.completion import CompleteRequest
from service.requests import (
    AppliedRequest,
    AssistRequest,
    DocumentUpload,
    EmptyBody,
    ExecuteToolRequest,
    ResumeRequest,
    StreamChatRequest,
    TestProviderRequest,
)
from service.web.history_routes import PinRequest
from service.web.knowledge_routes import ReindexRequest
from service.web.memory_routes import SearchRequest, SessionCreate, SessionFork, SessionUpdate, TemplateCreate

ERROR = {"$ref": "#/components/schemas/Error"}
ANY_OBJECT = {"type": "object"}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/"
                                                                               f"{model.__name__}"}}}}


def _json(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema or ANY_OBJECT}}}


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(status): _json("error", ERROR) for status in statuses}


def _operation(summary: str, ok: dict[str, Any], *errors: int, body: type[BaseModel] | None = None,
               parameters: list[dict[str, Any]] | None = None, ok_status: str = "200",
               secured: bool = True) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "responses": {ok_status: ok, **_errors(*errors)}}
    if body is not None:
        operation["requestBody"] = _body(body)
    if parameters:
        operation["parameters"] = parameters
    if not secured:
        operation["security"] = []
    return operation


SESSION_ID = {"name": "sessionId", "in": "path", "required": True,
              "schema": {"type": "string", "pattern": r"^[A-Za-z0-9._:\-]{1,128}$"}}
RUN_ID = {"name": "runId", "in": "path", "required": True, "schema": {"type": "string"}}
LIMIT = {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 500}}
GRANT_ID = {"name": "grantId", "in": "path", "required": True, "schema": {"type": "integer"}}
REV = {"name": "rev", "in": "path", "required": True, "schema": {"type": "string"}}
HISTORY_BEFORE = {"name": "before", "in": "query", "required": False, "description": "ISO 8601 date-time",
                  "schema": {"type": "string", "format": "date-time"}}
# A point of the flow history: a deploy's rev (Node-RED's: hex digits), an ISO 8601 date-time, or now.
HISTORY_POINT = {"anyOf": [{"type": "string", "pattern": "^[0-9a-f]{16,64}$"},
                           {"type": "string", "format": "date-time"}, {"const": "now"}]}
HISTORY_POINTS = [{"name": "from", "in": "query", "required": True, "schema": HISTORY_POINT},
                  {"name": "to", "in": "query", "required": False, "schema": {**HISTORY_POINT, "default": "now"}}]
LANG = {"name": "lang", "in": "query", "required": False, "schema": {"type": "string"}}
_USAGE_TOTALS = {"turns": {"type": "integer"}, "inputTokens": {"type": "integer"}, "outputTokens": {"type": "integer"},
                 "cost": {"type": ["number", "null"], "description": "USD; null when no turn had a priced model"},
                 "unpricedTurns": {"type": "integer"}}
USAGE = {"type": "object", "required": ["by", "since", "scope", "total", "totals"], "properties": {
    "by": {"enum": ["session", "user", "day"]}, "since": {"type": ["string", "null"]},
    "scope": {"enum": ["own", "all"]},
    "total": {"type": "object", "required": list(_USAGE_TOTALS), "properties": _USAGE_TOTALS},
    "totals": {"type": "array", "items": {"type": "object", "required": list(_USAGE_TOTALS), "properties": {
        **_USAGE_TOTALS, "day": {"type": "string", "format": "date"}, "sessionId": {"type": "string"},
        "user": {"type": "object", "required": ["kind", "name"],
                 "properties": {"kind": {"enum": ["user", "anonymous", "flow"]}, "name": {"type": "string"}}}}}}}}
USAGE_PARAMETERS = [
    {"name": "by", "in": "query", "required": False, "schema": {"enum": ["session", "user", "day"]}},
    {"name": "since", "in": "query", "required": False,
     "description": "ISO 8601 date or date-time (UTC unless an offset is given)",
     "schema": {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]}},
    {"name": "sessionId", "in": "query", "required": False, "schema": {"type": "string"}},
]
EVENT_STREAM = {"description": "server-sent events, each `data: <json>` with `type` token, tool_call, tool_result, "
                               "flow_change, approval_required, notice, error or done (always last); `: ping` comments "
                               "keep the stream open",
                "content": {"text/event-stream": {"schema": {
                    "type": "object", "required": ["data"],
                    "properties": {"data": {"type": "string", "contentMediaType": "application/json"},
                                   "event": {"type": "string"}}}}}}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document (a dict ready for ``json.dumps``)."""
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {
            "type": "object", "required": ["code", "message"],
            "properties": {"code": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                           "message": {"type": "string"}}}}},
    }
    for model in (StreamChatRequest, ExecuteToolRequest, ResumeRequest, SearchRequest, SessionCreate, SessionFork,
                  SessionUpdate, TemplateCreate, ReindexRequest, EmptyBody, AssistRequest,
                  AppliedRequest, TestProviderRequest, PinRequest, CompleteRequest, DocumentUpload):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    paths = {
        "/healthz": {"get": _operation("Liveness", _json("ok"), secured=False)},
        "/openapi.json": {"get": _operation("This description", _json("OpenAPI document"), secured=False)},
        "/ai-sidebar/stream-chat": {"post": _operation("Answer a message as an event stream", EVENT_STREAM,
                                                       400, 401, 403, 408, 413, 429, body=StreamChatRequest)},
        "/ai-sidebar/assist": {"post": _operation(
            "A proposal for a node edit dialog (function code, JSONata, JSON) as an event stream: token events, one "
            "proposal or error event, done", EVENT_STREAM, 400, 401, 403, 408, 413, 429, body=AssistRequest)},
        "/ai-sidebar/complete": {"post": _operation(
            "One inline completion for a code editor of an edit dialog: {completion, usage}; the model request is "
            "cancelled when the client disconnects", _json("ok"), 400, 401, 403, 408, 429, 502,
            body=CompleteRequest)},
        "/ai-sidebar/scenarios": {"get": _operation("Scenarios of a language (no system prompts)", _json("ok"),
                                                    401, parameters=[LANG])},
        "/ai-sidebar/test-provider": {"post": _operation(
            "One tiny request to a provider (the ai-config node's settings, or the service's own): {ok: true, "
            "provider, model, url (origin), latencyMs}, or {ok: false, provider, model, url, error: {code, message}}",
            _json("ok"), 400, 401, 408, body=TestProviderRequest)},
        "/ai-sidebar/execute-tool": {"post": _operation("Run a tool by name", _json("tool result"),
                                                        400, 401, 403, 404, 408, 409, 502, 503,
                                                        body=ExecuteToolRequest)},
        "/ai-sidebar/resume": {"post": _operation(
            "Answer the writes a run waits for (one decision per action) and continue it as an event stream",
            EVENT_STREAM, 400, 401, 403, 404, 408, 409, 410, 429, 503, body=ResumeRequest)},
        "/ai-sidebar/approvals": {"get": _operation(
            "The caller's approvals still waiting (no tokens) and newest decisions on writes", _json("ok"),
            400, 401, 503, parameters=[LIMIT])},
        "/ai-sidebar/approvals/{runId}/applied": {"post": _operation(
            "What the editor made of an approved change it applied, kept for the reopened conversation",
            _json("runId, recorded"), 400, 401, 403, 404, 408, 503, parameters=[RUN_ID], body=AppliedRequest)},
        "/ai-sidebar/approvals/{runId}/token": {"post": _operation(
            "A fresh resume token for one of the caller's waiting runs (the old one stops working)",
            _json("runId, resumeToken, expiresAt"), 400, 401, 403, 404, 408, 409, 410, 503, parameters=[RUN_ID],
            body=EmptyBody)},
        "/ai-sidebar/memory-stats": {"get": _operation("Memory counts for the user", _json("ok"),
                                                       400, 401, 403, 503)},
        "/ai-sidebar/history/{sessionId}": {"get": _operation(
            "Newest messages of a session, oldest first (an answer with events: what the sidebar showed besides "
            "its text), the summary mark (summary: {throughId, createdAt}) and what became of the approvals the "
            "messages show (approvals: {runId: [{status, decisions, applied}]})",
            _json("ok"), 400, 401, 403, 404, 503,
            parameters=[SESSION_ID, LIMIT])},
        "/ai-sidebar/search": {"post": _operation("BM25-ranked search of messages and knowledge", _json("ok"),
                                                  400, 401, 403, 408, 503, body=SearchRequest)},
        "/ai-sidebar/templates": {
            "get": _operation("Flow templates", _json("ok"), 400, 401, 403, 503),
            "post": _operation("Save a flow template", _json("saved"), 400, 401, 403, 408, 503, body=TemplateCreate,
                               ok_status="201"),
        },
        "/ai-sidebar/knowledge": {"get": _operation(
            "Indexed knowledge sources (node help, workspace) with chunk counts and freshness", _json("ok"),
            400, 401)},
        "/ai-sidebar/knowledge/reindex": {"post": _operation(
            "Refresh the knowledge index from Node-RED now (write permission)", _json("reports and sources"),
            400, 401, 403, 408, 502, 503, 504, body=ReindexRequest)},
        "/ai-sidebar/knowledge/documents": {
            "get": _operation(
                "The documents the caller sees (shared ones and their own private ones) with chunk counts, totals and "
                "limits", _json("{documents: [{id, name, scope, mediaType, bytes, characters, chunks, createdAt, "
                                "updatedAt}], stats, limits, mayWrite}"), 400, 401, 503),
            "post": _operation(
                "Add a document (Markdown, text, HTML, PDF), or replace the one of the same name in its scope; a "
                "shared one needs write permission", _json("{document: {..., replaced: false}}"),
                400, 401, 403, 408, 409, 413, 422, 503, body=DocumentUpload, ok_status="201"),
        },
        "/ai-sidebar/knowledge/documents/search": {"get": _operation(
            "Search the caller's documents (best first)", _json("{query, hits: [{documentId, name, scope, section, "
                                                                "text, citation}]}"), 400, 401, 503,
            parameters=[{"name": "q", "in": "query", "required": True,
                         "schema": {"type": "string", "minLength": 1, "maxLength": 500}},
                        {"name": "limit", "in": "query", "required": False,
                         "schema": {"type": "integer", "minimum": 1, "maximum": 20}}])},
        "/ai-sidebar/knowledge/documents/{id}": {"delete": _operation(
            "Delete a document and its chunks (a shared one needs write permission)", _json("{deleted: {...}}"),
            400, 401, 403, 404, 503, parameters=[{"name": "id", "in": "path", "required": True,
                                                  "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}])},
        "/ai-sidebar/usage": {"get": _operation(
            "Tokens and cost of the recorded turns per session, user or UTC day (the caller's own; everyone's with "
            "write permission)", _json("{by, since, scope, total, totals}", USAGE), 400, 401, 503,
            parameters=USAGE_PARAMETERS)},
        "/ai-sidebar/mcp-grants": {"get": _operation(
            "The caller's live MCP sign-in grants (client, scopes, created, last used) on this Node-RED",
            _json("{enabled, grants: [...]}"), 401, 503)},
        "/ai-sidebar/mcp-grants/{grantId}/revoke": {"post": _operation(
            "Revoke one of the caller's MCP grants: its tokens are refused from then on", _json("{revoked}"),
            400, 401, 404, 503, parameters=[GRANT_ID], body=EmptyBody)},
        "/ai-sidebar/flow-history": {"get": _operation(
            "The captured deploys, newest first: rev, time, user when known, origin (assistant, editor), pinned, "
            "counts", _json("{deploys: [...]}"), 400, 401, 503, parameters=[LIMIT, HISTORY_BEFORE])},
        "/ai-sidebar/flow-history/diff": {"get": _operation(
            "What changed between two points (a rev, an ISO 8601 time, now) per tab and node, values redacted",
            _json("{from, to, tabs, counts}"), 400, 401, 403, 404, 502, 503, 504, parameters=HISTORY_POINTS)},
        "/ai-sidebar/flow-history/{rev}": {"patch": _operation(
            "Pin or unpin a deploy (write permission): pinned deploys outlive the retention", _json("{rev, pinned}"),
            400, 401, 403, 404, 408, 503, body=PinRequest, parameters=[REV])},
        "/ai-sidebar/sessions": {
            "get": _operation("The user's sessions", _json("ok"), 400, 401, 403, 503),
            "post": _operation("Create a session", _json("created"), 400, 401, 403, 408, 409, 503, body=SessionCreate,
                               ok_status="201"),
        },
        "/ai-sidebar/sessions/{sessionId}": {
            "patch": _operation("Rename or pin a session", _json("ok"), 400, 401, 403, 404, 408, 503,
                                body=SessionUpdate, parameters=[SESSION_ID]),
            "delete": _operation("Delete a session", _json("ok"), 400, 401, 403, 404, 503,
                                 parameters=[SESSION_ID]),
        },
        "/ai-sidebar/sessions/{sessionId}/fork": {"post": _operation(
            "A new session with copies of the messages before the question messageId (edit and resend); the forked "
            "session stays as it was", _json("{sessionId, title, forkedFrom: {sessionId, messageId}, messages}"),
            400, 401, 403, 404, 408, 409, 503, body=SessionFork, parameters=[SESSION_ID], ok_status="201")},
    }
    paths["/ai-sidebar/execute-tool"]["post"]["responses"]["202"] = _json(
        "a write tool does not run yet: {status: awaiting_approval, runId, resumeToken, actions[{tool, args, summary, "
        "diff}]}, answered by POST /ai-sidebar/resume")
    for operations in paths.values():
        for method in ("post", "put", "patch"):
            if method in operations:
                # Any body not sent as application/json is refused (service.web.app.json_body_middleware).
                operations[method]["responses"].update(_errors(415))
    return {
        "openapi": "3.1.0",
        "info": {"title": "node-red-ai-sidebar service", "version": __version__,
                 "description": "Companion service of the Node-RED AI sidebar. Every route but /healthz and "
                                "/openapi.json needs `Authorization: Bearer <AI_SIDEBAR_TOKEN>` when a token is "
                                "set. Errors are {\"error\": {\"code\", \"message\"}}."},
        "components": {"schemas": schemas,
                       "securitySchemes": {"serviceToken": {"type": "http", "scheme": "bearer"}}},
        "security": [{"serviceToken": []}],
        "paths": paths,
    }
