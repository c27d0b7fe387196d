"""The flow history's tools: ``what_changed`` (read: the diff between two points, as :mod:`service.history.diff`)
and ``restore_flows`` (write: all flows, one tab or one node back to a captured deploy, behind an approval card as
every write of :mod:`service.nodered.write_tools`, deployed with the ``rev`` checked)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.history.capture import history_for
from service.history.diff import flow_diff
from service.history.points import Point, PointError, resolve
from service.history.projects import project_history, project_text
from service.history.snapshot import fill_secrets
from service.history.store import HistoryStore
from service.memory.db import MemoryUnavailable
from service.nodered import write_plans, write_tools
from service.nodered.card_values import redacted_value
from service.nodered.change_parts import renamed
from service.nodered.client import NodeRedError
from service.nodered.messages import Sentence
from service.nodered.tooling import Tool, ToolContext, ToolFailure, ToolOutput

TEXT_ITEMS = 60  # nodes named per kind in the model's text


class WhatChangedArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    since: str = Field(max_length=128, description=(
        "from when: a deploy's rev, or an ISO 8601 time such as 2026-12-02T10:00:00Z (the deploy in force then)"))
    until: str = Field("now", max_length=128, description="to when, the same way; default now (the deployed flows)")


class RestoreArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: str = Field(max_length=128, description="the point to restore: a deploy's rev or an ISO 8601 time")
    scope: Literal["whole", "tab", "node"] = Field("tab", description=(
        "whole: every flow as it was; tab: one tab or subflow (target_id), the others kept as they are now; node: "
        "one node (target_id)"))
    target_id: str | None = Field(None, max_length=128, description="the tab, subflow or node id (scope tab/node)")


def _store(ctx: ToolContext) -> HistoryStore:
    capture = history_for(ctx.nodered)
    if capture is None:
        raise ToolFailure("history_unavailable")
    return capture.store


async def _point(ctx: ToolContext, store: HistoryStore, point: str) -> Point:
    try:
        return await resolve(store, ctx.nodered, point)
    except (PointError, NodeRedError) as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    except MemoryUnavailable:
        raise ToolFailure("history_unavailable") from None


def diff_text(diff: dict[str, Any], start: dict[str, Any], end: dict[str, Any]) -> str:
    """The compact text of a :func:`~service.history.diff.flow_diff` a model reads."""
    lines = [f"Changes from {start['time']} (rev {start['rev']}) to {end['time']} (rev {end['rev']}): "
             + ", ".join(f"{n} {kind}" for kind, n in diff["counts"].items() if n) or "nothing changed"]
    for tab in diff["tabs"]:
        lines.append(f"\n{tab['type']} \"{tab['label']}\" [{tab['id']}] {tab['status']}")
        for name, sides in tab["properties"].items():
            lines.append(f"  {name}: {sides['before']!r} → {sides['after']!r}")
        for kind in ("added", "removed"):
            for node in tab[kind][:TEXT_ITEMS]:
                lines.append(f"  {kind} {node['type']} \"{node['name']}\" [{node['id']}]")
        for node in tab["changed"][:TEXT_ITEMS]:
            lines.append(f"  changed {node['type']} \"{node['name']}\" [{node['id']}]")
            for name, sides in node["properties"].items():
                lines.append(f"    {name}: {sides['before']!r} → {sides['after']!r}")
        for node in tab["renamed"][:TEXT_ITEMS]:
            lines.append(f"  renamed {node['type']} [{node['id']}] {node['before']!r} → {node['after']!r}")
        for node in tab["moved"][:TEXT_ITEMS]:
            lines.append(f"  moved {node['type']} \"{node['name']}\" [{node['id']}] {node['before']} → {node['after']}")
        for kind in ("added", "removed"):
            for source, port, target in tab["wires"][kind][:TEXT_ITEMS]:
                lines.append(f"  wire {kind}: {source} output {port + 1} → {target}")
    return "\n".join(lines)


async def what_changed(ctx: ToolContext, since: str, until: str = "now") -> ToolOutput:
    """The tool ``what_changed``: ``{"from", "to", "tabs", "counts", "project"}`` (redacted; ``project`` as
    :func:`~service.history.projects.project_history`), and its text, which names the active Node-RED project's
    latest commit when Projects is on."""
    store = _store(ctx)
    start, end = await _point(ctx, store, since), await _point(ctx, store, until)
    diff = flow_diff(start.flows, end.flows)
    project = await project_history(ctx.nodered)
    text = diff_text(diff, start.label(), end.label())
    return ToolOutput(data={"from": start.label(), "to": end.label(), **diff, "project": project},
                      text=f"{text}\n\n{project_text(project)}" if project is not None else text)


def _scoped(live: list[dict[str, Any]], past: list[dict[str, Any]], scope: str,
            target: str | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The flows after restoring ``scope``/``target`` of ``past`` over ``live``, and the target as it was or is."""
    if scope == "whole":
        return copy.deepcopy(past), None
    if not target:
        raise ToolFailure("invalid_params", params={"tool": "restore_flows", "parameter": "target_id",
                                                    "detail": f"scope {scope} needs the id of a "
                                                              f"{'tab' if scope == 'tab' else 'node'}"})
    def inside(node: dict[str, Any]) -> bool:
        return node.get("id") == target or (scope == "tab" and node.get("z") == target)
    then = [copy.deepcopy(node) for node in past if inside(node)]
    shown = next((node for node in [*then, *live] if node.get("id") == target), None)
    if shown is None or (scope == "tab" and shown.get("type") not in ("tab", "subflow")):
        if scope == "node":
            raise ToolFailure("node_not_found", params={"node_ids": target})
        tabs = ", ".join(f"{n.get('label')} [{n['id']}]" for n in live if n.get("type") == "tab")
        raise ToolFailure("flow_not_found", params={"flow_id": target, "tabs": tabs})
    result: list[dict[str, Any]] = []
    placed = False
    for node in live:
        if inside(node):
            if not placed:
                result.extend(then)
                placed = True
            continue
        result.append(node)
    if not placed:
        result.extend(then)
    return result, shown


