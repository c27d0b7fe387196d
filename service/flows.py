"""Pure functions over Node-RED flow configurations (the array ``GET /flows`` returns).

Node-RED's flow format (https://nodered.org/docs/user-guide/editor/workspace/import-export): a flat array of
objects. A tab is ``{"type": "tab", "id", "label", "disabled", "info"}``; a node on it carries ``"z": <tab id>``
and ``"wires": [[target ids of output 1], [output 2], ...]``; a config node has no ``x``/``y`` and is referenced
by id from a node property (``"broker": "<id>"``), and may be global (no ``z``) or scoped to a tab; a subflow
definition is ``{"type": "subflow", "id", "name", "in", "out"}`` whose inner nodes have ``"z": <subflow id>``,
and an instance of it is a node of type ``"subflow:<id>"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

# Secret detection lives in its own module; these names stay importable from here.
from .redaction import REDACTED, redact_text, strip_secrets  # noqa: F401

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
        subflows: subflow definitions used by ``subflow:<id>`` nodes, each as its own FlowSlice.
    """

    tab: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    subflows: list[FlowSlice] = field(default_factory=list)

    @property
    def node_ids(self) -> list[str]:
        return [node["id"] for node in self.nodes]


class FlowNotFound(LookupError):
    """No tab or subflow with the id asked for; ``flow_id`` holds it and ``known`` lists the tab ids there are."""

    def __init__(self, flow_id: str, known: list[dict[str, str]]):
        super().__init__(flow_id)
        self.flow_id = flow_id
        self.known = known


def tabs(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tabs of a flow configuration in editor order: ``[{id, label, disabled}]``."""
    return [{"id": n["id"], "label": n.get("label", ""), "disabled": bool(n.get("disabled"))}
            for n in flows if n.get("type") == "tab"]


def slice_flow(flows: list[dict[str, Any]], flow_id: str) -> FlowSlice:
    """Cut one tab (or subflow definition) out of a full flow configuration.

    Args:
        flows: every node, as ``GET /flows`` returns them (``flows`` of the v2 answer).
        flow_id: id of a tab or subflow.

    Returns:
        A :class:`FlowSlice` with the tab, its nodes, the config nodes they reference (followed through config
        nodes that reference other config nodes) and the subflow definitions they instantiate (recursively).

    Raises:
        FlowNotFound: no tab or subflow has that id.
    """
    by_id = {n["id"]: n for n in flows if isinstance(n, dict) and "id" in n}
    return _slice(flows, by_id, flow_id, seen=set())


def _slice(flows: list[dict], by_id: dict[str, dict], flow_id: str, seen: set[str]) -> FlowSlice:
    tab = by_id.get(flow_id)
    if tab is None or tab.get("type") not in ("tab", "subflow"):
        raise FlowNotFound(flow_id, tabs(flows))
    seen.add(flow_id)
    nodes = [n for n in flows if n.get("z") == flow_id and not _is_config(n, by_id)]
    configs = referenced_configs(nodes + [n for n in flows if n.get("z") == flow_id], by_id)
    result = FlowSlice(tab=tab, nodes=nodes, configs=configs)
    for node in nodes:
        kind = node.get("type", "")
        if kind.startswith("subflow:"):
            sub_id = kind.split(":", 1)[1]
            if sub_id not in seen and sub_id in by_id:
                result.subflows.append(_slice(flows, by_id, sub_id, seen))
    return result


def _is_config(node: dict, by_id: dict) -> bool:
    """Config nodes have no position; ordinary nodes have ``x``/``y`` (groups and junctions aside)."""
    return "x" not in node and node.get("type") not in ("group", "junction", "tab", "subflow")


def referenced_configs(nodes: Iterable[dict[str, Any]], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Config nodes referenced by any string property of ``nodes``, followed transitively, in discovery order."""
    found: dict[str, dict] = {}
    queue = list(nodes)
    while queue:
        node = queue.pop(0)
        for key, value in node.items():
            if key in ("id", "z", "wires", "type", "g") or not isinstance(value, str):
                continue
            target = by_id.get(value)
            if target is not None and target["id"] not in found and _is_config(target, by_id):
                found[target["id"]] = target
                queue.append(target)
    return list(found.values())


def find_nodes(flows: list[dict[str, Any]], node_ids: Iterable[str]) -> tuple[list[dict], list[str]]:
    """The nodes with the given ids (in the order asked) and the ids that matched nothing."""
    by_id = {n["id"]: n for n in flows if isinstance(n, dict) and "id" in n}
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
