"""The one registry of the tools the service can run, by name: what the agent is offered, what execute-tool and
``@tools:`` run, what a scenario may list, who may run each, and the HTTP status of each failure.

In-process tools are :class:`~service.nodered.tooling.Tool` declarations (the core's flow tools, which read the
editor's selection, and the memory tools); the other tools come from the service's own MCP server
(:class:`McpTools`: in this process over memory streams, or a stdio child), which registers the core's runtime tools
from the same declarations.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from service.history.tools import HISTORY_TOOLS
from service.nodered.compact import MODEL_TOOL_LIMIT
from service.nodered.messages import Sentence
from service.nodered.text_budget import bounded
from service.nodered.tooling import Tool, ToolContext, ToolFailure, ToolOutput
from service.nodered.tools import EVIDENCE_TOOL_NAMES, READ_TOOLS, WRITE_TOOLS
from service.tools.knowledge_tools import KNOWLEDGE_TOOLS
from service.tools.memory_tools import MEMORY_TOOLS
from service.tracing.spans import tool_span

if TYPE_CHECKING:
    # LangChain and the MCP SDK load with the chat stack after the start (service/web/stack.py; issue 33): the
    # registry itself is built at start, and read by routes that need neither.
    from langchain_core.tools import StructuredTool

    from service.tools.external_mcp import ExternalServers
    from service.tools.mcp_client import McpTools

Permission = Literal["read", "write"]

# Core tools the service runs itself because they use the editor's selection and its unsaved flowData, or the
# service's own runtime evidence; the other core tools run in the MCP server, as any MCP client would run them.
IN_PROCESS_CORE = frozenset({"get_flow", "get_node_info"}) | EVIDENCE_TOOL_NAMES
# Tools that read the requester's memory: not offered to a request without memory.
MEMORY_TOOL_NAMES = frozenset(tool.name for tool in MEMORY_TOOLS)
# Every name a scenario may list: the core's tools (read and write), the memory tools and the knowledge tools.
TOOL_NAMES = (frozenset(tool.name for tool in (*READ_TOOLS, *WRITE_TOOLS)) | MEMORY_TOOL_NAMES
              | frozenset(tool.name for tool in (*KNOWLEDGE_TOOLS, *HISTORY_TOOLS)))

# HTTP status of a tool failure outside a stream (execute-tool); anything else is an upstream fault (502).
# A 4xx means the user must change something: the request, a selection, a permission or a Node-RED setting.
FAILURE_STATUS = {
    "unknown_tool": 404, "flow_not_found": 404, "node_not_found": 404, "module_not_found": 404,
    "template_not_found": 404, "invalid_params": 400, "flow_not_selected": 400, "node_not_selected": 400,
    "flow_too_large": 413, "forbidden": 403, "flows_conflict": 409, "flow_locked": 409,
    "nodered_unauthorized": 403, "nodered_login_failed": 403, "diagnostics_disabled": 403,
    "nodered_timeout": 504, "memory_unavailable": 503, "approval_too_large": 413,
    "snapshot_not_found": 404, "history_point_invalid": 400, "history_unavailable": 503,
}


def failure_status(code: str) -> int:
    """The HTTP status of a tool failure ``code`` (502 for one not in :data:`FAILURE_STATUS`)."""
    return FAILURE_STATUS.get(code, 502)


def canonical_name(name: str) -> str:
    """A tool name as declared: hyphens read as underscores (``get-flow`` is ``get_flow``, the old spelling)."""
    return name.strip().replace("-", "_")


def default_tools() -> tuple[Tool, ...]:
    """The in-process tools of a service: the core's flow tools and write tools, the memory tools and the
    knowledge tools."""
    return (*(tool for tool in READ_TOOLS if tool.name in IN_PROCESS_CORE), *WRITE_TOOLS, *MEMORY_TOOLS,
            *KNOWLEDGE_TOOLS, *HISTORY_TOOLS)


class ToolRegistry:
    """Tools by name: in-process declarations win over MCP tools of the same name (they use the editor's
    selection); ``mcp`` is ``None`` when ``MCP_TOOLS_ENABLED`` is false.

    Args:
        tools: the in-process declarations; default :func:`default_tools`.
        mcp: the service's own MCP server, or ``None``.
        external: the user's external MCP servers (``MCP_SERVERS``), whose tools are ``<server>__<tool>``.
    """

    def __init__(self, tools: Iterable[Tool] | None = None, mcp: McpTools | None = None,
                 external: ExternalServers | None = None):
        self._local = {tool.name: tool for tool in (default_tools() if tools is None else tools)}
        self.mcp = mcp
        self.external = external

    def with_external(self, external: ExternalServers) -> ToolRegistry:
        """The same tools with ``external`` as the external servers (one request's: see
        :meth:`ExternalServers.with_servers`)."""
        registry = ToolRegistry(self._local.values(), self.mcp, external)
        return registry

    def names(self) -> list[str]:
        return sorted(set(self._local) | set(self.mcp.names if self.mcp else ()) | set(self.external_names()))

    def external_names(self) -> list[str]:
        """The tools of the external MCP servers now running (``<server>__<tool>``)."""
        return self.external.names if self.external else []

    def _external(self, name: str) -> bool:
        return name in self.external_names()

    def resolve(self, name: str | None) -> str | None:
        """The registered name ``name`` stands for (``get-flow`` → ``get_flow``), or ``None`` when none."""
        if not name:
            return None
        wanted = canonical_name(name)
        if wanted in self._local:
            return wanted
        if self._external(name):
            return name
        for known in self.mcp.names if self.mcp else ():
            if canonical_name(known) == wanted:
                return known
        return None

    def has(self, name: str | None) -> bool:
        return self.resolve(name) is not None

    def declaration(self, name: str) -> Tool | None:
        """The in-process declaration of ``name`` (any spelling), ``None`` for an MCP or unknown tool."""
        return self._local.get(canonical_name(name))

    def offered(self, names: Iterable[str], *, permission: Permission, memory: bool) -> list[str]:
        """Which of ``names`` (a scenario's list, any spelling) a model may call for a caller with ``permission``
        and a request with (``memory``) or without memory: known ones, once each, in order."""
        offered: list[str] = []
        for name in names:
            resolved = self.resolve(name)
            if resolved is None or resolved in offered or (not memory and resolved in MEMORY_TOOL_NAMES):
                continue
            if self._required(resolved) == "write" and permission != "write":
                continue
            offered.append(resolved)
        return offered

    def writes(self, name: str | None) -> bool:
        """Whether tool ``name`` (any spelling) changes Node-RED, so that it runs only with an approval record."""
        tool = self._local.get(canonical_name(name or ""))
        if tool is None and self.external is not None and self._external(name or ""):
            return self.external.writes(name or "")  # not annotated read-only: a write (issue 22)
        return tool is not None and tool.access == "write"

    async def preview(self, name: str, params: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        """``{"summary", "sentence", "diff"}`` of what write tool ``name`` would do with parsed ``params`` (see
        :mod:`service.nodered.write_tools`; ``sentence`` words the summary in another language); a write tool
        declared without a preview gets its name and arguments as the summary and an empty diff.

        Raises:
            ToolFailure: the tool's failure (``node_not_found``, ``flow_not_found``, a Node-RED error code, ...).
        """
        tool = self._local.get(canonical_name(name))
        if tool is not None and tool.preview is not None:
            return await tool.preview(context, params)
        sentence = Sentence("change.run_tool", tool=tool.name if tool else name, params=params)
        return {"summary": sentence.english, "sentence": sentence,
                "diff": {"added": [], "removed": [], "changed": [], "wires": {"added": [], "removed": []}}}

    def _required(self, name: str) -> Permission:
        tool = self._local.get(name)
        if tool is None:  # the bundled MCP server only reads; an external tool may write
            return "write" if self.writes(name) else "read"
        return tool.permission

    def _unknown(self, name: str) -> ToolFailure:
        return ToolFailure("unknown_tool", params={"tool": name, "tools": ", ".join(self.names())})

    def describe(self, name: str) -> tuple[str, dict[str, Any]]:
        """``(description, JSON Schema of the arguments)`` of a tool, as a model is shown them.

        Raises:
            ToolFailure: ``unknown_tool``.
        """
        resolved = self.resolve(name)
        tool = self._local.get(resolved or "")
        if tool is not None:
            return tool.description, _json_schema(tool)
        listed = self.mcp.tool(resolved) if self.mcp is not None and resolved else None
        if self.external is not None and resolved and self._external(resolved):
            listed = self.external.tool(resolved)
        if listed is None:
            raise self._unknown(name)
        return listed.description or listed.name, listed.inputSchema

    async def parse(self, name: str, params: Any) -> dict[str, Any]:
        """Validate ``params`` (a dict, or a list of positional values) for tool ``name`` (any spelling).

        Raises:
            ToolFailure: ``unknown_tool``, or ``invalid_params`` naming the wrong parameter.
        """
        resolved = self.resolve(name)
        if resolved is None:
            raise self._unknown(name)
        if resolved in self._local:
            return self._local[resolved].parse(params)
        if self.external is not None and self._external(resolved):
            return self.external.parse(resolved, params)
        if self.mcp is None:  # unreachable: resolve() names MCP tools only when there is a child
            raise self._unknown(name)
        await self.mcp.listed()  # the child starts in the background: its schemas decide what is valid
        return self.mcp.parse(resolved, params)

    async def run(self, name: str, params: dict[str, Any], context: ToolContext,
                  permission: Permission = "write") -> ToolOutput:
        """Run tool ``name`` (any spelling) with parsed ``params`` for a caller with ``permission``; MCP tools read
        with the context's user token when present.

        Raises:
            ToolFailure: ``unknown_tool``; ``forbidden`` when the tool needs ``write`` and the caller has ``read``;
                the tool's own failure (an MCP tool's keeps the code the bundled server sends:
                ``diagnostics_disabled``, ``nodered_unauthorized``, ..., else ``tool_failed``).
        """
        resolved = self.resolve(name)
        if resolved is None:
            raise self._unknown(name)
        if self._required(resolved) == "write" and permission != "write":
            raise ToolFailure("forbidden", key="forbidden.write")
        with tool_span(resolved):
            if resolved in self._local:
                return await self._local[resolved].run(context, **params)
            if self.external is not None and self._external(resolved):
                return await self.external.call(resolved, params)
            if self.mcp is None:  # unreachable: resolve() names MCP tools only when there is a child
                raise self._unknown(name)
            return await self.mcp.call(resolved, params, context.user_token)

    def for_model(self, name: str, text: str, config_at: int | None = None) -> str:
        """A tool's text bounded as its declaration says (MCP tools: the default bound of every tool), its node
        configuration marked (:meth:`~service.nodered.tooling.Tool.for_model`; an MCP tool's text is never
        configuration)."""
        tool = self._local.get(name)
        return tool.for_model(text, config_at) if tool is not None else bounded(text, MODEL_TOOL_LIMIT)

    def langchain_tool(self, name: str, coroutine: Callable[..., Awaitable[str]]) -> StructuredTool:
        """The LangChain tool a model is offered for ``name``: its description and argument schema, answered by
        ``coroutine(**arguments)``.

        The schema is handed over as a JSON Schema dict: LangChain validates a pydantic ``args_schema`` before the
        tool runs, and a failure there never reaches ``coroutine``, so the user would not see the call (issue 13).
        With a dict it passes the model's raw arguments on, and :meth:`parse` validates them with the same model.
        """
        from langchain_core.tools import StructuredTool

        description, schema = self.describe(name)
        return StructuredTool.from_function(coroutine=coroutine, name=name, description=description,
                                            args_schema=schema)


async def _unused(**_: Any) -> ToolOutput:
    raise NotImplementedError


# Each declared tool's schema, made once: LangChain builds it through pydantic models (several ms a tool), and a build
# round of the agent asked for every offered tool's more than once (issue 34's bench). Keyed by the tool's id, kept
# with the tool so that the id is never reused; kept as JSON text, each caller gets a copy of its own (json.loads is
# about three times quicker than copy.deepcopy on these).
_SCHEMAS: dict[int, tuple[Tool, str]] = {}


def _json_schema(tool: Tool) -> dict[str, Any]:
    """The argument schema exactly as LangChain shows the model a pydantic ``args_schema`` (a copy of the one made
    at the first call)."""
    kept = _SCHEMAS.get(id(tool))
    if kept is None or kept[0] is not tool:
        from langchain_core.tools import StructuredTool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        probe = StructuredTool.from_function(coroutine=_unused, name=tool.name, description=tool.description,
                                             args_schema=tool.args)
        kept = _SCHEMAS[id(tool)] = (tool, json.dumps(convert_to_openai_tool(probe)["function"]["parameters"]))
    schema: dict[str, Any] = json.loads(kept[1])
    return schema
