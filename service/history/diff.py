"""What changed between two versions of the flows, per tab and node, values redacted as a model sees flows.

Shape of :func:`flow_diff` (the route's and the ``what_changed`` tool's)::

    {"tabs": [{"id", "type": "tab"|"subflow"|"global", "label", "status": "added"|"removed"|"changed",
               "properties": {name: {"before", "after"}},          # of the tab or subflow itself
               "added": [{"id", "type", "name"}], "removed": [{"id", "type", "name"}],
               "changed": [{"id", "type", "name", "properties": {name: {"before", "after"}}}],
               "moved": [{"id", "type", "name", "before": [x, y], "after": [x, y]}],
               "renamed": [{"id", "type", "before", "after"}],
               "wires": {"added": [[source, port, target]], "removed": [...]}}],
     "counts": {"added", "removed", "changed", "moved", "renamed", "wires"}}

A node whose only change is ``x``/``y`` is *moved*; one whose only change is its ``name`` (possibly moved too) is
*renamed*; every other difference is *changed* with each property before and after (``x``, ``y`` and ``wires``
left out: position is in ``moved``, wiring in ``wires``). A node is listed under the tab it is on after the change
(before, for a removed one); ``global`` holds config nodes without a tab.
"""

from __future__ import annotations

from typing import Any

from service.nodered.card_values import redacted_value
from service.nodered.node_secrets import strip_secrets

POSITION = ("x", "y")
LEFT_OUT = frozenset({"x", "y", "wires", "credentials"})
CONTAINERS = ("tab", "subflow")
GLOBAL = ""


def _by_id(flows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {node["id"]: node for node in flows if isinstance(node, dict) and isinstance(node.get("id"), str)}


def _container(node: dict[str, Any]) -> str:
    if node.get("type") in CONTAINERS:
        return str(node["id"])
    return node["z"] if isinstance(node.get("z"), str) else GLOBAL


def _brief(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": node["id"], "type": node.get("type"), "name": node.get("name") or node.get("label") or ""}


def _properties(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    names = [name for name in dict.fromkeys([*old, *new]) if name not in LEFT_OUT]
    return {name: {"before": old.get(name), "after": new.get(name)} for name in names if old.get(name) != new.get(name)}


def _wires(node: dict[str, Any]) -> set[tuple[str, int, str]]:
    found = set()
    for port, targets in enumerate(node.get("wires") or []):
        for target in targets if isinstance(targets, list) else []:
            if isinstance(target, str):
                found.add((node["id"], port, target))
    return found


def _tab(tabs: dict[str, dict[str, Any]], key: str, before: dict[str, dict[str, Any]],
         after: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if key not in tabs:
        shown = after.get(key) or before.get(key)
        status = "changed" if key == GLOBAL or (key in before and key in after) else \
            "added" if key in after else "removed"
        tabs[key] = {"id": key or None, "type": shown.get("type") if shown else "global",
                     "label": (shown.get("label") or shown.get("name") or "") if shown else "", "status": status,
                     "properties": {}, "added": [], "removed": [], "changed": [], "moved": [], "renamed": [],
                     "wires": {"added": [], "removed": []}}
    return tabs[key]


def raw_diff(before_flows: list[dict[str, Any]], after_flows: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`flow_diff` without redaction (the values as deployed): for the service's own use only."""
    before, after = _by_id(before_flows), _by_id(after_flows)
    tabs: dict[str, dict[str, Any]] = {}
    for node_id, node in after.items():
        old = before.get(node_id)
        if node.get("type") in CONTAINERS:
            entry = _tab(tabs, node_id, before, after)
            if old is not None:
                entry["properties"] = _properties(old, node)
            continue
        entry = _tab(tabs, _container(node), before, after)
        if old is None:
            entry["added"].append(_brief(node))
            continue
        properties = _properties(old, node)
        moved = any(old.get(axis) != node.get(axis) for axis in POSITION)
        if set(properties) == {"name"}:
            entry["renamed"].append({"id": node_id, "type": node.get("type"), "before": old.get("name"),
                                     "after": node.get("name")})
        elif properties:
            entry["changed"].append({**_brief(node), "properties": properties})
        if moved and not properties:
            entry["moved"].append({**_brief(node), "before": [old.get("x"), old.get("y")],
                                   "after": [node.get("x"), node.get("y")]})
    for node_id, old in before.items():
        if node_id not in after:
            entry = _tab(tabs, node_id if old.get("type") in CONTAINERS else _container(old), before, after)
            if old.get("type") not in CONTAINERS:
                entry["removed"].append(_brief(old))
    old_wires = {wire: _container(node) for node in before.values() for wire in _wires(node)}
    new_wires = {wire: _container(node) for node in after.values() for wire in _wires(node)}
    for wire in sorted(set(new_wires) - set(old_wires)):
        _tab(tabs, new_wires[wire], before, after)["wires"]["added"].append(list(wire))
    for wire in sorted(set(old_wires) - set(new_wires)):
        _tab(tabs, old_wires[wire], before, after)["wires"]["removed"].append(list(wire))
    kept = [entry for entry in tabs.values() if entry["status"] != "changed" or entry["properties"] or any(
        entry[kind] for kind in ("added", "removed", "changed", "moved", "renamed"))
        or entry["wires"]["added"] or entry["wires"]["removed"]]
    counts = {kind: sum(len(entry[kind]) for entry in kept) for kind in ("added", "removed", "changed", "moved",
                                                                          "renamed")}
    counts["wires"] = sum(len(entry["wires"]["added"]) + len(entry["wires"]["removed"]) for entry in kept)
    return {"tabs": kept, "counts": counts}


def flow_diff(before_flows: list[dict[str, Any]], after_flows: list[dict[str, Any]]) -> dict[str, Any]:
    """What changed from ``before_flows`` to ``after_flows`` (``GET /flows`` lists), in the module's shape, every
    value (properties before and after, names) redacted as :func:`~service.nodered.node_secrets.strip_secrets` does
    for a model; the ids of both versions are references (a config node id is kept)."""
    diff = raw_diff(before_flows, after_flows)
    references = frozenset(_by_id(before_flows)) | frozenset(_by_id(after_flows))

    def clean(node_type: Any, properties: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {name: {side: redacted_value(node_type, name, value, references) for side, value in sides.items()}
                for name, sides in properties.items()}

    def name(node_type: Any, value: Any) -> Any:
        return redacted_value(node_type, "name", value, references)

    for entry in diff["tabs"]:
        entry["label"] = strip_secrets({"type": entry["type"], "label": entry["label"]}, references)["label"]
        entry["properties"] = clean(entry["type"], entry["properties"])
        for kind in ("added", "removed", "changed", "moved"):
            for node in entry[kind]:
                node["name"] = name(node["type"], node["name"])
        for node in entry["changed"]:
            node["properties"] = clean(node["type"], node["properties"])
        for node in entry["renamed"]:
            node["before"], node["after"] = name(node["type"], node["before"]), name(node["type"], node["after"])
    return diff


def counts(before_flows: list[dict[str, Any]], after_flows: list[dict[str, Any]]) -> dict[str, int]:
    """``{"added", "removed", "changed"}``: flow objects (tabs and nodes) added, removed, or different in any way
    (moves included) from ``before_flows`` to ``after_flows``."""
    before, after = _by_id(before_flows), _by_id(after_flows)
    return {"added": len(after.keys() - before.keys()), "removed": len(before.keys() - after.keys()),
            "changed": sum(1 for key in after.keys() & before.keys() if after[key] != before[key])}
