"""Flow → compact text for a model: structure first (every node's id, type, name, group and wires, always), then
properties and code, shortened only when the text would pass its budget.

One line per node::

    Tab "Sensors" [t1]: 4 nodes, locked
    env: SITE="north field" (str), LIMIT=30 (num), DB_PASS (cred, value hidden)
    Shortened to fit 60,000 characters ("…[+N chars]" marks cut code or text). Read these nodes in full with
    get_node_info: a2                                                    (one line; only when something was cut)
    Nodes:
    [a1] inject: "every 5 s" repeat=5 → a2
    [a2] function: "parse" → [1] a3 [2] -
        func:
        | const t = Number(msg.payload);
        | …[+11591 chars]
    [a3] mqtt out: broker=@b1 topic=temp
    [a4] link call: links=l9 ("store", tab "Storage" [t2]) → a1
    [a5] link out: links=a6 (this tab)
    Config nodes:
    [b1] mqtt-broker: broker=localhost
    Defaults (properties left out above are at these values; any other left out is empty, false or unset):
      mqtt-broker: port=1883 keepalive=60

A property at its core default (:mod:`service.nodered.node_defaults`) is left out of its line and listed once
under "Defaults" when its type has enough nodes for that to be shorter (:func:`_sectioned_types`); otherwise it
stays on the line, and a tab whose defaults would cost more as a section than on their lines has none. Left out
altogether: a default the node does not use given its other properties (an inject's ``onceDelay`` while ``once`` is
off, :func:`~service.nodered.node_defaults.without_effect`) and ``outputs`` when it is the number of ports the wires
show.

The type ends at the first colon followed by a space (types such as ``mqtt in`` hold spaces, ``subflow:<id>``
holds a colon). Single-output wires read ``→ id,id``; several outputs read ``→ [1] ids [2] ids`` with ``-`` for an
unwired output. A property holding the id of a config node reads ``broker=@b1`` and the node is listed under
"Config nodes"; ``links`` names each target with its name and tab. Secrets are redacted before anything is
formatted (:func:`service.nodered.flows.strip_secrets`); a value that is a node id is a reference, never a secret.

Budget: when the text would pass :data:`TEXT_BUDGET` characters, the longest code and values are cut first, all to
one common length (largest first), each cut marked ``…[+N chars]`` in place; when that is not enough, the
properties of the nodes with the most of them are left out (``…`` after the name). A "Shortened" line then names
every node concerned, to be read in full with ``get_node_info``. Structure is never cut: a tab whose structure alone
passes :data:`STRUCTURE_LIMIT` (about 2,500 nodes) raises :class:`FlowTooLarge` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from service.nodered.flows import LAYOUT_KEYS, FlowSlice, strip_secrets
from service.nodered.node_defaults import CORE_DEFAULTS, AnyOf, default_differs, is_default, without_effect
from service.nodered.text_budget import SHORTEST, NodeText, Part, Piece, _fit, _render

TEXT_BUDGET = 60_000       # characters of get_flow / get_node_info text aimed at (code and values shortened to fit)
STRUCTURE_LIMIT = 180_000  # characters the structure alone may take (beyond: FlowTooLarge, never a silent cut)
# The bound of any tool result sent to a model (pipeline, agent): get_flow's text never reaches it.
MODEL_TOOL_LIMIT = STRUCTURE_LIMIT + 2_000
NESTING_LIMIT = 32         # deeper JSON values are written as one piece of text

# Properties holding code or templates: shown as an indented block.
CODE_KEYS = ("func", "initialize", "finalize", "template", "sql", "query", "syntax_code")
DEFAULTS_HEAD = ("Defaults (properties left out above are at these values; any other left out is empty, false or "
                 "unset):\n")


class FlowTooLarge(ValueError):
    """Even one line per node (no properties) is longer than the limit; ``size`` and ``limit`` in characters."""

    def __init__(self, size: int, limit: int, nodes: int):
        super().__init__(f"structure of {nodes} nodes is {size} characters, limit {limit}")
        self.size, self.limit, self.nodes = size, limit, nodes


Clean = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class _Context:
    config_ids: Container[str]
    clean: Clean
    link_targets: dict[str, dict[str, Any] | None] | None
    omitted: dict[str, dict[str, Any]] = field(default_factory=dict)  # type → defaults left out, in order seen
    # The types whose properties at their defaults are left out for the "Defaults" section (None: every type);
    # the others' non-empty defaults are written on their lines (:func:`_sectioned_types`).
    sectioned: Container[str] | None = None
    # The text shows one tab (or subflow) and its subflows: a link to a node of the same one reads "(this tab)". Loose
    # nodes (get_node_info, named nodes) may come from several tabs: their links always name the tab.
    one_flow: bool = False


def _cleaner(references: Container[str]) -> Clean:
    return lambda node: strip_secrets(node, references)


def compact_flow(flow: FlowSlice, config_ids: set[str] | None = None, budget: int = TEXT_BUDGET,
                 limit: int = STRUCTURE_LIMIT, clean: Clean | None = None) -> str:
    """Format a :class:`FlowSlice` (tab, nodes, configs, subflows) as compact text; see the module docstring.

    Args:
        flow: the slice; its ``references`` and ``link_targets`` are used.
        config_ids: ids written as ``@id`` references (default: the slice's config nodes).
        budget: characters aimed at; code and values are shortened to fit, then properties left out.
        limit: characters the structure alone may take.
        clean: how a node is made safe to show (default :func:`~service.nodered.flows.strip_secrets` with the slice's
            references); a caller that also needs the cleaned nodes passes a memoising one.

    Raises:
        FlowTooLarge: the structure (one line per node, subflow definitions only named) passes ``limit``.
    """
    config_ids = config_ids if config_ids is not None else _all_config_ids(flow)
    clean = clean or _cleaner(flow.references)
    nodes = len(flow.nodes) + sum(len(s.nodes) for s in flow.subflows)
    # A cheap lower bound of the structure's size first: a hostile tab is refused before any node is formatted.
    floor = _structure_floor(flow, expand=False)
    if floor > limit:
        raise FlowTooLarge(floor, limit, nodes)
    size = floor
    for expand in (True, False) if flow.subflows else (True,):
        if expand and _structure_floor(flow, expand=True) > limit:
            continue
        # Without room for them, subflow definitions (tabs of their own, read by get_flow) are only named.
        context = _Context(config_ids, clean, flow.link_targets,
                           sectioned=_sectioned_types(_shown_nodes(flow, expand)), one_flow=True)
        text, size = _fit(_flow_items(flow, context, expand=expand), budget, limit)
        if text is not None:
            return text
    raise FlowTooLarge(size, limit, nodes)


def _structure_floor(flow: FlowSlice, expand: bool) -> int:
    """Characters the structure takes at least: ``[id] type:`` and the wires of every node shown."""
    def floor(nodes: list[dict[str, Any]]) -> int:
        total = 0
        for node in nodes:
            total += len(str(node.get("id"))) + len(str(node.get("type"))) + 5
            wires = node.get("wires")
            for port in wires if isinstance(wires, list) else ():
                total += sum(len(str(target)) + 1 for target in port) if isinstance(port, list) else 0
        return total
    parts = [flow] + (flow.subflows if expand else [])
    total = sum(floor(part.nodes) + floor(part.configs) for part in parts)
    return total + (0 if expand else sum(60 + len(str(sub.tab.get("id"))) for sub in flow.subflows))


def compact_nodes(nodes: list[dict[str, Any]], config_ids: Container[str] | None = None,
                  references: Container[str] = frozenset(),
                  link_targets: dict[str, dict[str, Any] | None] | None = None, budget: int = TEXT_BUDGET) -> str:
    """Format loose nodes (a selection, ``get_node_info``) one per line, same notation and budget as
    :func:`compact_flow`; the structure of every node is kept whatever its size."""
    context = _Context(config_ids or set(), _cleaner(references), link_targets, sectioned=_sectioned_types(nodes))
    items: list[Part | NodeText | None] = [None, *(_node_text(node, context) for node in nodes)]
    items += _defaults_section(context)
    text, _ = _fit(items, budget, limit=None)
    return (text or "").rstrip("\n")  # without a limit _fit always answers a text


def compact_node(node: dict[str, Any], config_ids: Container[str], references: Container[str] = frozenset(),
                 link_targets: dict[str, dict[str, Any] | None] | None = None) -> list[str]:
    """The line (plus code blocks) for one node, nothing shortened."""
    context = _Context(config_ids, _cleaner(references), link_targets)
    parts = _node_text(node, context).parts(dropped=False)
    return "".join(_render(part, None) for part in parts).rstrip("\n").split("\n")


# --- building the text -------------------------------------------------------------------------------------------

def _flow_items(flow: FlowSlice, context: _Context, expand: bool) -> list[Part | NodeText | None]:
    """The parts of the whole text; ``None`` marks where the "Shortened" line goes."""
    items: list[Part | NodeText | None] = [*_header(flow, flow.tab["id"], context), None]
    items += _members(flow, context)
    for sub in flow.subflows:
        if expand:
            items += ["\n", *_header(sub, sub.tab["id"], context), *_members(sub, context)]
        else:
            tab = sub.tab
            name = json.dumps(_inline(str(tab.get("name") or "")), ensure_ascii=False)
            items.append(f"\nSubflow {name} [{tab['id']}]: {len(sub.nodes)} nodes, not expanded here (read it with "
                         f"get_flow flow_id={tab['id']})\n")
    items += _defaults_section(context)
    return items


def _header(flow: FlowSlice, owner: str, context: _Context) -> list[Part]:
    tab = flow.tab
    subflow = tab.get("type") == "subflow"
    title = _inline(str(tab.get("label") or tab.get("name") or ""))
    head = f'{"Subflow" if subflow else "Tab"} {json.dumps(title, ensure_ascii=False)} [{tab["id"]}]: ' \
           f'{len(flow.nodes)} nodes'
    head += ", disabled" if tab.get("disabled") else ""
    head += ", locked" if tab.get("locked") else ""
    parts: list[Part] = [head + "\n"]
    clean = context.clean(tab)
    if clean.get("info"):
        parts += ["info: ", *_scalar(str(clean["info"]), owner, context), "\n"]
    if subflow:
        parts.append(f"in: {_wire_targets(tab.get('in'))}  out: {_wire_targets(tab.get('out'))}\n")
    if isinstance(clean.get("env"), list) and clean["env"]:
        parts += ["env: ", *_env(clean["env"], owner, context), "\n"]
    return parts


def _members(flow: FlowSlice, context: _Context) -> list[Part | NodeText]:
    items: list[Part | NodeText] = ["Nodes:\n"]
    items += [_node_text(node, context) for node in flow.nodes]
    if flow.configs:
        items.append("Config nodes:\n")
        items += [_node_text(node, context) for node in flow.configs]
    return items


def _node_text(node: dict[str, Any], context: _Context) -> NodeText:
    node = context.clean(node)
    node_id, kind = str(node.get("id")), str(node.get("type"))
    text = NodeText(node_id, [f"[{node_id}] {kind}:"])
    if node.get("name"):
        name = _inline(str(node["name"]))
        text.head.append(" ")
        text.head.append(Piece(node_id, name) if len(name) > SHORTEST else json.dumps(name, ensure_ascii=False))
    if node.get("d"):
        text.head.append(" (disabled)")
    if node.get("g"):
        text.head.append(f" group=@{node['g']}")
    for key, value in node.items():
        if key in LAYOUT_KEYS or key == "d" or (key == "style" and kind == "group") or _implied(node, key):
            continue
        if is_default(kind, key, value) and (context.sectioned is None or kind in context.sectioned):
            context.omitted.setdefault(kind, {})[key] = CORE_DEFAULTS[kind][key]
            continue
        # An empty or false value is noise, unless the type's default is something else (autoConnect=false).
        if _empty(value) and not default_differs(kind, key, value):
            continue
        if isinstance(value, str) and value in context.config_ids:
            text.head.append(f" {key}=@{value}")
        elif key == "links" and isinstance(value, list) and context.link_targets is not None:
            here = node.get("z") if context.one_flow else None
            text.head.append(f" links={_links(value, context.link_targets, here)}")
        elif key == "env" and isinstance(value, list):
            text.detail += [" env=[", *_env(value, node_id, context), "]"]
        elif key in CODE_KEYS and isinstance(value, str) and ("\n" in value or len(value) > 60):
            text.blocks += [f"\n    {key}:\n", Piece(node_id, value, code=True)]
        else:
            text.detail += [f" {key}=", *_value(value, node_id, context)]
    wires = node.get("wires")
    if isinstance(wires, list) and wires:
        text.wires = " → " + _wires(wires)
    return text


def _value(value: Any, owner: str, context: _Context, depth: int = 0) -> list[Part]:
    """A property value; strings inside lists and objects stay JSON, each long one a piece of its own."""
    if isinstance(value, str):
        return _scalar(value, owner, context) if depth == 0 else _json_string(value, owner)
    if isinstance(value, bool) or value is None:
        return [json.dumps(value)]
    if isinstance(value, (int, float)):
        return [str(value) if depth == 0 else json.dumps(value)]
    if depth >= NESTING_LIMIT:
        try:
            return _json_string(json.dumps(value, ensure_ascii=False, separators=(",", ":")), owner)
        except (ValueError, RecursionError):
            return ['"(nested too deep to show)"']
    if isinstance(value, list):
        parts: list[Part] = ["["]
        for index, item in enumerate(value):
            parts += ([","] if index else []) + _value(item, owner, context, depth + 1)
        return parts + ["]"]
    if isinstance(value, dict):
        parts = ["{"]
        for index, (key, item) in enumerate(value.items()):
            parts += [("," if index else "") + json.dumps(str(key), ensure_ascii=False) + ":"]
            parts += _value(item, owner, context, depth + 1)
        return parts + ["}"]
    return _json_string(str(value), owner)


def _scalar(value: str, owner: str, context: _Context) -> list[Part]:
    if value in context.config_ids:
        return [f"@{value}"]
    text = _inline(value)
    bare = bool(text) and '"' not in text and not any(ch.isspace() for ch in text)
    if len(text) > SHORTEST:
        return [Piece(owner, text, bare=bare)]
    return [text if bare else json.dumps(text, ensure_ascii=False)]


def _json_string(value: str, owner: str) -> list[Part]:
    text = _inline(value)
    return [Piece(owner, text)] if len(text) > SHORTEST else [json.dumps(text, ensure_ascii=False)]


def _env(entries: list[Any], owner: str, context: _Context) -> list[Part]:
    """Node-RED env entries (``{name, type, value}``; tab, subflow definition or instance) as
    ``NAME=value (type)``; a ``cred`` entry shows its name only."""
    parts: list[Part] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        parts.append(", " if parts else "")
        name, kind = str(entry.get("name", "")), str(entry.get("type") or "str")
        if kind == "cred":
            parts.append(f"{name} (cred, value hidden)")
            continue
        value = entry.get("value", "")
        parts += [f"{name}=", *(_scalar(value, owner, context) if isinstance(value, str)
                                else _value(value, owner, context)), f" ({kind})"]
    return parts


def _links(ids: list[Any], targets: dict[str, dict[str, Any] | None], here: Any = None) -> str:
    """``l1 ("name", tab "Flow 2" [t2]),l2 (not found),l3 (this tab)``: each link target or source with where it
    is; ``this tab`` (or ``this subflow``) when that is ``here``, the tab or subflow of the node written."""
    out = []
    for target_id in ids:
        if not isinstance(target_id, str):
            continue
        target = targets.get(target_id)
        if target is None:
            out.append(f"{target_id} (not found)")
            continue
        where = []
        if target.get("name"):
            where.append(json.dumps(_inline(str(target["name"]))[:SHORTEST], ensure_ascii=False))
        flow = target.get("flow")
        if flow and flow["id"] == here:
            where.append(f"this {flow['type']}")
        elif flow:
            where.append(f'{flow["type"]} {json.dumps(_inline(flow["label"])[:SHORTEST], ensure_ascii=False)} '
                         f'[{flow["id"]}]')
        out.append(f"{target_id} ({', '.join(where)})" if where else target_id)
    return ",".join(out) or "-"


def _defaults_section(context: _Context) -> list[Part]:
    if not context.omitted:
        return []
    lines: list[Part] = [DEFAULTS_HEAD]
    for kind, defaults in context.omitted.items():
        values = " ".join(f"{key}={_default_text(value)}" for key, value in defaults.items()
                          if not _empty(_first(value)))
        if values:
            lines.append(f"  {kind}: {values}\n")
    return lines if len(lines) > 1 else []


def _implied(node: dict[str, Any], key: str) -> bool:
    """Whether property ``key`` of ``node`` says nothing its line does not say otherwise: ``outputs`` when it is
    the number of ports its wires show (``→ a`` one, ``→ [1] a [2] -`` two; Node-RED keeps ``wires`` one list per
    output), or a default without effect (:func:`~service.nodered.node_defaults.without_effect`)."""
    if key == "outputs":
        wires = node.get("wires")
        return isinstance(wires, list) and bool(wires) and str(node[key]) == str(len(wires))
    return without_effect(node, key)


def _shown_nodes(flow: FlowSlice, expand: bool) -> Iterator[dict[str, Any]]:
    for part in [flow, *(flow.subflows if expand else ())]:
        yield from part.nodes
        yield from part.configs


def _sectioned_types(nodes: Iterable[dict[str, Any]]) -> set[str]:
    """The node types whose properties at their (non-empty) core defaults are better listed once in the "Defaults"
    section than written on each node's line, by characters: a type's entry there (``  inject: onceDelay=0.1``)
    costs about as much as one node's own ``onceDelay=0.1``, so it pays for a type with several nodes, and the
    section's heading pays only when these savings together pass its length. Empty when no section pays: every
    default is then written where it applies (Node-RED's example tabs: a few nodes of each type)."""
    inline: dict[str, int] = {}
    entries: dict[str, dict[str, int]] = {}
    for node in nodes:
        kind = str(node.get("type"))
        defaults = CORE_DEFAULTS.get(kind)
        if not defaults:
            continue
        for key, default in defaults.items():
            if key not in node or _empty(_first(default)) \
                    or not is_default(kind, key, node[key]) or _implied(node, key):
                continue
            size = len(key) + len(_default_text(default)) + 2  # " key=value"
            inline[kind] = inline.get(kind, 0) + size
            entries.setdefault(kind, {})[key] = size
    gains = {kind: inline[kind] - (len(kind) + 4 + sum(entries[kind].values())) for kind in entries}
    paying = {kind for kind, gain in gains.items() if gain > 0}
    return paying if sum(gains[kind] for kind in paying) > len(DEFAULTS_HEAD) else set()


def _first(default: Any) -> Any:
    """A default as the "Defaults" section writes it: the first of several stored forms (:class:`AnyOf`)."""
    return default[0] if isinstance(default, AnyOf) else default


def _default_text(value: Any) -> str:
    value = _first(value)
    if isinstance(value, str):
        return value if value and not any(ch.isspace() or ch == '"' for ch in value) else json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _wires(wires: list[Any]) -> str:
    def targets(port: Any) -> str:
        return ",".join(str(t) for t in port) if isinstance(port, list) and port else "-"
    if len(wires) == 1:
        return targets(wires[0])
    return " ".join(f"[{port}] {targets(ids)}" for port, ids in enumerate(wires, 1))


def _wire_targets(ports: Any) -> str:
    if not isinstance(ports, list) or not ports:
        return "-"
    return " ".join(",".join(str(w.get("id", "?")) for w in port.get("wires", []) if isinstance(w, dict)) or "-"
                    for port in ports if isinstance(port, dict)) or "-"


def _empty(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _inline(text: str) -> str:
    # "→" introduces the wires; in names and values it is written "->" so a line has one arrow at most.
    return text.replace("→", "->")


def _all_config_ids(flow: FlowSlice) -> set[str]:
    ids = {node["id"] for node in flow.configs}
    for sub in flow.subflows:
        ids |= _all_config_ids(sub)
    return ids


# --- fitting into the budget ---------------------------------------------------------------------------------------


