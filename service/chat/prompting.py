"""The prompt of a turn: system prompt, the history fitted to the model's budget, the user's message (or, after a
tool, the answer prompt with its result)."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from service.chat.agent_path import agent_tool_names, uses_agent
from service.chat.attachments import with_attachments, with_images
from service.chat.context import ChatDeps, ChatResult, Turn
from service.chat.events import Emit
from service.chat.history import fitted_history, left_out_notice
from service.chat.injection import DEFAULT_LANGUAGE
from service.chat.mentions import with_mentions
from service.chat.named_context import with_named_nodes
from service.chat.prompts import (
    describe_flow,
    describe_nodes,
    system_message,
    tool_answer_prompt,
    with_caught_error,
    with_debug_messages,
)
from service.errors import ServiceError
from service.knowledge.retrieval import context_message
from service.nodered.client import UNKNOWN_VERSION
from service.requests import StreamChatRequest

log = logging.getLogger(__name__)


async def build_prompt(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                  emit: Emit | None = None) -> list[BaseMessage]:
    """System prompt, history, then the user's message, or after a tool the answer prompt with its result. When
    earlier turns had to be left out (not even their summary fits), one ``history_left_out`` notice says so
    through ``emit``."""
    flow_label = request.selectedFlow.label if request.selectedFlow else None
    words = turn.catalog.data.placeholderWords  # the values in the prompt's language
    values = {"selectedFlow": describe_flow(request.flow_id, flow_label, words),
              "selectedNodes": describe_nodes(request.selectedNodes, words)}
    if "nodeRedVersion" in turn.scenario.systemPrompt:
        version = await deps.nodered.version()
        values["nodeRedVersion"] = words["unknown"] if version == UNKNOWN_VERSION else version
    messages: list[BaseMessage] = [system_message(turn.catalog, turn.scenario, values)]
    if turn.history is None:
        turn.history = await earlier_turns(request, deps, result, turn)
    question = with_caught_error(with_debug_messages(request.message, request.debugMessages), request.error)
    question = await with_attachments(question, request.attachments)
    run = turn.tool_run
    if deps.tools_enabled:  # reading node configuration is a tool's reach: withheld with the tools
        question = await with_named_nodes(question, request, deps.nodered, run.output if run else None)
        question = await with_mentions(question, request.mentions, request.flowData, deps.nodered, deps.memory,
                                       deps.identity)
    if run is None:
        asked = HumanMessage(context_message(question, turn.retrieved) if turn.retrieved else question)
    else:
        asked = tool_answer_prompt(
            question, turn.task, run.name,
            deps.tools.for_model(run.name, run.output.text, run.output.config_at) if run.output else None,
            run.failure.message if run.failure else None,
            turn.catalog.data.answerInstruction)
    asked = asked.model_copy(update={"content": with_images(asked.content, request.attachments)})
    tools = agent_tool_names(deps, turn) if uses_agent(deps, turn) else []
    history = await fitted_history(deps, result.session_id if result.session_existed else None, turn.summary,
                                   turn.history, [*messages, asked], tools)
    if history.left_out and emit is not None:
        await emit(left_out_notice(deps.settings.locales_dir, result.language or DEFAULT_LANGUAGE, history.left_out))
    return [*messages, *history.messages, asked]


async def earlier_turns(request: StreamChatRequest, deps: ChatDeps, result: ChatResult,
                   turn: Turn) -> list[dict[str, Any]]:
    """Earlier turns for the model: the session's turns after its stored summary (which goes to
    ``turn.summary``) from memory, else what the client sent; :func:`fitted_history` fits them to the budget."""
    session_id = result.session_id
    if deps.memory is not None and request.sessionId:
        try:
            owned = await deps.memory.owns(deps.identity, session_id)
            # Stored when the request came in (the route checks before the stream opens) stays so: a session the
            # user deletes while this answer is prepared must not be created again by saving it.
            result.session_existed = result.session_existed or owned
            summary, turns = (await deps.memory.conversation(deps.identity, session_id) if owned else (None, []))
        except ServiceError as err:
            log.warning("history of session %s not read: %s", session_id, err.code)
            summary, turns = None, []
        if summary is not None:
            turn.summary = summary.text
        if turns or summary is not None:
            return [{"role": t.role, "content": t.content, "id": t.id} for t in turns]
    return [turn.model_dump() for turn in request.history]
