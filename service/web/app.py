"""Application factory: ``create_app(settings)`` wires routes, middlewares and resources; it reads no env."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from service.chat.scenarios import ScenarioCatalog
from service.errors import ServiceError, error_middleware
from service.identity import HEADERS_TRUSTED
from service.knowledge.base import Knowledge
from service.knowledge.embeddings import embedder_for
from service.knowledge.refresher import KnowledgeRefresher, KnowledgeSlot
from service.knowledge.router import Router
from service.llm.fim import FimModels
from service.llm.prices import PriceTable
from service.llm.providers import PROVIDER_PACKAGES, ChatModelFactory, ProviderConfig
from service.memory.approvals import ApprovalStore
from service.memory.db import MemoryUnavailable, driver_errors, is_postgres_url
from service.memory.store import MemorySlot, MemoryStore
from service.memory.streams import HEARTBEAT, OpenStreams
from service.nodered.client import NodeRedClient, admin_session
from service.nodered.comms import CommsSubscriber
from service.nodered.evidence import EvidenceBuffer
from service.nodered.hosts import HostAllowList
from service.nodered.messages import MessageCatalog
from service.settings import Settings
from service.tools.external_mcp import ExternalServers
from service.tools.mcp_client import McpTools
from service.tools.registry import ToolRegistry
from service.tracing.spans import active as tracing_active
from service.tracing.spans import request_middleware
from service.web.completion_routes import routes as completion_routes
from service.web.document_routes import routes as document_routes
from service.web.history_routes import history_context
from service.web.history_routes import routes as history_routes
from service.web.keys import (
    APPROVALS,
    CHAT_MODELS,
    CHAT_STACK,
    EVIDENCE,
    FIM_MODELS,
    HTTP_SESSION,
    KNOWLEDGE,
    LIMITER,
    MEMORY,
    MESSAGES,
    NODERED,
    PRICES,
    SCENARIOS,
    SETTINGS,
    STREAMS,
    TOOLS,
)
from service.web.knowledge_routes import routes as knowledge_routes
from service.web.limits import StreamLimiter
from service.web.mcp_grant_routes import routes as mcp_grant_routes
from service.web.memory_routes import routes as memory_routes
from service.web.provider_routes import routes as provider_routes
from service.web.routes import routes
from service.web.stack import ApprovalSlot, ChatStack, after
from service.web.usage_routes import routes as usage_routes

if TYPE_CHECKING:
    from service.chat.approvals import Approvals

log = logging.getLogger(__name__)
OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})
RETENTION_INTERVAL = 86_400.0  # seconds between retention runs
# Seconds between purges of expired approvals: the approval TTL, within these bounds (an expired approval lingers at
# most this long; it answers approval_expired meanwhile all the same).
APPROVAL_PURGE_INTERVAL = (60.0, 3600.0)


def token_middleware(token: str) -> Callable:
    """Require ``Authorization: Bearer <AI_SIDEBAR_TOKEN>`` on every route but ``/healthz`` and ``/openapi.json``."""
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                raise ServiceError("unauthorized", status=401)
        return await handler(request)

    return check


def host_middleware(allowed: HostAllowList) -> Callable:
    """Answer a request whose ``Host``, or ``Origin`` when present, names a host outside ``allowed`` with 421
    ``misdirected_request`` (DNS rebinding, see :mod:`service.nodered.hosts`); every route, ``/healthz`` too."""

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        if not allowed.allows_host(request.headers.get("Host")) or \
                not allowed.allows_origin(request.headers.get("Origin")):
            raise ServiceError("misdirected_request", status=421)
        return await handler(request)

    return check


@web.middleware
async def json_body_middleware(request: web.Request,
                               handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Refuse a POST, PUT or PATCH whose ``Content-Type`` is not ``application/json`` with 415.

    A web page may send a "simple" cross-site request (``text/plain``, form encoded, or a body of no type) without
    a CORS preflight (https://fetch.spec.whatwg.org/#cors-safelisted-request-header); a service on loopback without
    ``AI_SIDEBAR_TOKEN`` would otherwise act on it. ``application/json`` needs a preflight, which this service never
    answers, so a browser never sends one cross-site.
    """
    if request.method in ("POST", "PUT", "PATCH") and request.content_type != "application/json":
        raise ServiceError("unsupported_media_type", status=415)
    return await handler(request)


