"""The pure planners of the core's write tools (:mod:`service.nodered.write_tools`): each takes the live flows and
the tool's arguments and returns a :class:`Change` (summary sentence, diff, the whole new configuration) or raises
the tool's failure; no I/O. Also the editor's locks a change must respect and what makes a tab a test tab.

``diff`` shape: ``{"added": [node, ...], "removed": [id, ...], "changed": [{"id", "type", "name", "properties":
{name: {"before", "after"}}}], "wires": {"added": [[source, port, target]], "removed": [...]}}``.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from service.nodered.card_values import (
    redacted_context,
    redacted_value,
    refuse_masks,
    restore_masked,
    secret_looking_properties,
    secret_looking_value,
)
from service.nodered.change_parts import without_references
from service.nodered.config_nodes import reused_config_nodes
from service.nodered.messages import Sentence
from service.nodered.node_secrets import strip_secrets
from service.nodered.placement import place
from service.nodered.tidy import plan_tidy
from service.nodered.tooling import ToolFailure

TEST_TAB_VARIABLE = "AI_SIDEBAR_TEST_TAB"
PROTECTED_PROPERTIES = frozenset({"id", "type", "z", "credentials"})
MAX_NODES = 500


@dataclass
class Change:
    """One planned write.

    Attributes:
        tool: the write tool that planned it.
        sentence: what it does, as a key of ``locales/<lang>/approvals.json`` and its values; ``summary`` is its
            English text.
        diff: see the module docstring; full nodes, not yet redacted (:meth:`preview` redacts).
        flows: the whole new flow configuration to deploy; ``None`` for an action that changes no flow
            (``trigger_inject``).
        base: the flows it was planned on, when the caller kept them (:func:`service.nodered.write_tools.plan`).
        parts: the part ids it was cut to when a person approved only some (:mod:`service.nodered.change_parts`).
        inject: the inject node to trigger, for ``trigger_inject``.
        context: the context value to set, for ``set_context`` (:mod:`service.nodered.context_plans`; also the
            diff's ``context``).
        new_tab_only: the change only adds a new tab (and nodes wired among themselves on it).
        test_tabs_only: every tab it touches is a test tab.
        notice: a warning of the planner's own for the card (a restore naming the secrets the history did not
            keep); it takes the place of the secret-looking warning.
    """

    tool: str
    sentence: Sentence
    diff: dict[str, Any]
    flows: list[dict[str, Any]] | None = None
    inject: str | None = None
    context: dict[str, Any] | None = None
    new_tab_only: bool = False
    test_tabs_only: bool = False
    references: frozenset[str] = field(default_factory=frozenset, repr=False)
    shown: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    notice: Sentence | None = None
    base: list[dict[str, Any]] | None = field(default=None, repr=False)  # the flows it was planned on
    parts: list[str] | None = None  # the parts it was cut to (change_parts.select_parts); None: whole

    @property
    def summary(self) -> str:
        """One English sentence for a person (and the model)."""
        return self.sentence.english

    def preview(self) -> dict[str, Any]:
        """``{"summary", "sentence", "diff", "warning", "newTabOnly", "testTabsOnly"}``: the diff as a person
        approves it (:mod:`service.nodered.card_values`): every value written shown in full, except the secrets the
        flows held already (``before`` values and, in ``after`` values, the masks the model kept, written as
        deployed); ``warning``: a :class:`Sentence` naming the new values that look like secrets, or ``None``. The
        two flags are what approval policies read; ``sentence`` words the summary in another language."""
        diff = self.diff
        changed = []
        for entry in diff["changed"]:
            shown_after = self.shown.get(entry["id"], {})
            changed.append({**entry, "properties": {
                name: {"before": redacted_value(entry["type"], name, sides.get("before"), self.references),
                       "after": shown_after.get(name, sides.get("after"))}
                for name, sides in entry["properties"].items()}})
        shown = {
            "added": copy.deepcopy(diff["added"]),
            "removed": list(diff["removed"]),
            "changed": changed,
            "wires": {"added": list(diff["wires"]["added"]), "removed": list(diff["wires"]["removed"])},
        }
        if diff.get("context") is not None:  # set_context: its value is shown in full, as every value written
            shown["context"] = copy.deepcopy(diff["context"])
        return {"summary": self.summary, "sentence": self.sentence, "diff": shown, "warning": self._warning(shown),
                "newTabOnly": self.new_tab_only, "testTabsOnly": self.test_tabs_only}

    def _warning(self, shown: dict[str, Any]) -> Sentence | None:
        """:attr:`notice`, or ``change.secret_shown`` naming each node and property whose new value looks like a
        secret."""
        if self.notice is not None:
            return self.notice
        found = [(node, secret_looking_properties(node, self.references)) for node in shown["added"]]
        found += [({"id": entry["id"], "type": entry["type"], "name": entry.get("name")},
                   secret_looking_properties({"type": entry["type"], **{name: sides["after"] for name, sides in
                                                                        entry["properties"].items()}},
                                             self.references, list(entry["properties"])))
                  for entry in shown["changed"]]
        named = [f"{_describe(node)}: {', '.join(names)}" for node, names in found if names]
        context = shown.get("context")
        if context is not None and secret_looking_value(context["key"], context["value"]):
            named.append(f"context {context['key']}")
        return Sentence("change.secret_shown", values="; ".join(named)) if named else None


def redacted_diff(diff: dict[str, Any]) -> dict[str, Any]:
    """A shown diff (:meth:`Change.preview`) with every value redacted as the model sees flows: how a conversation
    keeps an approval card at rest (the ids of the diff's nodes are references)."""
    references = frozenset(node["id"] for node in diff.get("added") or [] if isinstance(node, dict)
                           and isinstance(node.get("id"), str))
    return {**diff, "added": [strip_secrets(node, references) if isinstance(node, dict) else node
                              for node in diff.get("added") or []],
            "changed": [{**entry, "properties": {
                name: {side: redacted_value(entry.get("type"), name, value, references)
                       for side, value in sides.items()}
                for name, sides in (entry.get("properties") or {}).items()}}
                for entry in diff.get("changed") or [] if isinstance(entry, dict)],
            **({"context": redacted_context(diff["context"])} if isinstance(diff.get("context"), dict) else {})}


def empty_diff() -> dict[str, Any]:
    return {"added": [], "removed": [], "changed": [], "wires": {"added": [], "removed": []}}


def new_id() -> str:
    """A node id as the editor makes them (``RED.nodes.id()``: 8 random bytes as 16 hex digits)."""
    return secrets.token_hex(8)


def _label(node: dict[str, Any] | None) -> str:
    if node is None:
        return "?"
    return str(node.get("label") or node.get("name") or node["id"])


def _describe(node: dict[str, Any]) -> str:
    """How a card's summary names a node: its type and name (``debug "alarms"``), or its type alone; never its id,
    which tells a person nothing (issue 31; the card's diff and the tool's data keep the ids)."""
    name = f' "{node["name"]}"' if node.get("name") else ""
    return f'{node.get("type")}{name}'


def is_test_tab(tab: dict[str, Any] | None) -> bool:
    """Whether ``tab`` is marked as a test tab (its env holds :data:`TEST_TAB_VARIABLE` = true)."""
    if tab is None:
        return False
    for entry in tab.get("env") or []:
        if isinstance(entry, dict) and entry.get("name") == TEST_TAB_VARIABLE:
            return entry.get("value") in (True, "true", "True", "1")
    return False


def _wires(nodes: list[dict[str, Any]]) -> set[tuple[str, int, str]]:
    found = set()
    for node in nodes:
        for port, targets in enumerate(node.get("wires") or []):
            for target in targets or []:
                if isinstance(target, str):
                    found.add((node["id"], port, target))
    return found


def _wire_diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    old, new = _wires(before), _wires(after)
    return {"added": [list(w) for w in sorted(new - old)], "removed": [list(w) for w in sorted(old - new)]}


def _invalid(tool: str, parameter: str, detail: str) -> ToolFailure:
    return ToolFailure("invalid_params", params={"tool": tool, "parameter": parameter, "detail": detail})


def _container(by_id: dict[str, dict[str, Any]], flow_id: str, tool: str) -> dict[str, Any]:
    container = by_id.get(flow_id)
    if container is None or container.get("type") not in ("tab", "subflow"):
        tabs = ", ".join(f'"{_label(n)}" ({n["id"]})' for n in by_id.values() if n.get("type") == "tab")
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": tabs[:2000] or "none"})
    return container


Locks = Mapping[str, bool]


# The lock check left to the editor: a change applied in the editor (``ToolContext.apply == "editor"``) is refused
# there when its tab is locked (resources/flow-change.js), by the editor's own state, which a resumed run lacks.
EDITOR_CHECKS: Locks | None = None


def editor_locks(flow_data: list[dict[str, Any]] | None, locked_flows: Collection[str] | None = None,
                 flows: list[dict[str, Any]] | None = None) -> dict[str, bool]:
    """The ``locked`` state of tabs and subflows in the editor: every tab and subflow of ``flows`` (the deployed
    ones) by whether ``locked_flows`` (a request's ``lockedFlows``; ``None``: not said) lists it, then those in the
    editor's copy of the open tab (a request's ``flowData``). The user locks and unlocks in the editor before
    deploying, and the editor refuses edits by its own state."""
    locks: dict[str, bool] = {}
    if locked_flows is not None:
        locks.update((node["id"], node["id"] in locked_flows) for node in flows or []
                     if node.get("type") in ("tab", "subflow"))
    locks.update((node["id"], bool(node.get("locked"))) for node in flow_data or []
                 if isinstance(node, dict) and node.get("type") in ("tab", "subflow")
                 and isinstance(node.get("id"), str))
    return locks


def _unlocked(by_id: dict[str, dict[str, Any]], container_ids: Any, locks: Locks | None) -> None:
    """Refuse a change to a locked tab or subflow: the editor lets nobody edit one until it is unlocked (its
    ``locked`` property, Node-RED 3.1+; the tab's menu → Unlock), and the assistant must not be the way around that.
    ``locks`` (the editor's state, :func:`editor_locks`) wins over the deployed flows' ``locked``;
    :data:`EDITOR_CHECKS` (``None``) leaves the check to the editor.

    Raises:
        ToolFailure: ``flow_locked`` naming the locked tabs and subflows among ``container_ids``.
    """
    if locks is None:
        return
    locked = [by_id[i] for i in dict.fromkeys(container_ids)
              if i in by_id and by_id[i].get("type") in ("tab", "subflow")
              and locks.get(i, bool(by_id[i].get("locked")))]
    if locked:
        raise ToolFailure("flow_locked", params={"flows": ", ".join(f'"{_label(n)}" [{n["id"]}]' for n in locked)})


def plan_add_nodes(flows: list[dict[str, Any]], nodes: list[dict[str, Any]], flow_id: str | None = None,
                   new_tab_label: str | None = None, locks: Locks | None = MappingProxyType({})) -> Change:
    """Add ``nodes`` (a flow export: nodes with ids and wires) to tab ``flow_id`` or to a new tab labelled
    ``new_tab_label``. Every id is made new; wires, config references and link targets among the given nodes
    follow; a wire to an existing node is kept, one to an unknown id dropped. A given config node that an existing
    one matches (same type and properties, :mod:`service.nodered.config_nodes`) is not added: its users name the
    existing one. A new link node naming an existing
    one is added to that node's ``links`` too (both ends of a link, :func:`_linked_back`), a change the card shows.
    The new nodes are placed beside the nodes they are wired to, on the grid, over no other node
    (:func:`service.nodered.placement.place`).

    Raises:
        ToolFailure: ``flow_not_found``, ``flow_not_selected`` (neither tab given), ``flow_locked``,
            ``invalid_params``.
    """
    tool = "add_nodes"
    by_id = {n["id"]: n for n in flows}
    added: list[dict[str, Any]] = []
    target: dict[str, Any]
    if new_tab_label:
        target = {"id": new_id(), "type": "tab", "label": new_tab_label, "disabled": False, "info": ""}
        added.append(target)
    elif flow_id:
        target = _container(by_id, flow_id, tool)
        _unlocked(by_id, [flow_id], locks)
    else:
        raise ToolFailure("flow_not_selected")
    for position, node in enumerate(nodes):
        if not isinstance(node.get("id"), str) or not node["id"]:
            raise _invalid(tool, f"nodes.{position}.id", "every node needs an id (wires name them)")
        if not isinstance(node.get("type"), str) or node["type"] in ("tab", "subflow"):
            raise _invalid(tool, f"nodes.{position}.type", "every node needs a node type; tabs and subflows are "
                                                           "not nodes (use new_tab_label for a new tab)")
        refuse_masks(tool, node, f"nodes.{position}")
    ids = [str(n["id"]) for n in nodes]
    if len(set(ids)) != len(ids):
        raise _invalid(tool, "nodes", "node ids must be unique")
    # A config node that one of the flows' (or an earlier given one) matches is not added again: its users name that
    # one (service/nodered/config_nodes.py).
    reused = reused_config_nodes(nodes, flows)
    mapping = {old: new_id() for old in ids if old not in reused}
    mapping.update({old: mapping.get(kept, kept) for old, kept in reused.items()})
    nodes = [node for node in nodes if node["id"] not in reused]
    for position, node in enumerate(nodes):
        added.append(_renumbered(node, mapping, by_id, target["id"], position))
    place([n for n in flows if n.get("z") == target["id"]], [n for n in added if n is not target],
          own_layout=all("x" in n and "y" in n for n in nodes))
    external = any(t not in mapping.values() for n in added for port in n.get("wires") or [] for t in port)
    linked = _linked_back(added, by_id)
    _unlocked(by_id, [by_id[node_id].get("z") for node_id in linked], locks)
    new_flows = [{**node, "links": linked[node["id"]]} if node["id"] in linked else node for node in flows]
    new_flows += added
    diff = empty_diff()
    diff["added"] = added
    diff["changed"] = [{"id": node_id, "type": by_id[node_id].get("type"), "name": by_id[node_id].get("name"),
                        "properties": {"links": {"before": by_id[node_id].get("links"), "after": links}}}
                       for node_id, links in linked.items()]
    diff["wires"] = _wire_diff(flows, new_flows)
    types = ", ".join(sorted({n["type"] for n in added if n["type"] != "tab"}))
    key = "change.add_nodes" + (".new_tab" if new_tab_label else "") + (".one" if len(nodes) == 1 else "")
    summary = Sentence(key, count=len(nodes), types=types, tab=new_tab_label) if new_tab_label else \
        Sentence(key, count=len(nodes), types=types, tab=_label(target))
    return Change(tool, summary, diff, flows=new_flows, new_tab_only=bool(new_tab_label) and not (external or linked),
                  test_tabs_only=not new_tab_label and is_test_tab(target),
                  references=frozenset(by_id) | frozenset(mapping.values()))


def _linked_back(added: list[dict[str, Any]], existing: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The ``links`` of existing link nodes that new ones name, with the new ones added: Node-RED keeps both ends of
    a link (a ``link out`` lists the ``link in`` nodes it sends to, the ``link in`` the ``link out`` nodes that send
    to it; the editor writes both when a link is drawn, core ``60-link.html``). A ``link call`` is listed by no
    ``link in``. ``{existing node id: its new links}``; in the order the new nodes name them."""
    linked: dict[str, list[str]] = {}
    other_end = {"link out": "link in", "link in": "link out"}
    for node in added:
        kind, links = node.get("type"), node.get("links")
        returns = kind == "link out" and node.get("mode") == "return"  # answers a link call: names no link in
        if kind not in other_end or not isinstance(links, list) or returns:
            continue
        for target_id in links:
            target = existing.get(target_id) if isinstance(target_id, str) else None
            if target is None or target.get("type") != other_end[kind]:
                continue
            current = linked.get(target_id, list(target.get("links") or []))
            if node["id"] not in current:
                linked[target_id] = [*current, node["id"]]
    return linked


def _renumbered(node: dict[str, Any], mapping: dict[str, str], existing: dict[str, dict[str, Any]], target: str,
                position: int) -> dict[str, Any]:
    """A copy of ``node`` with new ids (its own and every reference to another given node) on tab ``target``."""
    def mapped(value: Any) -> Any:
        if isinstance(value, str) and value in mapping:
            return mapping[value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [mapping.get(v, v) for v in value]
        return value

    copied: dict[str, Any] = {}
    for key, value in copy.deepcopy(node).items():
        if key in ("id", "z", "credentials"):
            continue
        if key == "wires":
            copied[key] = [[mapping.get(t, t) for t in port if isinstance(t, str) and (t in mapping or t in existing)]
                           for port in value or [] if isinstance(port, list)]
        else:
            copied[key] = mapped(value)
    copied["id"] = mapping[node["id"]]
    flow_node = "wires" in node or "x" in node or "y" in node
    if flow_node or "z" in node:
        copied["z"] = target
    if flow_node and node.get("type") != "group":  # a group is placed on the tab but has no wires
        copied.setdefault("x", 160 + 180 * (position % 4))
        copied.setdefault("y", 80 + 60 * (position // 4))
        copied.setdefault("wires", [])
    return copied


def plan_update_node(flows: list[dict[str, Any]], node_id: str, properties: dict[str, Any],
                     locks: Locks | None = MappingProxyType({})) -> Change:
    """Set ``properties`` of node ``node_id`` (e.g. a function node's ``func``); ``id``, ``type``, ``z`` and
    ``credentials`` cannot be changed. A node on a locked tab or subflow cannot be changed; a locked tab or subflow
    itself only by unlocking it (``{"locked": false}`` alone).

    Raises:
        ToolFailure: ``node_not_found``, ``flow_locked``, ``invalid_params``.
    """
    index = {n["id"]: i for i, n in enumerate(flows)}
    if node_id not in index:
        raise ToolFailure("node_not_found", params={"node_ids": node_id})
    before = flows[index[node_id]]
    by_id = {n["id"]: n for n in flows}
    if before.get("type") in ("tab", "subflow"):
        if set(properties) != {"locked"}:
            _unlocked(by_id, [node_id], locks)
    else:
        _unlocked(by_id, [before.get("z")], locks)
    references = frozenset(by_id)
    written = {name: restore_masked("update_node", before, name, copy.deepcopy(value), references)
               for name, value in properties.items()}
    after = {**copy.deepcopy(before), **written}
    new_flows = list(flows)
    new_flows[index[node_id]] = after
    changed = {name: {"before": before.get(name), "after": value} for name, value in written.items()
               if before.get(name) != value}
    diff = empty_diff()
    if changed:
        diff["changed"] = [{"id": node_id, "type": before.get("type"), "name": before.get("name"),
                            "properties": changed}]
    diff["wires"] = _wire_diff([before], [after])
    tab = by_id.get(before.get("z", ""))
    key = "change.update_node" + ("" if changed else ".unchanged") + ("" if tab is not None else ".no_tab")
    summary = Sentence(key, node=_describe(before), **({"properties": ", ".join(changed)} if changed else {}),
                       **({"tab": _label(tab)} if tab is not None else {}))
    return Change("update_node", summary, diff, flows=new_flows,
                  test_tabs_only=is_test_tab(tab) if tab is not None and tab.get("type") == "tab" else False,
                  references=references, shown={node_id: {name: properties[name] for name in changed}})


def plan_delete_nodes(flows: list[dict[str, Any]], node_ids: list[str],
                      locks: Locks | None = MappingProxyType({})) -> Change:
    """Delete nodes by id, with the wires, group memberships and link targets that point at them.

    Raises:
        ToolFailure: ``node_not_found`` (some ids match nothing), ``invalid_params`` (a tab or subflow),
            ``flow_locked`` (a node on a locked tab or subflow).
    """
    tool = "delete_nodes"
    by_id = {n["id"]: n for n in flows}
    missing = [i for i in node_ids if i not in by_id]
    if missing:
        raise ToolFailure("node_not_found", params={"node_ids": ", ".join(missing)})
    for node_id in node_ids:
        if by_id[node_id].get("type") in ("tab", "subflow"):
            raise _invalid(tool, "node_ids", f"{node_id} is a {by_id[node_id]['type']}; only nodes can be deleted")
    _unlocked(by_id, [by_id[i].get("z") for i in node_ids], locks)
    gone = set(node_ids)
    new_flows = [without_references(n, gone) for n in flows if n["id"] not in gone]
    diff = empty_diff()
    diff["removed"] = list(dict.fromkeys(node_ids))
    diff["wires"] = _wire_diff(flows, new_flows)
    tabs = {by_id[i].get("z") for i in gone}
    shown = ", ".join(_describe(by_id[i]) for i in diff["removed"][:10])
    count = len(diff["removed"])
    if count > 10:
        summary = Sentence("change.delete_nodes.more", count=count, nodes=shown, more=count - 10)
    else:
        summary = Sentence("change.delete_nodes" + (".one" if count == 1 else ""), count=count, nodes=shown)
    return Change(tool, summary, diff,
                  flows=new_flows, test_tabs_only=all(is_test_tab(by_id.get(t or "")) for t in tabs),
                  references=frozenset(by_id))


def plan_create_tab(flows: list[dict[str, Any]], label: str, info: str = "", disabled: bool = False) -> Change:
    """A new, empty tab."""
    tab: dict[str, Any] = {"id": new_id(), "type": "tab", "label": label, "disabled": disabled, "info": info}
    diff = empty_diff()
    diff["added"] = [tab]
    return Change("create_tab", Sentence("change.create_tab", tab=label), diff, flows=[*flows, tab], new_tab_only=True,
                  references=frozenset(n["id"] for n in flows) | {tab["id"]})


def plan_tidy_layout(flows: list[dict[str, Any]], flow_id: str | None, node_ids: list[str] | None = None,
                     locks: Locks | None = MappingProxyType({})) -> Change:
    """Lay out the nodes of tab ``flow_id`` (all, or ``node_ids``) in layers along their wires
    (:func:`service.nodered.tidy.plan_tidy`): a change of ``x``/``y`` only.

    Raises:
        ToolFailure: ``flow_not_found``, ``flow_not_selected``, ``flow_locked``, ``node_not_found``.
    """
    if not flow_id:
        raise ToolFailure("flow_not_selected")
    by_id = {n["id"]: n for n in flows}
    tab = _container(by_id, flow_id, "tidy_layout")
    _unlocked(by_id, [flow_id], locks)
    missing = [i for i in node_ids or [] if by_id.get(i, {}).get("z") != flow_id]
    if missing:
        raise ToolFailure("node_not_found", params={"node_ids": ", ".join(missing)})
    diff, sentence = plan_tidy(flows, flow_id, node_ids)
    moved = {entry["id"]: {name: sides["after"] for name, sides in entry["properties"].items()}
             for entry in diff["changed"]}
    new_flows = [{**node, **moved[node["id"]]} if node["id"] in moved else node for node in flows]
    return Change("tidy_layout", Sentence(sentence["key"], **sentence["params"], tab=_label(tab)), diff,
                  flows=new_flows, test_tabs_only=is_test_tab(tab), references=frozenset(by_id))


def plan_trigger_inject(flows: list[dict[str, Any]], node_id: str) -> Change:
    """Trigger deployed inject node ``node_id`` once (its message goes through the running flow).

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (not an inject node).
    """
    by_id = {n["id"]: n for n in flows}
    node = by_id.get(node_id)
    if node is None:
        raise ToolFailure("node_not_found", params={"node_ids": node_id})
    if node.get("type") != "inject":
        raise _invalid("trigger_inject", "node_id", f"{_describe(node)} is not an inject node")
    tab = by_id.get(node.get("z", ""))
    summary = Sentence("change.trigger_inject", node=_describe(node), tab=_label(tab)) if tab is not None else \
        Sentence("change.trigger_inject.no_tab", node=_describe(node))
    return Change("trigger_inject", summary, empty_diff(), inject=node_id,
                  test_tabs_only=is_test_tab(tab), references=frozenset(by_id))
