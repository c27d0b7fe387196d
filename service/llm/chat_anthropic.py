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
