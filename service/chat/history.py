"""The history a request sends: the session's summary and turns, condensed to the model's context budget (see
:mod:`service.chat.summary`), the new summary kept in memory for the next turn."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from service.chat import events
from service.chat.events import Event
from service.chat.injection import load_patterns
from service.chat.summary import (
    AgentSummarization,
    Condensed,
    Summariser,
    TokenCounter,
    answer_reserve,
    context_budget,
    counter_name,
    history_room,
    summary_messages,
    token_counter,
)
from service.errors import ServiceError
from service.llm.providers import ProviderConfig

if TYPE_CHECKING:
    from service.chat.context import ChatDeps

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


@dataclass(frozen=True)
class Fitted:
    """The history a request carries (``messages``: the summary first when there is one, then the turns kept
    verbatim) and ``left_out``: how many earlier messages reach the model neither verbatim nor through the
    summary (the answer then says so, see :func:`service.chat.prompting.build_prompt`)."""

    messages: list[BaseMessage]
    left_out: int = 0


async def fitted_history(deps: ChatDeps, session_id: str | None, summary: str | None,
                         history: list[dict[str, Any]], fixed: list[BaseMessage],
                         tools: list[str]) -> Fitted:
    """The history for a request whose other messages are ``fixed`` (system prompt, the question with any
    retrieved knowledge) and which offers ``tools`` (their schemas count, at most :data:`MAX_TOOLS_PER_REQUEST`
    of them): ``summary`` and ``history`` within the room :func:`service.chat.summary.history_room` gives (the
    budget less ``fixed``, the tools and the answer's reserve, never under a quarter of the budget). The oldest
    turns are summarised first; only what even the summary leaves no room for is dropped (newest kept), and
    counted in :attr:`Fitted.left_out`. A new summary of a stored session (``session_id``) is saved. With no model
    configured, or a summary call that fails, the oldest turns are dropped instead (logged); the answer step
    reports a missing model."""
    messages = turn_messages(history)
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    try:
        model = deps.models.get(config)
    except ServiceError:
        return Fitted(Condensed(summary, messages).for_model())
    counter, budget, room = _room(deps, model, fixed, tools)
    try:
        condensed = await Summariser(model, room, counter, budget).condense(summary, messages)
    except Exception as err:  # noqa: BLE001 - a provider fault: the answer step meets (and reports) it again
        log.warning("conversation not summarised (%s): oldest turns dropped", type(err).__name__)
        condensed = Condensed(summary, messages)
    kept, kept_summary = list(condensed.messages), condensed.summary
    while kept and counter(Condensed(kept_summary, kept).for_model()) > room:
        kept.pop(0)  # still too long (a huge turn, a long summary): the newest turns win
    if not kept and kept_summary and counter(summary_messages(kept_summary)) > room:
        kept_summary = None  # a summary longer than the whole room: the question goes alone, and says so
    if condensed.changed and condensed.summary and deps.memory is not None and session_id:
        await _save(deps, session_id, condensed.summary, messages, condensed.messages)
    left_out = len(condensed.messages) - len(kept)
    if condensed.summary and not kept_summary:  # what the summary held is left out too
        left_out += max(len(messages) - len(condensed.messages), 1)
    log.info("history: %d of %d messages verbatim, summary %s, %d left out, room %d of %d tokens (%s count)",
             len(kept), len(messages), "yes" if kept_summary else "no", left_out, room, budget,
             counter_name(model))
    return Fitted(Condensed(kept_summary, kept).for_model(), left_out)


def left_out_notice(locales_dir: Path, language: str, left_out: int) -> Event:
    """The ``history_left_out`` notice (``messages``: how many earlier messages the model did not get), worded in
    ``language`` (``historyLeftOut`` of ``locales/<lang>/guardrails.json``)."""
    message = load_patterns(locales_dir).notice("historyLeftOut", language, count=str(left_out))
    return events.notice("history_left_out", message, messages=left_out)


def agent_summarisation(deps: ChatDeps, model: BaseChatModel, system: BaseMessage | None,
                        tools: list[str]) -> AgentSummarization:
    """The summarisation middleware of an agent run with ``system`` as its system prompt and ``tools`` offered:
    the same budget and counter as :func:`fitted_history`, so each model request of the loop stays within
    ``AI_SIDEBAR_CONTEXT_TOKENS`` (or the model's window)."""
    counter, budget, room = _room(deps, model, [system] if system is not None else [], tools)
    return AgentSummarization(model, room, counter, budget)


def _room(deps: ChatDeps, model: BaseChatModel, fixed: list[BaseMessage],
          tools: list[str]) -> tuple[TokenCounter, int, int]:
    """``(counter, budget, room)``: the token counter of ``model``, the tokens one request may hold, and the room
    :func:`service.chat.summary.history_room` leaves the conversation beside ``fixed``, the schemas of ``tools``
    and the answer's reserve (``AI_SIDEBAR_ANSWER_TOKENS``, else :func:`service.chat.summary.answer_reserve`)."""
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    counter = token_counter(model)
    budget = context_budget(model, config.provider, deps.settings.context_tokens)
    others = counter(fixed) + tool_tokens(deps, tools, counter, model)
    return counter, budget, history_room(budget, others, answer_reserve(budget, deps.settings.answer_tokens))


# Tokens of each tool's schema text, per model (its counter): counted once, not at every request and agent run (a
# build round counted ~25 schemas two or three times). Bounded: the models the factory keeps, the tools' texts.
_TOOL_TOKENS: dict[int, tuple[BaseChatModel, dict[str, int]]] = {}
_MAX_MODELS = 16
_MAX_TEXTS = 1024


def tool_tokens(deps: ChatDeps, tools: list[str], counter: Any, model: BaseChatModel | None = None) -> int:
    """Tokens the schemas of ``tools`` take in a request: all of them, or above ``AI_SIDEBAR_TOOL_SEARCH_THRESHOLD``
    (tool search picks some) the :data:`MAX_TOOLS_PER_REQUEST` largest. With ``model`` (whose counter ``counter``
    is) each schema's count is kept for the next request."""
    kept = _TOOL_TOKENS.get(id(model)) if model is not None else None
    if model is not None and (kept is None or kept[0] is not model):
        if len(_TOOL_TOKENS) >= _MAX_MODELS:
            _TOOL_TOKENS.pop(next(iter(_TOOL_TOKENS)))
        kept = _TOOL_TOKENS[id(model)] = (model, {})
    counts = kept[1] if kept is not None else {}
    sizes = []
    for name in tools:
        try:
            description, schema = deps.tools.describe(name)
        except Exception:  # noqa: BLE001 - an MCP tool of a server not started yet: no schema to count
            continue
        text = json.dumps({"name": name, "description": description, "parameters": schema})
        size = counts.get(text)
        if size is None:
            size = counter([HumanMessage(text)])
            if len(counts) >= _MAX_TEXTS:
                counts.clear()
            counts[text] = size
        sizes.append(size)
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
