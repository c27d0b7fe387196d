"""Issue 31: an answer that could not change the flows to a request to change them says how to get the change.

The sidebar's Ask mode (``StreamChatRequest.mode == "ask"``) offers the model no write tool; a scenario or an
``ai-config`` node may offer no tools at all. Either way a request that needs tools
(:meth:`service.knowledge.router.Router.needs_tools`) is answered without the means to propose a change, and the
answer ends with one ``notice`` telling the user what to do: ``change_needs_agent`` (switch to Agent mode; the
sidebar offers a button that switches and sends the question again) or ``change_needs_tools`` (choose a scenario or
AI configuration that allows tools). Only for an editor user who may write: a flow node cannot switch modes, and a
read-only user could not approve the change anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.chat import events
from service.chat.agent_path import agent_tool_names, uses_agent
from service.chat.injection import load_patterns

if TYPE_CHECKING:
    from service.chat.context import ChatDeps, ChatResult, Turn
    from service.chat.events import Emit
    from service.requests import StreamChatRequest

# notice code → sentence key of locales/<lang>/guardrails.json
SENTENCES = {"change_needs_agent": "changeNeedsAgent", "change_needs_tools": "changeNeedsTools"}


def needed_notice(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult) -> str | None:
    """The notice code the answer needs (a key of :data:`SENTENCES`), or ``None``: the caller cannot act on it,
    the run waits for an approval, the message does not need tools, or write tools were offered."""
    if deps.identity.kind == "flow" or not deps.may_write or deps.approvals is None or result.status is not None:
        return None
    router = deps.knowledge.router if deps.knowledge is not None else None
    if router is None or not router.needs_tools(request.message, turn.catalog.language):
        return None
    if request.mode == "ask":
        # Ask mode has the read tools: only a change needs Agent mode, a runtime question is answered here.
        return "change_needs_agent" if router.asks_change(request.message, turn.catalog.language) else None
    if uses_agent(deps, turn) and any(deps.tools.writes(name) for name in agent_tool_names(deps, turn)):
        return None
    if not deps.model_calls_tools:  # the model is the reason: service.chat.model_limits says so
        return None
    return "change_needs_tools"


async def refuse_in_ask_mode(request: StreamChatRequest, turn: Turn, emit: Emit, deps: ChatDeps) -> bool:
    """``@tools:<write tool>`` in Ask mode: emit the ``change_needs_agent`` notice instead of asking for an approval
    (``True``: the run ends here); ``False`` in any other mode."""
    if request.mode != "ask":
        return False
    sentence = load_patterns(deps.settings.locales_dir).notice(SENTENCES["change_needs_agent"],
                                                               turn.catalog.language)
    await emit(events.notice("change_needs_agent", sentence, mode="ask"))
    return True


async def tell_how_to_change(request: StreamChatRequest, deps: ChatDeps, turn: Turn, emit: Emit,
                             result: ChatResult) -> None:
    """Emit the :func:`needed_notice` (``{type: "notice", code, message, mode}``, ``mode`` the one the request
    was answered in), worded in the answer's language, if any."""
    code = needed_notice(request, deps, turn, result)
    if code is None:
        return
    sentence = load_patterns(deps.settings.locales_dir).notice(SENTENCES[code], turn.catalog.language)
    await emit(events.notice(code, sentence, mode=request.mode or "agent"))
