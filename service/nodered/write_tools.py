"""The core's write tools: add nodes, change a node, delete nodes, create a tab, trigger an inject node; and the
canvas tools' (disable, rename, groups, links: planned in :mod:`service.nodered.canvas_tools`).

Each is planned on the live flows (``GET /flows``, v2, with its ``rev``) by a pure function that returns a
:class:`Change`: a one-sentence ``summary`` (worded from ``locales/<lang>/approvals.json``, so that an approval card
shows it in the user's language), a ``diff`` a person can judge, and the whole new configuration. The
same plan is the tool's preview (shown before the user approves, secrets redacted) and what the tool applies
(after approval): through the Admin API with the ``rev`` checked (``POST /flows``, deployment type ``nodes``; a
concurrent deploy answers ``flows_conflict`` and nothing is overwritten), or, for a request from the editor, handed
back undeployed for the sidebar to apply as one undoable edit (``ToolContext.apply == "editor"``).

``diff`` shape: ``{"added": [node, ...], "removed": [id, ...], "changed": [{"id", "type", "name", "properties":
{name: {"before", "after"}}}], "wires": {"added": [[source, port, target]], "removed": [...]}}``.

A tab is a *test tab* when its environment holds ``AI_SIDEBAR_TEST_TAB`` set to true (the approval policy
``never_on_test_tabs`` needs no card for changes that touch only such tabs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import weakref
from collections.abc import Callable
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.nodered.canvas_tools import PLANNERS
from service.nodered.card_values import redacted_context
from service.nodered.change_parts import renamed, select_parts
from service.nodered.client import NodeRedError
from service.nodered.context_plans import plan_set_context
from service.nodered.tooling import ToolContext, ToolFailure, ToolOutput
from service.nodered.write_plans import (
    EDITOR_CHECKS,
    MAX_NODES,
    PROTECTED_PROPERTIES,
    Change,
    Locks,
    editor_locks,
    plan_add_nodes,
    plan_create_tab,
    plan_delete_nodes,
    plan_tidy_layout,
    plan_trigger_inject,
    plan_update_node,
)

# -- planning (pure functions of the flows and the arguments) ------------------------------------------------------


# -- arguments -----------------------------------------------------------------------------------------------------

class AddNodesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_NODES, description=(
        "the nodes to add, as in a Node-RED flow export: each with an id, a type, its properties, x and y, and "
        "wires ([[target ids of output 1], ...]) naming other given nodes; ids are replaced by new ones"))
    flow_id: str | None = Field(None, max_length=128, description="the tab to add them to; default: the tab "
                                                                  "open in the editor")
    new_tab_label: str | None = Field(None, min_length=1, max_length=200, description="put them on a new tab "
                                                                                      "with this label instead")


class UpdateNodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_id: str = Field(max_length=128, description="the node to change")
    properties: dict[str, Any] = Field(min_length=1, description=(
        "property name → new value, e.g. {\"func\": \"return msg;\"} for a function node; id, type, z and "
        "credentials cannot be changed"))

    @field_validator("properties")
    @classmethod
    def _changeable(cls, properties: dict[str, Any]) -> dict[str, Any]:
        protected = sorted(PROTECTED_PROPERTIES & set(properties))
        if protected:
            raise ValueError(f"{', '.join(protected)} cannot be changed")
        return properties


class DeleteNodesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] = Field(min_length=1, max_length=MAX_NODES, description="ids of the nodes to delete")


class CreateTabArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(min_length=1, max_length=200, description="the new tab's label")
    info: str = Field("", max_length=10_000, description="its description (markdown)")
    disabled: bool = Field(False, description="create it disabled")


class TriggerInjectArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_id: str = Field(max_length=128, description="id of a deployed inject node")


class TidyLayoutArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str | None = Field(None, max_length=128, description="the tab to tidy; default: the tab open in the "
                                                                  "editor")
    node_ids: list[str] | None = Field(None, min_length=1, max_length=MAX_NODES, description=(
        "only these nodes of it (e.g. the ones just added); default: every node not in a group"))


class WriteResult(BaseModel):
    status: Literal["deployed", "editor", "triggered", "set"] = Field(description=(
        "deployed: written through the Admin API; editor: handed to the editor undeployed; triggered: the inject "
        "node fired; set: the context value was set"))
    summary: str
    changes: dict[str, Any] = Field(description="the diff (see the README), plus nodes: the full new nodes")
    rev: str | None = Field(None, description="the flows revision after the deploy")


# -- running -------------------------------------------------------------------------------------------------------

async def _live(ctx: ToolContext) -> tuple[list[dict[str, Any]], str | None]:
    try:
        answer = await ctx.nodered.get_flows()
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    return answer["flows"], answer.get("rev")


async def _context_stores(ctx: ToolContext) -> dict[str, Any]:
    """The runtime's context stores, ``{"default", "stores"}`` (``GET /settings``'s ``context``)."""
    try:
        settings = await ctx.nodered.get_settings()
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    stores = settings.get("context") if isinstance(settings, dict) else None
    return stores if isinstance(stores, dict) else {}


async def plan(ctx: ToolContext, tool: str, args: dict[str, Any],
               locks: Locks | None = MappingProxyType({})) -> tuple[Change, str | None]:
    """The change ``tool`` would make with parsed ``args`` on the live flows, and their ``rev``. Locked tabs are
    judged by the editor's state (``ctx.locked_flows`` and ``ctx.flow_data``) over the deployed one, and ``locks``
    over both (:data:`EDITOR_CHECKS`: not at all).

    Raises:
        ToolFailure: the planner's failure, or a Node-RED error code.
    """
    flows, rev = await _live(ctx)
    if locks is not None:
        locks = {**editor_locks(ctx.flow_data, ctx.locked_flows, flows), **locks}
    if tool == "add_nodes":
        flow_id = args.get("flow_id") or (None if args.get("new_tab_label") else ctx.flow_id)
        change = plan_add_nodes(flows, args["nodes"], flow_id, args.get("new_tab_label"), locks)
    elif tool == "update_node":
        change = plan_update_node(flows, args["node_id"], args["properties"], locks)
    elif tool == "delete_nodes":
        change = plan_delete_nodes(flows, args["node_ids"], locks)
    elif tool == "create_tab":
        change = plan_create_tab(flows, args["label"], args.get("info", ""), args.get("disabled", False))
    elif tool == "tidy_layout":
        change = plan_tidy_layout(flows, args.get("flow_id") or ctx.flow_id, args.get("node_ids"), locks)
    elif tool == "trigger_inject":
        change = plan_trigger_inject(flows, args["node_id"])
    elif tool == "set_context":
        change = plan_set_context(flows, args, await _context_stores(ctx), ctx.flow_id)
    elif tool in PLANNERS:
        change = PLANNERS[tool](flows, args, locks)
    else:
        raise ToolFailure("unknown_tool", params={"tool": tool, "tools": ", ".join(WRITE_TOOL_NAMES)})
    change.base = flows
    return change, rev


async def preview(ctx: ToolContext, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What ``tool`` would do with ``args``, judged on the live flows (:meth:`Change.preview`: summary, diff with
    secrets redacted, policy flags). Raises :class:`ToolFailure` as :func:`plan`."""
    change, _ = await plan(ctx, tool, args)
    return change.preview()


