"""One assist run (contracts20): read the node's context, ask the model with the kind's prompt, relay its text as
``token`` events, then emit exactly one ``proposal`` or one ``error`` (``no_proposal``, ``invalid_json``).

The model call, its limits, token events, provider errors and the daily budget are the chat pipeline's own
(:func:`service.chat.answer.stream_answer`, :func:`~service.chat.ledger.within_budget`). Nothing is stored
but the run's token usage (the route records it).
"""

from __future__ import annotations

import logging

from service.assist.context import node_context
from service.assist.prompts import assist_messages
from service.assist.proposal import proposal_event
from service.chat.answer import stream_answer
from service.chat.context import ChatDeps, ChatResult, recording_errors
from service.chat.events import Emit
from service.chat.ledger import within_budget
from service.errors import ServiceError, error_event
from service.requests import AssistRequest

log = logging.getLogger(__name__)


async def run_assist(request: AssistRequest, deps: ChatDeps, emit: Emit, result: ChatResult) -> ChatResult:
    """Answer one assist request, emitting ``token`` events, then one ``proposal`` or one ``error`` event (not
    ``done``); ``result`` collects the answer text, error codes and language. Raises ``ConnectionResetError`` when
    the client is gone."""
    emit = recording_errors(emit, result)
    if not await within_budget(deps, emit):
        return result
    catalog = deps.scenarios.get(request.language)
    result.language = catalog.language
    found = await node_context(deps.nodered, deps.evidence, request.context.nodeId)
    messages = assist_messages(request, found, catalog.data.answerInstruction)
    await stream_answer(messages, deps, emit, result)
    if result.errors:
        return result
    code = request.context.code
    try:
        event = proposal_event(request.kind, result.answer, code.onMessage if code else "", found.samples)
    except ServiceError as err:
        await emit(error_event(err))
        return result
    await emit(event)
    log.info("assist kind=%s language=%s neighbours=%d samples=%d chars=%d", request.kind, catalog.language,
             len(found.upstream) + len(found.downstream), len(found.samples), len(result.answer))
    return result
