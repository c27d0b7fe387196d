"""Review part by part (issue 36): the parts of a planned change, derived from its diff alone (so that every write
tool whose planner fills the diff gets them), and the change made of only some of them.

Part ids (stable: they name the nodes, properties and wires of the diff, never a position):

- ``add:<id>``: a node (or tab) added; ``remove:<id>``: a node removed;
- ``prop:<id>:<name>``: a property of an existing node changed (``wires`` is not a property part: its wires are);
- ``wire+:<source>:<port>:<target>``, ``wire-:<source>:<port>:<target>``: a wire added or removed (port from 0).

:func:`select_parts` makes the change of the ticked parts on the flows it was planned on and re-validates it: a
wire whose end is not there is dropped, a removed node takes its wires with it, a new node keeps the new tab it sits
on and the new config nodes it uses, a new config node nobody uses any more is dropped, a link keeps both ends
(a ticked new link node ticks the other end's ``links`` change), and a new subflow comes whole or not at all. When
that changed anything besides the ticked parts, ``adjusted`` says so and the caller shows the card again instead of
applying it.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

# Properties holding references that follow the nodes they name: a reference to a node that is not there is
# dropped, and dropping it is no change of its own.
REFERENCES = ("wires", "links", "nodes", "g")


@dataclass(frozen=True)
class Selection:
    """The change of some parts: ``flows`` the whole new configuration, ``diff`` its diff (the shape of
    :mod:`service.nodered.write_plans`), ``parts`` its part ids, and ``adjusted``: it differs from the ticked
    parts (a part dropped or added by the re-validation; a reference to a node left out is dropped with it, which is
    what leaving it out means)."""

    flows: list[dict[str, Any]]
    diff: dict[str, Any]
    parts: list[str]
    adjusted: bool


def parts_of(diff: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of a diff in the card's order (added nodes, changed properties, wires added, wires removed,
    removed nodes): ``[{"id", "kind": "add"|"remove"|"prop"|"wire+"|"wire-", "node", "property"?, "source"?,
    "port"?, "target"?}]``. ``node`` is the node the part is about (a wire's source)."""
    found: list[dict[str, Any]] = []
    for node in diff.get("added") or []:
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            found.append({"id": f"add:{node['id']}", "kind": "add", "node": node["id"]})
    for entry in diff.get("changed") or []:
        for name in (entry.get("properties") or {}) if isinstance(entry, dict) else ():
            if name != "wires":
                found.append({"id": f"prop:{entry['id']}:{name}", "kind": "prop", "node": entry["id"],
                              "property": name})
    wires = diff.get("wires") or {}
    for side, kind in (("added", "wire+"), ("removed", "wire-")):
        for source, port, target in wires.get(side) or []:
            found.append({"id": f"{kind}:{source}:{port}:{target}", "kind": kind, "node": source, "source": source,
                          "port": port, "target": target})
    for node_id in diff.get("removed") or []:
        found.append({"id": f"remove:{node_id}", "kind": "remove", "node": node_id})
    return found


def part_ids(diff: dict[str, Any]) -> list[str]:
    """The ids of :func:`parts_of`."""
    return [part["id"] for part in parts_of(diff)]


def unknown_parts(diff: dict[str, Any], ticked: Collection[str]) -> list[str]:
    """The ticked ids that are no part of ``diff`` (a request naming them is refused)."""
    known = set(part_ids(diff))
    return [part for part in ticked if part not in known]


