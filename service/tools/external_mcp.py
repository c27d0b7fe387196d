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
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from mcp.client.streamable_http import streamablehttp_client
from mcp.types import Tool

from service.nodered.tooling import ToolFailure, ToolOutput
from service.settings import McpServerConfig
from service.tools.mcp_client import PASS_THROUGH_ENV, McpTools

log = logging.getLogger(__name__)

SEPARATOR = "__"
RETRY_SECONDS = 60.0


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


def _client(config: McpServerConfig) -> McpTools:
    if config.url is not None:
        headers = {key: value.get_secret_value() for key, value in config.headers.items()}
        url = config.url

        def transport() -> Any:
            return streamablehttp_client(url, headers=headers, timeout=config.start_timeout)
        return McpTools([url], {}, config.start_timeout, config.call_timeout, transport=transport, retry=False)
    env = {name: os.environ[name] for name in ("PATH", "HOME", *PASS_THROUGH_ENV) if os.environ.get(name)}
    env.update({key: value.get_secret_value() for key, value in config.env.items()})
    return McpTools([config.command or "", *config.args], env, config.start_timeout, config.call_timeout,
                    retry=False)


class ExternalServers:
    """The configured external servers: ``start()``, names and schemas of their tools, ``call``, ``close()``."""

    def __init__(self, configs: list[McpServerConfig]):
        self.servers = {config.name: ExternalServer(config, _client(config)) for config in configs}

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
        for server in self.servers.values():
            if server.starting is not None and not server.starting.done():
                server.starting.cancel()
        await asyncio.gather(*(server.client.close() for server in self.servers.values()))