def approval_key(tool: str, args: dict[str, Any]) -> str:
    """The key of a write call in :attr:`ToolContext.approved`: the tool and its parsed arguments, as canonical
    JSON."""
    return tool + json.dumps(args, sort_keys=True, default=str, ensure_ascii=False)


def same_change(shown: dict[str, Any], planned: dict[str, Any]) -> bool:
    """Whether two preview diffs (:meth:`Change.preview`) make the same change to the existing nodes: equal once
    the random ids of the nodes each adds (:func:`new_id`; also in an instance's ``subflow:<id>`` type) are
    numbered in order, and compared as JSON (``shown``
    may come back from the database)."""
    def canonical(diff: dict[str, Any]) -> Any:
        text = json.dumps(diff, sort_keys=True, default=str, ensure_ascii=False)
        for number, node in enumerate(diff.get("added") or []):
            if isinstance(node, dict) and isinstance(node.get("id"), str) and node["id"]:
                text = text.replace(json.dumps(node["id"]), json.dumps(f"added#{number}"))
                # an instance of a new subflow names it in its type (create_subflow)
                text = text.replace(json.dumps(f"subflow:{node['id']}"), json.dumps(f"subflow:added#{number}"))
        numbered = json.loads(text)
        wires = numbered.get("wires") or {}
        for side in ("added", "removed"):  # sorted by id: the new ids' order is random
            wires[side] = sorted(wires.get(side) or [], key=json.dumps)
        return numbered
    return bool(canonical(shown) == canonical(planned))


async def apply(ctx: ToolContext, tool: str, args: dict[str, Any]) -> ToolOutput:
    """Plan ``tool`` again on the live flows and apply it: deploy with the ``rev`` checked, hand it to the editor
    (``ctx.apply == "editor"``, flow changes only), or trigger the inject node.

    A write a person approved as shown (its diff in ``ctx.approved``) runs only if planning it again makes the same
    diff: the card showed the nodes' values before the change, and someone who deployed another value of them
    meanwhile would otherwise be overwritten without anyone having seen it. A deploy that touched other nodes is
    kept and the change applied on top.

    Raises:
        ToolFailure: as :func:`plan`; ``flows_conflict`` when Node-RED's flows changed between reading and
            deploying, or under an approved change since it was shown (nothing is overwritten).
    """
    # One write at a time per Node-RED: the agent runs the tool calls of one step at once (LangGraph's ToolNode),
    # and two writes planned on the same rev made the second a conflict with the first. Each plans on the flows the
    # previous one deployed.
    async with _write_lock(ctx.nodered):
        # A change for the editor is checked against locked tabs there, as the editor has them when it applies it.
        change, rev = await plan(ctx, tool, args, EDITOR_CHECKS if ctx.apply == "editor" else MappingProxyType({}))
        shown = ctx.approved.get(approval_key(tool, args))
        if shown is not None and not same_change(shown, change.preview()["diff"]):
            raise ToolFailure("flows_conflict", key="flows_conflict.approved")
        parts = ctx.parts.get(approval_key(tool, args))
        if parts is not None and shown is None:  # parts of a card that was not the one shown
            raise ToolFailure("flows_conflict", key="flows_conflict.approved")
        return await commit(ctx, change, rev, None if parts is None or shown is None
                            else renamed(parts, shown, change.diff))


