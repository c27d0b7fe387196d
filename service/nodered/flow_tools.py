"""The flow tools of the core: ``get_flow`` and ``get_node_info`` (declared in :mod:`service.nodered.tools`).

Both default to the editor's selection in :class:`ToolContext` and read the editor's copy of a tab (``flowData``)
when the request carries it, so the service and any MCP client get the same answers from the same functions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.client import NodeRedError
from service.nodered.compact import STRUCTURE_LIMIT, TEXT_BUDGET, FlowTooLarge, compact_flow, compact_nodes
from service.nodered.flows import (
    FlowIndex,
    FlowNotFound,
    FlowSlice,
    diff_nodes,
    find_nodes,
    incoming,
    index_flows,
    is_config,
    link_targets,
    module_index,
    slice_flow,
    strip_secrets,
)
from service.nodered.tooling import ToolContext, ToolFailure, ToolOutput


async def _flows(ctx: ToolContext) -> list[dict[str, Any]]:
    try:
        return (await ctx.nodered.get_flows())["flows"]
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None


async def get_flow(ctx: ToolContext, flow_id: str | None = None) -> ToolOutput:
    """One tab (or subflow) with its nodes, the config nodes they use and the subflow definitions they instantiate.

    ``flow_id`` defaults to the request's selected flow. The text keeps every node's structure and fits
    :data:`~service.nodered.compact.TEXT_BUDGET` by shortening code and values (it names the nodes shortened).

    Raises:
        ToolFailure: ``flow_not_selected``, ``flow_not_found``, ``flow_too_large`` (even one line per node passes
            :data:`~service.nodered.compact.STRUCTURE_LIMIT`) or a Node-RED error code (``nodered_unreachable``, ...).
    """
    flow_id = flow_id or ctx.flow_id
    if not flow_id:
        raise ToolFailure("flow_not_selected")
    flows: list[dict[str, Any]] | ToolFailure
    try:
        flows = await _flows(ctx)
    except ToolFailure as failure:
        flows = failure.detached()  # kept in this frame: its traceback would make a cycle through it
    # Slicing and compaction grow with the flows (the editor's flowData may be megabytes): off the event loop.
    return await _off_loop(_flow_output, ctx.flow_data, flows, flow_id)


async def _off_loop(work: Callable[..., ToolOutput], *args: Any) -> ToolOutput:
    """``work(*args)`` in a thread; a property nested deeper than the interpreter's recursion limit (a hostile
    flowData) fails as ``flow_too_large`` instead of an internal error."""
    try:
        return await asyncio.to_thread(work, *args)
    except RecursionError:
        pass  # refused below, outside this handler: a failure that a run keeps would keep the error as its context
    raise ToolFailure("flow_too_large", key="flow_too_large.nested")


def _flow_output(flow_data: list[dict[str, Any]] | None, flows: list[dict[str, Any]] | ToolFailure,
                 flow_id: str) -> ToolOutput:
    """get_flow's answer from the editor's copy (when it has the tab) or the deployed flows (or why they could not
    be read); runs in a thread."""
    editor = _editor_version(flow_data, flow_id)
    deployed: FlowIndex | None
    if isinstance(flows, ToolFailure):
        if editor is None:
            raise flows
        flow, deployed = editor, None
    else:
        deployed = index_flows(flows)
        flow = editor if editor is not None else _deployed_version(deployed, flow_id)
    note, changes = "", None
    if editor is not None:
        note, changes = _compare_with_deployed(editor, deployed, flow_id)
        if deployed is not None:
            _complete_from_deployed(editor, deployed)
    clean = _memo(lambda node: strip_secrets(node, flow.references))
    room = len(note) + 1 if note else 0
    try:
        text = compact_flow(flow, budget=TEXT_BUDGET - room, limit=STRUCTURE_LIMIT - room, clean=clean)
    except FlowTooLarge as err:
        kind = "subflow" if flow.tab.get("type") == "subflow" else "tab"
        label = flow.tab.get("label") or flow.tab.get("name") or ""
        raise ToolFailure("flow_too_large", params={"kind": kind, "label": label, "flow_id": flow_id,
                                                    "nodes": err.nodes, "size": f"{err.size:,}",
                                                    "limit": f"{err.limit:,}"}) from None
    data = {
        "id": flow.tab["id"],
        "type": flow.tab.get("type"),
        "label": flow.tab.get("label") or flow.tab.get("name"),
        "disabled": bool(flow.tab.get("disabled")),
        "locked": bool(flow.tab.get("locked")),
        "info": clean(flow.tab).get("info", ""),
        "env": clean(flow.tab).get("env") or [],
        "nodes": [clean(n) for n in flow.nodes],
        "configs": [clean(n) for n in flow.configs],
        "subflows": [{"id": s.tab["id"], "name": s.tab.get("name"), "locked": bool(s.tab.get("locked")),
                      "env": clean(s.tab).get("env") or [], "nodes": [clean(n) for n in s.nodes]}
                     for s in flow.subflows],
        "source": "editor" if editor is not None else "deployed",
    }
    if changes is not None:
        data["undeployedChanges"] = changes
    return ToolOutput(data=data, text=f"{note}\n{text}" if note else text)


def _memo(clean: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``clean`` computed once per node object (the text and the structured data show the same cleaned nodes)."""
    done: dict[int, dict[str, Any]] = {}

    def cached(node: dict[str, Any]) -> dict[str, Any]:
        key = id(node)
        if key not in done:
            done[key] = clean(node)
        return done[key]
    return cached


