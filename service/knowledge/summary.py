"""The synthetic workspace summary (seed 003's "global summary" document): facts about the whole workspace that no
single tab holds, counted exactly, so that "how many function nodes", "which tabs use broker X" and "where is
subflow Y used" are answered from one retrieved text rather than from many tabs.

Pure functions over a :class:`~service.nodered.flows.FlowIndex` and the ``GET /nodes`` JSON answer. Environment
variables appear by name only (a ``cred`` value, or any value, is never written here).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from service.knowledge.index import Chunk
from service.nodered.flows import FlowIndex, is_config, module_index

COUNTS_TITLE = "Workspace summary: how many nodes of each type (count, number)"
_NOT_REFERENCES = frozenset({"id", "z", "g", "wires", "type", "name", "links"})


@dataclass
class WorkspaceFacts:
    """The workspace indexed by role.

    Attributes:
        tabs: tab objects in editor order.
        subflows: subflow definitions.
        configs: config nodes (global or tab-scoped).
        nodes: flow nodes (on a tab or inside a subflow definition), groups and junctions included.
        users: config node id → the nodes (flow or config) that reference it by id.
    """

    index: FlowIndex
    tabs: list[dict[str, Any]]
    subflows: list[dict[str, Any]]
    configs: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    users: dict[str, list[dict[str, Any]]]

    def where(self, node: dict[str, Any]) -> str:
        """``tab "Area 1"``, ``subflow "Scale reading"`` or ``global``."""
        place = self.index.place(node)
        return f'{place["type"]} "{place["label"]}"' if place else "global"


def facts(index: FlowIndex) -> WorkspaceFacts:
    """Sort the workspace's objects by role and find who uses each config node (one pass over every property)."""
    tabs, subflows, configs, nodes = [], [], [], []
    for node in index.by_id.values():
        kind = node.get("type")
        if kind == "tab":
            tabs.append(node)
        elif kind == "subflow":
            subflows.append(node)
        elif is_config(node):
            configs.append(node)
        else:
            nodes.append(node)
    config_ids = {node["id"] for node in configs}
    users: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node in nodes + configs:
        for key, value in node.items():
            if key not in _NOT_REFERENCES and isinstance(value, str) and value in config_ids and value != node["id"]:
                users[value].append(node)
    return WorkspaceFacts(index, tabs, subflows, configs, nodes, dict(users))


def label(node: dict[str, Any]) -> str:
    """``function "scale" (sfA-f)``: type, name when set, id."""
    name = node.get("name") or node.get("label") or ""
    return f'{node.get("type")} "{name}" ({node["id"]})' if name else f'{node.get("type")} ({node["id"]})'


def summary_chunks(workspace: WorkspaceFacts, node_sets: list[dict[str, Any]],
                   counts_titles: Sequence[str] = (), used_titles: Sequence[str] = ()) -> list[Chunk]:
    """The summary, one chunk per section: counts per node type (titled in English and in ``counts_titles``, the
    lexicons' ``countsTitle``), tabs, subflows and config nodes (where used: titled in English and in
    ``used_titles``, the lexicons' ``usedTitle``), modules, env."""
    used = "".join(f" | {title}" for title in used_titles)
    return [_counts(workspace, counts_titles), _tabs(workspace), _subflows(workspace, used),
            _configs(workspace, used), _modules(workspace, node_sets), _env(workspace)]


def _counts(ws: WorkspaceFacts, titles: Sequence[str]) -> Chunk:
    per_type: dict[str, Counter[str]] = defaultdict(Counter)
    for node in ws.nodes:
        per_type[str(node.get("type"))][ws.where(node)] += 1
    lines = [f"{len(ws.nodes)} nodes in total on {len(ws.tabs)} tabs and in {len(ws.subflows)} subflow definitions, "
             f"plus {len(ws.configs)} config nodes.",
             "How many nodes of each type (count per type, then where):"]
    for kind, places in sorted(per_type.items(), key=lambda item: (-sum(item[1].values()), item[0])):
        where = ", ".join(f"{place}: {count}" for place, count in sorted(places.items()))
        lines.append(f"{kind}: {sum(places.values())} nodes ({where})")
    configs = Counter(str(node.get("type")) for node in ws.configs)
    for kind, count in sorted(configs.items()):
        lines.append(f"{kind}: {count} config nodes")
    title = " | ".join(dict.fromkeys([COUNTS_TITLE, *titles]))
    return Chunk("summary#counts", title, "\n".join(lines), {"section": "counts"})


