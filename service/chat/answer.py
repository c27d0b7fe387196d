"""One model call: the pure chat path (:func:`stream_answer`) and the wrapper every path calls the model through
(:func:`with_model`: one ``error`` event for a missing configuration or a provider fault, secrets redacted)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from service.chat import events
from service.chat.context import ChatDeps, ChatResult
from service.chat.events import Emit
from service.errors import ServiceError, error_event
from service.llm.endpoints import located
from service.llm.providers import ProviderConfig, first_chunk_within, provider_error
from service.memory.db import MemoryUnavailable

log = logging.getLogger(__name__)


def tools_unsupported(exc: BaseException) -> bool:
    """A 400 from the provider that says the model does not do tool calling."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status == 400 and "tool" in text and any(w in text for w in ("support", "not allowed", "unknown"))


async def stream_answer(messages: list[BaseMessage], deps: ChatDeps, emit: Emit,
                        result: ChatResult) -> None:
    """Pure chat: stream the model's answer as ``token`` events."""
    async def stream(model: BaseChatModel) -> None:
        async for chunk in first_chunk_within(model.astream(messages), deps.settings.llm_timeout):
            await events.relay_chunk(chunk, emit, result)
        await events.relay_end(emit, result)

    await with_model(deps, emit, stream)


async def with_model(deps: ChatDeps, emit: Emit, work: Callable[[BaseChatModel], Awaitable[None]]) -> None:
    """Run ``work`` with the request's chat model; a missing configuration or a provider fault becomes exactly one
    ``error`` event (the provider's exception mapped once, never its stack, its text redacted of the request's
    keys and tokens before it is emitted or logged)."""
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    try:
        model = deps.models.get(config)
    except ServiceError as err:
        await emit(error_event(err))
        return
    try:
        await work(model)
    except ConnectionResetError:
        raise
    except MemoryUnavailable as exc:
        # The agent's checkpointer (approvals._without_errors) or an approval record on a locked, broken or
        # unreachable memory database, SQLite or PostgreSQL: the memory's fault, not the model's.
        log.warning("memory failed during the run (agent checkpoint or approval record): %s", exc.message)
        await emit(error_event(exc))
    except Exception as exc:  # provider clients raise many types; each is mapped once, without its stack
        # Detached: it may be ``exc`` itself (a ServiceError of the agent), whose traceback holds this frame.
        fault = located(provider_error(exc, timeout=config.timeout, secrets=request_secrets(deps, config)), config,
                        from_node=bool(deps.provider and deps.provider.baseUrl)).detached()
        log.warning("model request failed: %s (%s: %s)", fault.code, type(exc).__name__, fault.message)
        await emit(error_event(fault))


def request_secrets(deps: ChatDeps, config: ProviderConfig) -> list[Any]:
    """Every key and token this request could hand to a provider or echo: the model key in use (an ai-config
    node's included), the environment's provider keys, the service token and the Node-RED credentials."""
    settings = deps.settings
    return [config.api_key, settings.openai_api_key, settings.deepseek_api_key, settings.google_api_key,
            settings.anthropic_api_key, settings.azure_openai_api_key, settings.token, settings.nodered.token,
            settings.nodered.password,
            deps.user_token]
