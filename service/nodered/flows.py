"""Pure functions over Node-RED flow configurations (the array ``GET /flows`` returns).

Node-RED's flow format (https://nodered.org/docs/user-guide/editor/workspace/import-export): a flat array of
objects. A tab is ``{"type": "tab", "id", "label", "disabled", "info"}``; a node on it carries ``"z": <tab id>``
and ``"wires": [[target ids of output 1], [output 2], ...]``; a config node has no ``x``/``y`` and is referenced
by id from a node property (``"broker": "<id>"``), and may be global (no ``z``) or scoped to a tab; a subflow
definition is ``{"type": "subflow", "id", "name", "in", "out"}`` whose inner nodes have ``"z": <subflow id>``,
and an instance of it is a node of type ``"subflow:<id>"``.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Secret detection lives in its own module; these names stay importable from here.
from service.nodered.node_secrets import strip_secrets  # noqa: F401
from service.nodered.redaction import REDACTED, redact_text  # noqa: F401

# Layout and bookkeeping properties that say nothing about behaviour.
LAYOUT_KEYS = frozenset({"x", "y", "w", "h", "l", "g", "z", "wires", "id", "type", "name", "_users", "inputLabels",
                         "outputLabels", "icon", "color", "changed", "moved", "dirty", "valid", "selected"})


@dataclass
class FlowSlice:
    """One tab (or subflow) with everything needed to understand it.

    Attributes:
        tab: the tab object itself (``type`` ``tab`` or ``subflow``).
        nodes: the nodes whose ``z`` is the tab id, in file order.
        configs: config nodes those nodes reference, transitively (global or tab-scoped).
        subflows: subflow definitions used by ``subflow:<id>`` nodes, each as its own FlowSlice; on the slice
            :func:`slice_flow` returns, every definition used directly or through other subflows, once each (their
            own ``subflows`` are empty).
        references: the id of every node of the whole flow configuration (a property holding one is a reference,
            never a secret: :func:`strip_secrets`).
        link_targets: for each id named in a ``links`` property of a node here (link in/out/call), the node it
            names: ``{"type", "name", "flow": {"id", "type", "label"} | None}``, or ``None`` when no node has it.
    """

    tab: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    subflows: list[FlowSlice] = field(default_factory=list)
    references: frozenset[str] = frozenset()
    link_targets: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def node_ids(self) -> list[str]:
        return [node["id"] for node in self.nodes]


class FlowNotFound(LookupError):
    """No tab or subflow with the id asked for; ``flow_id`` holds it and ``known`` lists the tab ids there are."""

    def __init__(self, flow_id: str, known: list[dict[str, str]]):
        super().__init__(flow_id)
        self.flow_id = flow_id
        self.known = known


@dataclass
class FlowIndex:
    """A flow configuration indexed once, so that slicing and look-ups stay linear in its size.

    Attributes:
        flows: the configuration as given (items that are not objects with a string ``id`` are ignored).
        by_id: every node by id.
        by_z: the nodes of each tab or subflow (by their ``z``), in file order.
    """

    flows: list[dict[str, Any]]
    by_id: dict[str, dict[str, Any]]
    by_z: dict[str, list[dict[str, Any]]]

    @functools.cached_property
    def references(self) -> frozenset[str]:
        """The id of every node."""
        return frozenset(self.by_id)

    def place(self, node: dict[str, Any]) -> dict[str, Any] | None:
        """The tab or subflow ``node`` is on: ``{"id", "type", "label"}``; ``None`` for a global config node, a
        tab or a subflow definition."""
        z = node.get("z")
        owner = self.by_id.get(z) if isinstance(z, str) else None
        if owner is None or owner.get("type") not in ("tab", "subflow"):
            return None
        return {"id": owner["id"], "type": owner["type"], "label": owner.get("label") or owner.get("name") or ""}


def index_flows(flows: list[dict[str, Any]] | FlowIndex) -> FlowIndex:
    """Index a flow configuration by id and by ``z`` in one pass (an index is returned as it is)."""
    if isinstance(flows, FlowIndex):
        return flows
    by_id: dict[str, dict[str, Any]] = {}
    by_z: dict[str, list[dict[str, Any]]] = {}
    for node in flows:
        if not isinstance(node, dict) or not isinstance(node.get("id"), str):
            continue
        by_id[node["id"]] = node
        if isinstance(node.get("z"), str):
            by_z.setdefault(node["z"], []).append(node)
    return FlowIndex(flows=flows, by_id=by_id, by_z=by_z)


def tabs(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tabs of a flow configuration in editor order: ``[{id, label, disabled}]``."""
    return [{"id": n["id"], "label": n.get("label", ""), "disabled": bool(n.get("disabled"))}
            for n in flows if isinstance(n, dict) and n.get("type") == "tab"]


