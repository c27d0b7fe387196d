"""The chat pipeline (DESIGN.md, "The chat pipeline"): the orchestrator of one chat request.

The paths are modules of their own that this orchestrator reaches through the router graph
(:mod:`service.chat.router_graph`), none of them importing it: the first decisions and the keyword path
(:mod:`service.chat.keyword_path`), the direct trigger (:mod:`service.chat.direct`), retrieval
(:mod:`service.chat.retrieval_path`), the agent (:mod:`service.chat.agent_path`) and the pure chat
(:mod:`service.chat.answer`); what they share is :mod:`service.chat.context`.

Every run emits events through ``emit`` and always ends with exactly one ``done``; each fault gives exactly one
``error`` event. A client that goes away raises ``ConnectionResetError`` out of ``emit``; the run stops there.
"""

from __future__ import annotations

from service.chat.attachments import image_refusal
from service.chat.context import ChatDeps, ChatResult
from service.chat.events import Emit
from service.chat.followups import suggest
from service.chat.router_graph import run_routed
from service.errors import error_event
from service.requests import StreamChatRequest


async def run_chat(request: StreamChatRequest, deps: ChatDeps, emit: Emit, result: ChatResult) -> ChatResult:
    """Answer one chat request, emitting ``tool_call``/``tool_result``/``token``/``error`` events (not ``done``)
    and filling ``result`` as it goes.

    The router graph (:mod:`service.chat.router_graph`) runs the paths' steps: scenario and budget, then a direct
    trigger (``@tools:``) or the scenario keywords (which may switch the language and force a tool), the tool run
    or else the routed retrieval (which answers alone when no model is configured), the prompt, and the answer:
    one model call after a tool or retrieval, else the agent (or a plain chat without tools); a turn that ended
    normally then gets its follow-up suggestions (``result.suggestions``, :mod:`service.chat.followups`). The
    caller sends ``done`` and saves the turn. An image attached for a model that takes none ends the run at once
    with an ``images_not_supported`` error (:func:`service.chat.attachments.image_refusal`). Raises
    ``ConnectionResetError`` when the client is gone.
    """
    refusal = image_refusal(request, deps)
    if refusal is not None:  # before any step: nothing goes to a model that cannot see the image
        await emit(error_event(refusal))
        return result
    await run_routed(request, deps, emit, result)
    suggest(result, locales_dir=deps.settings.locales_dir, scenarios=deps.scenarios, message=request.message,
            history=[turn.content for turn in request.history if turn.role == "user"],
            mode=request.mode, brought_error=bool(request.error or request.debugMessages),
            selected_nodes=bool(request.selectedNodes), deployed=request.apply == "deploy")
    return result