def _change_diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """The diff of :mod:`service.nodered.write_tools`' shape from ``before`` to ``after``."""
    old = {n["id"]: n for n in before if isinstance(n.get("id"), str)}
    new = {n["id"]: n for n in after if isinstance(n.get("id"), str)}
    changed = []
    for node_id, node in new.items():
        if node_id in old and old[node_id] != node:
            names = [k for k in dict.fromkeys([*old[node_id], *node]) if k not in ("id", "credentials")
                     and old[node_id].get(k) != node.get(k)]
            changed.append({"id": node_id, "type": node.get("type"), "name": node.get("name"),
                            "properties": {k: {"before": old[node_id].get(k), "after": node.get(k)} for k in names}})
    return {"added": [copy.deepcopy(n) for i, n in new.items() if i not in old],
            "removed": [i for i in old if i not in new], "changed": changed,
            "wires": write_plans._wire_diff(list(old.values()), list(new.values()))}


async def plan_restore(ctx: ToolContext, to: str, scope: str = "tab",
                       target_id: str | None = None) -> tuple[write_tools.Change, str | None]:
    """The change restoring ``scope`` (``target_id``) to point ``to``, planned on the live flows, and their rev.

    Raises:
        ToolFailure: ``history_unavailable``, ``snapshot_not_found``, ``history_point_invalid``,
            ``flow_not_found``/``node_not_found``, ``invalid_params``, a Node-RED error code.
    """
    store = _store(ctx)
    past = await _point(ctx, store, to)
    live, rev = await write_tools._live(ctx)
    flows, shown = _scoped(live, past.flows, scope, target_id)
    # The history keeps no secret: those of nodes still deployed come back from them, the others are named.
    flows, lost = fill_secrets(flows, live)
    diff = _change_diff(live, flows)
    references = frozenset(n["id"] for n in [*live, *flows] if isinstance(n.get("id"), str))
    # The card shows the values restored redacted as a model sees flows: they come from the history, not from
    # the person approving, and may hold secrets deployed back then.
    after_shown = {entry["id"]: {name: redacted_value(entry["type"], name, sides["after"], references)
                                 for name, sides in entry["properties"].items()} for entry in diff["changed"]}
    # A person reads the card: the rev's first 8 digits (as git shows a commit) and the time to the second, in UTC.
    when = {"rev": (past.rev or "")[:8], "time": past.time[:19].replace("T", " ") + " UTC" if past.time else ""}
    if scope == "whole":
        sentence = Sentence("change.restore_flows", **when)
    elif scope == "tab":
        assert shown is not None
        # A tab without a label is named by its id, as the editor's tab bar shows it.
        sentence = Sentence("change.restore_flows.tab", tab=shown.get("label") or shown.get("name") or target_id,
                            **when)
    else:
        assert shown is not None
        sentence = Sentence("change.restore_flows.node", node=write_plans._describe(shown), **when)
    lost_named = "; ".join(f"{write_plans._describe(node)}: {name}" for node, name in lost)
    return write_tools.Change("restore_flows", sentence, diff, flows=flows, references=references,
                              shown=after_shown,
                              notice=Sentence("change.secrets_not_kept", values=lost_named) if lost else None), rev


