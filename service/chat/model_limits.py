"""Issue 38: a model that cannot call tools (configured so, or its server refused tools) answers without the agent,
and the answer says so once: a ``model_without_tools`` notice (``{type: "notice", code, message, model}``) when the
turn was one for the agent (:func:`service.chat.agent_path.wants_agent`), so the user knows why the assistant did not
read or change the flows itself and what to choose instead. Tools the service runs from the question's words and
retrieval still answered (the router's other paths).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.chat import events
from service.chat.agent_path import wants_agent
from service.chat.injection import load_patterns
from service.llm.providers import ProviderConfig

if TYPE_CHECKING:
    from service.chat.context import ChatDeps, ChatResult, Turn
    from service.chat.events import Emit


async def tell_model_limits(deps: ChatDeps, turn: Turn, emit: Emit, result: ChatResult) -> None:
    """Emit the ``model_without_tools`` notice, worded in the answer's language, when the turn wanted the agent
    and the model cannot call tools; nothing otherwise (also not for a run that waits for an approval)."""
    if result.status is not None or deps.model_calls_tools or not wants_agent(deps, turn):
        return
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    model = config.model or config.deployment or config.provider
    sentence = load_patterns(deps.settings.locales_dir).notice("modelWithoutTools", turn.catalog.language,
                                                               model=model)
    await emit(events.notice("model_without_tools", sentence, model=model))