def select_parts(flows: list[dict[str, Any]], diff: dict[str, Any], ticked: Collection[str]) -> Selection:
    """The change made of the ``ticked`` parts of ``diff`` (planned on ``flows``, with full new values: a planner's
    diff, or a card's, whose ``before`` values are not read), re-validated as the module says. Untouched nodes are
    the same objects, in their order."""
    before = {node["id"]: node for node in flows}
    added = {node["id"]: node for node in diff.get("added") or [] if isinstance(node, dict)}
    chosen = set(ticked) | _other_ends(added, diff, set(ticked)) | _whole_subflow(added, diff, set(ticked))
    kept = _kept_added(added, diff, chosen)
    removed = {i for i in diff.get("removed") or [] if f"remove:{i}" in chosen and i in before}
    gone = removed | (set(added) - kept)
    props: dict[str, dict[str, Any]] = {}
    for entry in diff.get("changed") or []:
        for name, sides in (entry.get("properties") or {}).items():
            if name != "wires" and f"prop:{entry['id']}:{name}" in chosen and entry["id"] in before:
                props.setdefault(entry["id"], {})[name] = copy.deepcopy(sides.get("after"))
    wires = diff.get("wires") or {}
    plus = {tuple(w) for w in wires.get("added") or [] if f"wire+:{w[0]}:{w[1]}:{w[2]}" in chosen}
    unticked_plus = {tuple(w) for w in wires.get("added") or []} - plus
    minus = {tuple(w) for w in wires.get("removed") or [] if f"wire-:{w[0]}:{w[1]}:{w[2]}" in chosen}
    result: list[dict[str, Any]] = []
    for node in flows:
        if node["id"] in removed:
            continue
        new = node
        if node["id"] in props:
            new = {**node, **props[node["id"]]}
        if any(w[0] == node["id"] for w in plus | minus):
            new = {**new, "wires": _rewired(node.get("wires"), node["id"], plus, minus)}
        result.append(_without(new, gone))
    for node_id, node in added.items():
        if node_id in kept:
            new = copy.deepcopy(node)
            if "wires" in new:
                new["wires"] = _rewired(new["wires"], node_id, set(), unticked_plus)
            result.append(_without(new, gone))
    result = _links_both_ends(result, before)
    subset = diff_of(flows, result)
    parts = part_ids(subset)
    return Selection(result, subset, parts, set(parts) != set(ticked))


def _other_ends(added: dict[str, dict[str, Any]], diff: dict[str, Any], ticked: set[str]) -> set[str]:
    """The ``links`` changes of existing link nodes that ticked new link nodes name: a link keeps both ends."""
    known = set(part_ids(diff))
    return {f"prop:{target}:links" for node_id, node in added.items() if f"add:{node_id}" in ticked
            and node.get("type") in ("link in", "link out") and node.get("mode") != "return"
            for target in _strings(node.get("links")) if f"prop:{target}:links" in known}


def _whole_subflow(added: dict[str, dict[str, Any]], diff: dict[str, Any], ticked: set[str]) -> set[str]:
    """Every part of a change that creates a subflow (create_subflow) once any is ticked: its definition, the
    instance of it, the nodes moved into it and the rewired cut wires stand or fall together (an instance without
    its definition, or a node moved into a subflow nobody added, would be no flow)."""
    known = set(part_ids(diff))
    if any(node.get("type") == "subflow" for node in added.values()) and ticked & known:
        return known
    return set()


def _kept_added(added: dict[str, dict[str, Any]], diff: dict[str, Any], chosen: set[str]) -> set[str]:
    """The new nodes to add: the ticked ones, the new tabs and config nodes they need, without the new config
    nodes the untick left unused."""
    kept = {i for i in added if f"add:{i}" in chosen}
    wanted = set(kept)
    while True:
        needed = {ref for i in wanted for key, value in added[i].items() if key not in ("id", *REFERENCES)
                  for ref in _strings(value)
                  if ref in added and ref not in wanted and (key == "z" or _is_config(added[ref]))}
        if not needed:
            break
        wanted |= needed
    changed_after = [sides.get("after") for entry in diff.get("changed") or []
                     for name, sides in (entry.get("properties") or {}).items()
                     if f"prop:{entry['id']}:{name}" in chosen]
    while True:
        unused = {i for i in wanted if _is_config(added[i]) and _used_by(i, added.values())
                  and not _used_by(i, [added[j] for j in wanted if j != i], changed_after)}
        if not unused:
            return wanted
        wanted -= unused


def _is_config(node: dict[str, Any]) -> bool:
    """A config node: no wires, no place on a tab (the editor's config nodes have neither ``x`` nor ``wires``)."""
    return node.get("type") not in ("tab", "subflow", "group") and "wires" not in node and "x" not in node


def _used_by(node_id: str, nodes: Any, values: Collection[Any] = ()) -> bool:
    return any(node_id in _strings(value) for node in nodes for key, value in node.items()
               if key not in ("id", *REFERENCES)) or any(node_id in _strings(value) for value in values)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                yield item


def _rewired(wires: Any, source: str, plus: set[tuple[Any, ...]], minus: set[tuple[Any, ...]]) -> list[Any]:
    """``wires`` of node ``source`` without the wires in ``minus`` and with those of ``plus`` (appended to their
    port)."""
    ports = [list(port) if isinstance(port, list) else port for port in (wires or [])]
    for _, port, target in sorted(w for w in minus if w[0] == source):
        if port < len(ports) and isinstance(ports[port], list) and target in ports[port]:
            ports[port].remove(target)
    for _, port, target in sorted(w for w in plus if w[0] == source):
        while len(ports) <= port:
            ports.append([])
        if target not in ports[port]:
            ports[port].append(target)
    return ports


