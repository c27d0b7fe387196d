"""The history a request sends: the session's summary and turns, condensed to the model's context budget (see
:mod:`service.chat.summary`), the new summary kept in memory for the next turn."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from service.chat.summary import (
    ANSWER_RESERVE,
    AgentSummarization,
    Condensed,
    Summariser,
    TokenCounter,
    context_budget,
    counter_name,
    token_counter,
)
from service.errors import ServiceError
from service.llm.providers import ProviderConfig

if TYPE_CHECKING:
    from service.chat.pipeline import ChatDeps

log = logging.getLogger(__name__)

# At most this many tool schemas go out with one agent request (tool search picks them above the threshold).
MAX_TOOLS_PER_REQUEST = 10


def turn_messages(history: list[dict[str, Any]]) -> list[BaseMessage]:
    """Earlier turns (``[{role, content, id?}]``) as LangChain messages; a stored message keeps its id (a string)
    so that the summariser's cut can be mapped back to the store."""
    out: list[BaseMessage] = []
    for turn in history:
        ident = str(turn["id"]) if turn.get("id") is not None else None
        if turn.get("role") == "user":
            out.append(HumanMessage(turn.get("content", ""), id=ident))
        elif turn.get("role") == "assistant":
            out.append(AIMessage(turn.get("content", ""), id=ident))
    return out


async def fitted_history(deps: ChatDeps, session_id: str | None, summary: str | None,
                         history: list[dict[str, Any]], fixed: list[BaseMessage],
                         tools: list[str]) -> list[BaseMessage]:
    """The history for a request whose other messages are ``fixed`` (system prompt, question) and which offers
    ``tools`` (their schemas count, at most :data:`MAX_TOOLS_PER_REQUEST` of them): ``summary`` and ``history``
    within the model's budget less ``fixed``, the tools and :data:`ANSWER_RESERVE`. A new summary of a stored
    session (``session_id``) is saved. With no model configured, or a summary call that fails, the oldest turns
    are dropped instead (logged); the answer step reports a missing model."""
    messages = turn_messages(history)
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    try:
        model = deps.models.get(config)
    except ServiceError:
        return Condensed(summary, messages).for_model()
    counter, budget, room = _room(deps, model, fixed, tools)
    try:
        condensed = await Summariser(model, room, counter, budget).condense(summary, messages)
    except Exception as err:  # noqa: BLE001 - a provider fault: the answer step meets (and reports) it again
        log.warning("conversation not summarised (%s): oldest turns dropped", type(err).__name__)
        condensed = Condensed(summary, messages)
    kept = list(condensed.messages)
    while kept and counter([*Condensed(condensed.summary, kept).for_model()]) > room:
        kept.pop(0)  # still too long (a single huge turn, no summary): the newest turns win
    if condensed.changed and condensed.summary and deps.memory is not None and session_id:
        await _save(deps, session_id, condensed.summary, messages, condensed.messages)
    log.info("history: %d of %d messages verbatim, summary %s, budget %d tokens (%s count)", len(kept),
             len(messages), "yes" if condensed.summary else "no", budget, counter_name(model))
    return Condensed(condensed.summary, kept).for_model()


def agent_summarisation(deps: ChatDeps, model: BaseChatModel, system: BaseMessage | None,
                        tools: list[str]) -> AgentSummarization:
    """The summarisation middleware of an agent run with ``system`` as its system prompt and ``tools`` offered:
    the same budget and counter as :func:`fitted_history`, so each model request of the loop stays within
    ``AI_SIDEBAR_CONTEXT_TOKENS`` (or the model's window)."""
    counter, budget, room = _room(deps, model, [system] if system is not None else [], tools)
    return AgentSummarization(model, room, counter, budget)


def _room(deps: ChatDeps, model: BaseChatModel, fixed: list[BaseMessage],
          tools: list[str]) -> tuple[TokenCounter, int, int]:
    """``(counter, budget, room)``: the token counter of ``model``, the tokens one request may hold, and what is left
    of them for the conversation beside ``fixed``, the schemas of ``tools`` and :data:`ANSWER_RESERVE`."""
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    counter = token_counter(model)
    budget = context_budget(model, config.provider, deps.settings.context_tokens)
    return counter, budget, budget - counter(fixed) - tool_tokens(deps, tools, counter) - ANSWER_RESERVE


def tool_tokens(deps: ChatDeps, tools: list[str], counter: Any) -> int:
    """Tokens the schemas of ``tools`` take in a request: all of them, or above ``AI_SIDEBAR_TOOL_SEARCH_THRESHOLD``
    (tool search picks some) the :data:`MAX_TOOLS_PER_REQUEST` largest."""
    sizes = []
    for name in tools:
        try:
            description, schema = deps.tools.describe(name)
        except Exception:  # noqa: BLE001 - an MCP tool of a server not started yet: no schema to count
            continue
        sizes.append(counter([HumanMessage(json.dumps({"name": name, "description": description,
                                                       "parameters": schema}))]))
    if len(tools) > deps.settings.tool_search_threshold:
        sizes = sorted(sizes, reverse=True)[:MAX_TOOLS_PER_REQUEST]
    return sum(sizes)


async def _save(deps: ChatDeps, session_id: str, summary: str, before: list[BaseMessage],
                kept: list[BaseMessage]) -> None:
    """Store ``summary`` as covering every stored message of ``before`` that is not in ``kept``."""
    kept_ids = {message.id for message in kept}
    folded = [int(message.id) for message in before
              if message.id is not None and message.id not in kept_ids and str(message.id).isdigit()]
    if not folded or deps.memory is None:
        return
    try:
        await deps.memory.save_summary(deps.identity, session_id, summary, max(folded))
    except ServiceError as err:
        log.warning("summary of session %s not saved: %s", session_id, err.code)
