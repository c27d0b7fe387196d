"""Built-in tools over the Node-RED Admin API: ``get-flow`` and ``get-node-info``.

Each tool is a plain async function of a :class:`ToolContext` and typed arguments, returning a
:class:`ToolOutput` (structured data for programs, compact text for a model). The MCP server wraps the same
functions, so both give the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .compact import compact_flow, compact_nodes
from .flows import FlowNotFound, FlowSlice, diff_nodes, find_nodes, module_index, slice_flow, strip_secrets
from .identity import ANONYMOUS, Identity
from .messages import CodedError
from .nodered import NodeRedClient, NodeRedError

if TYPE_CHECKING:
    from .memory import MemoryStore


class ToolFailure(CodedError):
    """A tool could not answer; ``code`` is a design error code, ``message`` tells the user what to do next
    (worded from ``locales/<lang>/errors.json`` when no free ``message`` is given, see :class:`CodedError`)."""


@dataclass
class ToolContext:
    """What a tool may use: the Admin API client (with the editor user's rights), the request's selection, and the
    editor user's own token (passed on to MCP tools, which must not read with more rights either)."""

    nodered: NodeRedClient
    flow_id: str | None = None
    node_ids: list[str] = field(default_factory=list)
    user_token: str | None = field(default=None, repr=False)
    identity: Identity = ANONYMOUS
    memory: MemoryStore | None = None
    flow_data: list[dict[str, Any]] | None = field(default=None, repr=False)


@dataclass
class ToolOutput:
    """``data``: JSON-able structured result; ``text``: the compact form sent to a model."""

    data: dict[str, Any]
    text: str


async def _flows(ctx: ToolContext) -> list[dict[str, Any]]:
    try:
        return (await ctx.nodered.get_flows())["flows"]
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None


async def get_flow(ctx: ToolContext, flow_id: str | None = None) -> ToolOutput:
    """One tab (or subflow) with its nodes, the config nodes they use and the subflow definitions they instantiate.

    ``flow_id`` defaults to the request's selected flow. Raises :class:`ToolFailure` ``flow_not_selected``,
    ``flow_not_found`` or a Node-RED error code (``nodered_unreachable``, ``nodered_unauthorized``, ...).
    """
    flow_id = flow_id or ctx.flow_id
    if not flow_id:
        raise ToolFailure("flow_not_selected")
    editor = _editor_version(ctx.flow_data, flow_id)
    try:
        flows = await _flows(ctx)
    except ToolFailure:
        if editor is None:
            raise
        flows = None  # the editor's copy still answers; the deployed one is unknown
    try:
        flow = editor or slice_flow(flows, flow_id)
    except FlowNotFound as err:
        known = ", ".join(f'"{t["label"]}" ({t["id"]})' for t in err.known[:20]) or "none"
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": known}) from None
    note, changes = "", None
    if editor is not None:
        note, changes = _compare_with_deployed(editor, flows, flow_id)
    data = {
        "id": flow.tab["id"],
        "type": flow.tab.get("type"),
        "label": flow.tab.get("label") or flow.tab.get("name"),
        "disabled": bool(flow.tab.get("disabled")),
        "info": flow.tab.get("info", ""),
        "nodes": [strip_secrets(n) for n in flow.nodes],
        "configs": [strip_secrets(n) for n in flow.configs],
        "subflows": [{"id": s.tab["id"], "name": s.tab.get("name"), "nodes": [strip_secrets(n) for n in s.nodes]}
                     for s in flow.subflows],
        "source": "editor" if editor is not None else "deployed",
    }
    if changes is not None:
        data["undeployedChanges"] = changes
    text = compact_flow(flow)
    return ToolOutput(data=data, text=f"{note}\n{text}" if note else text)


def _editor_version(flow_data: list[dict[str, Any]] | None, flow_id: str) -> FlowSlice | None:
    """The tab as the editor has it (sent as ``flowData``), when the request carries that tab."""
    if not flow_data:
        return None
    try:
        return slice_flow(flow_data, flow_id)
    except FlowNotFound:
        return None


def _compare_with_deployed(editor: FlowSlice, flows: list[dict[str, Any]] | None,
                           flow_id: str) -> tuple[str, dict[str, list[str]] | None]:
    """A sentence for the model on how the editor's version differs from the deployed one, and the diff."""
    if flows is None:
        return ("This is the editor's version of the tab; the deployed version could not be read, so undeployed "
                "changes are unknown."), None
    try:
        deployed = slice_flow(flows, flow_id)
    except FlowNotFound:
        return "This tab exists only in the editor: it has not been deployed yet.", {
            "added": editor.node_ids, "removed": [], "changed": []}
    changes = diff_nodes(editor.nodes + editor.configs, deployed.nodes + deployed.configs)
    if not any(changes.values()):
        return "", changes
    parts = [f"{len(ids)} {kind} ({', '.join(ids[:10])})" for kind, ids in changes.items() if ids]
    return ("This is the editor's version of the tab, with changes not deployed yet: " + "; ".join(parts) +
            ". Say so when it matters: the running flow still behaves as deployed."), changes


async def get_node_info(ctx: ToolContext, node_ids: list[str] | None = None) -> ToolOutput:
    """Nodes by id: their properties minus credentials, plus the module and version of their type.

    ``node_ids`` defaults to the request's selected nodes. Raises :class:`ToolFailure` ``node_not_selected``,
    ``node_not_found`` (none of the ids exist) or a Node-RED error code.
    """
    node_ids = list(node_ids or ctx.node_ids)
    if not node_ids:
        raise ToolFailure("node_not_selected")
    flows = await _flows(ctx)
    nodes, missing = find_nodes(flows, node_ids)
    if not nodes:
        raise ToolFailure("node_not_found", params={"node_ids": ", ".join(missing)})
    try:
        index = module_index(await ctx.nodered.get_nodes())
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    described = []
    for node in nodes:
        entry = strip_secrets(node)
        entry["module"] = index.get(node.get("type"), {}).get("module")
        entry["moduleVersion"] = index.get(node.get("type"), {}).get("version")
        described.append(entry)
    config_ids = {n["id"] for n in flows if "x" not in n and n.get("type") not in ("tab", "subflow")}
    lines = [compact_nodes(nodes, config_ids)]
    lines += [f"[{n['id']}] type {n['type']} comes from {n['module']} {n['moduleVersion']}" for n in described
              if n.get("module")]
    if missing:
        lines.append(f"Not found (maybe not deployed): {', '.join(missing)}")
    return ToolOutput(data={"nodes": described, "missing": missing}, text="\n".join(lines))


class GetFlowArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str | None = Field(None, description="id of a tab or subflow; default: the tab open in the editor")


class GetNodeInfoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] | None = Field(None, description="node ids; default: the nodes selected in the editor")


