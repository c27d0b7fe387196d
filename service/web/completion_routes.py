"""``POST /ai-sidebar/complete`` (issue 39): one inline completion for the code editor of an edit dialog, answered
as JSON. Thin: the prompt, the model call and the answer's cleaning are :mod:`service.assist.completion`'s."""

from __future__ import annotations

import logging
import uuid

from aiohttp import web

from service.assist.completion import (
    CompleteRequest,
    ask_completion,
    clean_completion,
    completion_config,
    completion_messages,
)
from service.assist.context import node_context
from service.errors import ServiceError
from service.identity import request_caller
from service.llm.providers import ProviderConfig, provider_error
from service.web.disconnect import until_client_leaves
from service.web.keys import CHAT_MODELS, CHAT_STACK, EVIDENCE, MEMORY, NODERED, PRICES, SCENARIOS, SETTINGS
from service.web.schemas import parse_body

log = logging.getLogger(__name__)
routes = web.RouteTableDef()


@routes.post("/ai-sidebar/complete")
async def complete(request: web.Request) -> web.Response:
    """The text to insert at the cursor: ``{completion, usage}`` (``completion`` may be empty; ``usage``
    ``{inputTokens, outputTokens, cost}``, null when the model reported none). The model call is cancelled when the
    client disconnects (the editor typed on). Its tokens are recorded and count against the daily budget like a
    chat's; no conversation is stored.

    Errors: 400 ``invalid_request``, 403 ``completion_disabled`` (``AI_SIDEBAR_COMPLETION=false``), 429
    ``budget_exceeded``, and the provider's codes (``provider_not_configured``, ``llm_timeout``, ...) as 502.
    """
    settings = request.app[SETTINGS]
    if not settings.completion:
        raise ServiceError("completion_disabled", status=403)
    body = await parse_body(request, CompleteRequest)
    caller = request_caller(request)
    # LangChain and the chat's modules load after the start (service.web.stack, issue 33): imported here once ready.
    await request.app[CHAT_STACK].ready()
    from service.chat.context import ChatDeps
    from service.chat.ledger import over_budget, save_usage
    from service.llm.usage import TurnUsage, counted, turn_usage

    deps = ChatDeps(settings=settings, nodered=request.app[NODERED].for_user(caller.token),
                    models=request.app[CHAT_MODELS], scenarios=request.app[SCENARIOS], user_token=caller.token,
                    identity=caller.identity, provider=body.provider, evidence=request.app[EVIDENCE],
                    ledger=request.app[MEMORY].store)
    refusal = await over_budget(deps)
    if refusal is not None:
        raise refusal
    # AI_COMPLETION_MODEL is a model of the environment's provider: it applies when no ai-config node is chosen.
    config = completion_config(ProviderConfig.from_settings(settings, body.provider),
                               settings.completion_model if body.provider is None else None)
    found = await node_context(deps.nodered, deps.evidence, body.nodeId)
    messages = completion_messages(body, found)
    usage: list[TurnUsage | None] = [None]

    def report(by_model) -> None:
        usage[0] = turn_usage(by_model, config.provider, config.model, request.app[PRICES])

    answer: list[str] = []

    async def work() -> None:
        model = deps.models.get(config)
        answer.append(await counted(ask_completion(model, messages, config.timeout), report))

    try:
        await until_client_leaves(request, work())
    except ConnectionResetError:
        log.info("completion cancelled: the editor went on typing")
        answer = [""]  # nobody reads it: the connection is closed
    except ServiceError:
        raise
    except Exception as exc:  # provider clients raise many types; each is mapped once, without its stack
        fault = provider_error(exc, timeout=config.timeout, secrets=[config.api_key, settings.token])
        fault.status = 502
        raise fault from None
    finally:
        await save_usage(deps, f"complete-{uuid.uuid4().hex}", usage[0])
    text = clean_completion(answer[0], body)
    log.info("completion kind=%s samples=%d chars=%d", body.kind, len(found.samples), len(text))
    return web.json_response({"completion": text, "usage": usage[0].event() if usage[0] else None})
