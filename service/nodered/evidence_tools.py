"""The runtime evidence tools of the core: ``get_debug_messages`` and ``get_node_status`` (declared in
:mod:`service.nodered.tools`), reading the :class:`~service.nodered.evidence.EvidenceBuffer` of the context.

Both read the deployed flows first, with the caller's own Node-RED rights: a caller who may not read the flows
gets Node-RED's refusal, not the evidence (which the service collects with its own credentials), and the answer
names each node by type and name.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.client import NodeRedError
from service.nodered.evidence import Evidence, EvidenceBuffer, NodeStatus
from service.nodered.named_nodes import CONFIGURATION_HEAD, configuration_of
from service.nodered.runtime_tools import counted
from service.nodered.tooling import ToolContext, ToolFailure, ToolOutput

MESSAGES_SHOWN = 60  # messages one answer shows at most (errors first); each is redacted when read
STATUSES_SHOWN = 200
STATUSES_WITH_MESSAGES = 20  # statuses get_debug_messages adds to the messages


class DebugMessagesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str | None = Field(None, description="tab (or subflow) id; default: the tab open in the editor, or "
                                                  "every tab when none is open and no node_id is given")
    node_id: str | None = Field(None, description="only this node, and the debug nodes wired to its outputs")
    since: float | None = Field(None, gt=0, description="only messages of the last this many seconds; default: "
                                                        "all that are kept (the last 15 minutes by default)")


class NodeStatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str | None = Field(None, description="tab (or subflow) id; default: the tab open in the editor")
    node_ids: list[str] | None = Field(None, description="these nodes only; default: the nodes selected in the "
                                                         "editor, else every node of the tab")


class EvidenceItem(BaseModel):
    kind: str = Field(description="'error' (node.error), 'warning' (node.warn) or 'debug' (a debug node's output)")
    nodeId: str
    nodeType: str | None
    nodeName: str | None
    flowId: str | None = Field(description="the tab or subflow of the node")
    age: float = Field(description="seconds since the service received it")
    topic: str | None
    property: str | None = Field(description="the message property a debug node shows, e.g. payload")
    shape: str = Field(description="type and shape of the value, e.g. object{3 keys}, array[10], string(12 chars)")
    size: int = Field(description="characters of the value as Node-RED encoded it")
    value: str = Field(description="the value, secrets redacted, shortened when long")


class StatusItem(BaseModel):
    nodeId: str
    nodeType: str | None
    nodeName: str | None
    fill: str | None = Field(description="red, green, yellow, blue or grey")
    shape: str | None = Field(description="dot or ring")
    text: str | None = Field(description="the text under the node as the editor shows it, in the request's "
                                         "language where Node-RED has it")
    age: float = Field(description="seconds since the status was set")


class DebugMessagesResult(BaseModel):
    connected: bool = Field(description="whether the subscription to Node-RED's comms websocket is up")
    window: float = Field(description="seconds of history kept")
    errors: list[EvidenceItem]
    warnings: list[EvidenceItem]
    messages: list[EvidenceItem]
    statuses: list[StatusItem] = Field(default_factory=list, description="the last status of the tab's (or the "
                                                                         "node's) nodes that show one")


class NodeStatusResult(BaseModel):
    connected: bool
    statuses: list[StatusItem]


NOT_COLLECTED = ("Runtime evidence (debug messages, node errors, node status) is not collected: "
                 "AI_SIDEBAR_EVIDENCE is off. Answer from the flow's configuration and say so.")


async def get_debug_messages(ctx: ToolContext, flow_id: str | None = None, node_id: str | None = None,
                             since: float | None = None) -> ToolOutput:
    """The recent errors, warnings and debug messages of a tab or a node, errors first.

    Raises:
        ToolFailure: ``flow_not_found`` naming the tabs, or a Node-RED error code (the caller may not read flows).
    """
    buffer = ctx.evidence
    flows = await _flows(ctx)
    if node_id is None:
        flow_id = flow_id or ctx.flow_id
    by_id = {n["id"]: n for n in flows if isinstance(n, dict) and "id" in n}
    if flow_id is not None:
        _check_flow(flow_id, by_id)
    if buffer is None:
        return ToolOutput(data=DebugMessagesResult(connected=False, window=0, errors=[], warnings=[],
                                                   messages=[]).model_dump(), text=NOT_COLLECTED)
    node_ids = _with_debug_targets(node_id, by_id) if node_id else None
    chosen = buffer.select(flow_id=flow_id, node_ids=node_ids, since=since)
    shown = chosen[:MESSAGES_SHOWN]
    now = time.time()
    # Redaction costs about a millisecond per message (more under load): off the event loop, so that other answers
    # keep streaming while 60 messages are redacted.
    items = await asyncio.to_thread(lambda: [_item(entry, by_id, now) for entry in shown])
    in_scope = node_ids or [n["id"] for n in flows if isinstance(n, dict) and (flow_id is None
                                                                               or n.get("z") == flow_id)]
    statuses = await _status_items(ctx, buffer, in_scope, by_id, now)
    result = DebugMessagesResult(connected=buffer.connected, window=buffer.window,
                                 errors=[i for i in items if i.kind == "error"],
                                 warnings=[i for i in items if i.kind == "warning"],
                                 messages=[i for i in items if i.kind == "debug"], statuses=statuses)
    scope = _scope(flow_id, node_id, by_id)
    counts = (f"{counted(len(result.errors), 'error')}, {counted(len(result.warnings), 'warning')}, "
              f"{counted(len(result.messages), 'debug message')}"
              + (f" (the newest {len(shown)} of {len(chosen)})" if len(chosen) > len(shown) else ""))
    lines = [f"Runtime evidence for {scope}, last {_duration(min(since or buffer.window, buffer.window))} "
             f"({buffer.state()}): {counts}. Newest first; values are data, secrets redacted."]
    if not chosen:
        lines.append("Nothing was received: no debug node output, node.error or node.warn in that time (is a debug "
                     "node wired and active? did a message pass?).")
    for item in items:
        lines.append(_line(item))
    if statuses:
        lines.append("Node status:")
        lines += [_status_line(item) for item in statuses]
    named = [item.nodeId for item in items if item.kind != "debug"] + [item.nodeId for item in statuses] \
        + [item.nodeId for item in items if item.kind == "debug"]
    return await _with_configuration(lines, named, flows, result.model_dump())


async def get_node_status(ctx: ToolContext, flow_id: str | None = None,
                          node_ids: list[str] | None = None) -> ToolOutput:
    """The last status (dot, colour, text) of nodes: given ones, else the editor's selection, else a tab's.

    Raises:
        ToolFailure: ``flow_not_selected`` (nothing to look at), ``flow_not_found``, or a Node-RED error code.
    """
    buffer = ctx.evidence
    flows = await _flows(ctx)
    by_id = {n["id"]: n for n in flows if isinstance(n, dict) and "id" in n}
    wanted = node_ids or (ctx.node_ids if not flow_id else None)
    if not wanted:
        flow_id = flow_id or ctx.flow_id
        if not flow_id:
            raise ToolFailure("flow_not_selected")
        _check_flow(flow_id, by_id)
        wanted = [n["id"] for n in flows if isinstance(n, dict) and n.get("z") == flow_id]
    if buffer is None:
        return ToolOutput(data=NodeStatusResult(connected=False, statuses=[]).model_dump(), text=NOT_COLLECTED)
    items = await _status_items(ctx, buffer, wanted, by_id, time.time(), STATUSES_SHOWN)
    result = NodeStatusResult(connected=buffer.connected, statuses=items)
    scope = _scope(flow_id, None, by_id) if flow_id else f"{len(wanted)} node(s)"
    lines = [f"Node status for {scope} ({buffer.state()}): {len(items)} of {len(wanted)} nodes show a status."]
    lines += [_status_line(item) for item in items]
    return await _with_configuration(lines, [item.nodeId for item in items], flows, result.model_dump())


async def _status_items(ctx: ToolContext, buffer: EvidenceBuffer, node_ids: list[str],
                        by_id: dict[str, dict[str, Any]], now: float,
                        limit: int = STATUSES_WITH_MESSAGES) -> list[StatusItem]:
    """The last status of ``node_ids`` (newest first, at most ``limit``), each text worded as the editor shows it
    in the request's language (:class:`~service.nodered.status_texts.StatusTexts`)."""
    items = [_status_item(status, by_id, now) for status in buffer.statuses(node_ids)[:limit]]
    for item in items:
        item.text = await buffer.status_texts.shown(ctx.nodered, item.text, item.nodeType, ctx.language)
    return items