@dataclass(frozen=True)
class BuiltinTool:
    """A tool the service runs itself: ``args`` validates parameters, ``run(ctx, **args)`` answers."""

    name: str
    description: str
    args: type[BaseModel]
    run: Callable[..., Awaitable[ToolOutput]]

    def parse(self, params: Any) -> dict[str, Any]:
        """Validate ``params`` (a dict of named arguments, or a list of positional ones for ``@tools:``).

        Raises:
            ToolFailure: ``invalid_params`` naming the field that is wrong.
        """
        if isinstance(params, list):
            field_names = list(self.args.model_fields)
            list_field = field_names[0] if field_names else None
            annotation = str(self.args.model_fields[list_field].annotation) if list_field else ""
            params = {list_field: params} if "list" in annotation else dict(zip(field_names, params))
        try:
            return self.args.model_validate(params or {}).model_dump()
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "params"
            raise ToolFailure("invalid_params", params={"tool": self.name, "parameter": where,
                                                        "detail": first["msg"]}) from None


BUILTIN_TOOLS: dict[str, BuiltinTool] = {
    tool.name: tool
    for tool in (
        BuiltinTool("get-flow", "Read one Node-RED tab (flow) with its nodes, wiring, config nodes and subflows.",
                    GetFlowArgs, get_flow),
        BuiltinTool("get-node-info", "Read Node-RED nodes by id: properties (no credentials), module and version.",
                    GetNodeInfoArgs, get_node_info),
    )
}
