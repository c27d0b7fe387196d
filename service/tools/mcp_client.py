"""The service's MCP client: reaches an MCP server (the bundled one in this process over memory streams, or as a
stdio child; an external one over stdio or streamable HTTP) and calls its tools.

The SDK's transports and ``ClientSession`` are anyio context managers that must be entered and left in one task, so
each run of a server ("child" below, whatever its transport) lives in a supervisor task that owns both and waits
until it is told to stop or the server's output ends (a stdio child's stdout, an in-process run's stream). A call
races the answer against that end: a call to a dead child never hangs, the child is started again and the call
retried once (every MCP tool here is read-only, so a retry is safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anyio

from service.nodered.messages import DEFAULT_LANGUAGE, english_catalog
from service.nodered.tooling import ToolFailure, ToolOutput
from service.nodered.tools import READ_TOOLS
from service.settings import Settings
from service.tools.mcp_memory import IN_PROCESS, InProcessServer

if TYPE_CHECKING:
    # The MCP SDK (about a second of CPU to import) loads with the chat stack after the start (service/web/stack.py;
    # issue 33), before the first server is started; here only where it is used.
    import jsonschema
    from mcp import ClientSession
    from mcp.types import Tool

log = logging.getLogger(__name__)

# Must match mcp_server.server.USER_TOKEN_META: the ``_meta`` key the server reads the editor user's token from.
USER_TOKEN_META = "ai-sidebar/nodeRedToken"
# Must match mcp_server.server.ERROR_META: the ``_meta`` key of a failed result holding its code and values.
ERROR_META = "ai-sidebar/error"
ERROR_CODE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# Tools the bundled MCP server offers (it registers the core's read tools); used for routing until a child has
# listed its own.
EXPECTED_TOOLS = tuple(tool.name for tool in READ_TOOLS)
# Environment handed to the child: the Node-RED connection, nothing else of the service's secrets.
PASS_THROUGH_ENV = ("PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL")


def server_command(settings: Settings) -> list[str]:
    """``MCP_SERVER_PATH`` split as a command line, default ``<this python> -m mcp_server``."""
    if settings.mcp_server_path:
        return shlex.split(settings.mcp_server_path)
    return [sys.executable, "-m", "mcp_server"]


def server_env(settings: Settings, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's extra environment: NODE_RED_* from the service settings (SDK adds HOME, PATH, ...)."""
    base = os.environ if base is None else base
    env = {name: base[name] for name in PASS_THROUGH_ENV if base.get(name)}
    env["NODE_RED_URL"] = settings.nodered.url
    # From the settings, not the environment: a timeout set in the YAML file (AI_SIDEBAR_CONFIG) holds for the child.
    env["NODE_RED_TIMEOUT"] = str(settings.nodered.timeout)
    # The service answers the runtime evidence tools from its own comms subscription: the child needs none.
    env["AI_SIDEBAR_EVIDENCE"] = "false"
    if settings.nodered.token:
        env["NODE_RED_TOKEN"] = settings.nodered.token.get_secret_value()
    if settings.nodered.username and settings.nodered.password:
        env["NODE_RED_USERNAME"] = settings.nodered.username
        env["NODE_RED_PASSWORD"] = settings.nodered.password.get_secret_value()
    return env


class _ChildGone(Exception):
    """The child died before or while answering."""


@dataclass(eq=False)
class _Child:
    """One run of the MCP server process, owned by its supervisor ``task``."""

    ready: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    session: ClientSession | None = None
    tools: dict[str, Tool] = field(default_factory=dict)
    error: str | None = None
    task: asyncio.Task | None = None

    @property
    def alive(self) -> bool:
        return self.ready.is_set() and not self.ended.is_set()


