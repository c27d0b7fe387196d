"""Flow → compact text for a model: every node id, type, name and wire kept; layout dropped; code kept.

One line per node::

    [a1] inject: "every 5 s" repeat=5 payloadType=date → a2
    [a3] switch: "range" property=payload rules=[{"t":"gt","v":"30"}] outputs=2 → [1] a4 [2] a5,a6
        func:
        | const t = Number(msg.payload);

The type ends at the first colon followed by a space (types such as ``mqtt in`` hold spaces, ``subflow:<id>``
holds a colon). Single-output wires read ``→ id,id``; several outputs read ``→ [1] ids [2] ids`` with ``-`` for an unwired
output. Config nodes a node references appear as ``broker=@b1`` and are listed under "Config nodes". Secrets are
redacted before anything is formatted (:func:`service.flows.strip_secrets`). Properties still at their core
default (:mod:`service.node_defaults`) are left out.
"""

from __future__ import annotations

import json
from typing import Any

from .flows import LAYOUT_KEYS, FlowSlice, strip_secrets
from .node_defaults import default_differs, is_default

# Properties holding code or templates: kept whole (up to CODE_LIMIT), shown as an indented block.
CODE_KEYS = ("func", "initialize", "finalize", "template", "sql", "query", "syntax_code")
CODE_LIMIT = 6000
VALUE_LIMIT = 300


def compact_flow(flow: FlowSlice, config_ids: set[str] | None = None) -> str:
    """Format a :class:`FlowSlice` (tab, nodes, configs, subflows) as compact text; see the module docstring."""
    config_ids = config_ids if config_ids is not None else _all_config_ids(flow)
    tab = flow.tab
    kind = "Subflow" if tab.get("type") == "subflow" else "Tab"
    title = tab.get("label") or tab.get("name") or ""
    head = f'{kind} "{title}" [{tab["id"]}]: {len(flow.nodes)} nodes'
    if tab.get("disabled"):
        head += ", disabled"
    lines = [head]
    if tab.get("info"):
        lines.append(f"info: {_inline(str(tab['info']), VALUE_LIMIT)}")
    if tab.get("type") == "subflow":
        lines.append(f"in: {_wire_targets(tab.get('in'))}  out: {_wire_targets(tab.get('out'))}")
    lines.append("Nodes:")
    lines.extend(line for node in flow.nodes for line in compact_node(node, config_ids))
    if flow.configs:
        lines.append("Config nodes:")
        lines.extend(line for node in flow.configs for line in compact_node(node, config_ids))
    for sub in flow.subflows:
        lines.append("")
        lines.append(compact_flow(sub, config_ids))
    return "\n".join(lines)


def compact_nodes(nodes: list[dict[str, Any]], config_ids: set[str] | None = None) -> str:
    """Format loose nodes (a selection) one per line, same notation as :func:`compact_flow`."""
    config_ids = config_ids or set()
    return "\n".join(line for node in nodes for line in compact_node(node, config_ids))


def compact_node(node: dict[str, Any], config_ids: set[str]) -> list[str]:
    """The line (plus code blocks) for one node."""
    node = strip_secrets(node)
    parts = [f"[{node.get('id')}] {node.get('type')}:"]
    if node.get("name"):
        parts.append(json.dumps(_inline(str(node["name"]), VALUE_LIMIT), ensure_ascii=False))
    if node.get("d"):
        parts.append("(disabled)")
    if node.get("g"):
        parts.append(f"group=@{node['g']}")
    blocks: list[str] = []
    for key, value in node.items():
        if key in LAYOUT_KEYS or key == "d" or is_default(node.get("type", ""), key, value):
            continue
        # An empty or false value is noise, unless the type's default is something else (autoConnect=false).
        if _empty(value) and not default_differs(node.get("type", ""), key, value):
            continue
        if key in CODE_KEYS and isinstance(value, str) and ("\n" in value or len(value) > 60):
            blocks.append(f"    {key}:")
            blocks.extend(f"    | {line}" for line in _shorten(value, CODE_LIMIT).splitlines())
            continue
        parts.append(f"{key}={_value(value, config_ids)}")
    wires = node.get("wires")
    if isinstance(wires, list) and wires:
        parts.append("→ " + _wires(wires))
    return [" ".join(parts)] + blocks


def _wires(wires: list[list[str]]) -> str:
    if len(wires) == 1:
        return ",".join(wires[0]) if wires[0] else "-"
    return " ".join(f"[{port}] {','.join(targets) if targets else '-'}" for port, targets in enumerate(wires, 1))


def _wire_targets(ports: Any) -> str:
    if not isinstance(ports, list) or not ports:
        return "-"
    return " ".join(",".join(w.get("id", "?") for w in port.get("wires", [])) or "-" for port in ports)


def _value(value: Any, config_ids: set[str]) -> str:
    if isinstance(value, str):
        if value in config_ids:
            return f"@{value}"
        if value and not any(ch.isspace() for ch in value) and '"' not in value:
            return _inline(value, VALUE_LIMIT)
        return json.dumps(_inline(value, VALUE_LIMIT), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return _inline(json.dumps(value, ensure_ascii=False, separators=(",", ":")), VALUE_LIMIT)


def _empty(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _inline(text: str, limit: int) -> str:
    # "→" introduces the wires; in names and values it is written "->" so a line has one arrow at most.
    return _shorten(text.replace("→", "->"), limit)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def _all_config_ids(flow: FlowSlice) -> set[str]:
    ids = {node["id"] for node in flow.configs}
    for sub in flow.subflows:
        ids |= _all_config_ids(sub)
    return ids


def bounded(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters at a line end, with a note of what was left out."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > limit // 2 else limit
    return f"{text[:cut]}\n… ({len(text) - cut} more characters not shown)"
