"""Stream events worded in the request's language on their way out: error events, failed tool results and the
summaries of approval cards (codes unchanged). Every event of a stream leaves through :func:`localized`."""

from __future__ import annotations

from typing import Any

from service.chat.events import ApprovalRequired, Emit, FailedToolResult, Summarised
from service.errors import ErrorEvent
from service.nodered.messages import MessageCatalog, Sentence


def localized(emit: Emit, catalog: MessageCatalog, language: str) -> Emit:
    """``emit`` with every :class:`ErrorEvent`, the ``message`` of every failed ``tool_result``
    (:class:`service.chat.events.FailedToolResult`) and the action summaries of every ``approval_required``
    (:class:`service.chat.events.ApprovalRequired`) and the ``summary`` of a ``verdict``
    (:class:`service.chat.events.Summarised`) worded in ``language`` (codes unchanged); other events pass as
    they are. Every event of a stream leaves through this function."""
    async def send(event: dict[str, Any]) -> None:
        await emit(localized_event(event, catalog, language))
    return send


def localized_event(event: dict[str, Any], catalog: MessageCatalog, language: str) -> dict[str, Any]:
    """One event as :func:`localized` sends it (also for an event answered outside a stream: execute-tool's)."""
    if isinstance(event, ErrorEvent):
        return {**event, "message": event.error.translated(catalog, language)}
    if isinstance(event, FailedToolResult):
        return {**event, "message": event.failure.translated(catalog, language)}
    if isinstance(event, Summarised):
        return {**event, "summary": Sentence.translated(event.sentence, catalog, language, event["summary"])}
    if isinstance(event, ApprovalRequired):
        actions = localized_summaries(event["actions"], event.sentences, catalog, language)
        return {**event, "actions": [{**action, "warning": Sentence.translated(warning, catalog, language,
                                                                               action["warning"])}
                                     if action.get("warning") else action
                                     for action, warning in zip(actions, event.warnings, strict=True)]}
    return event


def localized_summaries(actions: list[dict[str, Any]], sentences: list[Any], catalog: MessageCatalog,
                        language: str) -> list[dict[str, Any]]:
    """``actions`` (``[{..., summary}]``) with each ``summary`` worded in ``language`` from its sentence
    (``sentences``, in the same order; ``None``: kept in English)."""
    return [{**action, "summary": Sentence.translated(sentence, catalog, language, action["summary"])}
            for action, sentence in zip(actions, sentences, strict=True)]
