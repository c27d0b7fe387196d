"""The ``flow_diagram`` read tool: one tab (or subflow) as a Mermaid flowchart, for clients that render Mermaid.

Each node is a box labelled with its name (or type when unnamed) and its type; wires are arrows (labelled with
the output port when the node has several); groups are subgraphs; link out and link call nodes are joined to
their link in targets by dotted arrows, and a link to or from another tab ends at a rounded box naming that tab.
Config nodes and comments are left out. Node ids become ``n0``, ``n1``, ... (Node-RED ids may hold characters
Mermaid reads as syntax) and labels use Mermaid's entity codes for quotes and angle brackets
(https://mermaid.js.org/syntax/flowchart.html#entity-codes-to-escape-characters).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from service.nodered.flows import FlowNotFound, index_flows, is_config, slice_flow
from service.nodered.tooling import Tool, ToolContext, ToolFailure, ToolOutput

from .resources import read_flows

LEFT_OUT = frozenset({"tab", "subflow", "group", "comment"})
_ENTITIES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "\n": " ", "\r": " ", "`": "#96;"}


class FlowDiagramArgs(BaseModel):
    flow_id: str = Field(description="id of the tab or subflow to draw (get_flows lists them)")


class FlowDiagramResult(BaseModel):
    flowId: str = Field(description="the tab or subflow drawn")
    label: str = Field(description="its label")
    nodeCount: int = Field(description="nodes drawn (config nodes, groups and comments are not)")
    mermaid: str = Field(description="the Mermaid flowchart source")


def escape(text: str) -> str:
    """``text`` safe inside a quoted Mermaid label."""
    return "".join(_ENTITIES.get(char, char) for char in text)


def mermaid_flowchart(flows: list[dict[str, Any]], flow_id: str) -> tuple[str, int]:
    """The Mermaid source for the tab or subflow ``flow_id`` of ``flows`` and the number of nodes drawn.

    Raises:
        FlowNotFound: no tab or subflow has that id.
    """
    index = index_flows(flows)
    slice_flow(index, flow_id)  # raises FlowNotFound naming the tabs there are
    members = [n for n in index.by_z.get(flow_id, []) if n.get("type") not in LEFT_OUT and not is_config(n)]
    names = {node["id"]: f"n{number}" for number, node in enumerate(members)}
    lines = ["flowchart LR"]
    grouped: dict[str, list[str]] = {}
    for node in members:
        kind = str(node.get("type"))
        title = str(node.get("name") or node.get("label") or "")
        label = f"{escape(title)}<br/><i>{escape(kind)}</i>" if title else escape(kind)
        shape = ('(("', '"))') if kind == "junction" else ('["', '"]')
        lines.append(f"  {names[node['id']]}{shape[0]}{label}{shape[1]}")
        if isinstance(node.get("g"), str):
            grouped.setdefault(node["g"], []).append(names[node["id"]])
    for number, (group_id, inside) in enumerate(grouped.items()):
        group = index.by_id.get(group_id) or {}
        lines.append(f'  subgraph g{number}["{escape(str(group.get("name") or "group"))}"]')
        lines.extend(f"    {name}" for name in inside)
        lines.append("  end")
    lines.extend(_wires(members, names))
    lines.extend(_links(members, names, index.by_id, flow_id))
    return "\n".join(lines), len(members)


def _wires(members: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    lines = []
    for node in members:
        wires = node.get("wires")
        ports: list[Any] = wires if isinstance(wires, list) else []
        for port, targets in enumerate(ports):
            for target in targets if isinstance(targets, list) else ():
                if target in names:
                    arrow = f'-->|"{port + 1}"|' if len(ports) > 1 else "-->"
                    lines.append(f"  {names[node['id']]} {arrow} {names[target]}")
    return lines


def _links(members: list[dict[str, Any]], names: dict[str, str], by_id: dict[str, dict[str, Any]],
           flow_id: str) -> list[str]:
    """Dotted arrows for link nodes; a link crossing to another tab ends at a box naming the node and its tab."""
    lines: list[str] = []
    outside: dict[str, str] = {}

    def far(node: dict[str, Any]) -> str:
        if node["id"] not in outside:
            outside[node["id"]] = name = f"x{len(outside)}"
            tab = by_id.get(str(node.get("z"))) or {}
            where = tab.get("label") or tab.get("name") or node.get("z")
            lines.append(f'  {name}(["{escape(str(node.get("type")))} {escape(str(node.get("name") or node["id"]))}'
                         f'<br/>on {escape(str(where))}"])')
        return outside[node["id"]]

    for node in members:
        kind = node.get("type")
        links = [by_id[i] for i in node.get("links") or () if isinstance(i, str) and i in by_id]
        label = '-.->|"call"|' if kind == "link call" else "-.->"
        for other in links:
            if kind in ("link out", "link call"):
                target = names.get(other["id"]) or far(other)
                lines.append(f"  {names[node['id']]} {label} {target}")
            elif kind == "link in" and other.get("z") != flow_id:
                lines.append(f"  {far(other)} -.-> {names[node['id']]}")
    return lines


async def flow_diagram(ctx: ToolContext, flow_id: str) -> ToolOutput:
    """The ``flow_diagram`` tool: ``mermaid_flowchart`` of the deployed flows, read with the caller's rights.

    Raises:
        ToolFailure: ``flow_not_found`` (naming the tabs), or a Node-RED error code.
    """
    flows = await read_flows(ctx.nodered)
    try:
        source, count = mermaid_flowchart(flows, flow_id)
    except FlowNotFound as err:
        known = ", ".join(f'"{t["label"]}" ({t["id"]})' for t in err.known[:20]) or "none"
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": known}) from None
    owner = next(n for n in flows if n.get("id") == flow_id)
    label = str(owner.get("label") or owner.get("name") or flow_id)
    result = FlowDiagramResult(flowId=flow_id, label=label, nodeCount=count, mermaid=source)
    return ToolOutput(data=result.model_dump(), text=f"```mermaid\n{source}\n```")


FLOW_DIAGRAM = Tool(
    name="flow_diagram", title="Flow diagram",
    description="One tab or subflow of the deployed flows as a Mermaid flowchart: nodes labelled by name and type, "
                "wires as arrows (numbered by output port when a node has several), groups as subgraphs, link nodes "
                "joined to their targets by dotted arrows (a target on another tab is a rounded box naming the tab). "
                "For a client that renders Mermaid; get_flow gives the properties.",
    args=FlowDiagramArgs, run=flow_diagram, result=FlowDiagramResult)