def slice_flow(flows: list[dict[str, Any]] | FlowIndex, flow_id: str) -> FlowSlice:
    """Cut one tab (or subflow definition) out of a full flow configuration.

    Linear in the size of the configuration (it is indexed once; pass a :class:`FlowIndex` to slice several tabs
    of one configuration without indexing it again).

    Args:
        flows: every node, as ``GET /flows`` returns them (``flows`` of the v2 answer), or their index.
        flow_id: id of a tab or subflow.

    Returns:
        A :class:`FlowSlice` with the tab, its nodes, the config nodes they reference (followed through config
        nodes that reference other config nodes), every subflow definition they instantiate (directly or inside
        other subflows) and where the targets of its link nodes are.

    Raises:
        FlowNotFound: no tab or subflow has that id.
    """
    index = index_flows(flows)
    top = _slice(index, flow_id)
    if top is None:
        raise FlowNotFound(flow_id, tabs(index.flows))
    # Breadth-first over subflow instances, iteratively: nesting depth is whatever the flows say.
    seen = {flow_id}
    queue = deque([top])
    while queue:
        current = queue.popleft()
        for node in current.nodes:
            kind = node.get("type")
            sub_id = kind[8:] if isinstance(kind, str) and kind.startswith("subflow:") else None
            if sub_id is None or sub_id in seen:
                continue
            seen.add(sub_id)
            sub = _slice(index, sub_id)
            if sub is not None:
                top.subflows.append(sub)
                queue.append(sub)
    targets = link_targets(index, (node for part in (top, *top.subflows) for node in part.nodes))
    for part in (top, *top.subflows):
        part.references = index.references
        part.link_targets = targets
    return top


