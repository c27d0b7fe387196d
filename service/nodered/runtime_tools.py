"""The runtime tools of the core: ``get_settings``, ``get_diagnostics``, ``get_flows``, ``list_node_types``
(declared in :mod:`service.nodered.tools`).

Each is a plain async function of a :class:`ToolContext` returning a :class:`ToolOutput` (structured ``data`` and a
``text`` for a model). Every failure is a :class:`ToolFailure` whose message a user understands (Admin API facts:
https://nodered.org/docs/api/admin/).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.client import NodeRedError
from service.nodered.tooling import ToolContext, ToolFailure, ToolOutput


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeTypesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    module: str | None = Field(None, description="only this npm module, e.g. node-red or "
                                                 "node-red-contrib-influxdb; default: all")


class SettingsResult(BaseModel):
    """What ``GET /settings`` shows: the subset of settings.js the editor may see."""

    nodeRedVersion: str = Field(description="Node-RED version of the runtime, e.g. 4.1.2")
    settings: dict[str, Any] = Field(description="the runtime settings exactly as GET /settings answers them")


class DiagnosticsResult(BaseModel):
    """The diagnostics report of ``GET /diagnostics`` (Node-RED 3.0 and later)."""

    nodeRedVersion: str = Field(description="Node-RED version of the runtime")
    report: dict[str, Any] = Field(description="the report: report, scope, time, intl, nodejs, os, runtime, "
                                               "modules, settings")


class FlowSummary(BaseModel):
    id: str
    type: str = Field(description="'tab' or 'subflow'")
    label: str
    disabled: bool
    nodeCount: int = Field(description="nodes placed on this tab or inside this subflow")
    nodeTypes: list[str] = Field(description="distinct node types used, sorted")


class FlowsResult(BaseModel):
    rev: str | None = Field(description="revision of the deployed flows")
    flows: list[FlowSummary]
    globalConfigNodeCount: int = Field(description="config nodes not scoped to a tab (brokers, TLS, ...)")


class NodeType(BaseModel):
    type: str
    module: str = Field(description="npm module that provides the type, e.g. node-red for core nodes")
    version: str | None
    enabled: bool


class NodeTypesResult(BaseModel):
    nodeTypes: list[NodeType]
    modules: dict[str, str | None] = Field(description="installed module name → version")


def failure(err: NodeRedError) -> ToolFailure:
    """A Node-RED error as a tool failure with the same code and sentence; it already names what to check next."""
    return ToolFailure(err.code, **err.sentence_args())


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 module``, ``2 modules``: the count with the English noun in the right number (tool texts are English)."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str)


async def get_settings(ctx: ToolContext) -> ToolOutput:
    """``GET /settings``. Raises :class:`ToolFailure` on any Node-RED error."""
    try:
        settings = await ctx.nodered.get_settings()
    except NodeRedError as err:
        raise failure(err) from None
    result = SettingsResult(nodeRedVersion=str(settings.get("version", "unknown")), settings=settings)
    return ToolOutput(data=result.model_dump(), text=f"Node-RED {result.nodeRedVersion} runtime settings:\n"
                                                      + _json(settings))


async def get_diagnostics(ctx: ToolContext) -> ToolOutput:
    """``GET /diagnostics``.

    Raises:
        ToolFailure: ``diagnostics_disabled`` (diagnostics.enabled is false), ``not_found`` (Node-RED older than
            3.0 has no such endpoint), or another Node-RED error.
    """
    try:
        report = await ctx.nodered.get_diagnostics()
    except NodeRedError as err:
        if err.code == "not_found":
            raise ToolFailure("not_found", key="not_found.diagnostics") from None
        raise failure(err) from None
    version = str((report.get("runtime") or {}).get("version") or "unknown")
    result = DiagnosticsResult(nodeRedVersion=version, report=report)
    return ToolOutput(data=result.model_dump(), text=f"Node-RED {version} diagnostics report:\n" + _json(report))


def summarize_flows(flows: list[dict[str, Any]], rev: str | None) -> FlowsResult:
    """A summary of every tab and subflow of a flow configuration (pure)."""
    containers = [n for n in flows if n.get("type") in ("tab", "subflow")]
    members: dict[str, list[dict[str, Any]]] = {c["id"]: [] for c in containers}
    global_configs = 0
    for node in flows:
        owner = node.get("z")
        if owner in members:
            members[owner].append(node)
        elif not owner and node.get("type") not in ("tab", "subflow", "group"):
            global_configs += 1
    summaries = [
        FlowSummary(id=c["id"], type=c["type"], label=c.get("label") or c.get("name") or "",
                    disabled=bool(c.get("disabled")), nodeCount=len(members[c["id"]]),
                    nodeTypes=sorted({n.get("type", "?") for n in members[c["id"]]}))
        for c in containers
    ]
    return FlowsResult(rev=rev, flows=summaries, globalConfigNodeCount=global_configs)


async def get_flows(ctx: ToolContext) -> ToolOutput:
    """``GET /flows`` summarized per tab and subflow. Raises :class:`ToolFailure` on any Node-RED error."""
    try:
        config = await ctx.nodered.get_flows()
    except NodeRedError as err:
        raise failure(err) from None
    result = summarize_flows(config["flows"], config.get("rev"))
    lines = [f"{counted(len(result.flows), 'tab or subflow', 'tabs and subflows')}, "
             f"{counted(result.globalConfigNodeCount, 'global config node')}:"]
    for flow in result.flows:
        state = " (disabled)" if flow.disabled else ""
        lines.append(f"[{flow.id}] {flow.type} \"{flow.label}\"{state}: {counted(flow.nodeCount, 'node')}; "
                     f"types {', '.join(flow.nodeTypes) or 'none'}")
    return ToolOutput(data=result.model_dump(), text="\n".join(lines))


def node_types(node_sets: list[dict[str, Any]], module: str | None = None) -> NodeTypesResult:
    """Installed node types from ``GET /nodes`` node sets, optionally of one module only (pure)."""
    entries = []
    modules: dict[str, str | None] = {}
    for node_set in node_sets:
        name = node_set.get("module") or "?"
        if module and name != module:
            continue
        modules[name] = node_set.get("version")
        entries += [NodeType(type=t, module=name, version=node_set.get("version"),
                             enabled=bool(node_set.get("enabled", True))) for t in node_set.get("types", [])]
    entries.sort(key=lambda entry: (entry.module, entry.type))
    return NodeTypesResult(nodeTypes=entries, modules=modules)


async def list_node_types(ctx: ToolContext, module: str | None = None) -> ToolOutput:
    """``GET /nodes`` as node types with module and version.

    Raises:
        ToolFailure: a Node-RED error, or ``module_not_found`` when ``module`` is not installed.
    """
    try:
        node_sets = await ctx.nodered.get_nodes()
    except NodeRedError as err:
        raise failure(err) from None
    result = node_types(node_sets, module)
    if module and not result.modules:
        installed = sorted({name for s in node_sets if (name := s.get("module"))})
        raise ToolFailure("module_not_found", params={"module": module, "installed": ", ".join(installed)})
    per_module = Counter(entry.module for entry in result.nodeTypes)
    lines = [f"{counted(len(result.nodeTypes), 'node type')} from {counted(len(result.modules), 'module')}:"]
    for name, version in result.modules.items():
        types = [e.type + ("" if e.enabled else " (disabled)") for e in result.nodeTypes if e.module == name]
        lines.append(f"{name} {version or ''} ({per_module[name]}): {', '.join(types)}")
    return ToolOutput(data=result.model_dump(), text="\n".join(lines))