async def restore_preview(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """The approval card's preview of ``restore_flows`` (:meth:`~service.nodered.write_tools.Change.preview`)."""
    change, _ = await plan_restore(ctx, **args)
    return change.preview()


async def restore_flows(ctx: ToolContext, to: str, scope: str = "tab", target_id: str | None = None) -> ToolOutput:
    """The tool ``restore_flows``, run after approval: planned again on the live flows; the approved diff must
    still be what it makes (else ``flows_conflict``, nothing written), then deployed over the rev it was planned on
    (:func:`~service.nodered.write_tools.commit`), or handed to the editor for a request from the sidebar."""
    args: dict[str, Any] = {"to": to, "scope": scope, "target_id": target_id}
    async with write_tools._write_lock(ctx.nodered):
        change, rev = await plan_restore(ctx, to, scope, target_id)
        key = write_tools.approval_key("restore_flows", args)
        approved = ctx.approved.get(key)
        if approved is not None and not write_tools.same_change(approved, change.preview()["diff"]):
            raise ToolFailure("flows_conflict", key="flows_conflict.approved")
        parts = ctx.parts.get(key)
        if parts is not None and approved is None:  # parts of a card that was not the one shown
            raise ToolFailure("flows_conflict", key="flows_conflict.approved")
        return await write_tools.commit(ctx, change, rev, None if parts is None or approved is None
                                        else renamed(parts, approved, change.diff))


HISTORY_TOOLS: tuple[Tool, ...] = (
    Tool(name="what_changed", title="What changed in the flows", args=WhatChangedArgs, run=what_changed,
         description=(
             "Compare the deployed flows between two points of the flow history (every deploy is kept): since a "
             "deploy's rev or an ISO 8601 time (the deploy in force then) until another, default now. Lists per tab "
             "the nodes added, removed, changed (each property before → after), moved and renamed, and the wires "
             "added or removed; secrets are redacted.\n\n"
             "Use it for 'what changed since 10:00', 'it worked yesterday, what is different', and to relate "
             "errors in the runtime evidence to the deploy that came before them.")),
    Tool(name="restore_flows", title="Restore flows from the history", args=RestoreArgs, run=restore_flows,
         preview=restore_preview, result=write_tools.WriteResult, access="write", permission="write",
         destructive=True,
         description=(
             "Restore the flows to a deploy of the flow history: all of them (scope whole), one tab or subflow "
             "(scope tab, target_id; the other tabs stay as they are now) or one node (scope node, target_id). "
             "Find the point with what_changed first." + " It runs only after the user approves it (they see a "
             "preview and may edit or reject it); a rejection comes back with the user's reason.")),
)
