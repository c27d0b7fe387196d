"""The last notices before an answer ends: unknown node types in a generated flow, and text in the editor's
flow that reads like instructions to the model."""

from __future__ import annotations

import asyncio
import logging

from service.chat import events
from service.chat.context import ChatDeps, ChatResult, Turn
from service.chat.events import Emit
from service.chat.injection import load_patterns, suspicious_nodes
from service.chat.injection import notice_message as injection_message
from service.knowledge.flowcheck import flow_node_types, notice_message, unknown_types
from service.nodered.client import NodeRedError
from service.requests import StreamChatRequest

log = logging.getLogger(__name__)


async def check_flow_types(deps: ChatDeps, turn: Turn, emit: Emit, result: ChatResult) -> None:
    """Before the answer ends: every node type of a flow export in a ```json block of the answer is checked
    against the installed node sets (the knowledge refresher's ``GET /nodes``, else the request's own read); the
    unknown ones are named in one ``notice`` event (``unknown_node_types``) in the request's language. Node-RED
    unreadable: no check (the answer stands)."""
    types = flow_node_types(result.answer)
    if not types:
        return
    slot = deps.knowledge
    try:
        node_sets = (await slot.refresher.node_sets() if slot is not None and slot.refresher is not None
                     else await deps.nodered.get_nodes())
    except NodeRedError as err:
        log.info("generated flow not checked: %s", err.code)
        return
    unknown = unknown_types(types, node_sets)
    if not unknown:
        return
    sentences = {}
    if slot is not None and slot.knowledge is not None:
        sentences = slot.knowledge.lexicons.get(turn.catalog.language).unknown_node_types
    await emit(events.notice("unknown_node_types", notice_message(unknown, sentences),
                             types=[item.as_event() for item in unknown]))


async def warn_of_injection(request: StreamChatRequest, deps: ChatDeps, turn: Turn, emit: Emit) -> None:
    """Before the answer ends: the editor's flow (``flowData``) holding text that reads like instructions to the
    model gets one ``notice`` (``possible_injection``) naming those nodes (``nodes`` ``[{id, type, name}]``)."""
    patterns = load_patterns(deps.settings.locales_dir)
    # The flow's text (every function's code, megabytes in a hostile request) is searched off the event loop.
    found = await asyncio.to_thread(suspicious_nodes, request.flowData, patterns) if request.flowData else []
    if found:
        sentence = patterns.sentence(turn.catalog.language)
        await emit(events.notice("possible_injection", injection_message(found, sentence), nodes=found))
