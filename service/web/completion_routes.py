"""``POST /ai-sidebar/complete`` (issue 39): one inline completion for the code editor of an edit dialog, answered
as JSON. Thin: the prompt, the model call and the answer's cleaning are :mod:`service.assist.completion`'s."""

from __future__ import annotations

import logging
import uuid

from aiohttp import web

from service.assist.completion import CompleteRequest, answer_completion, clean_completion, completion_config
from service.assist.context import node_context
from service.errors import ServiceError
from service.identity import request_caller
from service.llm.providers import ProviderConfig, provider_error
from service.web.disconnect import until_client_leaves
from service.web.keys import (
    CHAT_MODELS,
    CHAT_STACK,
    EVIDENCE,
    FIM_MODELS,
    MEMORY,
    NODERED,
    PRICES,
    SCENARIOS,
    SETTINGS,
)
from service.web.schemas import parse_body

log = logging.getLogger(__name__)
routes = web.RouteTableDef()
# Seconds a caller's deployed flows are reused for the node context of its completions: each pause in typing asks
# again, and GET /flows grows with the workspace (114 example tabs in make bench). The wiring shown to the model may
# miss a deploy that recent; the messages' shapes come from the runtime evidence as they arrive.
FLOWS_MAX_AGE = 5.0


@routes.post("/ai-sidebar/complete")
async def complete(request: web.Request) -> web.Response:
    """The text to insert at the cursor (from the provider's fill-in-the-middle endpoint or its chat model, see
    :func:`service.assist.completion.answer_completion`): ``{completion, usage}`` (``completion`` may be empty;
    ``usage`` ``{inputTokens, outputTokens, cost}``, null when the model reported none). The model call is
    cancelled when the client disconnects (the editor typed on). Its tokens are recorded and count against the daily
    budget like a chat's; no conversation is stored.

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
    from service.llm.usage import TurnUsage, turn_usage

    deps = ChatDeps(settings=settings, nodered=request.app[NODERED].for_user(caller.token),
                    models=request.app[CHAT_MODELS], scenarios=request.app[SCENARIOS], user_token=caller.token,
                    identity=caller.identity, provider=body.provider, evidence=request.app[EVIDENCE],
                    ledger=request.app[MEMORY].store)
    refusal = await over_budget(deps)
    if refusal is not None:
        raise refusal
    # AI_COMPLETION_MODEL and AI_COMPLETION_FIM are the environment's provider's: they apply when no ai-config node
    # is chosen; a chosen node's own completion model and FIM setting apply to it (its model when it names none).
    node = body.provider
    config = completion_config(ProviderConfig.from_settings(settings, node),
                               settings.completion_model if node is None else node.completionModel)
    mode = settings.completion_fim if node is None else node.completionFim
    found = await node_context(deps.nodered, deps.evidence, body.nodeId, flows_max_age=FLOWS_MAX_AGE)
    usage: list[TurnUsage | None] = [None]

    def report(by_model) -> None:
        usage[0] = turn_usage(by_model, config.provider, config.model, request.app[PRICES])

    answer: list[str] = []

    async def work() -> None:
        answer.append(await answer_completion(body, found, config, mode, deps.models, request.app[FIM_MODELS],
                                              report))

    run = f"complete-{uuid.uuid4().hex}"
    try:
        await until_client_leaves(request, work())
    except ConnectionResetError:
        log.info("completion cancelled: the editor went on typing")
        await save_usage(deps, run, usage[0])
        return web.Response(status=499)  # nobody reads it: the connection is closed
    except ServiceError:
        await save_usage(deps, run, usage[0])
        raise
    except Exception as exc:  # provider clients raise many types; each is mapped once, without its stack
        await save_usage(deps, run, usage[0])
        fault = provider_error(exc, timeout=config.timeout, secrets=[config.api_key, settings.token])
        fault.status = 502
        raise fault from None
    text = clean_completion(answer[0], body)
    log.info("completion kind=%s samples=%d chars=%d", body.kind, len(found.samples), len(text))
    response = web.json_response({"completion": text, "usage": usage[0].event() if usage[0] else None})
    # The answer first, the usage row after: the editor waits for the text, not for the database's write (an SQLite
    # commit; tests/bench/completion_latency.py). aiohttp reads the connection's next request only once this
    # handler returns, so a client's next request on it (a budget check included) sees the row.
    await response.prepare(request)
    await response.write_eof()
    await save_usage(deps, run, usage[0])
    return response
