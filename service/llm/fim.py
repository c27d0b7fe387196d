"""Fill-in-the-middle (FIM) completion models (issue 39): the code before the cursor as ``prompt`` and the code after
it as ``suffix`` to a provider's completions API, which answers the text between them.

- DeepSeek: ``POST {base}/beta/completions`` with ``model: deepseek-chat`` (https://api-docs.deepseek.com/guides/
  fim_completion; "beta", so the base URL's ``/v1`` is replaced by ``/beta``).
- OpenAI-compatible servers: ``POST {base}/completions`` with ``suffix`` (the OpenAI completions API's legacy
  parameter, https://platform.openai.com/docs/api-reference/completions/create; Ollama passes it to a code model's
  FIM template, https://docs.ollama.com/api/openai-compatibility).

The request goes through the openai SDK's ``completions.create`` on the same pooled HTTP client the chat models use
(:func:`service.llm.providers.model_http_client`), with the same retries and timeout. Not LangChain's completions
LLM (``langchain_openai.OpenAI``, 1.8): it sends ``prompt`` as a list of prompts (``create(prompt=[...])``), which
DeepSeek's and Ollama's FIM endpoints do not take (their ``prompt`` is a string).

A server that refuses the endpoint or the suffix (404, or 400 "not supported") is remembered per model
(:meth:`FimModels.mark_unsupported`), as tool-less models are, and its completions go back to the chat prompt.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from service.llm.providers import ProviderConfig, model_http_client, unready

if TYPE_CHECKING:
    # LangChain loads with the chat stack after the start (service/web/stack.py); UsageMetadata is a TypedDict.
    from langchain_core.messages.ai import UsageMetadata
    from openai import AsyncOpenAI

FimMode = Literal["auto", "on", "off"]
# Providers whose API may have a completions endpoint with a suffix; "auto" uses it for DeepSeek only (documented).
FIM_PROVIDERS = frozenset({"deepseek", "openai", "openai-compatible"})
DEEPSEEK_API = "https://api.deepseek.com"
# A 400/422 whose message says the endpoint or the suffix is not there (DeepSeek: a model without FIM; Ollama:
# "... does not support insert"; vLLM and llama.cpp: "suffix is not supported"; OpenAI: "This is a chat model and
# not supported in the v1/completions endpoint").
REFUSAL = re.compile(r"not supported|does not support|unsupported|not available|suffix|insert|chat model",
                     re.IGNORECASE)
UNSUPPORTED_STATUSES = frozenset({404, 405, 501})


def fim_wanted(provider: str, mode: FimMode) -> bool:
    """Whether a completion for ``provider`` goes to its FIM endpoint: ``off`` never; ``on`` for any of
    :data:`FIM_PROVIDERS`; ``auto`` for ``deepseek``, whose API is known to have it."""
    if mode == "off" or provider not in FIM_PROVIDERS:
        return False
    return mode == "on" or provider == "deepseek"


def fim_base_url(config: ProviderConfig) -> str | None:
    """The base URL the completions request goes to (``/completions`` is appended by the openai SDK): DeepSeek's
    ``/beta`` beside its API's ``/v1`` (its base URL, else :data:`DEEPSEEK_API`); the configured base URL for the
    others (``None``: the openai SDK's own, OpenAI's API)."""
    if config.provider != "deepseek":
        return config.base_url
    base = (config.base_url or DEEPSEEK_API).rstrip("/")
    base = base.removesuffix("/v1").removesuffix("/beta")
    return base + "/beta"


def refuses_fim(exc: BaseException) -> bool:
    """Whether ``exc`` (the openai SDK's ``APIStatusError``) says the server has no FIM for this model: status 404,
    405 or 501, or 400/422 whose message says the endpoint, the suffix or the model is not supported."""
    status = getattr(exc, "status_code", None)
    if status in UNSUPPORTED_STATUSES:
        return True
    if status not in (400, 422):
        return False
    body = getattr(exc, "body", None)
    message = ""
    if isinstance(body, dict):
        error = body.get("error")
        message = str(body.get("message") or (error.get("message") if isinstance(error, dict) else error) or "")
    return bool(REFUSAL.search(message or str(exc)))


@dataclass(frozen=True)
class FimModel:
    """One model's completions endpoint: its openai SDK client and the request's fixed parameters (``model``,
    ``max_tokens``, ``temperature``)."""

    client: AsyncOpenAI
    params: dict[str, Any]


class FimModels:
    """Completions clients (:class:`FimModel`) per :meth:`ProviderConfig.cache_key`, each on its own pooled HTTP
    client (closed by :meth:`aclose`), and the models whose server refused FIM."""

    def __init__(self, max_size: int = 16):
        self._cache: dict[tuple, FimModel] = {}
        self._unsupported: set[tuple] = set()
        self._max_size = max_size

    def supported(self, config: ProviderConfig) -> bool:
        """``False`` once ``config``'s server refused a FIM request (:meth:`mark_unsupported`), until restart."""
        return config.cache_key() not in self._unsupported

    def mark_unsupported(self, config: ProviderConfig) -> None:
        """``config``'s server has no FIM for its model: its completions use the chat prompt from now on."""
        if len(self._unsupported) < 10 * self._max_size:
            self._unsupported.add(config.cache_key())

    def get(self, config: ProviderConfig) -> FimModel:
        """The completions endpoint of ``config`` (its ``model``, ``max_tokens``, ``temperature``, ``timeout``).

        Raises:
            ServiceError: ``provider_not_configured`` (400) when the key or the model is missing
                (:func:`service.llm.providers.unready`).
        """
        key = config.cache_key()
        found = self._cache.get(key)
        if found is not None:
            return found
        problem = unready(config)
        if problem is not None:
            raise problem
        from openai import AsyncOpenAI

        params: dict[str, Any] = {"model": config.model or "deepseek-chat"}
        if config.temperature is not None:
            params["temperature"] = config.temperature
        if config.max_tokens is not None:
            params["max_tokens"] = config.max_tokens
        # A key-less local server (Ollama) accepts any key; the client insists on one.
        key_value = config.api_key.get_secret_value() if config.api_key else "not-needed"
        client = AsyncOpenAI(api_key=key_value, base_url=fim_base_url(config), timeout=config.timeout,
                             max_retries=2, http_client=model_http_client(config.provider, config.timeout))
        if len(self._cache) >= self._max_size:
            evicted = self._cache.pop(next(iter(self._cache)))
            asyncio.get_running_loop().create_task(evicted.client.close())
        model = self._cache[key] = FimModel(client, params)
        return model

    async def aclose(self) -> None:
        """Close every HTTP client this opened; idempotent."""
        cache, self._cache = self._cache, {}
        for model in cache.values():
            await model.client.close()


async def ask_fim(model: FimModel, prompt: str, suffix: str,
                  seconds: float) -> tuple[str, dict[str, UsageMetadata]]:
    """The text ``model`` puts between ``prompt`` and ``suffix``, and its usage as LangChain's per-model totals
    (``{model name: UsageMetadata}``, the name the server answered with; empty when it reported none), within
    ``seconds``.

    One request, not streamed: cancelling the awaiting task closes the HTTP request, which the server sees.
    Raises ``TimeoutError`` and whatever the openai SDK raises (see :func:`refuses_fim`).
    """
    async with asyncio.timeout(seconds):
        answer = await model.client.completions.create(prompt=prompt, suffix=suffix, **model.params)
    text = answer.choices[0].text if answer.choices else ""
    used = answer.usage
    if used is None:
        return text, {}
    usage: UsageMetadata = {"input_tokens": used.prompt_tokens, "output_tokens": used.completion_tokens,
                            "total_tokens": used.total_tokens}
    return text or "", {answer.model or model.params["model"]: usage}
