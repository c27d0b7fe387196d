"""Pure planner of ``link_nodes`` (issue 36): connect a ``link out`` or a ``link call`` to a ``link in``, on the
same tab or across tabs, keeping both ends consistent as the editor does when a link is drawn (core
``60-link.html``): a ``link out`` (mode ``link``) lists the ``link in`` nodes it sends to in ``links`` and each
``link in`` lists the ``link out`` nodes that send to it; a ``link call`` (static) lists the one ``link in`` it
calls and no ``link in`` lists it. In a diff, each end's ``links`` is a ``changed`` entry.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from service.nodered.canvas_plans import change, describe, edited, existing, invalid, tab_label
from service.nodered.messages import Sentence
from service.nodered.write_plans import Change, Locks, _unlocked


def plan_link_nodes(flows: list[dict[str, Any]], source_id: str, target_id: str, replace: bool = False,
                    locks: Locks | None = MappingProxyType({})) -> Change:
    """Link ``source_id`` (a ``link out`` in mode ``link``, or a ``link call``) to ``target_id`` (a ``link in``).
    With ``replace`` the source's existing links are dropped (and the source is taken out of their ``links``);
    without, a ``link out`` keeps them and a ``link call`` that calls another ``link in`` is refused.

    Raises:
        ToolFailure: ``node_not_found``, ``invalid_params`` (wrong node types, already linked, a link call that
            calls another node without ``replace``), ``flow_locked`` (a tab whose node would change is locked).
    """
    tool = "link_nodes"
    by_id = {n["id"]: n for n in flows}
    source, target = existing(by_id, [source_id, target_id]) if source_id != target_id else \
        (existing(by_id, [source_id])[0], None)
    if target is None or target.get("type") != "link in":
        raise invalid(tool, "target_id", f"{describe(target or source)} is not a link in node")
    kind = source.get("type")
    if kind not in ("link out", "link call") or (kind == "link out" and source.get("mode") == "return"):
        raise invalid(tool, "source_id", f"{describe(source)} is not a link out (mode: send to links) or link call "
                                         "node")
    before = [i for i in source.get("links") or [] if isinstance(i, str)]
    if before == [target_id] or (target_id in before and not replace):
        raise invalid(tool, "target_id", f"{describe(source)} already links to {describe(target)}")
    if kind == "link call" and before and not replace:
        called = ", ".join(describe(by_id[i]) for i in before if i in by_id) or "another node"
        raise invalid(tool, "replace", f"{describe(source)} calls {called}; a link call calls one link in: set "
                                       "replace to call the new one instead")
    dropped = [i for i in before if i != target_id] if replace else []
    edits: dict[str, dict[str, Any]] = {source_id: {"links": [target_id] if replace else [*before, target_id]}}
    if kind == "link out":
        ends = list(target.get("links") or [])
        edits[target_id] = {"links": ends if source_id in ends else [*ends, source_id]}
        for old in dropped:
            if old in by_id and source_id in (by_id[old].get("links") or []):
                edits[old] = {"links": [i for i in by_id[old]["links"] if i != source_id]}
    touched = [by_id[i] for i in edits]
    _unlocked(by_id, [n.get("z") for n in touched], locks)
    new_flows, changed = edited(flows, edits)
    params = {"source": describe(source), "source_tab": tab_label(by_id, source), "target": describe(target),
              "target_tab": tab_label(by_id, target)}
    previous = ", ".join(describe(by_id[i]) for i in dropped if i in by_id)
    sentence = Sentence("change.link_nodes.replace", previous=previous, **params) if previous else \
        Sentence("change.link_nodes", **params)
    return change(tool, sentence, flows, new_flows, changed, [str(n.get("z")) for n in touched])
