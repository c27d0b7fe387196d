"""Application factory: ``create_app(settings)`` wires routes, middlewares and resources; it reads no env."""

from __future__ import annotations

import hmac
import weakref
from typing import AsyncIterator, Awaitable, Callable

import aiohttp
from aiohttp import web

from .errors import error_middleware, error_response
from .keys import HTTP_SESSION, MODELS, NODERED, SCENARIOS, SETTINGS, STREAMS, TOOLS
from .mcp_client import McpTools
from .nodered import NodeRedClient, NodeRedCredentials
from .providers import ChatModelFactory
from .routes import routes
from .scenarios import ScenarioCatalog
from .settings import Settings
from .toolbox import Toolbox

OPEN_PATHS = frozenset({"/healthz"})


def token_middleware(token: str) -> Callable:
    """Require ``Authorization: Bearer <AI_SIDEBAR_TOKEN>`` on every route but ``/healthz``."""
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return error_response("unauthorized", "Missing or wrong service token (AI_SIDEBAR_TOKEN).", 401)
        return await handler(request)

    return check


async def _http_session(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    session = aiohttp.ClientSession()
    app[HTTP_SESSION] = session
    app[NODERED] = NodeRedClient(
        settings.nodered_url, session,
        NodeRedCredentials(token=settings.nodered_token, username=settings.nodered_username,
                           password=settings.nodered_password),
        timeout=settings.nodered_timeout)
    yield
    await session.close()


async def _mcp_child(app: web.Application) -> AsyncIterator[None]:
    """Start the MCP server child with the service, stop it with the service; a failed start is only logged."""
    mcp = app[TOOLS].mcp
    if mcp is not None:
        await mcp.start()
    yield
    if mcp is not None:
        await mcp.close()


async def _close_models(app: web.Application) -> None:
    await app[MODELS].aclose()


async def _close_streams(app: web.Application) -> None:
    for stream in list(app[STREAMS]):
        await stream.close()


def create_app(settings: Settings) -> web.Application:
    """Build the service for ``settings``.

    Raises:
        service.scenarios.CatalogError: a locale file is invalid (fail at start, not on first request).
    """
    middlewares = [error_middleware]
    if settings.token is not None:
        middlewares.insert(0, token_middleware(settings.token.get_secret_value()))
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes)
    app[SETTINGS] = settings
    app[SCENARIOS] = ScenarioCatalog(settings.locales_dir)
    app[MODELS] = ChatModelFactory()
    app[STREAMS] = weakref.WeakSet()
    app[TOOLS] = Toolbox(McpTools.from_settings(settings) if settings.mcp_tools_enabled else None)
    app.cleanup_ctx.append(_http_session)
    app.cleanup_ctx.append(_mcp_child)
    app.on_shutdown.append(_close_streams)
    app.on_cleanup.append(_close_models)
    app.add_routes(routes)
    return app
