"""External MCP servers (issue 22): the user's own servers from ``MCP_SERVERS`` (or an ``ai-config`` node), their
tools offered to the agent as ``<server>__<tool>``.

Each server runs under :class:`~service.tools.mcp_client.McpTools` (the ``mcp`` SDK's stdio or streamable HTTP
client, supervised: a server that exits is seen at once, a start is bounded by ``startTimeout``). OpenAI's function
names must match ``^[a-zA-Z0-9_-]{1,64}$`` (platform.openai.com/docs/api-reference/chat/create, ``tools``), so the
namespace separator is ``__``, not ``.``. A tool without ``readOnlyHint: true`` in its MCP annotations is a write:
it runs only through the approval machinery (see :mod:`service.chat.approvals`) and is never retried.

A server that fails to start, does not answer its start within ``startTimeout`` or dies is *unavailable*: its
tools are not offered and :meth:`ExternalServers.unavailable` says why (the pipeline turns it into a ``notice``);
its start is tried again at most every :data:`RETRY_SECONDS`.

Servers a request names (an ``ai-config`` node's, sent with its provider settings) join the configured ones for
that request only (:meth:`ExternalServers.with_servers`); their connections are kept in a pool keyed by the whole
definition, secrets included, so that the next request with the same definition reuses the running connection
instead of starting another. Their HTTP requests reach only public addresses and those the operator allows
(:mod:`service.mcp_addresses`), checked as each is sent. Which request servers the service accepts at all is
the web layer's decision (:func:`service.web.deps.request_tools`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service.mcp_addresses import AddressPolicy, origin
from service.nodered.tooling import ToolFailure, ToolOutput
from service.settings import McpServerConfig
from service.tools.mcp_client import PASS_THROUGH_ENV, McpTools
from service.tools.mcp_http import pinned_client_factory

if TYPE_CHECKING:
    from mcp.types import Tool

log = logging.getLogger(__name__)

SEPARATOR = "__"
RETRY_SECONDS = 60.0
# Connections to request servers kept at once; the least recently requested one beyond it is closed.
POOL_LIMIT = 16


@dataclass
class ExternalServer:
    """One configured server, its client and its state (``problem``: why it is unavailable, ``None``: fine)."""

    config: McpServerConfig
    client: McpTools
    problem: str | None = None
    failed_at: float = 0.0
    starting: asyncio.Task | None = None

    @property
    def name(self) -> str:
        return self.config.name


def _client(config: McpServerConfig, policy: AddressPolicy | None = None) -> McpTools:
    """The client of ``config``; with ``policy`` (a request's server) its HTTP requests go only to addresses the
    policy allows (:mod:`service.tools.mcp_http`), without (the service's own) anywhere."""
    if config.url is not None:
        headers = {key: value.get_secret_value() for key, value in config.headers.items()}
        url = config.url
        pinned = {} if policy is None else {"httpx_client_factory": pinned_client_factory(policy)}

        def transport() -> Any:
            # The MCP SDK loads with the chat stack after the start (service/web/stack.py; issue 33).
            from mcp.client.streamable_http import streamablehttp_client

            return streamablehttp_client(url, headers=headers, timeout=config.start_timeout, **pinned)
        # Its name in the log is the URL's origin: the path and query may carry a secret, as the headers do.
        return McpTools([origin(url)], {}, config.start_timeout, config.call_timeout, transport=transport,
                        retry=False)
    env = {name: os.environ[name] for name in ("PATH", "HOME", *PASS_THROUGH_ENV) if os.environ.get(name)}
    env.update({key: value.get_secret_value() for key, value in config.env.items()})
    return McpTools([config.command or "", *config.args], env, config.start_timeout, config.call_timeout,
                    retry=False)


def definition_key(config: McpServerConfig) -> str:
    """A digest of a server's whole definition, secret values included (they are part of what makes two
    connections differ); only the digest is kept as a key, never the values."""
    shown = config.model_dump(exclude={"env", "headers"})
    shown["env"] = {key: value.get_secret_value() for key, value in sorted(config.env.items())}
    shown["headers"] = {key: value.get_secret_value() for key, value in sorted(config.headers.items())}
    return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()


@dataclass
class ServerPool:
    """Request servers by definition (:func:`definition_key`), least recently requested first; beyond ``limit``
    the oldest is closed (a call still running on it fails, and its server is then reported unavailable)."""

    limit: int = POOL_LIMIT
    servers: OrderedDict[str, ExternalServer] = field(default_factory=OrderedDict)
    closing: set[asyncio.Task] = field(default_factory=set)

    def get(self, config: McpServerConfig, policy: AddressPolicy) -> ExternalServer:
        """The pooled server of ``config``'s definition, created (not started) when the pool has none; its HTTP
        requests go only to addresses ``policy`` allows (the operator's, the same for every request)."""
        key = definition_key(config)
        server = self.servers.pop(key, None) or ExternalServer(config, _client(config, policy))
        self.servers[key] = server
        while len(self.servers) > self.limit:
            _, oldest = self.servers.popitem(last=False)
            task = asyncio.create_task(_close(oldest), name=f"mcp-close-{oldest.name}")
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)
        return server

    async def close(self) -> None:
        servers = list(self.servers.values())
        self.servers.clear()
        await asyncio.gather(*(_close(server) for server in servers), *list(self.closing))


async def _close(server: ExternalServer) -> None:
    if server.starting is not None and not server.starting.done():
        server.starting.cancel()
    await server.client.close()


class ExternalServers:
    """The configured external servers: ``start()``, names and schemas of their tools, ``call``, ``close()``.

    Args:
        configs: the service's own servers (``MCP_SERVERS``, the YAML file's ``mcpServers``).
        pool: where the servers of requests live (:meth:`with_servers`); a new pool when not given.
    """

    def __init__(self, configs: list[McpServerConfig], pool: ServerPool | None = None):
        self.servers = {config.name: ExternalServer(config, _client(config)) for config in configs}
        self.pool = ServerPool() if pool is None else pool

    def with_servers(self, configs: list[McpServerConfig], policy: AddressPolicy) -> ExternalServers:
        """These servers and ``configs`` (a request's, names not among these: the caller checks), the latter from
        the pool, reaching only addresses ``policy`` allows. The result shares its servers: close this set, never
        the result."""
        joined = ExternalServers([], self.pool)
        joined.servers = {**self.servers, **{config.name: self.pool.get(config, policy) for config in configs}}
        return joined

    def __bool__(self) -> bool:
        return bool(self.servers)

    async def start(self) -> None:
        """Start every server that is not running (all at once, each within its ``startTimeout``); one that was
        tried within :data:`RETRY_SECONDS` and failed is left unavailable."""
        for server in self.servers.values():
            due = not self._running(server) and time.monotonic() - server.failed_at >= RETRY_SECONDS
            if due and (server.starting is None or server.starting.done()):
                server.starting = asyncio.create_task(self._start(server), name=f"mcp-start-{server.name}")
        # A start already under way (the service's own, at startup) is waited for, not repeated.
        await asyncio.gather(*(asyncio.shield(server.starting) for server in self.servers.values()
                               if server.starting is not None and not server.starting.done()))

    async def _start(self, server: ExternalServer) -> None:
        if await server.client.start():
            server.problem = None
            return
        child = server.client._child  # noqa: SLF001 - its error says why it did not start
        reason = child.error if child is not None and child.error else "it did not start"
        self._mark(server, reason)

    def _mark(self, server: ExternalServer, reason: str) -> None:
        server.problem, server.failed_at = reason, time.monotonic()
        log.warning("MCP server %s unavailable: %s", server.name, reason)

    @staticmethod
    def _running(server: ExternalServer) -> bool:
        child = server.client._child  # noqa: SLF001
        return child is not None and child.alive

    def unavailable(self) -> dict[str, str]:
        """Server name → why its tools are unavailable, for each server that is."""
        return {server.name: server.problem for server in self.servers.values() if server.problem}

    @property
    def names(self) -> list[str]:
        """``<server>__<tool>`` of every tool of the servers now running."""
        return [f"{server.name}{SEPARATOR}{tool}" for server in self.servers.values()
                if server.problem is None and self._running(server) for tool in sorted(server.client.names)]

    def _split(self, name: str) -> tuple[ExternalServer, str] | None:
        server_name, _, tool = name.partition(SEPARATOR)
        server = self.servers.get(server_name)
        return (server, tool) if server is not None and tool else None

    def tool(self, name: str) -> Tool | None:
        found = self._split(name)
        return found[0].client.tool(found[1]) if found else None

    def writes(self, name: str) -> bool:
        """Whether ``name`` may change something: its MCP annotations do not say ``readOnlyHint: true``."""
        listed = self.tool(name)
        if listed is None:
            return False
        return not (listed.annotations is not None and listed.annotations.readOnlyHint is True)

    def parse(self, name: str, params: Any) -> dict[str, Any]:
        """Validate ``params`` against the tool's input schema (see :meth:`McpTools.parse`)."""
        found = self._split(name)
        assert found is not None  # the registry resolved the name through :attr:`names`
        return found[0].client.parse(found[1], params)

    async def call(self, name: str, params: dict[str, Any]) -> ToolOutput:
        """Run ``name``; a server that dies (or is found dead) meanwhile is marked unavailable.

        Raises:
            ToolFailure: ``tool_failed`` (the server's error, or that the server is unavailable).
        """
        found = self._split(name)
        if found is None:
            raise ToolFailure("unknown_tool", params={"tool": name, "tools": ", ".join(self.names)})
        server, tool = found
        if server.problem:
            raise ToolFailure("tool_failed", f"The MCP server {server.name} is unavailable: {server.problem}")
        try:
            return await server.client.call(tool, params)
        except ToolFailure:
            if not self._running(server):
                child = server.client._child  # noqa: SLF001
                self._mark(server, child.error if child is not None and child.error else "its process exited")
                raise ToolFailure("tool_failed", f"The MCP server {server.name} stopped during {tool}: "
                                  f"{server.problem}") from None
            raise

    async def close(self) -> None:
        """Stop these servers and every pooled request server."""
        await asyncio.gather(*(_close(server) for server in self.servers.values()), self.pool.close())
