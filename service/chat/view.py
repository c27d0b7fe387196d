"""What the sidebar showed of an answer, kept with it so that a reopened conversation shows the same: the stream's
events other than text (tool cards with their sources, approval cards, notices, errors in the request's language,
the turn's usage), each marked with ``at``, the number of characters of the answer's text sent before it. The
sidebar replays them through the code that renders the live stream (resources/answer.js), the text cut at those
marks, so nothing is rendered twice in two ways.

Stored events never hold a secret: tool parameters and approval arguments are redacted as the audit redacts them
(:func:`service.nodered.node_secrets.strip_secrets`), tool results and messages with
:func:`~service.nodered.redaction.redact_text`; an ``approval_required`` keeps no resume token, a ``flow_change``
no changes (the editor applied them once; what it made of them is the approval's ``applied``).
"""

from __future__ import annotations

from typing import Any, Protocol

from service.chat.events import Emit, Event
from service.nodered.node_secrets import strip_secrets
from service.nodered.redaction import redact_text
from service.nodered.text_budget import bounded
from service.nodered.write_plans import redacted_diff

# Events of a stream that the sidebar shows besides text (DESIGN.md "Stream events"); ``done`` is added by the save.
SHOWN = frozenset({"tool_call", "tool_result", "error", "notice", "approval_required", "flow_change"})
MAX_EVENTS = 200          # at most this many are kept per answer (an agent run stops at 12 tool calls by default)
RESULT_CHARS = 4_000      # of a tool result: the tool card shows no more (answer.js RESULT_PREVIEW_CHARS)


class Viewed(Protocol):
    """What a run accumulates (:class:`service.chat.context.ChatResult`): its text and its shown events, each as
    ``(at, event)``, the event as it was sent (:func:`stored_events` makes the stored form when the turn is saved)."""

    answer: str
    view: list[tuple[int, Event]]


def recording_view(emit: Emit, result: Viewed) -> Emit:
    """``emit`` that also keeps each shown event in ``result.view`` with ``at``. Put it inside
    :func:`service.errors.localized`, so that error sentences are kept as the user read them.

    The event is kept as sent (a shallow copy), and redacted only when the turn is saved (:func:`stored_events`):
    a search's tool result is sent before the model is asked, and redacting it there delayed the first token.
    """
    async def recording(event: Event) -> None:
        if event.get("type") in SHOWN and len(result.view) < MAX_EVENTS:
            result.view.append((len(result.answer), dict(event)))
        await emit(event)
    return recording


def stored_events(view: list[tuple[int, Event]]) -> list[Event]:
    """The stored form (:func:`stored_event`) of each ``(at, event)`` a :func:`recording_view` kept."""
    return [stored_event(event, at) for at, event in view]


def stored_event(event: Event, at: int) -> Event:
    """The stored form of one shown stream event (see the module's description), with ``at`` (characters of text
    before it). Pure: the event is not changed."""
    kind = event["type"]
    if kind == "tool_call":
        kept: Event = {"type": kind, "tool": event.get("tool"), "params": redacted(event.get("params")),
                       "origin": event.get("origin")}
    elif kind == "tool_result":
        kept = {"type": kind, "tool": event.get("tool"), "ok": event.get("ok"),
                "result": redact_text(bounded(str(event.get("result") or ""), RESULT_CHARS))}
        for key in ("sources", "code"):
            if key in event:
                kept[key] = event[key]
        if "message" in event:
            kept["message"] = redact_text(str(event["message"]))
    elif kind == "approval_required":
        kept = {"type": kind, "runId": event.get("runId"),
                "actions": [{"tool": a.get("tool"), "args": redacted(a.get("args")), "summary": a.get("summary"),
                             "diff": redacted_diff(a["diff"]) if isinstance(a.get("diff"), dict) else a.get("diff"),
                             **({"warning": a["warning"]} if a.get("warning") else {})}
                            for a in event.get("actions") or []]}
    elif kind == "flow_change":
        kept = {"type": kind, "tool": event.get("tool")}
    elif kind == "error":
        kept = {"type": kind, "code": event.get("code"), "message": redact_text(str(event.get("message") or ""))}
    else:  # notice: its code, its sentence and the code's own fields (node ids, types, a server's name)
        kept = dict(event)
        if isinstance(kept.get("message"), str):
            kept["message"] = redact_text(kept["message"])
    kept["at"] = at
    return kept


def redacted(params: Any) -> Any:
    """Tool parameters or approval arguments without secrets: an object as the audit redacts it, its ``nodes``
    (a flow to add) node by node with the ids among them kept as references; a list item by item; text with
    :func:`redact_text`."""
    if isinstance(params, dict):
        nodes = params.get("nodes")
        kept = strip_secrets({key: value for key, value in params.items() if key != "nodes"})
        if isinstance(nodes, list):
            ids = {node["id"] for node in nodes if isinstance(node, dict) and isinstance(node.get("id"), str)}
            kept["nodes"] = [strip_secrets(node, ids) if isinstance(node, dict) else redacted(node) for node in nodes]
        return kept
    if isinstance(params, list):
        return [redacted(item) for item in params]
    if isinstance(params, str):
        return redact_text(params)
    return params
