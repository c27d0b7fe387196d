"""The MCP grants of the editor user (issue 40): which MCP clients they let act as them through ``nodered-mcp``'s
sign-in (``MCP_AUTH=oauth``), and revoking one. The grants live in the MCP server's sign-in database, which the
service opens when ``AI_SIDEBAR_MCP_AUTH_DB`` names it (the same file, so the service and the MCP server share a
machine); a revoked grant's tokens are deleted there, so the MCP server refuses them (401) from the next request.

Every user sees and revokes only their own grants on this Node-RED (``AI_SIDEBAR_MCP_INSTANCE``), whatever their
permissions: a grant acts as its user, and an operator who must end someone else's uses the database.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from aiohttp import web

from service.errors import ServiceError
from service.identity import request_caller
from service.requests import EmptyBody
from service.web.keys import CHAT_STACK, SETTINGS
from service.web.schemas import parse_body

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mcp_server.auth.store import Grant, GrantStore

routes = web.RouteTableDef()


@asynccontextmanager
async def _grant_store(request: web.Request) -> AsyncIterator[GrantStore | None]:
    """The MCP server's sign-in database for one request (``None`` when ``AI_SIDEBAR_MCP_AUTH_DB`` is unset)."""
    path = request.app[SETTINGS].mcp_auth_db
    if not path:
        yield None
        return
    # Imported here: a service without the setting never loads the MCP server's sign-in (the SDK's auth, Starlette).
    # Not before the chat stack's import is done: it imports the MCP SDK in its worker thread, and the same package
    # imported by two threads at once can meet itself half-initialised (an ImportError seen on a loaded machine:
    # "cannot import name 'StdioServerParameters' from partially initialized module 'mcp.client.stdio'").
    await request.app[CHAT_STACK].imported()
    from mcp_server.auth.store import GrantStore

    try:
        store = await GrantStore.open(path)
    except Exception as err:  # sqlite3.Error, OSError: the file cannot be opened
        raise ServiceError("mcp_grants_unavailable", status=503, params={"detail": type(err).__name__}) from None
    try:
        yield store
    finally:
        await store.close()


def _user(request: web.Request) -> str | None:
    """The editor user whose grants a request may see: only an editor user under adminAuth can have any."""
    identity = request_caller(request).identity
    return identity.name if identity.kind == "user" else None


async def _live_grants(store: GrantStore, user: str, instance: str) -> list[Grant]:
    now = time.time()
    return [grant for grant in await store.grants(user, instance)
            if grant.revoked_at is None and grant.expires_at > now]


@routes.get("/ai-sidebar/mcp-grants")
async def list_grants(request: web.Request) -> web.Response:
    """→ ``{enabled, grants: [{id, client, clientId, scopes, createdAt, lastUsedAt, expiresAt}]}``: the caller's
    live grants, newest first (times in Unix seconds; ``lastUsedAt`` ``null`` when never used, else noted at most a
    minute apart); ``enabled`` false without ``AI_SIDEBAR_MCP_AUTH_DB``.

    Errors: 503 ``mcp_grants_unavailable`` (the database cannot be opened).
    """
    user = _user(request)
    async with _grant_store(request) as store:
        if store is None or user is None:
            return web.json_response({"enabled": store is not None, "grants": []})
        grants = await _live_grants(store, user, request.app[SETTINGS].mcp_instance)
        names = await store.client_names([grant.client_id for grant in grants])
    return web.json_response({"enabled": True, "grants": [_shown(grant, names) for grant in grants]})


@routes.post("/ai-sidebar/mcp-grants/{grantId}/revoke")
async def revoke_grant(request: web.Request) -> web.Response:
    """Revoke one of the caller's live grants → ``{revoked: id}``; its tokens are refused from then on.

    Errors: 400/415 a body that is not an empty JSON object; 404 ``mcp_grant_not_found`` (no such live grant of
    the caller's: unknown, someone else's, already revoked or expired, or no sign-in database configured), 503
    ``mcp_grants_unavailable``.
    """
    await parse_body(request, EmptyBody)
    user = _user(request)
    raw = request.match_info["grantId"]
    async with _grant_store(request) as store:
        mine = await _live_grants(store, user, request.app[SETTINGS].mcp_instance) \
            if store is not None and user is not None else []
        grant = next((grant for grant in mine if str(grant.id) == raw), None)
        if store is None or grant is None:
            raise ServiceError("mcp_grant_not_found", status=404, params={"id": raw[:40]})
        await store.revoke(grant.id)
    return web.json_response({"revoked": grant.id})


def _shown(grant: Grant, names: dict[str, str]) -> dict[str, Any]:
    return {"id": grant.id, "client": names.get(grant.client_id, grant.client_id), "clientId": grant.client_id,
            "scopes": grant.scopes, "createdAt": grant.created_at, "lastUsedAt": grant.last_used_at,
            "expiresAt": grant.expires_at}