def _without(node: dict[str, Any], gone: set[str]) -> dict[str, Any]:
    """``node`` without references (wires, links, group members, its group) to ``gone``; the same object when it
    has none."""
    stripped = without_references(node, gone)
    return node if stripped == node else stripped


def without_references(node: dict[str, Any], gone: Collection[str]) -> dict[str, Any]:
    """``node`` without wires, group membership (``nodes``, ``g``) or link targets (``links``) to ``gone`` (a copy
    when anything goes; ``node`` itself when it has none of those keys)."""
    if not any(key in node for key in ("wires", "nodes", "links", "g")):
        return node
    node = dict(node)
    if isinstance(node.get("wires"), list):
        node["wires"] = [[t for t in port if t not in gone] if isinstance(port, list) else port
                         for port in node["wires"]]
    for key in ("nodes", "links"):
        if isinstance(node.get(key), list):
            node[key] = [v for v in node[key] if v not in gone]
    if node.get("g") in gone:
        del node["g"]
    return node


def _links_both_ends(result: list[dict[str, Any]], before: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A new link node names an existing one only if that one names it back (its ``links`` change was ticked):
    no orphaned link."""
    by_id = {node["id"]: node for node in result}
    other_end = {"link out": "link in", "link in": "link out"}
    fixed = []
    for node in result:
        if node["id"] not in before and node.get("type") in other_end and isinstance(node.get("links"), list) \
                and node.get("mode") != "return":
            links = [i for i in node["links"] if not (i in before and i in by_id
                                                      and by_id[i].get("type") == other_end[node["type"]]
                                                      and node["id"] not in (by_id[i].get("links") or []))]
            if links != node["links"]:
                node = {**node, "links": links}
        fixed.append(node)
    return fixed


def diff_of(flows: list[dict[str, Any]], result: list[dict[str, Any]]) -> dict[str, Any]:
    """The diff from ``flows`` to ``result``. A change of an existing node's references that only drops removed
    nodes is none of its own (the removal says it); ``wires`` of an existing node are listed when they change
    otherwise (the editor applies them as a property; they are no part: the wire parts are)."""
    before = {node["id"]: node for node in flows}
    after = {node["id"]: node for node in result}
    gone = set(before) - set(after)
    changed = []
    for node in result:
        old = before.get(node["id"])
        if old is None or old is node:
            continue
        properties = {name: {"before": old.get(name), "after": node.get(name)}
                      for name in dict.fromkeys([*old, *node])
                      if old.get(name) != node.get(name)
                      and not (name in REFERENCES and without_references(old, gone).get(name) == node.get(name))}
        if properties:
            changed.append({"id": node["id"], "type": old.get("type"), "name": old.get("name"),
                            "properties": properties})
    return {"added": [node for node in result if node["id"] not in before],
            "removed": [node_id for node_id in before if node_id not in after],
            "changed": changed, "wires": _wire_diff(flows, result)}


def _wire_diff(flows: list[dict[str, Any]], result: list[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    def wires(nodes: list[dict[str, Any]]) -> set[tuple[str, int, str]]:
        return {(node["id"], port, target) for node in nodes for port, targets in enumerate(node.get("wires") or [])
                if isinstance(targets, list) for target in targets if isinstance(target, str)}
    old, new = wires(flows), wires(result)
    return {"added": [list(w) for w in sorted(new - old)], "removed": [list(w) for w in sorted(old - new)]}


def renamed(parts: Collection[str], shown: dict[str, Any], planned: dict[str, Any]) -> list[str]:
    """``parts`` of the card's diff ``shown`` named as in ``planned``, the same change planned again: the nodes it
    adds get new random ids each time, matched in order (as :func:`service.nodered.write_tools.same_change`
    compares them)."""
    mapping = {old["id"]: new["id"] for old, new in zip(shown.get("added") or [], planned.get("added") or [],
                                                         strict=False)
               if isinstance(old, dict) and isinstance(new, dict)}

    def rename(part: str) -> str:
        kind, _, rest = part.partition(":")
        if kind == "prop":
            node, _, name = rest.partition(":")
            return f"prop:{mapping.get(node, node)}:{name}"
        if kind in ("wire+", "wire-"):
            source, port, target = rest.rsplit(":", 2) if rest.count(":") >= 2 else (rest, "", "")
            return f"{kind}:{mapping.get(source, source)}:{port}:{mapping.get(target, target)}"
        return f"{kind}:{mapping.get(rest, rest)}"
    return [rename(part) for part in parts]