async def _http_session(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    session = admin_session()
    app[HTTP_SESSION] = session
    nodered = settings.nodered
    # The service offers write tools to callers that may write (an ai-chat node allowed to change flows deploys
    # with these credentials), so a password login asks for the scope that deploys.
    client = NodeRedClient(nodered.url, session, nodered.credentials_for(writes=True), timeout=nodered.timeout)
    app[NODERED] = client
    login = asyncio.create_task(client.check_login())
    yield
    if not login.done():
        login.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await login
    await session.close()


async def _evidence(app: web.Application) -> AsyncIterator[None]:
    """Subscribe to Node-RED's comms websocket (debug messages, node status, node errors) while the service runs,
    with the service's own Node-RED credentials, into the evidence buffer (none: ``AI_SIDEBAR_EVIDENCE=false``)."""
    buffer = app[EVIDENCE]
    if buffer is None:
        yield
        return
    subscriber = CommsSubscriber(app[NODERED], app[HTTP_SESSION], buffer)
    subscriber.start()
    yield
    await subscriber.stop()


async def _chat_stack(app: web.Application) -> AsyncIterator[None]:
    """Import the chat stack, then the chat model package of ``AI_PROVIDER``, in a worker thread from the start on
    (:class:`service.web.stack.ChatStack`; issue 33): the service answers meanwhile, and the first chat does not
    wait for all of it."""
    app[CHAT_STACK].start()
    yield
    await app[CHAT_STACK].close()


async def _mcp_child(app: web.Application) -> AsyncIterator[None]:
    """Start the service's own MCP server (in this process by default, else its stdio child) with the service, stop
    it with the service; a failed start is only logged."""
    mcp = app[TOOLS].mcp
    # Started in the background so the service answers /healthz and plain chats at once (importing mcp_server and
    # the handshake take a few hundred milliseconds; a child's start about half a second); a call made before it
    # is up waits for the same start.
    # After the chat stack's import, which imports the MCP SDK in its thread; the start would import it on the loop.
    starting = after(app[CHAT_STACK], mcp.start) if mcp is not None else None
    external = app[TOOLS].external
    external_start = after(app[CHAT_STACK], external.start) if external else None
    yield
    if external is not None:
        if external_start is not None and not external_start.done():
            external_start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await external_start
        await external.close()
    if mcp is not None and starting is not None:
        if not starting.done():
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
        await mcp.close()


async def _memory(app: web.Application) -> AsyncIterator[None]:
    """Open the memory store (PostgreSQL at ``DATABASE_URL``, else SQLite at ``MEMORY_DB_PATH``), seed shared flow
    templates, apply retention at start and daily; on PostgreSQL or with several workers count open streams in the
    database (with this process's heartbeat); close it after.

    A database that cannot be opened (read-only, corrupt, locked, unreachable) leaves the service answering without
    memory.
    """
    settings = app[SETTINGS]
    slot = app[MEMORY]
    target = settings.memory_target()
    where = "PostgreSQL at DATABASE_URL" if is_postgres_url(target) else str(target)  # the URL may hold a password
    try:
        slot.store = await MemoryStore.open(target)
    except (OSError, sqlite3.Error, MemoryUnavailable) as err:
        log.error("memory database %s cannot be opened (%s); conversations will not be remembered", where,
                  err.message if isinstance(err, MemoryUnavailable) else err)
        yield
        return
    log.info("memory: %s", "PostgreSQL (DATABASE_URL)" if is_postgres_url(target) else f"SQLite at {where}")
    try:
        if settings.templates_path.exists():
            await slot.store.seed_templates(json.loads(settings.templates_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ServiceError) as err:
        log.warning("flow templates not seeded from %s: %s", settings.templates_path, err)
    tasks = [asyncio.create_task(_periodically(RETENTION_INTERVAL, _retention(slot.store,
                                                                         settings.memory_retention_days)))]
    # Replicas on PostgreSQL, or several workers on one SQLite file: the per-user stream limit counts the streams
    # of every process through the database (one process alone counts in memory, cheaper).
    shared = is_postgres_url(target) or (settings.workers or 1) > 1
    streams = OpenStreams(slot.store.db) if shared else None
    if streams is not None:
        app[LIMITER].share(streams)
        tasks.append(asyncio.create_task(_periodically(HEARTBEAT, _heartbeat(streams), at_start=False)))
    yield
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    if streams is not None:
        app[LIMITER].share(None)
        with contextlib.suppress(MemoryUnavailable):
            await streams.forget_replica()
    await slot.store.close()


async def _approvals(app: web.Application) -> AsyncIterator[None]:
    """Open the approval machinery (approvals and audit in the memory store, the agent checkpointer beside it) once
    the chat stack is imported, purge expired approvals then and periodically; close it after. A chat waits for the
    opening (:meth:`ChatStack.follow`), so a purged token answers approval_expired from the first request on.
    Without a memory store there is none, and write tools are not offered."""
    store = app[MEMORY].store
    if store is None:
        yield
        return
    settings = app[SETTINGS]
    slot = app[APPROVALS]
    purging: list[asyncio.Task[None]] = []
    closing: list[Callable[[], Awaitable[object]]] = []

    async def open_them() -> None:
        from service.chat.approvals import open_approvals

        failures: tuple[type[Exception], ...] = (OSError, *driver_errors())
        try:
            approvals, close = await open_approvals(ApprovalStore(store), settings)
        except failures as err:
            log.error("approvals cannot be opened (%s); the assistant will not offer to change flows", err)
            return
        closing.append(close)
        slot.approvals = approvals
        low, high = APPROVAL_PURGE_INTERVAL
        purge = _purge(approvals)
        await purge()  # before the first chat, which waits for this task
        purging.append(asyncio.create_task(_periodically(min(max(settings.approval_ttl, low), high), purge,
                                                         at_start=False)))

    opening = after(app[CHAT_STACK], open_them)
    app[CHAT_STACK].follow(opening)
    try:
        if await ApprovalStore(store).any_expired(time.time()):
            # Purged before the start ends, with their runs' checkpoints (LangGraph's checkpointer): this start
            # waits for the chat stack (issue 33: only then).
            await asyncio.shield(opening)
    except MemoryUnavailable as err:
        log.warning("expired approvals not looked for at start: %s", err.message)
    yield
    # Still waiting for the import, nothing is open yet: cancelled. Once opening, it is waited for: cancelled
    # midway, the checkpointer's connection (an aiosqlite thread, not a daemon) would keep the process from exiting.
    if not app[CHAT_STACK].warm:
        opening.cancel()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await opening
    for task in purging:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    slot.approvals = None
    for close in closing:
        await close()


async def _knowledge(app: web.Application) -> AsyncIterator[None]:
    """Open the knowledge index (in the memory database file) and keep it fresh in the background; close it after.

    A database that cannot be opened leaves the service answering without knowledge, as without memory. The
    refresh reads with the service's own Node-RED credentials (see :mod:`service.knowledge.refresher`).
    """
    settings = app[SETTINGS]
    slot = app[KNOWLEDGE]
    try:
        config = ProviderConfig.from_settings(settings)
        embedder = embedder_for(config.provider, settings.embedding_model, config.api_key, config.base_url)
        knowledge = await Knowledge.open(settings.memory_db_path, settings.locales_dir, embedder,
                                         settings.embedding_model)
    except (OSError, sqlite3.Error) as err:
        log.error("knowledge index in %s cannot be opened (%s); answers will not be grounded in the installed "
                  "nodes' help or the workspace", settings.memory_db_path, err)
        yield
        return
    slot.knowledge, slot.router = knowledge, Router(knowledge.lexicons)
    slot.refresher = KnowledgeRefresher(knowledge, app[NODERED], settings.knowledge_refresh)
    task = asyncio.create_task(slot.refresher.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    slot.knowledge = slot.router = slot.refresher = None
    await knowledge.close()


async def _periodically(interval: float, job: Callable[[], Awaitable[None]], at_start: bool = True) -> None:
    """Run ``job`` every ``interval`` seconds, first at once (``at_start``) or after one interval, until cancelled
    (the job logs its own faults)."""
    if not at_start:
        await asyncio.sleep(interval)
    while True:
        await job()
        await asyncio.sleep(interval)


def _retention(store: MemoryStore, days: int) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        try:
            removed = await store.remove_expired(days)
            if removed:
                log.info("memory retention: removed %d messages older than %d days", removed, days)
        except ServiceError as err:
            log.warning("memory retention skipped: %s", err.message)
    return run


def _heartbeat(streams: OpenStreams) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        try:
            await streams.heartbeat()
        except MemoryUnavailable as err:
            log.warning("open streams not refreshed: %s", err.message)
    return run


def _purge(approvals: Approvals) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        try:
            purged = await approvals.purge_expired()
            if purged:
                log.info("approvals: removed %d that expired while waiting", purged)
        except ServiceError as err:  # MemoryUnavailable: the approvals' table, or the checkpointer's
            log.warning("purge of expired approvals skipped: %s", err.message)
    return run


async def _close_models(app: web.Application) -> None:
    await app[CHAT_MODELS].aclose()
    await app[FIM_MODELS].aclose()


async def _close_streams(app: web.Application) -> None:
    for stream in app[STREAMS].copy():
        await stream.close()


def create_app(settings: Settings) -> web.Application:
    """Build the service for ``settings``.

    Raises:
        service.chat.scenarios.CatalogError: a locale file is invalid (fail at start, not on first request).
    """
    # Inside the error middleware, so that a refusal is worded in the request's language; the host check first.
    middlewares = [error_middleware, host_middleware(settings.host_allow_list), json_body_middleware]
    if settings.token is not None:
        middlewares.append(token_middleware(settings.token.get_secret_value()))
    if tracing_active():
        # Outermost, so that the request span sees the status the error middleware answered with.
        from service.tracing.models import model_spans_installer
        middlewares.insert(0, request_middleware(model_spans_installer(settings.trace_content)))
    # aiohttp 3.14 arms its keep-alive timer when a connection opens and closes the connection when it fires while
    # no request has been read completely (web_protocol.RequestHandler.connection_made, _process_keepalive), so
    # keepalive_timeout bounds the time to send request headers; handler_args wins over the runner's own value.
    # The body has its own bound in parse_body.
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes,
                          handler_args={"keepalive_timeout": settings.read_timeout})
    app[SETTINGS] = settings
    app[HEADERS_TRUSTED] = settings.token is not None
    app[SCENARIOS] = ScenarioCatalog(settings.locales_dir)
    app[MESSAGES] = MessageCatalog(settings.locales_dir)
    app[CHAT_MODELS] = ChatModelFactory()
    app[FIM_MODELS] = FimModels()
    app[PRICES] = PriceTable({str(provider): models for provider, models in settings.prices.items()})
    app[STREAMS] = weakref.WeakSet()
    app[TOOLS] = ToolRegistry(mcp=McpTools.from_settings(settings) if settings.mcp_tools_enabled else None,
                              external=ExternalServers(settings.mcp_servers))
    app[MEMORY] = MemorySlot()
    app[APPROVALS] = ApprovalSlot()
    app[CHAT_STACK] = ChatStack(then=PROVIDER_PACKAGES.get(settings.provider))
    app[KNOWLEDGE] = KnowledgeSlot()
    app[EVIDENCE] = EvidenceBuffer.from_settings(settings.evidence) if settings.evidence.enabled else None
    app[LIMITER] = StreamLimiter(settings.max_streams_per_user)
    app.cleanup_ctx.append(_chat_stack)  # first: its thread imports while the others open
    app.cleanup_ctx.append(_http_session)
    app.cleanup_ctx.append(_evidence)
    app.cleanup_ctx.append(_memory)
    app.cleanup_ctx.append(_approvals)
    app.cleanup_ctx.append(history_context)
    app.cleanup_ctx.append(_knowledge)
    app.cleanup_ctx.append(_mcp_child)
    app.on_shutdown.append(_close_streams)
    app.on_cleanup.append(_close_models)
    app.add_routes(routes)
    app.add_routes(memory_routes)
    app.add_routes(knowledge_routes)
    app.add_routes(document_routes)
    app.add_routes(usage_routes)
    app.add_routes(mcp_grant_routes)
    app.add_routes(provider_routes)
    app.add_routes(completion_routes)
    app.add_routes(history_routes)
    return app