def _tabs(ws: WorkspaceFacts) -> Chunk:
    lines = []
    for tab in ws.tabs:
        members = [n for n in ws.index.by_z.get(tab["id"], []) if not is_config(n)]
        states = [state for state, on in (("disabled", tab.get("disabled")), ("locked", tab.get("locked"))) if on]
        kinds = Counter(str(n.get("type")) for n in members)
        lines.append(f'tab "{tab.get("label", "")}" ({tab["id"]}): {len(members)} nodes'
                     + (f", {', '.join(states)}" if states else "")
                     + "; " + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())))
    disabled = [f'"{t.get("label", "")}"' for t in ws.tabs if t.get("disabled")]
    locked = [f'"{t.get("label", "")}"' for t in ws.tabs if t.get("locked")]
    lines.append(f"disabled tabs: {', '.join(disabled) or 'none'}")
    lines.append(f"locked tabs: {', '.join(locked) or 'none'}")
    return Chunk("summary#tabs", "Workspace summary: tabs (flows), nodes per tab, disabled and locked tabs",
                 "\n".join(lines), {"section": "tabs"})


def _subflows(ws: WorkspaceFacts, used_title: str) -> Chunk:
    instances: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node in ws.nodes:
        kind = node.get("type")
        if isinstance(kind, str) and kind.startswith("subflow:"):
            instances[kind[8:]].append(node)
    lines = []
    for subflow in ws.subflows:
        used = instances.get(subflow["id"], [])
        places = Counter(ws.where(node) for node in used)
        lines.append(f'subflow "{subflow.get("name", "")}" ({subflow["id"]}): {len(used)} instances'
                     + (" in " + ", ".join(f"{place} ({count})" for place, count in sorted(places.items()))
                        if used else "") + (", locked" if subflow.get("locked") else ""))
        lines += [f'  instance {node["id"]} on {ws.where(node)}' for node in used]
    return Chunk("summary#subflows", "Workspace summary: subflows and where their instances are used" + used_title,
                 "\n".join(lines) or "no subflows", {"section": "subflows"})


def _configs(ws: WorkspaceFacts, used_title: str) -> Chunk:
    lines = []
    for config in ws.configs:
        users = ws.users.get(config["id"], [])
        tabs = sorted({ws.where(user) for user in users})
        scope = ws.where(config)
        lines.append(f"{label(config)}, {scope}: used by {len(users)} nodes"
                     + (f" on {', '.join(tabs)}" if users else "") + ": "
                     + ", ".join(label(user) for user in users))
    return Chunk("summary#configs", "Workspace summary: config nodes (brokers, servers, ...) and which tabs and "
                 "nodes use them" + used_title, "\n".join(lines) or "no config nodes", {"section": "configs"})


def _modules(ws: WorkspaceFacts, node_sets: list[dict[str, Any]]) -> Chunk:
    modules = module_index(node_sets)
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for node in ws.nodes + ws.configs:
        kind = str(node.get("type"))
        if kind.startswith("subflow:") or kind in ("group", "junction"):
            continue
        info = modules.get(kind)
        used[f'{info["module"]}@{info["version"]}' if info else "not installed"][kind] += 1
    lines = [f"{module}: " + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
             for module, kinds in sorted(used.items())]
    return Chunk("summary#modules", "Workspace summary: node modules in use, with versions",
                 "\n".join(lines) or "no nodes", {"section": "modules"})


def _env(ws: WorkspaceFacts) -> Chunk:
    lines = []
    for owner in ws.tabs + ws.subflows + [n for n in ws.nodes if str(n.get("type")).startswith("subflow:")]:
        entries = [e for e in owner.get("env") or [] if isinstance(e, dict) and e.get("name")]
        if entries:
            names = ", ".join(f'{e["name"]} ({e.get("type", "str")})' for e in entries)
            where = f'{owner["type"]} "{owner.get("label") or owner.get("name") or ""}" ({owner["id"]})' \
                if owner.get("type") in ("tab", "subflow") else f"{label(owner)} on {ws.where(owner)}"
            lines.append(f"{where}: {names}")
    return Chunk("summary#env", "Workspace summary: environment variable names (values not shown)",
                 "\n".join(lines) or "no environment variables", {"section": "env"})
