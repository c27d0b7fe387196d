"""All tools the service can run, by name: built-in ones in-process, the others through the MCP child."""

from __future__ import annotations

from typing import Any

from service.tools.builtin import BUILTIN_TOOLS, ToolContext, ToolFailure, ToolOutput
from service.tools.mcp_client import McpTools
from service.tools.memory_tools import MEMORY_TOOLS

# Tools the service runs in-process: Node-RED ones (they use the editor's selection) and memory ones.
LOCAL_TOOLS = {**BUILTIN_TOOLS, **MEMORY_TOOLS}


class Toolbox:
    """In-process tools (:data:`LOCAL_TOOLS`) win over MCP tools of the same name, because they use
    the editor's selection; ``mcp`` is ``None`` when ``MCP_TOOLS_ENABLED`` is false."""

    def __init__(self, mcp: McpTools | None = None):
        self.mcp = mcp

    def names(self) -> list[str]:
        return sorted(set(LOCAL_TOOLS) | set(self.mcp.names if self.mcp else ()))

    def has(self, name: str | None) -> bool:
        return bool(name) and (name in LOCAL_TOOLS or (self.mcp is not None and name in self.mcp.names))

    def describe(self, name: str) -> tuple[str, type | dict[str, Any]]:
        """``(description, argument schema)`` of a tool, for a model: a pydantic model for in-process tools, the
        MCP tool's JSON Schema for the others."""
        if name in LOCAL_TOOLS:
            return LOCAL_TOOLS[name].description, LOCAL_TOOLS[name].args
        tool = self.mcp.tool(name) if self.mcp is not None else None
        if tool is None:
            raise ToolFailure("unknown_tool", params={"tool": name, "tools": ", ".join(self.names())})
        return tool.description or name, tool.inputSchema

    async def parse(self, name: str, params: Any) -> dict[str, Any]:
        """Validate ``params`` for tool ``name``.

        Raises:
            ToolFailure: ``unknown_tool``, or ``invalid_params`` naming the wrong parameter.
        """
        if name in LOCAL_TOOLS:
            return LOCAL_TOOLS[name].parse(params)
        if self.has(name):
            await self.mcp.listed()  # the child starts in the background: its schemas decide what is valid
            return self.mcp.parse(name, params)
        raise ToolFailure("unknown_tool", params={"tool": name, "tools": ", ".join(self.names())})

    async def run(self, name: str, params: dict[str, Any], context: ToolContext) -> ToolOutput:
        """Run tool ``name`` with parsed ``params``; MCP tools read with the context's user token when present.

        Raises:
            ToolFailure: the tool's failure; an MCP tool's keeps the code the bundled server sends
                (``diagnostics_disabled``, ``nodered_unauthorized``, ...), else ``tool_failed``.
        """
        if name in LOCAL_TOOLS:
            return await LOCAL_TOOLS[name].run(context, **params)
        if not self.has(name):
            raise ToolFailure("unknown_tool", params={"tool": name, "tools": ", ".join(self.names())})
        return await self.mcp.call(name, params, context.user_token)


# HTTP status of a tool failure outside a stream (execute-tool); anything else is an upstream fault (502).
# A 4xx means the user must change something: the request, a selection, a permission or a Node-RED setting.
FAILURE_STATUS = {
    "unknown_tool": 404, "flow_not_found": 404, "node_not_found": 404, "module_not_found": 404,
    "template_not_found": 404, "invalid_params": 400, "flow_not_selected": 400, "node_not_selected": 400,
    "flow_too_large": 413,
    "nodered_unauthorized": 403, "nodered_login_failed": 403, "diagnostics_disabled": 403,
    "nodered_timeout": 504, "memory_unavailable": 503,
}


def failure_status(code: str) -> int:
    return FAILURE_STATUS.get(code, 502)
