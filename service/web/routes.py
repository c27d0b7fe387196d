"""HTTP handlers (DESIGN.md, "HTTP API"): validate, call one function, respond.

The routes that answer with a model, plan or resume a write are declared here and handled in
:mod:`service.web.chat_routes`, imported with the chat stack after the start (:mod:`service.web.stack`, issue 33):
until then such a request waits for it, and ``/healthz`` says ``"chat": "warming"``."""

from __future__ import annotations

import logging
import os

from aiohttp import web

from service import __version__
from service.llm.providers import SUPPORTED_PROVIDERS, default_model
from service.web.keys import CHAT_STACK, MESSAGES, SCENARIOS, SETTINGS
from service.web.openapi import openapi_document
from service.web.provider_routes import setup_state

log = logging.getLogger(__name__)
routes = web.RouteTableDef()


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    """Liveness: ``{"status": "ok", "version", "pid", "chat"}`` (``pid``: the worker process that answered, one of
    ``AI_SIDEBAR_WORKERS``; ``chat``: ``"warming"`` while the chat stack is imported after the start, a chat then
    waits for it, else ``"ready"``); open without the service token, like ``/openapi.json``."""
    return web.json_response({"status": "ok", "version": __version__, "pid": os.getpid(),
                              "chat": "ready" if request.app[CHAT_STACK].warm else "warming"})


@routes.get("/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    """The OpenAPI 3.1 description of this service."""
    return web.json_response(openapi_document())


@routes.get("/ai-sidebar/scenarios")
async def scenarios(request: web.Request) -> web.Response:
    """``?lang=xx-YY`` → the editor's view of that language's scenarios (no system prompts), with the lists the
    palette nodes' dialogs and checks need from the service: ``providers`` (those this installation can answer
    with, :data:`service.llm.providers.SUPPORTED_PROVIDERS`) and ``maxMessageChars``, and the model
    that answers when no ``ai-config`` node is chosen (``model``: ``{provider, model}``, ``model`` null when the
    provider has no default and AI_MODEL is unset), and ``defaultModels``: per provider, the model an ``ai-config``
    node that names none gets (as :meth:`ProviderConfig.from_settings` chooses it; null: none, the node must name
    one), and ``setup``: why that default model cannot answer (``{code, message, provider, setting}`` worded in
    the language, :func:`service.web.provider_routes.setup_state`), null when it can."""
    catalog = request.app[SCENARIOS].get(request.query.get("lang"))
    settings = request.app[SETTINGS]
    language = request.app[MESSAGES].negotiate(catalog.language, None)
    setup = setup_state(settings, lambda error: error.translated(request.app[MESSAGES], language))
    return web.json_response({**catalog.public(), "providers": list(SUPPORTED_PROVIDERS), "setup": setup,
                              "maxMessageChars": settings.max_message_chars,
                              "model": {"provider": settings.provider,
                                        "model": default_model(settings, settings.provider)},
                              "defaultModels": {provider: default_model(settings, provider)
                                                for provider in SUPPORTED_PROVIDERS}})


@routes.post("/ai-sidebar/execute-tool")
async def execute_tool(request: web.Request) -> web.Response:
    """``{tool, params}`` → ``{tool, result}`` with the tool's structured data; any registered tool, by its name
    or its old hyphenated spelling (the answer names it as registered).

    A write tool does not run: the answer is 202 with the approval it waits for (``{status: "awaiting_approval",
    runId, resumeToken, actions}``, answered by ``POST /ai-sidebar/resume``), unless its policy lets it run
    (then it runs, with an audit record).

    Errors: 403 ``forbidden`` without write permission, 404 ``unknown_tool``, 400 ``invalid_params`` naming the
    parameter, 4xx/502 for a tool failure, 503 ``memory_unavailable`` for a write tool without an approval store.
    """
    return await (await request.app[CHAT_STACK].handlers()).execute_tool(request)


@routes.post("/ai-sidebar/stream-chat")
async def stream_chat(request: web.Request) -> web.StreamResponse:
    """Answer a chat message as a server-sent event stream; bad input is a JSON 4xx before the stream opens."""
    return await (await request.app[CHAT_STACK].handlers()).stream_chat(request)


@routes.post("/ai-sidebar/assist")
async def assist(request: web.Request) -> web.StreamResponse:
    """A one-shot proposal for a node edit dialog (function code, a JSONata expression, a JSON value) as an event
    stream: ``token`` events, then one ``proposal`` or one ``error`` (``no_proposal``, ``invalid_json``), then
    ``done`` (contracts20). The provider is chosen as for stream-chat; memory is off (only token usage is
    recorded). Bad input is a JSON 4xx before the stream opens (413 ``message_too_long`` for the description)."""
    return await (await request.app[CHAT_STACK].handlers()).assist(request)


@routes.post("/ai-sidebar/resume")
async def resume(request: web.Request) -> web.StreamResponse:
    """Answer the writes a run waits for and continue it as an event stream (the same events as stream-chat).

    Errors before the stream opens: 403 ``forbidden`` without write permission, 404 ``approval_not_found`` (also
    for another user's token), 409 ``approval_used``, 410 ``approval_expired``, 400 ``invalid_request`` /
    ``invalid_params`` (decisions that do not fit the actions), 429 ``budget_exceeded`` (a run that would call the
    model, over today's token budget; the token stays usable), 503 ``memory_unavailable``.
    """
    return await (await request.app[CHAT_STACK].handlers()).resume(request)


@routes.get("/ai-sidebar/approvals")
async def approvals_list(request: web.Request) -> web.Response:
    """The caller's own approvals still waiting (without their tokens) and the newest decisions on writes
    (``?limit=``, default 50): who approved, edited or rejected what, when, or which the policy let through. The
    waiting actions' summaries are in the request's language (the audit keeps them in English)."""
    return await (await request.app[CHAT_STACK].handlers()).approvals_list(request)


@routes.post("/ai-sidebar/approvals/{runId}/applied")
async def approval_applied(request: web.Request) -> web.Response:
    """``{tool, outcome}``: what the editor made of the ``flow_change`` of an approved write of one of the caller's
    runs (the counts it applied, or why it applied nothing), kept with the approval so that the reopened
    conversation's card says the same (``GET /ai-sidebar/history``'s ``approvals``) → ``{runId, recorded: true}``.
    With ``later`` ("undone", "changed", "applied"): what the editor made of that change since, set on the newest
    report of ``tool`` (as ``outcome.later``; "applied" removes it).
    Needs write permission, like the approval.

    Errors: 400 ``invalid_request``, 403 ``forbidden``, 404 ``approval_not_found`` (no answered approval of that
    run is the caller's), 503 ``memory_unavailable``.
    """
    return await (await request.app[CHAT_STACK].handlers()).approval_applied(request)


@routes.post("/ai-sidebar/approvals/{runId}/token")
async def approval_token(request: web.Request) -> web.Response:
    """A fresh resume token for one of the caller's runs that waits (``{runId, resumeToken, expiresAt}``); the
    run's previous token stops working. Tokens are stored hashed, so a browser without the event's token (another
    browser of the same user, a cleared storage) gets its own this way. Needs write permission, like resuming.

    Errors: 403 ``forbidden``, 404 ``approval_not_found`` (also another user's run), 409 ``approval_used``, 410
    ``approval_expired``, 503 ``memory_unavailable``.
    """
    return await (await request.app[CHAT_STACK].handlers()).approval_token(request)