def _editor_version(flow_data: list[dict[str, Any]] | None, flow_id: str) -> FlowSlice | None:
    """The tab as the editor has it (sent as ``flowData``), when the request carries that tab."""
    if not flow_data:
        return None
    try:
        return slice_flow(flow_data, flow_id)
    except FlowNotFound:
        return None


def _deployed_version(deployed: FlowIndex, flow_id: str) -> FlowSlice:
    """The deployed tab; raises ToolFailure ``flow_not_found`` naming the known tabs."""
    try:
        return slice_flow(deployed, flow_id)
    except FlowNotFound as err:
        known = ", ".join(f'"{t["label"]}" ({t["id"]})' for t in err.known[:20]) or "none"
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": known}) from None


def _complete_from_deployed(editor: FlowSlice, deployed: FlowIndex) -> None:
    """The editor sends its open tab only: ids and link targets elsewhere in the workspace come from the deployed
    flows (a reference to a node on another tab is still a reference; a link call's target is on another tab)."""
    references = editor.references | deployed.references
    for part in (editor, *editor.subflows):
        part.references = references
    for target_id, target in editor.link_targets.items():
        if target is None and target_id in deployed.by_id:
            editor.link_targets[target_id] = link_targets(deployed, [{"links": [target_id]}])[target_id]


def _compare_with_deployed(editor: FlowSlice, deployed: FlowIndex | None,
                           flow_id: str) -> tuple[str, dict[str, list[str]] | None]:
    """A sentence for the model on how the editor's version differs from the deployed one, and the diff."""
    if deployed is None:
        return ("This is the editor's version of the tab; the deployed version could not be read, so undeployed "
                "changes are unknown."), None
    try:
        deployed_tab = slice_flow(deployed, flow_id)
    except FlowNotFound:
        return "This tab exists only in the editor: it has not been deployed yet.", {
            "added": editor.node_ids, "removed": [], "changed": []}
    changes = diff_nodes(editor.nodes + editor.configs, deployed_tab.nodes + deployed_tab.configs)
    if not any(changes.values()):
        return "", changes
    parts = [f"{len(ids)} {kind} ({', '.join(ids[:10])})" for kind, ids in changes.items() if ids]
    return ("This is the editor's version of the tab, with changes not deployed yet: " + "; ".join(parts) +
            ". Say so when it matters: the running flow still behaves as deployed."), changes


async def get_node_info(ctx: ToolContext, node_ids: list[str] | None = None) -> ToolOutput:
    """Nodes by id: their properties minus credentials, the tab or subflow each is on, and the module and version
    of their type. The text gives their code in full within :data:`~service.nodered.compact.TEXT_BUDGET` (else it names
    what was shortened).

    ``node_ids`` defaults to the request's selected nodes. A node the request's ``flowData`` holds (the editor's
    open tab) is described as the editor has it, undeployed changes included, and the text names the ones that
    differ from the deployed flows (as :func:`get_flow` does for the tab). Raises :class:`ToolFailure`
    ``node_not_selected``, ``node_not_found`` (none of the ids exist) or a Node-RED error code.
    """
    node_ids = list(node_ids or ctx.node_ids)
    if not node_ids:
        raise ToolFailure("node_not_selected")
    deployed = await _flows(ctx)
    index = await asyncio.to_thread(index_flows, with_editor_nodes(deployed, ctx.flow_data))
    nodes, missing = find_nodes(index, node_ids)
    if not nodes:
        raise ToolFailure("node_not_found", params={"node_ids": ", ".join(missing)})
    undeployed = _undeployed(nodes, deployed)
    try:
        modules = module_index(await ctx.nodered.get_nodes())
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    return await _off_loop(_node_info_output, index, nodes, missing, modules, undeployed)