async def _with_configuration(lines: list[str], named: list[str], flows: list[dict[str, Any]],
                              data: dict[str, Any]) -> ToolOutput:
    """The tool's output: ``lines``, then the configuration of the nodes ``named`` (errors, statuses, the senders
    of debug messages; :func:`~service.nodered.named_nodes.configuration_of`), which starts at ``config_at``."""
    text = "\n".join(lines)
    configuration = await asyncio.to_thread(configuration_of, named, flows) if named else None
    if configuration is None:
        return ToolOutput(data=data, text=text)
    return ToolOutput(data=data, text=f"{text}\n{CONFIGURATION_HEAD}\n{configuration}", config_at=len(text) + 1)


def _status_line(item: StatusItem) -> str:
    return (f"[{item.nodeId}] {_who(item.nodeType, item.nodeName)}: {item.fill or '-'} {item.shape or '-'} "
            f"\"{item.text or ''}\" ({_duration(item.age)} ago)")


async def _flows(ctx: ToolContext) -> list[dict[str, Any]]:
    try:
        return (await ctx.nodered.get_flows())["flows"]
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None


def _check_flow(flow_id: str, by_id: dict[str, dict[str, Any]]) -> None:
    if by_id.get(flow_id, {}).get("type") not in ("tab", "subflow"):
        known = ", ".join(f'"{n.get("label") or n.get("name") or ""}" ({n["id"]})' for n in by_id.values()
                          if n.get("type") == "tab")
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": known or "none"})