class McpTools:
    """An MCP server the service calls: ``start()``, ``call(name, params)``, ``close()``.

    Args:
        command: the server's command line.
        env: extra environment for it.
        start_timeout: seconds for the child to start and list its tools.
        call_timeout: seconds for one tool call.
        transport: opens the connection instead of running ``command`` over stdio (an external server's
            streamable HTTP client, the in-process server's memory streams): an async context manager yielding
            the read and write streams first; ``command`` then only names the server in logs.
        retry: whether a call the child died in is run again in a new child (only when every tool only reads).
    """

    def __init__(self, command: list[str], env: dict[str, str], start_timeout: float = 30.0,
                 call_timeout: float = 60.0, transport: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
                 retry: bool = True):
        self.command = command
        self._env = env
        self._transport = transport
        self._retry = retry
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._child: _Child | None = None
        self._tools: dict[str, Tool] = {}
        self._lock = asyncio.Lock()
        self._closed = False
        self.starts = 0

    def __repr__(self) -> str:
        return f"McpTools(command={self.command!r})"

    @classmethod
    def from_settings(cls, settings: Settings) -> McpTools:
        """The service's own MCP server: in this process over memory streams (:mod:`service.tools.mcp_memory`)
        unless ``MCP_TRANSPORT=stdio`` or ``MCP_SERVER_PATH`` asks for a stdio child."""
        if settings.mcp_in_process:
            server = InProcessServer.from_settings(settings)
            return cls([IN_PROCESS], {}, transport=server.connect)
        return cls(server_command(settings), server_env(settings))

    @property
    def names(self) -> list[str]:
        """Tool names of the last child that listed them (the bundled server's names before that)."""
        return sorted(self._tools) if self._tools else list(EXPECTED_TOOLS)

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    async def start(self) -> bool:
        """Start the child and list its tools; a failure is logged, never raised (MCP tools then fail per call)."""
        try:
            await self._live_child()
            return True
        except _ChildGone as gone:
            log.error("MCP server %s did not start: %s; MCP tools are unavailable until it does", self.command,
                      gone)
            return False

    async def listed(self) -> None:
        """Wait until a child has listed its tools (starting one if none runs); a failed start is left to the
        call, which reports it as ``tool_failed``."""
        if self._tools:
            return
        with contextlib.suppress(_ChildGone):
            await self._live_child()

    async def close(self) -> None:
        """Stop the child (closing its stdin, as the MCP stdio shutdown says); idempotent."""
        self._closed = True
        child, self._child = self._child, None
        if child is not None and child.task is not None:
            child.stop.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(child.task, 10)

    def parse(self, name: str, params: Any) -> dict[str, Any]:
        """Validate ``params`` (dict, or list of positional values) against the tool's input schema.

        Raises:
            ToolFailure: ``invalid_params`` naming the parameter that is wrong.
        """
        tool = self._tools.get(name)
        schema: dict[str, Any] = tool.inputSchema if tool else {"type": "object"}
        properties = list(schema.get("properties", {}))
        if isinstance(params, list):
            if len(properties) == 1 and schema["properties"][properties[0]].get("type") == "array":
                params = {properties[0]: params}
            elif len(params) > len(properties):
                raise ToolFailure("invalid_params", key="invalid_params.count",
                                  params={"tool": name, "expected": len(properties),
                                          "parameters": ", ".join(properties) or "none", "given": len(params)})
            else:
                params = dict(zip(properties, params))
        params = params or {}
        if not isinstance(params, dict):
            raise ToolFailure("invalid_params", key="invalid_params.not_object", params={"tool": name})
        if tool is not None:
            unknown = sorted(set(params) - set(properties))
            if unknown:
                raise ToolFailure("invalid_params", key="invalid_params.unknown",
                                  params={"tool": name, "parameter": unknown[0],
                                          "parameters": ", ".join(properties) or "none"})
            import jsonschema

            errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(params), key=lambda e: e.path)
            if errors:
                first = errors[0]
                where = ".".join(str(p) for p in first.path) or _required_name(first) or "params"
                raise ToolFailure("invalid_params", params={"tool": name, "parameter": where, "detail": first.message})
        return params

    async def call(self, name: str, params: dict[str, Any], user_token: str | None = None) -> ToolOutput:
        """Run tool ``name``; ``user_token`` (the editor user's) is passed in ``_meta`` and used by the server
        instead of its own credentials.

        Raises:
            ToolFailure: the code the bundled server sent with its sentence (``diagnostics_disabled``, ...), else
                ``tool_failed`` with the server's sentence, or when the child cannot be reached.
        """
        meta = {USER_TOKEN_META: user_token} if user_token else None
        for attempt in (1, 2):
            try:
                child = await self._live_child()
                return await self._call(child, name, params, meta)
            except _ChildGone as gone:
                if attempt == 2 or self._closed or not self._retry:
                    raise ToolFailure("tool_failed", key="tool_failed.unavailable",
                                      params={"reason": str(gone), "tool": name}) from None
                log.warning("MCP server died (%s); starting it again for %s", gone, name)
        raise AssertionError("unreachable")

    async def _call(self, child: _Child, name: str, params: dict[str, Any], meta: dict | None) -> ToolOutput:
        from mcp import McpError
        from mcp.types import TextContent

        assert child.session is not None
        request = asyncio.ensure_future(child.session.call_tool(
            name, params, read_timeout_seconds=timedelta(seconds=self._call_timeout), meta=meta))
        ended = asyncio.ensure_future(child.ended.wait())
        try:
            await asyncio.wait({request, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
        if not request.done():
            request.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await request
            raise _ChildGone(child.error or "the MCP server exited")
        try:
            result = request.result()
        except McpError as err:
            if child.ended.is_set():
                raise _ChildGone(err.error.message) from None
            raise ToolFailure("tool_failed", params={"tool": name, "detail": err.error.message}) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as err:
            raise _ChildGone(type(err).__name__) from None
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        if result.isError:
            raise _failure(name, text, (result.meta or {}).get(ERROR_META))
        data = result.structuredContent if result.structuredContent is not None else {"text": text}
        return ToolOutput(data=data, text=text)

    async def _live_child(self) -> _Child:
        """The running child, started (again) when there is none or it died."""
        async with self._lock:
            if self._closed:
                raise _ChildGone("the service is shutting down")
            child = self._child
            if child is None or child.ended.is_set():
                child = _Child()
                child.task = asyncio.create_task(self._supervise(child), name="mcp-child")
                self._child = child
                self.starts += 1
            ready = asyncio.ensure_future(child.ready.wait())
            ended = asyncio.ensure_future(child.ended.wait())
            try:
                await asyncio.wait({ready, ended}, timeout=self._start_timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
                ended.cancel()
            if child.alive:
                return child
            if not child.ended.is_set():
                child.error = f"no answer in {self._start_timeout:g} s"
                if child.task is not None:
                    child.task.cancel()  # it may hang before ``stop`` is watched; cancelling ends the process too
                child.ended.set()
            raise _ChildGone(child.error or "the MCP server exited")

    async def _supervise(self, child: _Child) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.shared.message import SessionMessage

        command, *args = self.command
        params = StdioServerParameters(command=command, args=args, env=self._env)
        connect = self._transport or (lambda: stdio_client(params, errlog=sys.stderr))
        try:
            async with connect() as streams:
                read, write = streams[0], streams[1]
                # Relay the child's messages so that the end of its stdout (the child died) is seen at once,
                # not only by a request that happens to be waiting.
                relay_send, relay_read = anyio.create_memory_object_stream[SessionMessage | Exception](0)

                async def relay() -> None:
                    async with relay_send:
                        async for message in read:
                            await relay_send.send(message)
                    child.ended.set()

                async with anyio.create_task_group() as group:
                    group.start_soon(relay)
                    async with ClientSession(relay_read, write) as session:
                        await session.initialize()
                        listed = await session.list_tools()
                        child.tools = {tool.name: tool for tool in listed.tools}
                        self._tools = dict(child.tools)
                        child.session = session
                        child.ready.set()
                        log.info("MCP server started (%s): tools %s", " ".join(self.command), sorted(child.tools))
                        stop = asyncio.ensure_future(child.stop.wait())
                        ended = asyncio.ensure_future(child.ended.wait())
                        try:
                            await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
                        finally:
                            stop.cancel()
                            ended.cancel()
                    group.cancel_scope.cancel()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the SDK raises exception groups of transport and process errors
            child.error = _describe(err)
            log.warning("MCP server %s stopped: %s", " ".join(self.command), child.error)
        finally:
            child.session = None
            child.ended.set()


def _describe(err: Exception) -> str:
    while isinstance(err, ExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _required_name(error: jsonschema.ValidationError) -> str | None:
    if error.validator == "required" and error.message.startswith("'"):
        return error.message.split("'")[1]
    return None


def _failure(name: str, text: str, error: Any) -> ToolFailure:
    """The failure of an ``isError`` result: with the code and sentence values the bundled server sends under
    :data:`ERROR_META` (``diagnostics_disabled``, ``nodered_unauthorized``, ...), else ``tool_failed`` with the
    server's text (any other MCP server)."""
    sentence = _tool_error_sentence(name, text)
    if not isinstance(error, dict) or not isinstance(error.get("code"), str) or not ERROR_CODE.match(error["code"]):
        return ToolFailure("tool_failed", sentence)
    params, key = error.get("params"), error.get("key")
    if (isinstance(params, dict) and isinstance(key, str) and key.split(".")[0] == error["code"]
            and english_catalog().render(key, params, DEFAULT_LANGUAGE) is not None):
        return ToolFailure(error["code"], key=key, params=params)
    # A key or value this service does not know (another version of the server): its own sentence, untranslated.
    return ToolFailure(error["code"], sentence)


def _tool_error_sentence(name: str, text: str) -> str:
    """FastMCP prefixes a tool's error with ``Error executing tool <name>: ``; the user needs the sentence only."""
    prefix = f"Error executing tool {name}: "
    return (text[len(prefix):] if text.startswith(prefix) else text) or f"{name} failed in the MCP server."
