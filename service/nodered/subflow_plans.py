"""Pure planners of ``add_subflow_instance`` and ``create_subflow`` (issue 36).

A subflow instance is a node of type ``subflow:<id>`` on a tab, with as many outputs (``wires``) as its definition
has ``out`` ports and optional ``env`` overrides of the definition's properties. ``create_subflow`` does what the
editor's *Selection to Subflow* does (editor-client ``subflow.js``, ``convertToSubflow``): a new ``subflow``
definition holds the selected nodes (their ``z`` is its id, their positions shifted to its top left); its one ``in``
port is wired to the node the cut incoming wires went to; each group of selected ports whose cut wires went to the
same outside nodes becomes one ``out`` port; one instance takes the selection's place on the tab, wired from the
outside sources and to the outside targets. Env properties for values that differ between copies are not derived.
In a diff the definition and the instance are ``added`` nodes, every moved node's ``z``/``x``/``y``/``wires`` and
every outside source's ``wires`` are ``changed`` entries.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from service.nodered.canvas_plans import REMOVED, change, describe, edited, existing, invalid
from service.nodered.messages import Sentence
from service.nodered.move_plans import _with_members
from service.nodered.placement import GRID, place
from service.nodered.write_plans import Change, Locks, _unlocked, _wires, new_id

# Where the selection's top left corner goes inside the new subflow, and how far its ports sit from it (px).
ORIGIN_X, ORIGIN_Y, PORT_GAP = 140, 60, 100
LINK_TYPES = ("link in", "link out", "link call")


def _tab(by_id: dict[str, dict[str, Any]], tool: str, flow_id: str) -> dict[str, Any]:
    tab = existing(by_id, [flow_id])[0]
    if tab.get("type") != "tab":
        raise invalid(tool, "flow_id", f"{describe(tab)} is not a tab")
    return tab


def plan_add_subflow_instance(flows: list[dict[str, Any]], subflow_id: str, flow_id: str, name: str = "",
                              env: list[dict[str, Any]] | None = None, wires: list[list[str]] | None = None,
                              locks: Locks | None = MappingProxyType({})) -> Change:
    """Add one instance of subflow ``subflow_id`` to tab ``flow_id``, named ``name``, with ``env`` (``[{"name",
    "type", "value"}]``) overriding the definition's env properties and ``wires`` (one list of target ids per
    output of the definition, targets on that tab). It is placed beside the nodes it is wired to, on the grid,
    over no other node (:func:`service.nodered.placement.place`).

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (no subflow, no tab, more wire lists than outputs, a
            target not on the tab), ``flow_locked``.
    """
    tool = "add_subflow_instance"
    by_id = {n["id"]: n for n in flows}
    subflow = existing(by_id, [subflow_id])[0]
    if subflow.get("type") != "subflow":
        raise invalid(tool, "subflow_id", f"{describe(subflow)} is not a subflow")
    tab = _tab(by_id, tool, flow_id)
    _unlocked(by_id, [flow_id], locks)
    outputs = len(subflow.get("out") or [])
    wires = [list(dict.fromkeys(port)) for port in wires or []]
    if len(wires) > outputs:
        raise invalid(tool, "wires", f"{describe(subflow)} has {outputs} outputs, not {len(wires)}")
    for target in existing(by_id, [t for port in wires for t in port]):
        if target.get("z") != flow_id or target.get("type") in ("tab", "subflow", "group"):
            raise invalid(tool, "wires", f"{describe(target)} is not a node on that tab")
    node: dict[str, Any] = {"id": new_id(), "type": f"subflow:{subflow_id}", "z": flow_id, "name": name,
                            "env": [dict(e) for e in env or []],
                            "wires": wires + [[] for _ in range(outputs - len(wires))]}
    place([n for n in flows if n.get("z") == flow_id], [node], own_layout=False)
    params = {"subflow": describe(subflow), "tab": str(tab.get("label") or flow_id)}
    return change(tool, Sentence("change.add_subflow_instance", **params), flows, [*flows, node], [], [flow_id],
                  added=[node])


def _selection(by_id: dict[str, dict[str, Any]], node_ids: list[str], tool: str) -> tuple[dict[str, Any], list[str]]:
    """The tab of the selection and its node ids (groups with their members).

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (not all on one tab, a tab, subflow or config node, a
            link node linked outside the selection).
    """
    tabs = set()
    for node in existing(by_id, node_ids):
        if node.get("type") in ("tab", "subflow") or not node.get("z") or by_id.get(node["z"], {}).get("type") != "tab":
            raise invalid(tool, "node_ids", f"{describe(node)} is not a node on a tab")
        tabs.add(node["z"])
    if len(tabs) > 1:
        raise invalid(tool, "node_ids", "the nodes are on more than one tab")
    selected = _with_members(by_id, node_ids)
    for node_id in selected:
        node = by_id[node_id]
        outside = [i for i in node.get("links") or [] if i not in selected] if node.get("type") in LINK_TYPES else []
        if outside:
            raise invalid(tool, "node_ids", f"{describe(node)} is linked to nodes outside the selection")
    return by_id[tabs.pop()], selected


def plan_create_subflow(flows: list[dict[str, Any]], node_ids: list[str], name: str,
                        locks: Locks | None = MappingProxyType({})) -> Change:
    """Turn ``node_ids`` (nodes and groups of one tab) into a new subflow named ``name`` and put one instance of it
    where they were (see the module docstring).

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (see :func:`_selection`; cut incoming wires going to
            more than one node, which one input could not keep apart), ``flow_locked``.
    """
    tool = "create_subflow"
    by_id = {n["id"]: n for n in flows}
    tab, selected = _selection(by_id, node_ids, tool)
    _unlocked(by_id, [tab["id"]], locks)
    inside = set(selected)
    cut = sorted((s, p, t) for s, p, t in _wires(flows) if t in by_id and (s in inside) != (t in inside))
    entries = list(dict.fromkeys(t for s, _, t in cut if t in inside))
    if len(entries) > 1:
        raise invalid(tool, "node_ids", "wires come into the selection at " + ", ".join(
            describe(by_id[i]) for i in entries) + "; a subflow has one input: select so that they reach one node")
    leaving: dict[tuple[str, int], list[str]] = {}
    for source, port, target in cut:
        if source in inside:
            leaving.setdefault((source, port), []).append(target)
    groups: dict[tuple[str, ...], list[tuple[str, int]]] = {}  # outside targets → the ports wired to them
    for key, targets in leaving.items():
        groups.setdefault(tuple(targets), []).append(key)
    placed = [by_id[i] for i in selected if isinstance(by_id[i].get("x"), (int, float))
              and isinstance(by_id[i].get("y"), (int, float))]
    placed_ids = {n["id"] for n in placed}
    left = min((n["x"] for n in placed), default=0)
    top = min((n["y"] for n in placed), default=0)
    right = max((n["x"] for n in placed), default=0)
    bottom = max((n["y"] for n in placed), default=0)
    dx = GRID * round((ORIGIN_X - left) / GRID)
    dy = GRID * round((ORIGIN_Y - top) / GRID)
    subflow_id, instance_id = new_id(), new_id()
    edits: dict[str, dict[str, Any]] = {}
    for node_id in selected:
        node = by_id[node_id]
        edit: dict[str, Any] = {"z": subflow_id}
        if node_id in placed_ids:
            edit.update(x=node["x"] + dx, y=node["y"] + dy)
        group = node.get("g")
        if isinstance(group, str) and group in by_id and group not in inside:
            edit["g"] = REMOVED
            edits.setdefault(group, {"nodes": list(by_id[group].get("nodes") or [])})
            edits[group]["nodes"] = [i for i in edits[group]["nodes"] if i != node_id]
        edits[node_id] = edit
    for source, port, target in cut:
        wires = edits.setdefault(source, {}).setdefault("wires", [list(p) for p in by_id[source].get("wires") or []])
        if source in inside:
            wires[port] = [t for t in wires[port] if t != target]
        else:
            wires[port] = list(dict.fromkeys(instance_id if t == target else t for t in wires[port]))
    subflow: dict[str, Any] = {
        "id": subflow_id, "type": "subflow", "name": name, "info": "", "category": "",
        "in": [{"x": ORIGIN_X - PORT_GAP, "y": by_id[entries[0]].get("y", top) + dy,
                "wires": [{"id": entries[0]}]}] if entries else [],
        "out": [{"x": GRID * round((right + dx + PORT_GAP) / GRID), "y": ORIGIN_Y + 2 * GRID * index,
                 "wires": [{"id": source, "port": port} for source, port in ports]}
                for index, ports in enumerate(groups.values())],
        "env": [], "meta": {}, "color": "#DDAA99"}
    instance = {"id": instance_id, "type": f"subflow:{subflow_id}", "z": tab["id"], "name": "", "env": [],
                "x": GRID * round((left + right) / 2 / GRID), "y": GRID * round((top + bottom) / 2 / GRID),
                "wires": [list(targets) for targets in groups]}
    new_flows, changed = edited(flows, edits)
    added = [subflow, instance]
    params = {"count": len(selected), "tab": str(tab.get("label") or tab["id"]), "name": name,
              "inputs": len(subflow["in"]), "outputs": len(subflow["out"])}
    return change(tool, Sentence("change.create_subflow", **params), flows, [*new_flows, *added], changed,
                  [tab["id"]], added=added)