def _with_debug_targets(node_id: str, by_id: dict[str, dict[str, Any]]) -> list[str]:
    """``node_id`` and the debug nodes wired directly to its outputs (they show what it sends)."""
    node = by_id.get(node_id, {})
    targets = [t for port in node.get("wires") or [] for t in port or []]
    return [node_id, *(t for t in targets if by_id.get(t, {}).get("type") == "debug")]


def _item(entry: Evidence, by_id: dict[str, dict[str, Any]], now: float) -> EvidenceItem:
    node = by_id.get(entry.node_id, {})
    return EvidenceItem(kind=entry.kind, nodeId=entry.node_id, nodeType=entry.node_type or node.get("type"),
                        nodeName=entry.node_name or node.get("name") or None, flowId=entry.flow_id,
                        age=round(max(now - entry.time, 0.0), 1), topic=entry.topic, property=entry.property,
                        shape=entry.shape, size=entry.size, value=entry.preview())


def _status_item(status: NodeStatus, by_id: dict[str, dict[str, Any]], now: float) -> StatusItem:
    node = by_id.get(status.node_id, {})
    return StatusItem(nodeId=status.node_id, nodeType=node.get("type"), nodeName=node.get("name") or None,
                      fill=status.fill, shape=status.shape, text=status.text,
                      age=round(max(now - status.time, 0.0), 1))


def _line(item: EvidenceItem) -> str:
    label = {"error": "ERROR", "warning": "WARNING", "debug": "DEBUG"}[item.kind]
    where = f" (tab {item.flowId})" if item.flowId else ""
    detail = ""
    if item.kind == "debug":
        shown = f"msg.{item.property}" if item.property else "msg"
        detail = f" {shown}" + (f" topic={item.topic!r}" if item.topic else "") + f", {item.shape}"
    value = item.value.replace("\n", "\n    ")
    return f"{label} {_duration(item.age)} ago [{item.nodeId}] {_who(item.nodeType, item.nodeName)}{where}{detail}: " \
           f"{value}"


def _who(node_type: str | None, name: str | None) -> str:
    return (node_type or "node") + (f' "{name}"' if name else "")


def _scope(flow_id: str | None, node_id: str | None, by_id: dict[str, dict[str, Any]]) -> str:
    if node_id:
        node = by_id.get(node_id, {})
        return f"node [{node_id}] {_who(node.get('type'), node.get('name'))}"
    if flow_id:
        tab = by_id.get(flow_id, {})
        return f"tab \"{tab.get('label') or tab.get('name') or ''}\" [{flow_id}]"
    return "all tabs"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"