# Called after each deploy a write tool made, with its context, the new ``rev`` and the change (the service's flow
# history records the assistant's deploys through it; the core knows nothing of the history).
DEPLOY_HOOKS: list[Callable[[ToolContext, str | None, Change], None]] = []

_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def _write_lock(nodered: Any) -> asyncio.Lock:
    """The lock that orders this process's writes to the Node-RED ``nodered`` (a ``NodeRedClient``) talks to."""
    lock = _WRITE_LOCKS.get(nodered)
    if lock is None:
        lock = _WRITE_LOCKS[nodered] = asyncio.Lock()
    return lock


async def commit(ctx: ToolContext, change: Change, rev: str | None, parts: list[str] | None = None) -> ToolOutput:
    """Apply a planned ``change`` as :func:`apply` does, deploying over revision ``rev`` (the one the change was
    planned on): a caller that showed the plan to a person deploys exactly what was shown, or nothing. With
    ``parts`` (the part ids a person ticked, :mod:`service.nodered.change_parts`) only those are applied, cut from
    the change on the flows it was planned on (``change.base``, else read again at ``rev``).

    Raises:
        ToolFailure: ``flows_conflict`` when Node-RED's flows are no longer at ``rev`` (nothing is overwritten),
            or a Node-RED error code; ``flows_conflict`` too when the ticked parts no longer make a change of their
            own on these flows (the card showed another).
    """
    if parts is not None:
        change = await _only_parts(ctx, change, rev, parts)
    shown = change.preview()
    changes = {**shown["diff"], "nodes": shown["diff"]["added"]}
    partly = ""
    if change.parts is not None:
        changes["parts"] = change.parts
        partly = (f" The user approved only some parts of it ({len(change.parts)}): exactly those were applied "
                  "(changes.parts); the unticked ones were not.")
    try:
        if change.inject is not None:
            await ctx.nodered.inject(change.inject)
            return ToolOutput(data={"status": "triggered", "summary": change.summary, "changes": changes},
                              text=f"Done: {change.summary}")
        if change.context is not None:  # not a flow change: set now, in the editor's case too
            await ctx.nodered.set_context(change.context)
            return ToolOutput(data={"status": "set", "summary": change.summary,
                                    "changes": {**changes, "context": redacted_context(change.context)}},
                              text=f"Done: {change.summary}")
        if ctx.apply == "editor":
            # The full changes (not redacted) go to the user's own editor, which holds these nodes anyway.
            full = {**change.diff, "nodes": change.diff["added"],
                    **({"parts": change.parts} if change.parts is not None else {})}
            return ToolOutput(data={"status": "editor", "summary": change.summary, "changes": full},
                              text=(f"Handed to the Node-RED editor, not deployed: {change.summary} The user sees "
                                    "it in the editor, can undo it with Ctrl-Z and deploys it when ready." + partly))
        assert change.flows is not None
        new_rev = await ctx.nodered.post_flows(change.flows, rev)
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    for hook in DEPLOY_HOOKS:
        hook(ctx, new_rev, change)
    return ToolOutput(data={"status": "deployed", "summary": change.summary, "changes": changes, "rev": new_rev},
                      text=f"Deployed: {change.summary}{partly}")


async def _only_parts(ctx: ToolContext, change: Change, rev: str | None, parts: list[str]) -> Change:
    """``change`` cut to ``parts`` (:func:`~service.nodered.change_parts.select_parts`), which must need no
    adjustment: the person saw exactly those (an adjusted cut was shown again before anything ran)."""
    base = change.base
    if base is None:
        base, now = await _live(ctx)
        if now != rev:
            raise ToolFailure("flows_conflict", key="flows_conflict.approved")
    selection = select_parts(base, change.diff, parts)
    if selection.adjusted or change.flows is None:
        raise ToolFailure("flows_conflict", key="flows_conflict.approved")
    return dataclasses.replace(change, diff=selection.diff, flows=selection.flows, parts=selection.parts)


# The core's write tools, then the canvas tools (:mod:`service.nodered.canvas_tools`).
WRITE_TOOL_NAMES = ("add_nodes", "update_node", "delete_nodes", "create_tab", "trigger_inject", "tidy_layout",
                    "set_context", *PLANNERS)
