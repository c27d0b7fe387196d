"""Pure planners of the group tools (issue 36): create a group around nodes, add or remove its members, ungroup.

A Node-RED group (core since 1.1) is a node ``{"id", "type": "group", "z", "name", "style", "nodes": [member ids],
"x", "y", "w", "h"}`` (``x``/``y`` its top-left corner, ``w``/``h`` its size, in editor pixels) and each member
holds the group's id in ``g``; a group may sit in another group (its own ``g``). Both ends are kept consistent, as
the editor keeps them (``RED.group`` in editor-client). In a diff, a new group is an ``added`` node and every
member's ``g``, a group's ``nodes`` and its bounds are ``changed`` entries (:mod:`service.nodered.canvas_plans`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from service.nodered.canvas_plans import REMOVED, change, describe, edited, existing, invalid, tab_label
from service.nodered.messages import Sentence
from service.nodered.write_plans import Change, Locks, _unlocked, new_id

# The editor's sizes (editor-client view.js): a node is 30 px high and at least 100 px wide, its x/y its centre. A
# group's bounds here are an estimate (20 px around its members, labels ~7 px a character); the editor recomputes
# them from the drawn members when it shows the group.
NODE_HEIGHT = 30
NODE_WIDTH = 120
MARGIN = 20
NOT_MEMBERS = ("tab", "subflow")


def _box(node: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)`` of a node (from its centre and the editor's node size; wider for a long
    label) or a group (its own bounds)."""
    if node.get("type") == "group":
        x, y = float(node.get("x") or 0), float(node.get("y") or 0)
        return x, y, x + float(node.get("w") or 0), y + float(node.get("h") or 0)
    x, y = float(node.get("x") or 0), float(node.get("y") or 0)
    width = max(NODE_WIDTH, 50 + 7 * len(str(node.get("name") or node.get("type") or "")))
    return x - width / 2, y - NODE_HEIGHT / 2, x + width / 2, y + NODE_HEIGHT / 2


