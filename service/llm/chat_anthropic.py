"""LangChain's ``ChatAnthropic`` with an HTTP client the caller owns (``AI_PROVIDER=anthropic``)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import anthropic
from langchain_anthropic import ChatAnthropic
from pydantic import Field


class PooledChatAnthropic(ChatAnthropic):
    """``ChatAnthropic`` whose async anthropic client sends through ``http_async_client``.

    langchain-anthropic (1.7) takes no HTTP client: ``ChatAnthropic._async_client`` builds one from
    ``_get_default_async_httpx_client``, an ``lru_cache`` shared by the whole process, so the first event loop that
    uses it owns its connections and a later loop (each test, each service restart in one process) would reuse them.
    Here the client is the caller's (:class:`service.llm.providers.ChatModelFactory`, which closes it), built from the
    same parameters (key, base URL, retries, timeout, headers) as the original.

    The anthropic SDK's own OpenTelemetry spans (``anthropic.messages.create``, on by default in anthropic 2.x, with
    trace headers sent to the API) are off: the service traces every model call itself
    (:mod:`service.tracing.models`, the same ``gen_ai.*`` attributes for every provider), so each Claude call
    would be a second ``chat`` span counting its tokens again, and the SDK's content mode
    (``ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE``) would record prompts outside the service's own switch
    (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
    """

    # An ``httpx2.AsyncClient`` (the anthropic SDK's own HTTP library), e.g. ``anthropic.DefaultAioHttpClient``.
    http_async_client: Any = Field(exclude=True)

    @cached_property
    def _async_client(self) -> anthropic.AsyncClient:
        return anthropic.AsyncClient(**self._client_params, http_client=self.http_async_client,
                                     open_telemetry=False)

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        """The Messages API request, with the system prompt's last block marked for Anthropic's prompt cache
        (``cache_control: {"type": "ephemeral"}``, cached 5 minutes: https://docs.claude.com/en/docs/build-with-claude/
        prompt-caching). A breakpoint there caches the tools and the system prompt, which every step of a turn and
        every turn of a conversation repeat; a later request that starts the same reads them at a tenth of the
        input price (counted in ``usage_metadata.input_token_details.cache_read``). A prompt shorter than the
        model's minimum (1024 tokens for Sonnet) is simply not cached."""
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        system = payload.get("system")
        if isinstance(system, str) and system:
            payload["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        elif isinstance(system, list) and system and isinstance(system[-1], dict) \
                and "cache_control" not in system[-1]:
            payload["system"] = [*system[:-1], {**system[-1], "cache_control": {"type": "ephemeral"}}]
        return payload
