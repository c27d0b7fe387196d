"""The chat stream's events (DESIGN.md, "Stream events"), built in one place for every way of answering
(keyword-forced tool, ``@tools:``, agent, plain chat), with one preview limit.

``error`` events come from :func:`service.errors.error_event`; ``done`` from the route that ends the stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from service.chat.thinking import ThinkSplitter, reasoning_of
from service.nodered.messages import CodedError, english
from service.nodered.text_budget import bounded

Event = dict[str, Any]
Emit = Callable[[Event], Awaitable[None]]
Origin = Literal["direct", "keyword", "agent", "router", "error"]

PREVIEW_LIMIT = 8_000  # characters of a tool result shown to the user in a tool_result event
SOURCES_LIMIT = 20     # sources listed on one tool_result event (contracts16 A)


class Answer(Protocol):
    """What the relayed text accumulates into (:class:`service.chat.context.ChatResult`): the answer's text and
    what splits ``<think>`` parts off it (:mod:`service.chat.thinking`)."""

    answer: str
    think: ThinkSplitter


def token(content: str) -> Event:
    """One text chunk of the model's answer, in order."""
    return {"type": "token", "content": content}


def thinking(text: str) -> Event:
    """One piece of the model's reasoning, in order (:mod:`service.chat.thinking`): shown apart, never part of the
    answer's text, never stored."""
    return {"type": "thinking", "text": text}


def tool_call(tool: str, params: Any, origin: Origin) -> Event:
    """Before a tool runs. ``origin``: ``direct`` (the user's ``@tools:``), ``keyword`` (forced by a scenario
    keyword), ``agent`` (the model's choice), ``router`` (knowledge retrieved for the question before the model
    answers) or ``error`` (the node that raised the caught error an ``ai-chat`` node asks about)."""
    return {"type": "tool_call", "tool": tool, "params": params, "origin": origin}


class FailedToolResult(dict):
    """A ``tool_result`` event of a tool that failed with a coded error, keeping the error so that the stream can
    word its ``message`` in the request's language (:func:`service.errors.localized`, as for ``error`` events)."""

    def __init__(self, event: Event, failure: CodedError):
        super().__init__(event, code=failure.code, message=failure.message)
        self.failure = failure


def tool_result(tool: str, text: str, ok: bool, sources: list[dict[str, Any]] | None = None,
                failure: CodedError | None = None) -> Event:
    """After a tool ran: its text (or failure sentence) bounded to :data:`PREVIEW_LIMIT` characters.

    ``result`` is what the model reads (English); a tool that failed with a coded error (``failure``) also carries
    its ``code`` and the sentence as ``message``, in the request's language once the stream sends it.
    ``sources`` (the knowledge tools only; see :func:`service.knowledge.retrieval.sources`): where the result came
    from, at most :data:`SOURCES_LIMIT`, for the sidebar's links; the key is absent when ``None``.
    """
    event: Event = {"type": "tool_result", "tool": tool, "result": bounded(text, PREVIEW_LIMIT), "ok": ok}
    if sources is not None:
        event["sources"] = sources[:SOURCES_LIMIT]
    return FailedToolResult(event, failure) if failure is not None else event


async def relay_chunk(chunk: Any, emit: Emit, answer: Answer) -> None:
    """One streamed model chunk: its reasoning (a ``reasoning_content`` delta, Anthropic's ``thinking`` blocks, the
    text between ``<think>`` and ``</think>``) as ``thinking`` events, the rest of its text as ``token`` events and
    into ``answer.answer``. (Its tokens are counted for the whole turn by :func:`service.llm.usage.counted`, every
    model call included, reasoning once, as the provider reports it.)"""
    reasoning = reasoning_of(chunk)
    if reasoning:
        await emit(thinking(reasoning))
    text = chunk.text if isinstance(chunk.text, str) else chunk.text()
    if text:
        await _relay_parts(answer.think.feed(text), emit, answer)


async def relay_end(emit: Emit, answer: Answer) -> None:
    """The end of a model's stream: text held back as a possible ``<think>`` tag (``<thi``) is text after all."""
    await _relay_parts(answer.think.flush(), emit, answer)


async def _relay_parts(parts: list[tuple[bool, str]], emit: Emit, answer: Answer) -> None:
    for is_thinking, part in parts:
        if is_thinking:
            await emit(thinking(part))
        else:
            answer.answer += part
            await emit(token(part))


def notice(code: str, message: str, **fields: Any) -> Event:
    """Something the user should know about the answer, not a fault (the answer stands): a stable snake_case
    ``code``, a ``message`` in the request's language, and the code's own fields (``unknown_node_types``:
    ``types`` ``[{type, closest?, module?}]``). Sent before ``done``."""
    return {"type": "notice", "code": code, "message": message, **fields}


class ApprovalRequired(dict):
    """An ``approval_required`` event that keeps each action's summary sentence (``{key, params}`` or ``None``), so
    that the stream can word the summaries in the request's language (:func:`service.errors.localized`, as for
    ``error`` events)."""

    def __init__(self, event: Event, sentences: list[Any], warnings: list[Any] | None = None):
        super().__init__(event)
        self.sentences = sentences
        self.warnings = warnings or [None] * len(sentences)


def approval_required(run_id: str, resume_token: str, actions: list[dict[str, Any]]) -> Event:
    """A write waits for the user: ``actions`` ``[{tool, args, summary, diff}]`` in the order the decisions are
    expected; ``resumeToken`` answers them (``POST /ai-sidebar/resume``). ``done`` follows with ``status:
    "awaiting_approval"``. ``summary`` is English here and in the request's language once the stream sends it;
    so is ``warning``, present when the change writes new values that look like secrets (shown in full in
    ``diff``: :mod:`service.nodered.card_values`). ``parts`` (a write's, when its diff has any): what the user may
    untick (:func:`service.nodered.change_parts.parts_of`); ``ticked``: the parts to show ticked when the card is
    shown again after a resume ticked some (all when absent); ``adjusted``: re-validation changed those (nothing
    was applied)."""
    shown = [{"tool": a["tool"], "args": a["args"], "summary": a["summary"], "diff": a["diff"],
              **({"parts": a["parts"]} if a.get("parts") else {}),
              **({"ticked": a["ticked"]} if a.get("ticked") is not None else {}),
              **({"adjusted": True} if a.get("adjusted") else {}),
              **({"warning": english(a["warning"]["key"], a["warning"]["params"])} if a.get("warning") else {})}
             for a in actions]
    return ApprovalRequired({"type": "approval_required", "runId": run_id, "resumeToken": resume_token,
                             "actions": shown}, [a.get("sentence") for a in actions],
                            [a.get("warning") for a in actions])


class Summarised(dict):
    """An event whose ``summary`` is a catalog sentence (``sentence``: a :class:`service.nodered.messages.Sentence`),
    English here and in the request's language once the stream sends it (a build's ``verdict``)."""

    def __init__(self, event: Event, sentence: Any):
        super().__init__(event)
        self.sentence = sentence


def flow_change(tool: str, changes: dict[str, Any]) -> Event:
    """An approved write for a request from the editor, handed to the sidebar undeployed (to apply as one undoable
    edit): ``changes`` is the diff (added, removed, changed, wires) plus ``nodes``, the full new nodes."""
    return {"type": "flow_change", "tool": tool, "changes": changes}
