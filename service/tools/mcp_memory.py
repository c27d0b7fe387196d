"""The service's own MCP server in the service's process (``MCP_TRANSPORT=memory``, the default).

The MCP protocol stays: :class:`~service.tools.mcp_client.McpTools` talks to the real server object
(:func:`mcp_server.server.build_server`) through a real ``ClientSession``, over the MCP SDK's in-memory transport
(anyio memory object streams, ``mcp.shared.memory.create_client_server_memory_streams``) instead of a child's
stdin and stdout. What it saves is the second Python process, which imported the core again (about 70 MB resident).

A run of the server is one task; when it ends for any reason but the service's stop (an exception escaping the
SDK's ``Server.run``), its streams are closed, so the client sees the end of the stream as it sees a stdio child's
stdout end, and :class:`McpTools` starts the server again and retries a call once, as it does for a dead child.

``mcp_server`` (FastMCP, starlette, pydantic-settings, the OAuth modules) is imported on the first start, in a
thread, so that a service with MCP tools off never imports it and a starting service answers ``/healthz`` meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from service.settings import Settings

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP
    from mcp.shared.memory import MessageStream

log = logging.getLogger(__name__)

# What the process calls the in-process server where the stdio path shows a command line (logs, ``repr``).
IN_PROCESS = "in-process"
# Seconds a run may take to close what it opened once the service stops talking to it; then it is cancelled.
STOP_TIMEOUT = 5.0


def build_bundled(settings: Settings) -> FastMCP:
    """The bundled MCP server for ``settings.nodered``, as the stdio child would build it from the environment the
    service gives it (:func:`~service.tools.mcp_client.server_env`), except two parts the service has itself: no
    runtime evidence (the service answers those tools from its own comms subscription) and no knowledge index (the
    service's knowledge tools, of the same names, win over the server's; a second index would only cost memory).
    """
    from mcp_server.server import build_server

    # The SDK logs every request at INFO; a stdio child's stderr showed only warnings, and so does the service's log.
    logging.getLogger("mcp.server.lowlevel.server").setLevel(logging.WARNING)
    return build_server(settings.nodered, knowledge_db=None,
                        evidence=settings.evidence.model_copy(update={"enabled": False}))


class InProcessServer:
    """Opens connections to one MCP server object running in this process: ``connect()`` is the ``transport`` of
    :class:`~service.tools.mcp_client.McpTools`.

    Args:
        build: makes the server (called once, in a worker thread, on the first ``connect``): a ``FastMCP`` or the
            SDK's low-level ``Server``.
    """

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._server: Any = None
        self.runs = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> InProcessServer:
        return cls(lambda: build_bundled(settings))

    async def _lowlevel(self) -> Any:
        if self._server is None:
            # Importing FastMCP and building the server take a few hundred milliseconds of CPU: off the event loop.
            built = await asyncio.to_thread(self._build)
            self._server = getattr(built, "_mcp_server", built)  # FastMCP keeps the SDK's Server there
        return self._server

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[MessageStream]:
        """A new run of the server, yielding the client's ``(read, write)`` streams; leaving stops the run.

        Raises:
            Exception: the server could not be built (reported by :class:`McpTools` as a failed start).
        """
        server = await self._lowlevel()
        # Imported here: mcp.shared.memory imports FastMCP (as _lowlevel's build does).
        from mcp.shared.memory import create_client_server_memory_streams

        async with create_client_server_memory_streams() as (client_streams, server_streams):
            ended = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(self._serve, server, server_streams, ended)
                try:
                    yield client_streams
                finally:
                    # The client's end of its write stream is the server's end of input, as closing a stdio
                    # child's stdin: the run returns and its lifespan closes what it opened (Node-RED session).
                    await client_streams[1].aclose()
                    with anyio.move_on_after(STOP_TIMEOUT, shield=True):
                        await ended.wait()
                    group.cancel_scope.cancel()

    async def _serve(self, server: Any, streams: MessageStream, ended: anyio.Event) -> None:
        read, write = streams
        self.runs += 1
        try:
            # Returns when the client closed its write stream (the service stops talking to it).
            await server.run(read, write, server.create_initialization_options(), raise_exceptions=False)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as err:  # noqa: BLE001 - a crashed run is logged and restarted by the client
            if _fatal(err):
                raise
            log.error("MCP server (in-process) crashed: %s", _describe(err), exc_info=err)
        finally:
            # The client's read stream ends here, as a stdio child's stdout does when it dies.
            await write.aclose()
            await read.aclose()
            ended.set()


def _fatal(err: BaseException) -> bool:
    """Whether ``err`` (or one in its group) must stop the service rather than this run of the server."""
    if isinstance(err, BaseExceptionGroup):
        return any(_fatal(inner) for inner in err.exceptions)
    return isinstance(err, (KeyboardInterrupt, SystemExit))


def _describe(err: BaseException) -> str:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