def with_editor_nodes(deployed: list[dict[str, Any]], flow_data: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The deployed flows with the editor's copy of each node it sent (``flowData``) in place of the deployed one,
    and its nodes not deployed yet added."""
    if not flow_data:
        return deployed
    editor = {node["id"]: node for node in flow_data if isinstance(node, dict) and isinstance(node.get("id"), str)}
    merged = [editor.pop(node["id"], node) for node in deployed]
    return merged + list(editor.values())


def _undeployed(nodes: list[dict[str, Any]], deployed: list[dict[str, Any]]) -> list[str]:
    """Ids of ``nodes`` whose behaviour differs from the deployed flows, or that are not deployed."""
    ids = {node["id"] for node in nodes}
    changes = diff_nodes(nodes, [node for node in deployed if node.get("id") in ids])
    return changes["added"] + changes["changed"]


def _node_info_output(index: FlowIndex, nodes: list[dict[str, Any]], missing: list[str],
                      modules: dict[str, dict[str, Any]], undeployed: list[str]) -> ToolOutput:
    """get_node_info's answer; runs in a thread."""
    references = index.references
    described, where = [], []
    for node in nodes:
        entry = strip_secrets(node, references)
        module = modules.get(node.get("type", ""), {})
        entry["module"] = module.get("module")
        entry["moduleVersion"] = module.get("version")
        entry["flow"] = index.place(node)
        entry["incoming"] = incoming(index, node)
        described.append(entry)
        line = f"  {node['id']}: {_where(node, entry['flow'])}"
        if entry["module"]:
            line += f"; type {node.get('type')} from {entry['module']} {entry['moduleVersion']}"
        if entry["incoming"]:
            line += "; wired in from " + ", ".join(_sender(sender) for sender in entry["incoming"])
        where.append(line)
    lines = ["Where they are:", *where]
    if undeployed:
        lines.append(f"As the editor has them, with changes not deployed yet: {', '.join(undeployed)} (the running "
                     "flow still behaves as deployed)")
    if missing:
        lines.append(f"Not found (maybe not deployed): {', '.join(missing)}")
    head = "\n".join(lines)
    config_ids = {node_id for node_id, node in index.by_id.items() if is_config(node)}
    text = compact_nodes(nodes, config_ids, references, link_targets(index, nodes),
                         budget=TEXT_BUDGET - len(head) - 1)
    return ToolOutput(data={"nodes": described, "missing": missing}, text=f"{head}\n{text}")


def _sender(sender: dict[str, Any]) -> str:
    """One entry of :func:`~service.nodered.flows.incoming` as the model reads it: ``function "Scale" [id] output
    1`` (outputs counted from 1, as the editor's port labels), ``via link in [id]`` across a link, ``the input
    of subflow "Scale" [id]`` inside a subflow."""
    name = f' {json.dumps(sender["name"], ensure_ascii=False)}' if sender.get("name") else ""
    if sender.get("type") == "subflow":
        return f'the input of subflow{name} [{sender["id"]}]'
    text = f'{sender.get("type")}{name} [{sender["id"]}] output {sender.get("port", 0) + 1}'
    return f'{text} via link in [{sender["via"]}]' if sender.get("via") else text


def _where(node: dict[str, Any], place: dict[str, Any] | None) -> str:
    if place is not None:
        return f'on {place["type"]} {json.dumps(place["label"], ensure_ascii=False)} [{place["id"]}]'
    if node.get("type") in ("tab", "subflow"):
        return f"a {node['type']} itself"
    return "a global config node" if is_config(node) else "on no tab"


class GetFlowArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str | None = Field(None, max_length=128, description="id of a tab or subflow, as listed by get_flows; "
                                                                  "default: the tab open in the editor")


class GetNodeInfoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] | None = Field(None, max_length=200, description="node ids (from get_flow); default: the "
                                                                         "nodes selected in the editor")


class FlowResult(BaseModel):
    id: str
    type: str | None = Field(description="'tab' or 'subflow'")
    label: str | None
    disabled: bool
    locked: bool = Field(False, description="the tab or subflow is locked against edits in the editor")
    info: str = Field(description="the tab's description (markdown)")
    env: list[dict[str, Any]] = Field(default_factory=list, description="the tab's or subflow's environment "
                                                                        "variables: name, type, value (cred "
                                                                        "values redacted)")
    nodes: list[dict[str, Any]] = Field(description="nodes on the tab, credentials redacted")
    configs: list[dict[str, Any]] = Field(description="config nodes those nodes use")
    subflows: list[dict[str, Any]] = Field(description="definitions of the subflows instantiated on the tab, "
                                                       "directly or inside other subflows: id, name, env, nodes")


class NodeInfoResult(BaseModel):
    nodes: list[dict[str, Any]] = Field(description="each node's properties (credentials redacted), module and "
                                                    "moduleVersion of its type, and flow: the tab or subflow it is "
                                                    "on (id, type, label; null for a global config node), "
                                                    "incoming: what is wired into it (id, type, name, port from 0; "
                                                    "via: the link in it came through)")
    missing: list[str] = Field(description="ids that matched no deployed node")
