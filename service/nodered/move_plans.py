"""Pure planner of ``move_nodes`` (issue 36): move nodes (and whole groups) to another tab.

A wire cannot cross tabs in Node-RED, so each wire between a moved node and one left behind is cut: removed, or,
when asked, replaced by a new ``link out`` → ``link in`` pair (the link out where the wire started, wired from the
same port; the link in next to the node it went to, wired to it; each listing the other, as the editor draws a
link). A moved group takes its members along; a moved node whose group stays leaves the group. In a diff the moved
nodes' ``z`` (and ``g``, ``wires``) are ``changed`` entries, the link pairs ``added`` nodes.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from service.nodered.canvas_plans import REMOVED, change, describe, edited, existing, invalid
from service.nodered.messages import Sentence
from service.nodered.write_plans import Change, Locks, _unlocked, _wires, new_id

# How far from the node a new link node is put, in editor pixels (a node is about 120 wide).
LINK_OFFSET = 140


def _with_members(by_id: dict[str, dict[str, Any]], ids: list[str]) -> list[str]:
    """``ids`` with every member of the groups among them (nested groups too), in the order of first mention."""
    moved = list(dict.fromkeys(ids))
    for node_id in moved:  # grows while it runs: members of members
        for member in by_id[node_id].get("nodes") or [] if by_id[node_id].get("type") == "group" else []:
            if member in by_id and member not in moved:
                moved.append(member)
    return moved


def plan_move_nodes(flows: list[dict[str, Any]], node_ids: list[str], flow_id: str, link_cut_wires: bool = False,
                    locks: Locks | None = MappingProxyType({})) -> Change:
    """Move nodes ``node_ids`` (groups with their members) to tab ``flow_id``; each wire to or from a node left
    behind is removed, or with ``link_cut_wires`` replaced by a link out → link in pair.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (``flow_id`` is no tab; a tab, subflow or config node
            to move; a node already on that tab), ``flow_locked`` (the target tab or a tab a node leaves).
    """
    tool = "move_nodes"
    by_id = {n["id"]: n for n in flows}
    target = existing(by_id, [flow_id])[0]
    if target.get("type") != "tab":
        raise invalid(tool, "flow_id", f"{describe(target)} is not a tab")
    for node in existing(by_id, node_ids):
        if node.get("type") in ("tab", "subflow") or not node.get("z"):
            raise invalid(tool, "node_ids", f"{describe(node)} is not a node on a tab")
        if node.get("z") == flow_id:
            raise invalid(tool, "node_ids", f"{describe(node)} is on that tab already")
    moved = _with_members(by_id, node_ids)
    _unlocked(by_id, [*(by_id[i].get("z") for i in moved), flow_id], locks)
    edits: dict[str, dict[str, Any]] = {i: {"z": flow_id} for i in moved}
    for node_id in moved:
        group = by_id[node_id].get("g")
        if isinstance(group, str) and group in by_id and group not in moved:
            edits[node_id]["g"] = REMOVED
            edits.setdefault(group, {"nodes": list(by_id[group].get("nodes") or [])})
            edits[group]["nodes"] = [i for i in edits[group]["nodes"] if i != node_id]
    cut = sorted((s, p, t) for s, p, t in _wires(flows) if t in by_id and (s in moved) != (t in moved))
    added: list[dict[str, Any]] = []
    for source_id, port, target_id in cut:
        source, sink = by_id[source_id], by_id[target_id]
        wires = edits.setdefault(source_id, {}).setdefault("wires", [list(p) for p in source.get("wires") or []])
        replacement: list[str] = []
        if link_cut_wires:
            out_id, in_id = new_id(), new_id()
            replacement = [out_id]
            added += [
                {"id": out_id, "type": "link out", "z": flow_id if source_id in moved else source.get("z"),
                 "name": "", "mode": "link", "links": [in_id], "x": (source.get("x") or 0) + LINK_OFFSET,
                 "y": source.get("y") or 0, "wires": []},
                {"id": in_id, "type": "link in", "z": flow_id if target_id in moved else sink.get("z"),
                 "name": "", "links": [out_id], "x": max((sink.get("x") or 0) - LINK_OFFSET, 40),
                 "y": sink.get("y") or 0, "wires": [[target_id]]}]
        wires[port] = [t for t in wires[port] if t != target_id] + replacement
    new_flows, changed = edited(flows, edits)
    new_flows += added
    params = {"count": len(moved), "tab": str(target.get("label") or flow_id), "cut": len(cut)}
    key = "change.move_nodes" + ("" if not cut else ".links" if link_cut_wires else ".cut") + \
        (".one" if len(moved) == 1 else "")
    return change(tool, Sentence(key, **params), flows, new_flows, changed,
                  [*(str(by_id[i].get("z")) for i in moved), flow_id], added=added)
