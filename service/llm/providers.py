"""Chat models (LangChain) for each provider, cached, and provider faults mapped once to the design's codes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2
from pydantic import SecretStr

from service.errors import ServiceError
from service.nodered.flows import REDACTED, redact_text
from service.settings import PROVIDERS, Settings

if TYPE_CHECKING:
    # LangChain is imported with the provider's package when a first model is built (or by the chat stack's
    # warm-up, service/web/stack.py), not at start (issue 33: cold start).
    from langchain_core.language_models import BaseChatModel

    from service.requests import ProviderOverride

T = TypeVar("T")
OPENAI_STYLE = frozenset({"openai", "openai-compatible", "deepseek", "azure-openai"})
# Enough connections for hundreds of simultaneous streams to one provider.
HTTP_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
DEFAULT_MODELS = {
    "openai": "gpt-4o-mini",
    "deepseek": "deepseek-chat",
    "google": "gemini-2.5-flash",
    "anthropic": "claude-sonnet-4-5",
    "azure-openai": None,  # the deployment picks the model; AI_MODEL only names it for prices
    "openai-compatible": None,  # the server decides which models exist: AI_MODEL is required
}


# The Anthropic API's own endpoint (the anthropic SDK's default), for ANTHROPIC_BASE_URL unset.
ANTHROPIC_API_URL = "https://api.anthropic.com"


# The LangChain package of each provider's chat model, imported when its first model is built (the configured
# provider's: after the start, with the chat stack, service/web/stack.py).
PROVIDER_PACKAGES = {"openai": "langchain_openai", "openai-compatible": "langchain_openai",
                     "deepseek": "langchain_deepseek", "google": "langchain_google_genai",
                     "anthropic": "langchain_anthropic", "azure-openai": "langchain_openai"}
# The providers this installation can answer with (those with a chat model above), in the order of
# service.settings.PROVIDERS: the ai-config dialog offers these (GET /ai-sidebar/scenarios ``providers``), and a
# request for another one is ``provider_not_configured.unsupported`` naming them.
SUPPORTED_PROVIDERS: tuple[str, ...] = tuple(p for p in PROVIDERS if p in PROVIDER_PACKAGES)


def default_model(settings: Settings, provider: str) -> str | None:
    """The model ``provider`` answers with when a request names none: ``AI_MODEL`` for the environment's own
    provider (``AI_PROVIDER``), else :data:`DEFAULT_MODELS` (``None``: the provider has no default)."""
    return (settings.model if provider == settings.provider else None) or DEFAULT_MODELS.get(provider)


# Providers whose current models take images in a chat message (OpenAI, Azure OpenAI: the GPT-4o/4.1/5 families;
# Gemini; Claude 3 and later); OpenAI-compatible servers and DeepSeek only when configured so (images: true).
IMAGE_PROVIDERS = frozenset({"openai", "azure-openai", "google", "anthropic"})


@dataclass(frozen=True)
class ProviderConfig:
    """Which model to talk to and how; ``api_key`` never appears in ``repr`` or in a cache key.

    ``temperature`` is 0..2, ``max_tokens`` counts output tokens, ``timeout`` is seconds per model request;
    ``deployment`` and ``api_version`` are Azure OpenAI's (``base_url`` is then the resource's endpoint);
    ``tool_calling`` is ``False`` for a model configured as unable to call tools (``AI_MODEL_TOOL_CALLING``, an
    ai-config node's ``toolCalling``): it builds the same model, the chat offers it no tools. ``images`` says
    whether the model takes images (``AI_MODEL_IMAGES``, an ai-config node's ``images``; ``None``: as
    :data:`IMAGE_PROVIDERS` says, see :attr:`takes_images`).
    """

    provider: str
    model: str | None
    api_key: SecretStr | None = None
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = 60.0
    deployment: str | None = None
    api_version: str | None = None
    tool_calling: bool = True
    images: bool | None = None

    @property
    def takes_images(self) -> bool:
        """Whether an image may be sent to this model: as configured, else whether its provider is one of
        :data:`IMAGE_PROVIDERS`."""
        return self.images if self.images is not None else self.provider in IMAGE_PROVIDERS

    def __repr__(self) -> str:
        return (f"ProviderConfig(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r}"
                + (f", deployment={self.deployment!r}" if self.deployment else "") + ")")

    @classmethod
    def from_settings(cls, settings: Settings, override: ProviderOverride | None = None) -> ProviderConfig:
        """The provider for a request: the ``ai-config`` node's settings when given (a missing key or base URL
        falls back to the environment's for that provider, the key only when the base URL is the environment's),
        else ``AI_PROVIDER`` and its environment."""
        provider = override.provider if override else settings.provider
        key, base = {
            "openai": (settings.openai_api_key, settings.openai_base_url),
            "openai-compatible": (settings.openai_api_key, settings.openai_base_url),
            "deepseek": (settings.deepseek_api_key, settings.deepseek_api_base),
            "google": (settings.google_api_key, None),
            "anthropic": (settings.anthropic_api_key, settings.anthropic_base_url),
            "azure-openai": (settings.azure_openai_api_key, settings.azure_openai_endpoint),
        }[provider]
        model = default_model(settings, provider)
        azure = provider == "azure-openai"
        deployment = settings.azure_openai_deployment if azure else None
        version = settings.azure_openai_api_version if azure else None
        if override is None:
            return cls(provider=provider, model=model, api_key=key, base_url=base, timeout=settings.llm_timeout,
                       deployment=deployment, api_version=version, tool_calling=settings.model_tool_calling,
                       images=settings.model_images)
        # The environment's key only ever goes to the environment's endpoint: a config naming another base URL
        # must bring its own key, or a crafted request could send the service's key to any server.
        if override.baseUrl and override.baseUrl.rstrip("/") != (base or "").rstrip("/"):
            key = None
        return cls(provider=provider, model=override.model or model,
                   api_key=override.apiKey or key, base_url=override.baseUrl or base,
                   temperature=override.temperature, max_tokens=override.maxTokens, timeout=settings.llm_timeout,
                   deployment=(override.deployment or deployment) if azure else None,
                   api_version=(override.apiVersion or version) if azure else None,
                   tool_calling=override.toolCalling, images=override.images)

    def cache_key(self) -> tuple:
        """Identity of a model instance; the key enters only as a SHA-256 digest."""
        digest = hashlib.sha256(self.api_key.get_secret_value().encode()).hexdigest() if self.api_key else None
        return (self.provider, self.model, self.base_url, self.temperature, self.max_tokens, self.timeout,
                self.deployment, self.api_version, digest)


class ChatModelFactory:
    """Builds LangChain chat models and reuses them per :meth:`ProviderConfig.cache_key`.

    OpenAI-style and Anthropic models get an HTTP client owned by this factory (closed by :meth:`aclose`) rather
    than their LangChain package's process-wide default client, which stays bound to the event loop that first
    used it.
    """

    def __init__(self, max_size: int = 32):
        # Models whose server refused a request that offered tools (mark_without_tools), by cache key.
        self._without_tools: set[tuple] = set()
        self._cache: dict[tuple, BaseChatModel] = {}
        self._clients: dict[tuple, httpx2.AsyncClient | None] = {}
        self._pending_close: list[httpx2.AsyncClient] = []
        self._max_size = max_size

    async def aclose(self) -> None:
        """Close every HTTP client the factory opened; idempotent."""
        clients = [c for c in self._clients.values() if c is not None] + self._pending_close
        self._clients = {}
        self._pending_close = []
        self._cache.clear()
        for client in clients:
            await client.aclose()

    def calls_tools(self, config: ProviderConfig) -> bool:
        """Whether ``config``'s model may be offered tools: configured so (``tool_calling``) and its server has not
        refused tools since this factory started (:meth:`mark_without_tools`)."""
        return config.tool_calling and config.cache_key() not in self._without_tools

    def mark_without_tools(self, config: ProviderConfig) -> None:
        """``config``'s server refused a request that offered tools ("does not support tools"): later turns with
        it go down the paths without the agent instead of asking again (until the service restarts)."""
        if len(self._without_tools) < 10 * self._max_size:
            self._without_tools.add(config.cache_key())

    def get(self, config: ProviderConfig) -> BaseChatModel:
        """A streaming chat model for ``config``.

        Raises:
            ServiceError: ``provider_not_configured`` (400) when the key, base URL or model is missing.
        """
        key = config.cache_key()
        model = self._cache.get(key)
        if model is None:
            client = model_http_client(config.provider, config.timeout)
            try:
                model = _build(config, client)
            except ServiceError:
                if client is not None:
                    self._pending_close.append(client)
                raise
            if len(self._cache) >= self._max_size:
                oldest = next(iter(self._cache))
                self._cache.pop(oldest)
                evicted = self._clients.pop(oldest)
                if evicted is not None:
                    self._pending_close.append(evicted)
            self._cache[key] = model
            self._clients[key] = client
        return model


def model_http_client(provider: str, timeout: float) -> httpx2.AsyncClient | None:
    """The pooled HTTP client of ``provider``'s chat models (``timeout`` seconds per request), or ``None`` for a
    provider whose client takes none (``google``).

    The OpenAI-style providers (openai, openai-compatible, deepseek) get the openai SDK's ``DefaultAioHttpClient``
    (its ``httpx`` client with aiohttp as the transport, ``openai._base_client``), which parses responses with
    aiohttp's C HTTP parser instead of h11's pure Python. Measured with ``make bench`` (tests/bench/cost.py) on a
    2-core machine: CPU per request start 12.0 → 9.1 ms and per relayed token 281 → 204 µs. ``anthropic`` gets the
    anthropic SDK's ``DefaultAioHttpClient``, the same vendored transport (``anthropic._base_client``).

    Either transport reports a dropped or refused connection as ``httpx.ConnectTimeout`` (the aiohttp error stays
    the cause): :func:`provider_error` reads the cause.
    """
    if provider in OPENAI_STYLE:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient(timeout=timeout, limits=HTTP_LIMITS)
    if provider == "anthropic":
        from anthropic import DefaultAioHttpClient as AnthropicAioHttpClient

        return AnthropicAioHttpClient(timeout=timeout, limits=HTTP_LIMITS)
    return None


def _missing(config: ProviderConfig, setting: str) -> ServiceError:
    return ServiceError("provider_not_configured", status=400,
                        params={"provider": config.provider, "setting": setting})


# The setting that holds each provider's key (the ``setting`` of provider_not_configured).
KEY_SETTINGS = {"openai": "OPENAI_API_KEY", "openai-compatible": "OPENAI_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
                "google": "GOOGLE_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure-openai": "AZURE_OPENAI_API_KEY"}


def unready(config: ProviderConfig) -> ServiceError | None:
    """Why a model of ``config`` cannot answer before any request is sent, or ``None`` when it may: 400
    ``provider_not_configured`` naming the missing setting (a key; for openai-compatible the base URL; for the
    OpenAI-style providers the model; for azure-openai its endpoint and deployment), or its ``unsupported``
    variant for a provider without a chat model here. The same check the model's construction makes
    (:meth:`ChatModelFactory.get`); the sidebar's setup card and the service's start warning read it."""
    provider = config.provider
    if provider not in PROVIDER_PACKAGES:
        return ServiceError("provider_not_configured", status=400, key="provider_not_configured.unsupported",
                            params={"provider": provider, "supported": ", ".join(SUPPORTED_PROVIDERS)})
    if provider == "openai-compatible" and not config.base_url:
        return _missing(config, "OPENAI_BASE_URL")
    if provider == "azure-openai" and not config.base_url:
        return _missing(config, "AZURE_OPENAI_ENDPOINT")
    # A key-less OpenAI-style endpoint of one's own (Ollama, LM Studio) accepts any key.
    if not config.api_key and not (provider in ("openai", "openai-compatible") and config.base_url):
        return _missing(config, KEY_SETTINGS[provider])
    if provider in ("openai", "openai-compatible") and not config.model:
        return _missing(config, "AI_MODEL")
    if provider == "azure-openai" and not config.deployment:
        return _missing(config, "AZURE_OPENAI_DEPLOYMENT")
    return None


def _build(config: ProviderConfig, client: httpx2.AsyncClient | None) -> BaseChatModel:
    problem = unready(config)
    if problem is not None:
        raise problem
    common: dict[str, Any] = {}
    if config.temperature is not None:
        common["temperature"] = config.temperature
    if config.max_tokens is not None:
        common["max_tokens"] = config.max_tokens
    provider = config.provider
    if provider in ("openai", "openai-compatible"):
        from langchain_openai import ChatOpenAI

        from service.llm.reasoning import ReasoningChatOpenAI

        # Local OpenAI-compatible servers (Ollama, LM Studio) accept any key; the client insists on one. Their
        # reasoning models stream reasoning_content, which plain ChatOpenAI drops.
        key = config.api_key or SecretStr("not-needed")
        chat_class = ReasoningChatOpenAI if provider == "openai-compatible" else ChatOpenAI
        return chunks_as_dicts(chat_class(model=config.model, api_key=key, base_url=config.base_url, streaming=True,
                                          stream_usage=True, timeout=config.timeout, max_retries=2,
                                          http_async_client=client, stream_chunk_timeout=None, **common))
    if provider == "deepseek":
        from langchain_deepseek import ChatDeepSeek

        extra: dict[str, Any] = {"api_base": config.base_url} if config.base_url else {}
        model = config.model or DEFAULT_MODELS["deepseek"] or ""
        return chunks_as_dicts(ChatDeepSeek(model=model, api_key=config.api_key, streaming=True, stream_usage=True,
                                            timeout=config.timeout, max_retries=2, http_async_client=client,
                                            stream_chunk_timeout=None, **extra, **common))
    if provider == "google":
        from langchain_google_genai import ChatGoogleGenerativeAI

        return ChatGoogleGenerativeAI(model=config.model, google_api_key=config.api_key, timeout=config.timeout,
                                      max_retries=2, **common)
    if provider == "anthropic":
        # Both given explicitly: ChatAnthropic would otherwise take ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL or a
        # LangSmith gateway from the process environment, and the environment's key could reach an ai-config
        # node's endpoint (ProviderConfig.from_settings drops it for any endpoint but the environment's).
        from service.llm.chat_anthropic import PooledChatAnthropic

        return PooledChatAnthropic(model=config.model or DEFAULT_MODELS["anthropic"] or "", api_key=config.api_key,
                                   base_url=config.base_url or ANTHROPIC_API_URL, streaming=True,
                                   stream_usage=True, timeout=config.timeout, max_retries=2,
                                   http_async_client=client, **common)
    if provider == "azure-openai" and config.base_url and config.deployment and config.api_key:
        from service.llm.azure import azure_chat_model

        return chunks_as_dicts(azure_chat_model(
            endpoint=config.base_url, deployment=config.deployment, api_version=config.api_version,
            api_key=config.api_key, model=config.model, timeout=config.timeout, client=client, common=common))
    raise AssertionError(f"unready() let the provider {provider!r} through")


M = TypeVar("M", bound="BaseChatModel")


def chunks_as_dicts(model: M) -> M:
    """``model`` (langchain-openai's ``ChatOpenAI`` or a subclass) with its async openai client handing each
    streamed chat chunk over as the parsed JSON ``dict`` instead of a ``ChatCompletionChunk``.

    The openai SDK builds a pydantic model per chunk (``construct_type``, with a runtime-protocol check that walks
    the class with ``inspect.getattr_static``), and langchain-openai turns it straight back into a dict
    (``model_dump``); it takes a dict as it is (``BaseChatOpenAI._astream``: ``if not isinstance(chunk, dict)``).
    The SDK still does the HTTP, the retries, the SSE decoding and its in-stream ``error`` check
    (``openai._streaming.AsyncStream.__stream__``) before a chunk gets here. Every other response is built as
    before.
    """
    from openai.types.chat import ChatCompletionChunk

    client = getattr(model, "root_async_client", None)
    if client is None:
        return model
    build = client._process_response_data

    def process(*, data: object, cast_to: type, response: Any) -> Any:
        if cast_to is ChatCompletionChunk and isinstance(data, dict) and _plain_stream(response):
            return data
        return build(data=data, cast_to=cast_to, response=response)

    client._process_response_data = process
    return model


def provider_error(exc: BaseException, *, timeout: float | None = None,
                   secrets: Iterable[SecretStr | str | None] = ()) -> ServiceError:
    """Map a provider client's exception to the design's codes, without the provider's stack or any secret.

    ``invalid_api_key`` (401/403), ``rate_limited`` (429, after the client's own retries), ``llm_timeout`` (naming
    ``AI_LLM_TIMEOUT`` and ``timeout`` seconds), ``llm_unreachable`` (no connection, or the connection was lost),
    ``llm_error`` (anything else, with the provider's sentence). The provider's sentence is redacted before it is
    used: each of ``secrets`` literally (some OpenAI-compatible servers echo the Authorization header in their
    error text), then every secret-looking pattern (:func:`service.nodered.flows.redact_text`).
    """
    if isinstance(exc, ServiceError):
        return exc
    names = _class_names(exc)
    causes = _class_names_of_causes(exc)
    # The aiohttp transport (model_http_client) turns every aiohttp connection error into httpx.ConnectTimeout:
    # only its timeouts are timeouts.
    dropped = "ClientConnectionError" in causes and not causes & AIOHTTP_TIMEOUT_ERRORS
    if not dropped and (names & TIMEOUT_ERRORS or isinstance(exc, (asyncio.TimeoutError, TimeoutError))):
        return llm_timeout(timeout)
    if dropped or names & CONNECTION_ERRORS:
        # Refused or unresolvable before any byte was exchanged: unreachable; anything else dropped mid-way.
        reached = not (causes & CONNECT_ERRORS)
        return ServiceError("llm_unreachable", status=502, key="llm_unreachable.lost" if reached else None)
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    if status in (401, 403) or names & {"ModelAuthenticationError", "ModelPermissionDeniedError"}:
        return ServiceError("invalid_api_key", status=401)
    if status == 429 or "ModelRateLimitError" in names:
        return ServiceError("rate_limited", status=429)
    return ServiceError("llm_error", status=502, params={"detail": _provider_sentence(exc, secrets)})


def llm_timeout(seconds: float | None) -> ServiceError:
    """``llm_timeout``: the model did not answer within ``seconds`` (``AI_LLM_TIMEOUT``): no first chunk in that
    time, retries included, or (the client's read timeout) a pause that long in the middle of an answer."""
    return ServiceError("llm_timeout", status=504, params={"seconds": f"{seconds:g}" if seconds else "?"})


def _plain_stream(response: Any) -> bool:
    """Whether a streamed response's chunks may stay dicts: not for a structured-output request (``response_format``,
    e.g. the tool selector's), which langchain-openai streams through the SDK's ``beta.chat.completions.stream``
    helper, whose state machine reads chunk attributes. Decided once per response (its request body is read once)."""
    known = getattr(response, "_ai_sidebar_plain", None)
    if known is None:
        request = getattr(response, "request", None)
        body = getattr(request, "content", b"") if request is not None else b""
        known = b'"response_format"' not in body
        with contextlib.suppress(AttributeError):
            response._ai_sidebar_plain = known
    return known


# Longest silence between two chunks of an answer (keep-alive comments do not count), seconds: langchain-openai's own
# default for ``stream_chunk_timeout``, which the OpenAI-style models here turn off (it wraps every chunk in
# ``asyncio.wait_for``: a task and an extra event-loop pass per token) for this cheaper bound.
CHUNK_GAP = 120.0


async def first_chunk_within(chunks: AsyncIterator[T], seconds: float,
                             gap: float | None = CHUNK_GAP) -> AsyncIterator[T]:
    """Relay ``chunks`` (a model's stream); the wait for the first one, the client's own retries included, is
    bounded by ``seconds``, each later one by ``gap`` seconds (``None``: by the client's read timeout only).

    Raises:
        ServiceError: ``llm_timeout`` naming ``AI_LLM_TIMEOUT`` (no first chunk in time).
        TimeoutError: a later chunk did not come within ``gap`` (:func:`provider_error` maps it to
            ``llm_timeout``).
    """
    iterator = aiter(chunks)
    try:
        async with asyncio.timeout(seconds):
            first = await anext(iterator)
    except StopAsyncIteration:
        return
    except TimeoutError:
        raise llm_timeout(seconds) from None
    yield first
    if not gap:
        async for chunk in iterator:
            yield chunk
        return
    while True:
        # A deadline per chunk (a timer, no task); never held across the yield, where the consumer runs.
        async with asyncio.timeout(gap):
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
        yield chunk


def redact_secrets(text: str, secrets: Iterable[SecretStr | str | None] = ()) -> str:
    """``text`` without any of ``secrets`` (each literally; values shorter than 8 characters are not secrets
    worth a search) and without secret-looking patterns (:func:`service.nodered.flows.redact_text`)."""
    values = []
    for secret in secrets:
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
        if value and len(value) >= 8:
            values.append(value)
    for value in sorted(values, key=len, reverse=True):  # a key that contains another goes first
        text = text.replace(value, REDACTED)
    return redact_text(text)


# Class names (anywhere in an exception's MRO) of provider-client faults, across LangChain's own standard
# exceptions (langchain_core.exceptions), the openai and anthropic SDKs (langchain-openai, langchain-deepseek,
# langchain-anthropic: their APITimeoutError and APIConnectionError share the names) and httpx.
TIMEOUT_ERRORS = frozenset({"ModelTimeoutError", "APITimeoutError", "TimeoutException", "DeadlineExceeded"})
CONNECTION_ERRORS = frozenset({"ModelConnectionError", "APIConnectionError", "TransportError", "ConnectionError"})
CONNECT_ERRORS = frozenset({"ConnectError", "ConnectionRefusedError", "gaierror", "ClientConnectorError"})
AIOHTTP_TIMEOUT_ERRORS = frozenset({"ServerTimeoutError", "SocketTimeoutError", "ConnectionTimeoutError"})


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _class_names_of_causes(exc: BaseException) -> set[str]:
    names: set[str] = set()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names |= _class_names(current)
        current = current.__cause__ or current.__context__
    return names


def _provider_sentence(exc: BaseException, secrets: Iterable[SecretStr | str | None]) -> str:
    """The provider's own error sentence, redacted first and then cut to 300 characters (cutting first could
    leave the start of a key)."""
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict):
        error = body.get("error")
        message = body.get("message") or (error.get("message") if isinstance(error, dict) else None)
    if not message:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return redact_secrets(str(message), secrets)[:300]
