"""Pure planners of the canvas write tools (issue 36): disable or enable nodes and tabs, rename; and the helper the
group and link planners (:mod:`service.nodered.group_plans`, :mod:`service.nodered.link_plans`) share to set
properties of existing nodes. Each takes the live flows and the tool's arguments and returns a
:class:`~service.nodered.write_plans.Change` in the documented diff shape; no I/O.

Every property a tool sets on an existing node, tab or group is a ``changed`` entry (``{"id", "type", "name",
"properties": {name: {"before", "after"}}}``; ``after`` ``None``: the property is removed, e.g. a node's ``d`` when
it is enabled again, or its ``g`` when it leaves a group); a node a tool creates (a group) is an ``added`` entry.
So a card lists each part and the editor applies each as an edit (``resources/approval/flow-change.js``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from service.nodered.messages import Sentence
from service.nodered.tooling import ToolFailure
from service.nodered.write_plans import Change, Locks, _unlocked, _wire_diff, empty_diff, is_test_tab

# ``after`` of a property a tool removes from a node (Node-RED leaves ``d`` and ``g`` out when unset).
REMOVED = None
CONTAINERS = ("tab", "subflow")
# How many nodes a summary names before "and N more".
NAMED = 10


def invalid(tool: str, parameter: str, detail: str) -> ToolFailure:
    """The tool's ``invalid_params`` failure for ``parameter`` (as the core write tools word it)."""
    return ToolFailure("invalid_params", params={"tool": tool, "parameter": parameter, "detail": detail})


def describe(node: Mapping[str, Any]) -> str:
    """How a summary names a node, tab, group or subflow: its type and name or label (``tab "Area 1"``,
    ``debug "alarms"``), or its type alone; never its id (issue 31)."""
    name = node.get("label") if node.get("type") == "tab" else node.get("name")
    return f'{node.get("type")} "{name}"' if name else str(node.get("type"))


def tab_label(by_id: Mapping[str, Mapping[str, Any]], node: Mapping[str, Any]) -> str:
    """The label (tab) or name (subflow) of the container ``node`` is on; ``?`` when it has none."""
    container = by_id.get(node.get("z") or "")
    if container is None:
        return "?"
    return str(container.get("label") or container.get("name") or container["id"])


def existing(by_id: Mapping[str, dict[str, Any]], ids: Iterable[str]) -> list[dict[str, Any]]:
    """The nodes ``ids`` names, in order, each once.

    Raises:
        ToolFailure: ``node_not_found`` naming the ids that match nothing.
    """
    ids = list(dict.fromkeys(ids))
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ToolFailure("node_not_found", params={"node_ids": ", ".join(missing)})
    return [by_id[i] for i in ids]