def link_targets(index: FlowIndex, nodes: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """For each id in the ``links`` property of ``nodes`` (link in, link out, link call): the node it names as
    ``{"type", "name", "flow": {"id", "type", "label"} | None}``, or ``None`` when the flows have no such node."""
    targets: dict[str, dict[str, Any] | None] = {}
    for node in nodes:
        links = node.get("links")
        for target_id in links if isinstance(links, list) else ():
            if isinstance(target_id, str) and target_id not in targets:
                target = index.by_id.get(target_id)
                targets[target_id] = None if target is None else {
                    "type": target.get("type"), "name": target.get("name") or "", "flow": index.place(target)}
    return targets


LINK_SENDERS = ("link out", "link call")


def incoming(index: FlowIndex, node: dict[str, Any]) -> list[dict[str, Any]]:
    """What is wired into ``node``: each node of its tab or subflow with a wire to it, as
    ``{"id", "type", "name", "port"}`` (``port``: the sender's output, from 0), and across link nodes (Node-RED's
    link in receives what every ``link out``/``link call`` naming it in ``links`` sends; both ends keep ``links``,
    https://nodered.org/docs/user-guide/nodes#link-in): for a ``link in`` its senders, for a node wired from a
    ``link in`` those senders too, each with ``"via"``: the link in's id. In the order the flows hold them.
    A subflow's input port (``in`` of the definition) is ``{"id": <subflow id>, "type": "subflow", "port": 0}``."""
    node_id = node.get("id")
    found: list[dict[str, Any]] = []

    def senders(target_id: str, via: str | None = None) -> None:
        target = index.by_id.get(target_id)
        named = set(target.get("links") or []) if target and target.get("type") == "link in" else set()
        for sender in index.flows:
            if not isinstance(sender, dict) or sender.get("type") not in LINK_SENDERS:
                continue
            links = sender.get("links")
            if (isinstance(links, list) and target_id in links) or (sender.get("id") in named
                                                                     and sender.get("type") == "link out"):
                entry = {"id": sender["id"], "type": sender["type"], "name": sender.get("name") or "", "port": 0}
                found.append({**entry, "via": via} if via else entry)

    z = node.get("z")
    for sender in index.by_z.get(z, []) if isinstance(z, str) else []:
        for port, targets in enumerate(sender.get("wires") or []):
            if isinstance(targets, list) and node_id in targets:
                found.append({"id": sender["id"], "type": sender.get("type"), "name": sender.get("name") or "",
                              "port": port})
                if sender.get("type") == "link in":
                    senders(sender["id"], via=sender["id"])
    owner = index.by_id.get(z) if isinstance(z, str) else None
    if owner is not None and owner.get("type") == "subflow":
        for port in owner.get("in") or []:
            wires = port.get("wires") if isinstance(port, dict) else None
            if any(isinstance(w, dict) and w.get("id") == node_id for w in wires or []):
                found.append({"id": owner["id"], "type": "subflow", "name": owner.get("name") or "", "port": 0})
    if node.get("type") == "link in" and isinstance(node_id, str):
        senders(node_id)
    return found


def _slice(index: FlowIndex, flow_id: str) -> FlowSlice | None:
    tab = index.by_id.get(flow_id)
    if tab is None or tab.get("type") not in ("tab", "subflow"):
        return None
    members = index.by_z.get(flow_id, [])
    nodes = [n for n in members if not is_config(n)]
    return FlowSlice(tab=tab, nodes=nodes, configs=referenced_configs(members, index.by_id))


def is_config(node: dict[str, Any]) -> bool:
    """Config nodes have no position; ordinary nodes have ``x``/``y`` (groups and junctions aside)."""
    return "x" not in node and node.get("type") not in ("group", "junction", "tab", "subflow")


def referenced_configs(nodes: Iterable[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Config nodes referenced by any string property of ``nodes``, followed transitively, in discovery order."""
    found: dict[str, dict] = {}
    queue = deque(nodes)
    while queue:
        node = queue.popleft()
        for key, value in node.items():
            if key in ("id", "z", "wires", "type", "g") or not isinstance(value, str):
                continue
            target = by_id.get(value)
            if target is not None and target["id"] not in found and is_config(target):
                found[target["id"]] = target
                queue.append(target)
    return list(found.values())


def find_nodes(flows: list[dict[str, Any]] | FlowIndex,
               node_ids: Iterable[str]) -> tuple[list[dict], list[str]]:
    """The nodes with the given ids (in the order asked) and the ids that matched nothing."""
    by_id = index_flows(flows).by_id
    found, missing = [], []
    for node_id in node_ids:
        (found.append(by_id[node_id]) if node_id in by_id else missing.append(node_id))
    return found, missing


def module_index(node_sets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Map node type → ``{module, version, enabled}`` from the ``GET /nodes`` answer."""
    index: dict[str, dict[str, Any]] = {}
    for node_set in node_sets:
        for kind in node_set.get("types", []):
            index[kind] = {"module": node_set.get("module"), "version": node_set.get("version"),
                           "enabled": node_set.get("enabled", True)}
    return index


def diff_nodes(editor: list[dict[str, Any]], deployed: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Which node ids the editor's version adds, removes or changes against the deployed one.

    Position and other layout properties are ignored (moving a node is not a change of behaviour); so are
    ``credentials``, which the editor never exports. Returns ``{"added": [...], "removed": [...], "changed": [...]}``.
    """
    ignore = {"x", "y", "w", "h", "l", "credentials", "changed", "moved", "dirty", "valid", "selected", "_users"}

    def behaviour(node: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in node.items() if k not in ignore}

    before = {n["id"]: n for n in deployed}
    after = {n["id"]: n for n in editor}
    return {
        "added": [i for i in after if i not in before],
        "removed": [i for i in before if i not in after],
        "changed": [i for i in after if i in before and behaviour(after[i]) != behaviour(before[i])],
    }
