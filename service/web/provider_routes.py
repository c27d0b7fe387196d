"""Whether the model can answer (issue 31): the setup state the sidebar's empty state shows, and
``POST /ai-sidebar/test-provider``, the sidebar's "Test connection" (one tiny request to the chosen provider)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

from service.errors import REQUEST_LANGUAGE, request_language
from service.llm.endpoints import endpoint_origin, located
from service.llm.providers import ProviderConfig, default_model, provider_error, unready
from service.requests import TestProviderRequest
from service.settings import Settings
from service.web.keys import CHAT_MODELS, CHAT_STACK, MESSAGES, SETTINGS
from service.web.schemas import parse_body

routes = web.RouteTableDef()

PROBE = "Reply with the single word OK."
PROBE_MAX_TOKENS = 16
# Seconds a test waits at most (AI_LLM_TIMEOUT when shorter): a user who clicked "Test connection" waits for it, and a
# model that needs longer to load answers the first question slowly but is reachable; the error says it timed out.
PROBE_TIMEOUT = 25.0


def setup_state(settings: Settings, translate) -> dict[str, Any] | None:
    """Why the service's own provider (``AI_PROVIDER`` and its environment) cannot answer, or ``None`` when it
    can: ``{code, message, provider, setting}``, ``message`` worded by ``translate(error)``."""
    problem = unready(ProviderConfig.from_settings(settings))
    if problem is None:
        return None
    return {"code": problem.code, "message": translate(problem), "provider": settings.provider,
            "setting": (problem.params or {}).get("setting")}


@routes.post("/ai-sidebar/test-provider")
async def test_provider(request: web.Request) -> web.Response:
    """Send one tiny request (:data:`PROBE`, at most :data:`PROBE_MAX_TOKENS` output tokens) to the provider of the
    body's ``provider`` (an ``ai-config`` node's settings; none: the service's own) and answer with what came of it:
    ``{ok: true, provider, model, url, latencyMs}`` (``url`` the origin the request reached, ``latencyMs`` the
    whole request in milliseconds), or ``{ok: false, provider, model, url, error: {code, message}}`` with the
    provider error's code (``provider_not_configured``, ``invalid_api_key``, ``rate_limited``, ``llm_timeout``,
    ``llm_unreachable``, ``llm_error``), worded in the body's language. Both are 200: the test ran, and a browser
    logs no failed request for a provider that is down. A body that does not parse is the usual 400. Behind the
    service token like chat; the reply's text is not kept."""
    body = await parse_body(request, TestProviderRequest)
    if body.language:
        request[REQUEST_LANGUAGE] = body.language
    settings = request.app[SETTINGS]
    config = ProviderConfig.from_settings(settings, body.provider)
    url = endpoint_origin(config)
    seconds = min(settings.llm_timeout, PROBE_TIMEOUT)
    probe = ProviderConfig(provider=config.provider, model=config.model or default_model(settings, config.provider),
                           api_key=config.api_key, base_url=config.base_url, max_tokens=PROBE_MAX_TOKENS,
                           timeout=seconds)
    await request.app[CHAT_STACK].ready()  # LangChain loads after the start (service.web.stack, issue 33)
    from langchain_core.messages import HumanMessage

    started = time.monotonic()
    answer: dict[str, Any] = {"provider": config.provider, "model": probe.model, "url": url}
    try:
        model = request.app[CHAT_MODELS].get(probe)
        async with asyncio.timeout(seconds):
            await model.ainvoke([HumanMessage(PROBE)])
    except Exception as exc:  # every provider fault is a coded error with the provider's sentence redacted
        error = located(provider_error(exc, timeout=seconds, secrets=[config.api_key]), config,
                        from_node=bool(body.provider and body.provider.baseUrl)).detached()
        message = error.translated(request.app[MESSAGES], request_language(request))
        return web.json_response({"ok": False, **answer, "error": {"code": error.code, "message": message}})
    return web.json_response({"ok": True, **answer, "latencyMs": round((time.monotonic() - started) * 1000)})