def edited(flows: list[dict[str, Any]], edits: Mapping[str, Mapping[str, Any]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``flows`` with ``edits`` (node id → property → new value; :data:`REMOVED` removes it) set, every other node
    the same object in the same place, and the diff's ``changed`` entries (in the order of ``flows``; a property
    already at its value is left out, a node with none left is no entry)."""
    new_flows: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for node in flows:
        properties = edits.get(node["id"])
        if not properties:
            new_flows.append(node)
            continue
        after = copy.deepcopy(node)
        sides: dict[str, dict[str, Any]] = {}
        for name, value in properties.items():
            if node.get(name) == value:
                continue
            sides[name] = {"before": copy.deepcopy(node.get(name)), "after": copy.deepcopy(value)}
            if value is REMOVED:
                after.pop(name, None)
            else:
                after[name] = copy.deepcopy(value)
        new_flows.append(after if sides else node)
        if sides:
            changed.append({"id": node["id"], "type": node.get("type"), "name": node.get("name", node.get("label")),
                            "properties": sides})
    return new_flows, changed


def containers_of(nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tabs and subflows ``nodes`` are (a tab or subflow: itself), for the lock check."""
    return [str(n["id"]) if n.get("type") in CONTAINERS else str(n.get("z")) for n in nodes if
            n.get("type") in CONTAINERS or n.get("z")]


def on_test_tabs(by_id: Mapping[str, Mapping[str, Any]], container_ids: Iterable[str]) -> bool:
    """Whether every container named is a test tab (the ``never_on_test_tabs`` approval policy)."""
    ids = list(container_ids)
    return bool(ids) and all(is_test_tab(dict(by_id[i]) if i in by_id else None) for i in ids)


def change(tool: str, sentence: Sentence, flows: list[dict[str, Any]], new_flows: list[dict[str, Any]],
           changed: list[dict[str, Any]], containers: Iterable[str], added: list[dict[str, Any]] | None = None,
           removed: list[str] | None = None) -> Change:
    """The :class:`Change` of a canvas tool: its diff (``added``, ``removed``, ``changed``, the wires added and
    removed between ``flows`` and ``new_flows``) and the whole new configuration."""
    by_id = {n["id"]: n for n in flows}
    diff = empty_diff()
    diff["added"] = added or []
    diff["removed"] = removed or []
    diff["changed"] = changed
    diff["wires"] = _wire_diff(flows, new_flows)
    references = frozenset(by_id) | frozenset(n["id"] for n in diff["added"])
    return Change(tool, sentence, diff, flows=new_flows, test_tabs_only=on_test_tabs(by_id, containers),
                  references=references)


def named(nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``nodes`` (and ``more``) placeholders of a summary naming up to :data:`NAMED` nodes."""
    shown = ", ".join(describe(n) for n in nodes[:NAMED])
    return {"nodes": shown, "more": len(nodes) - NAMED} if len(nodes) > NAMED else {"nodes": shown}


def plan_set_disabled(flows: list[dict[str, Any]], ids: list[str], disabled: bool,
                      locks: Locks | None = MappingProxyType({})) -> Change:
    """Disable (``disabled`` true) or enable nodes and tabs: a node's ``d`` (``true``, or left out when enabled, as
    the editor writes it), a tab's ``disabled``. A disabled node or tab does not run after the deploy; its wires
    stay.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (a subflow definition, a group or a junction, which
            cannot be disabled), ``flow_locked`` (a node on a locked tab, or a locked tab).
    """
    tool = "set_disabled"
    by_id = {n["id"]: n for n in flows}
    nodes = existing(by_id, ids)
    for node in nodes:
        if node.get("type") in ("subflow", "group", "junction"):
            raise invalid(tool, "ids", f"{describe(node)} cannot be disabled; disable its nodes or its tab")
    _unlocked(by_id, containers_of(nodes), locks)
    edits = {n["id"]: ({"disabled": disabled} if n.get("type") == "tab" else {"d": True if disabled else REMOVED})
             for n in nodes}
    new_flows, changed = edited(flows, edits)
    key = "change.set_disabled" + ("" if disabled else ".enable") + (".more" if len(nodes) > NAMED else "")
    return change(tool, Sentence(key, **named(nodes)), flows, new_flows, changed, containers_of(nodes))


def plan_rename(flows: list[dict[str, Any]], node_id: str, name: str,
                locks: Locks | None = MappingProxyType({})) -> Change:
    """Rename a node, group or subflow (its ``name``) or a tab (its ``label``); an empty ``name`` removes a node's
    name (the editor then shows its type's label).

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (a tab needs a label), ``flow_locked``.
    """
    tool = "rename"
    by_id = {n["id"]: n for n in flows}
    node = existing(by_id, [node_id])[0]
    _unlocked(by_id, containers_of([node]), locks)
    if node.get("type") == "tab" and not name.strip():
        raise invalid(tool, "name", "a tab needs a label")
    key = "label" if node.get("type") == "tab" else "name"
    new_flows, changed = edited(flows, {node_id: {key: name}})
    return change(tool, Sentence("change.rename", node=describe(node), name=name), flows, new_flows, changed,
                  containers_of([node]))
