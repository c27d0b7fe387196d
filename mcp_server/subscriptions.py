"""Resource subscriptions: a client that subscribed to a tab, subflow, config node or the workspace summary gets
``notifications/resources/updated`` for it after a deploy that changed it.

Node-RED announces every deploy on its comms websocket (topic ``notification/runtime-deploy``, payload
``{"revision"}``; ``@node-red/runtime/lib/flows/index.js`` emits ``runtime-deploy`` and the comms publish every
runtime event as ``notification/<id>`` to every connection). The MCP server already follows that websocket for the
runtime evidence (:class:`DeployAwareSubscriber`); on a deploy :class:`ResourceWatch` reads the flows once and
notifies each subscription whose content changed since it was taken (a fingerprint of its nodes), or every
subscription when the flows cannot be read.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import unquote

from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.session import ServerSession
from mcp.types import ServerCapabilities
from pydantic import AnyUrl

from service.nodered.comms import CommsSubscriber

from .resources import CONFIG_URI, FLOW_URI, SUMMARY_URI, ClientOf, read_flows

log = logging.getLogger(__name__)

DEPLOY_TOPIC = "notification/runtime-deploy"
_FLOW_PREFIX = FLOW_URI.split("{", 1)[0]
_CONFIG_PREFIX = CONFIG_URI.split("{", 1)[0]


def fingerprint(uri: str, flows: list[dict[str, Any]]) -> str | None:
    """A digest of what the resource ``uri`` shows of ``flows``: the tab (or subflow) and its nodes, the config
    node, or everything for the summary; ``None`` for a resource a deploy does not change (node help)."""
    if uri == SUMMARY_URI:
        part: Any = flows
    elif uri.startswith(_FLOW_PREFIX):
        flow_id = unquote(uri[len(_FLOW_PREFIX):])
        part = [node for node in flows if node.get("id") == flow_id or node.get("z") == flow_id]
    elif uri.startswith(_CONFIG_PREFIX):
        node_id = unquote(uri[len(_CONFIG_PREFIX):])
        part = [node for node in flows if node.get("id") == node_id]
    else:
        return None
    return hashlib.sha256(json.dumps(part, sort_keys=True, default=str).encode()).hexdigest()


class ResourceWatch:
    """The subscriptions of every session of one server: session → {uri: fingerprint when last seen}.

    Args:
        read_flows: reads the deployed flows with the server's own credentials (after a deploy).
    """

    def __init__(self, read_flows: Callable[[], Awaitable[list[dict[str, Any]]]]):
        self._read_flows = read_flows
        self._sessions: dict[ServerSession, dict[str, str | None]] = {}
        self._lock = asyncio.Lock()

    def subscribe(self, session: ServerSession, uri: str, flows: list[dict[str, Any]] | None) -> None:
        """Watch ``uri`` for ``session``; ``flows`` (as the subscriber can read them, ``None``: unreadable) give
        the state a later deploy is compared with."""
        self._sessions.setdefault(session, {})[uri] = fingerprint(uri, flows) if flows is not None else None

    def unsubscribe(self, session: ServerSession, uri: str) -> None:
        """Stop watching ``uri`` for ``session``."""
        watched = self._sessions.get(session)
        if watched is not None:
            watched.pop(uri, None)
            if not watched:
                del self._sessions[session]

    def forget(self, session: ServerSession) -> None:
        """Drop every subscription of a closed session."""
        self._sessions.pop(session, None)

    def watched(self, session: ServerSession) -> set[str]:
        """The URIs ``session`` subscribed to."""
        return set(self._sessions.get(session, {}))

    async def deployed(self) -> None:
        """After a deploy: notify each subscription whose resource changed (all of them when the flows cannot be
        read); a session that can no longer be written to is forgotten."""
        async with self._lock:
            if not self._sessions:
                return
            try:
                flows: list[dict[str, Any]] | None = await self._read_flows()
            except Exception as err:  # noqa: BLE001 - any failure to read means "maybe changed": notify all
                log.info("resource subscriptions: the flows could not be read after a deploy (%s)", err)
                flows = None
            for session, watched in list(self._sessions.items()):
                for uri, seen in list(watched.items()):
                    now = fingerprint(uri, flows) if flows is not None else None
                    if flows is not None and now == seen:
                        continue
                    watched[uri] = now
                    try:
                        await session.send_resource_updated(uri)  # type: ignore[arg-type]  # AnyUrl accepts str
                    except Exception:  # noqa: BLE001 - a closed session's stream raises; drop it
                        self.forget(session)
                        break


class DeployAwareSubscriber(CommsSubscriber):
    """The comms subscriber of the runtime evidence, also calling ``on_deploy`` (in a task of its own) when
    Node-RED announces a deploy."""

    def __init__(self, *args: Any, on_deploy: Callable[[], Coroutine[Any, Any, None]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._on_deploy = on_deploy
        self._tasks: set[asyncio.Task[None]] = set()

    def _take(self, text: str) -> None:
        super()._take(text)
        if DEPLOY_TOPIC in text and any(isinstance(item, dict) and item.get("topic") == DEPLOY_TOPIC
                                        for item in _batch(text)):
            task = asyncio.create_task(self._on_deploy(), name="nodered-deploy")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


def _batch(text: str) -> list[Any]:
    try:
        batch = json.loads(text)
    except ValueError:
        return []
    return batch if isinstance(batch, list) else []


def enable_subscriptions(mcp: FastMCP, watch: ResourceWatch, client_of: ClientOf) -> None:
    """Answer ``resources/subscribe`` and ``resources/unsubscribe`` on ``mcp`` through ``watch`` and announce
    ``resources.subscribe`` in its capabilities (FastMCP 1.x registers no such handlers and announces
    ``subscribe: false`` whatever the low-level server has). A subscription reads the flows once with the caller's
    rights: a caller who may not read them is refused (the request's error names why)."""
    server = mcp._mcp_server

    @server.subscribe_resource()
    async def subscribe(uri: AnyUrl) -> None:
        ctx = mcp.get_context()
        flows = await read_flows(client_of(ctx))
        watch.subscribe(ctx.session, str(uri), flows)

    @server.unsubscribe_resource()
    async def unsubscribe(uri: AnyUrl) -> None:
        watch.unsubscribe(mcp.get_context().session, str(uri))

    announced = server.get_capabilities

    def capabilities(options: NotificationOptions, experimental: dict[str, dict[str, Any]]) -> ServerCapabilities:
        answer = announced(options, experimental)
        if answer.resources is not None:
            answer.resources.subscribe = True
        return answer

    server.get_capabilities = capabilities  # type: ignore[method-assign,assignment]