def bounds(members: Sequence[Mapping[str, Any]], by_id: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """``{"x", "y", "w", "h"}`` of a group around ``members`` with the editor's margin."""
    boxes = [_box(m, by_id) for m in members] or [(0.0, 0.0, 0.0, 0.0)]
    left, top = min(b[0] for b in boxes) - MARGIN, min(b[1] for b in boxes) - MARGIN
    right, bottom = max(b[2] for b in boxes) + MARGIN, max(b[3] for b in boxes) + MARGIN
    return {"x": round(left), "y": round(top), "w": round(right - left), "h": round(bottom - top)}


def _members(tool: str, by_id: dict[str, dict[str, Any]], ids: list[str], parameter: str) -> list[dict[str, Any]]:
    """The nodes (or groups) to group, all on one tab.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (a tab, subflow or config node; several tabs).
    """
    nodes = existing(by_id, ids)
    for node in nodes:
        if node.get("type") in NOT_MEMBERS or not node.get("z"):
            raise invalid(tool, parameter, f"{describe(node)} is not a node on a tab; only nodes on a tab can be "
                                           "in a group")
    if len({n.get("z") for n in nodes}) > 1:
        raise invalid(tool, parameter, "the nodes are on several tabs; a group is on one tab")
    return nodes


def _refuse_cycle(tool: str, by_id: Mapping[str, Mapping[str, Any]], group_id: str, nodes: list[dict[str, Any]]
                  ) -> None:
    """A group cannot hold itself or a group it is in."""
    outer: str | None = group_id
    ancestors = set()
    while outer:
        ancestors.add(outer)
        outer = (by_id.get(outer) or {}).get("g")
    for node in nodes:
        if node["id"] in ancestors:
            raise invalid(tool, "add", f"{describe(node)} holds the group; a group cannot be in itself")


def plan_create_group(flows: list[dict[str, Any]], node_ids: list[str], name: str = "",
                      style: Mapping[str, Any] | None = None, locks: Locks | None = MappingProxyType({})) -> Change:
    """A new group named ``name`` (``style``: the editor's group style, e.g. ``{"fill": "#ffefbf", "label":
    true}``) around the nodes ``node_ids`` of one tab, inside the group they share (if they all are in one);
    members taken from another group leave it.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params``, ``flow_locked``.
    """
    tool = "create_group"
    by_id = {n["id"]: n for n in flows}
    members = _members(tool, by_id, node_ids, "node_ids")
    tab = str(members[0]["z"])
    _unlocked(by_id, [tab], locks)
    parents = {m.get("g") for m in members}
    parent = parents.pop() if len(parents) == 1 else None
    group: dict[str, Any] = {"id": new_id(), "type": "group", "z": tab, "name": name,
                             "style": {"label": True, **dict(style or {})},
                             "nodes": [m["id"] for m in members], **bounds(members, by_id)}
    if parent:
        group["g"] = parent
    edits: dict[str, dict[str, Any]] = {m["id"]: {"g": group["id"]} for m in members}
    for old in dict.fromkeys(str(m["g"]) for m in members if m.get("g") in by_id):
        kept = [i for i in by_id[old].get("nodes") or [] if i not in edits]
        edits[old] = {"nodes": [*kept, group["id"]] if old == parent else kept}
    new_flows, changed = edited(flows, edits)
    new_flows.append(group)
    sentence = Sentence("change.create_group", count=len(members), name=name, tab=tab_label(by_id, members[0]))
    return change(tool, sentence, flows, new_flows, changed, [tab], added=[group])


def plan_change_group_members(flows: list[dict[str, Any]], group_id: str, add: list[str], remove: list[str],
                              locks: Locks | None = MappingProxyType({})) -> Change:
    """Add nodes of the group's tab to group ``group_id`` (taken out of any other group) and take members out of
    it (into the group around it, if any); its bounds then hold its members.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (not a group, a node of another tab, a removed node
            that is no member, nothing to do), ``flow_locked``.
    """
    tool = "change_group_members"
    by_id = {n["id"]: n for n in flows}
    group = existing(by_id, [group_id])[0]
    if group.get("type") != "group":
        raise invalid(tool, "group_id", f"{describe(group)} is not a group")
    if not add and not remove:
        raise invalid(tool, "add", "name nodes to add or to remove")
    _unlocked(by_id, [group.get("z")], locks)
    adding = _members(tool, by_id, add, "add") if add else []
    if any(n.get("z") != group.get("z") for n in adding):
        raise invalid(tool, "add", "a group holds only nodes of its own tab")
    _refuse_cycle(tool, by_id, group_id, adding)
    members = list(group.get("nodes") or [])
    removing = existing(by_id, remove)
    strangers = [describe(n) for n in removing if n["id"] not in members]
    if strangers:
        raise invalid(tool, "remove", f"not in the group: {', '.join(strangers)}")
    parent = group.get("g")
    edits: dict[str, dict[str, Any]] = {}
    for node in adding:
        if node.get("g") in by_id and node.get("g") != group_id:
            old = node["g"]
            edits.setdefault(old, {"nodes": list(by_id[old].get("nodes") or [])})
            edits[old]["nodes"] = [i for i in edits[old]["nodes"] if i != node["id"]]
        edits[node["id"]] = {"g": group_id}
    for node in removing:
        edits[node["id"]] = {"g": parent or REMOVED}
    if isinstance(parent, str) and parent in by_id and removing:
        edits.setdefault(parent, {"nodes": list(by_id[parent].get("nodes") or [])})
        edits[parent]["nodes"] = [*edits[parent]["nodes"], *(n["id"] for n in removing)]
    gone = {n["id"] for n in removing}
    new_members = [i for i in members if i not in gone] + [n["id"] for n in adding if n["id"] not in members]
    edits[group_id] = {"nodes": new_members, **bounds([by_id[i] for i in new_members if i in by_id], by_id)}
    new_flows, changed = edited(flows, edits)
    sentence = Sentence("change.change_group_members", group=describe(group), added=len(adding),
                        removed=len(removing), tab=tab_label(by_id, group))
    return change(tool, sentence, flows, new_flows, changed, [str(group.get("z"))])


def plan_ungroup(flows: list[dict[str, Any]], group_id: str, locks: Locks | None = MappingProxyType({})) -> Change:
    """Remove group ``group_id``; its members stay where they are, in the group around it if any.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (not a group), ``flow_locked``.
    """
    tool = "ungroup"
    by_id = {n["id"]: n for n in flows}
    group = existing(by_id, [group_id])[0]
    if group.get("type") != "group":
        raise invalid(tool, "group_id", f"{describe(group)} is not a group")
    _unlocked(by_id, [group.get("z")], locks)
    parent = group.get("g")
    members = [i for i in group.get("nodes") or [] if i in by_id]
    edits: dict[str, dict[str, Any]] = {i: {"g": parent or REMOVED} for i in members}
    if isinstance(parent, str) and parent in by_id:
        edits[parent] = {"nodes": [*(i for i in by_id[parent].get("nodes") or [] if i != group_id), *members]}
    new_flows, changed = edited([n for n in flows if n["id"] != group_id], edits)
    sentence = Sentence("change.ungroup", group=describe(group), count=len(members), tab=tab_label(by_id, group))
    return change(tool, sentence, flows, new_flows, changed, [str(group.get("z"))], removed=[group_id])
