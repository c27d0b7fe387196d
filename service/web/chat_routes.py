"""The handlers of the routes that answer with a model, plan or resume a write (stream-chat, assist, resume,
execute-tool, approvals), registered by :mod:`service.web.routes`, which imports this module only once the chat stack
is (:class:`service.web.stack.ChatStack`, issue 33: this module imports LangChain and LangGraph)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from service.assist.run import run_assist
from service.chat.approvals import AWAITING, plan_action, refusal, token_hash
from service.chat.context import ChatDeps, ChatResult, new_result
from service.chat.events import Emit
from service.chat.ledger import over_budget, save_turn, save_usage
from service.chat.pipeline import run_chat
from service.chat.plan import planning
from service.chat.resume import claim, continue_run, save_continuation
from service.chat.view import recording_view
from service.chat.wording import localized, localized_event, localized_summaries
from service.errors import (
    REQUEST_LANGUAGE,
    ServiceError,
    error_event,
    request_language,
)
from service.identity import Caller, request_caller
from service.llm.providers import ProviderConfig
from service.llm.usage import counted, turn_usage
from service.nodered.messages import accept_languages
from service.nodered.tooling import ToolFailure
from service.requests import (
    AppliedRequest,
    AssistRequest,
    EmptyBody,
    ExecuteToolRequest,
    ResumeRequest,
    StreamChatRequest,
)
from service.tools.context import ServiceToolContext
from service.tools.registry import failure_status
from service.tracing.spans import describe_caller
from service.web.deps import chat_deps
from service.web.disconnect import until_client_leaves
from service.web.keys import (
    APPROVALS,
    EVIDENCE,
    KNOWLEDGE,
    LIMITER,
    MEMORY,
    MESSAGES,
    NODERED,
    PRICES,
    SCENARIOS,
    SETTINGS,
    STREAMS,
    TOOLS,
)
from service.web.schemas import parse_body
from service.web.sse import EventStream

log = logging.getLogger(__name__)


async def execute_tool(request: web.Request) -> web.Response:
    """``POST /ai-sidebar/execute-tool``, as :func:`service.web.routes.execute_tool` describes it."""
    caller = request_caller(request)
    caller.require_write()  # running a tool by name needs write permission: the one rule in the README
    if caller.identity.kind == "flow":  # nor from a flow node allowed flow changes (see identity.py)
        raise ServiceError("forbidden", status=403, key="forbidden.run_tool")
    body = await parse_body(request, ExecuteToolRequest)
    tools = request.app[TOOLS]
    context = ServiceToolContext(nodered=request.app[NODERED].for_user(caller.token), user_token=caller.token,
                                 identity=caller.identity,
                                 memory=request.app[MEMORY].store if caller.memory else None,
                                 knowledge=request.app[KNOWLEDGE], evidence=request.app[EVIDENCE],
                                 language=next(iter(accept_languages(request.headers.get("Accept-Language"))), None))
    name = tools.resolve(body.tool) or body.tool  # ``get-flow`` answers as ``get_flow``
    try:
        params = await tools.parse(name, body.params)
        if tools.writes(name):
            approvals = request.app[APPROVALS].approvals
            if approvals is None:
                raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
            run_id = uuid.uuid4().hex
            action = await plan_action(tools, approvals, context, name, params)
            if "refused" in action:
                raise refusal(action)
            if action["ask"]:
                event = localized_event(await approvals.open(run_id, caller.identity, "execute", None, [action], {}),
                                        request.app[MESSAGES], request_language(request))
                return web.json_response({"status": AWAITING, **{k: v for k, v in event.items() if k != "type"}},
                                         status=202)
            await approvals.record_policy(run_id, caller.identity, action)
        output = await tools.run(name, params, context, caller.permission)
    except ToolFailure as failure:
        raise ServiceError(failure.code, status=failure_status(failure.code), **failure.sentence_args()) from None
    return web.json_response({"tool": name, "result": output.data})


async def stream_chat(request: web.Request) -> web.StreamResponse:
    """``POST /ai-sidebar/stream-chat``, as :func:`service.web.routes.stream_chat` describes it."""
    body = await parse_body(request, StreamChatRequest)
    if body.language:
        request[REQUEST_LANGUAGE] = body.language
    settings = request.app[SETTINGS]
    if len(body.message) > settings.max_message_chars:
        raise ServiceError("message_too_long", status=413,
                           params={"length": len(body.message), "limit": settings.max_message_chars})
    if body.provider is not None and body.provider.scenarios:
        # An ai-config node saved with a scenario this service no longer has: the others still apply, and none
        # left means all, as when none is ticked (its edit dialog flags the unknown one).
        known = request.app[SCENARIOS].structure.scenarios
        body.provider.scenarios = [key for key in body.provider.scenarios if key in known] or None
    caller = request_caller(request)
    async with request.app[LIMITER].slot(caller.identity.principal):
        return await _stream_answer(request, body, caller)


async def _stream_answer(request: web.Request, body: StreamChatRequest, caller: Caller) -> web.StreamResponse:
    deps = await chat_deps(request, caller, body.provider)
    deps.offer_writes = body.mode != "ask"
    deps.planning, body.message = planning(body.mode, body.message)
    result = new_result(body)
    describe_caller(result.session_id, caller.identity)
    if deps.memory is not None and body.sessionId:
        # Before the stream opens, so that a delete the client sends once it is open finds the session stored.
        with contextlib.suppress(ServiceError):
            result.session_existed = await deps.memory.owns(caller.identity, result.session_id)
    stream = EventStream(coalesce=request.app[SETTINGS].token_coalesce_ms / 1000)
    # Every error event of the stream is worded in the request's language on its way out, and kept so worded with
    # the answer (what the sidebar showed, for the reopened conversation).
    send = localized(recording_view(stream.send, result), request.app[MESSAGES], request_language(request))
    await stream.prepare(request)
    request.app[STREAMS].add(stream)
    saved = False
    try:
        await until_client_leaves(request, _counted(request, deps, result, run_chat(body, deps, send, result)))
        saved = True
        fault = await asyncio.shield(save_turn(body, deps, result))
        if fault is not None and fault.code not in result.errors:  # told once (the agent's checkpoint may have)
            await send(error_event(fault))
        await stream.send(_done(result))
    except ConnectionResetError:
        result.stopped = True
        log.info("client went away during session %s", result.session_id)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("chat failed")
        try:
            await send(error_event(ServiceError("internal_error", status=500)))
            await stream.send({"type": "done", "sessionId": result.session_id})
        except ConnectionResetError:
            pass
    finally:
        if not saved:
            # What was said is kept even when the client left or the handler is being cancelled.
            await asyncio.shield(save_turn(body, deps, result))
        await stream.close()
        request.app[STREAMS].discard(stream)
    return stream.response


def _counted(request: web.Request, deps: ChatDeps, result: ChatResult, work):
    """``work`` (a run) with the tokens of every model call it makes summed, priced, into ``result.usage``."""
    config = ProviderConfig.from_settings(deps.settings, deps.provider)

    def report(by_model) -> None:
        result.usage = turn_usage(by_model, config.provider, config.model, request.app[PRICES])
    return counted(work, report)


def _done(result: ChatResult) -> dict[str, object]:
    """The last event of a stream: the session, the run's ``usage`` ``{inputTokens, outputTokens, cost}`` when a
    model was called (``cost`` USD, null when the model has no price), its ``status`` when it waits, and the
    follow-up ``suggestions`` ``[{text, kind}]`` of an answer that ended without a fault (service.chat.followups)."""
    done: dict[str, object] = {"type": "done", "sessionId": result.session_id}
    if result.usage is not None:
        done["usage"] = result.usage.event()
    if result.suggestions and not result.errors:
        done["suggestions"] = result.suggestions
    if result.status:
        done["status"] = result.status
    return done


async def assist(request: web.Request) -> web.StreamResponse:
    """``POST /ai-sidebar/assist``, as :func:`service.web.routes.assist` describes it."""
    body = await parse_body(request, AssistRequest)
    if body.language:
        request[REQUEST_LANGUAGE] = body.language
    settings = request.app[SETTINGS]
    if len(body.description) > settings.max_message_chars:
        raise ServiceError("message_too_long", status=413,
                           params={"length": len(body.description), "limit": settings.max_message_chars})
    caller = request_caller(request)
    async with request.app[LIMITER].slot(caller.identity.principal):
        deps = dataclasses.replace(await chat_deps(request, caller, body.provider), memory=None)
        result = ChatResult(session_id=f"assist-{uuid.uuid4().hex}")
        return await _run_stream(request, deps, result, lambda send: run_assist(body, deps, send, result),
                                 "an assist request", lambda: save_usage(deps, result.session_id, result.usage))


async def resume(request: web.Request) -> web.StreamResponse:
    """``POST /ai-sidebar/resume``, as :func:`service.web.routes.resume` describes it."""
    body = await parse_body(request, ResumeRequest)
    if body.language:
        request[REQUEST_LANGUAGE] = body.language
    caller = request_caller(request)
    caller.require_write()  # approving a write needs the permission the write needs
    approvals = request.app[APPROVALS].approvals
    if approvals is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    async with request.app[LIMITER].slot(caller.identity.principal):
        deps = await chat_deps(request, caller, body.provider)
        await _refuse_over_budget(approvals, body.resumeToken, deps)
        claimed = await claim(approvals, deps.tools, caller.identity, body, partial(_live_flows, deps))
        result = ChatResult(session_id=claimed.approval["sessionId"] or claimed.run_id)

        async def finish() -> None:
            await save_continuation(claimed, deps, result)
            await save_usage(deps, result.session_id, result.usage)
        return await _run_stream(request, deps, result,
                                 lambda send: continue_run(claimed, deps, _recording(send, result), result),
                                 f"the resumed run {claimed.run_id}", finish)


async def _run_stream(request: web.Request, deps: ChatDeps, result: ChatResult,
                      work: Callable[[Emit], Awaitable[Any]], what: str,
                      finish: Callable[[], Awaitable[object]]) -> web.StreamResponse:
    """Answer ``request`` with an event stream: ``work(send)`` emits the events (errors worded in the request's
    language, its model calls counted into ``result.usage``), then ``done``; a fault is one ``internal_error``
    event then ``done``. ``finish`` (what is saved) runs whatever happened, shielded from cancellation; ``what``
    names the run in the log."""
    stream = EventStream(coalesce=request.app[SETTINGS].token_coalesce_ms / 1000)
    send = localized(recording_view(stream.send, result), request.app[MESSAGES], request_language(request))
    await stream.prepare(request)
    request.app[STREAMS].add(stream)
    try:
        await until_client_leaves(request, _counted(request, deps, result, work(send)))
        await stream.send(_done(result))
    except ConnectionResetError:
        log.info("client went away during %s", what)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s failed", what)
        try:
            await send(error_event(ServiceError("internal_error", status=500)))
            await stream.send(_done(result))
        except ConnectionResetError:
            pass
    finally:
        await asyncio.shield(finish())
        await stream.close()
        request.app[STREAMS].discard(stream)
    return stream.response


async def _refuse_over_budget(approvals, resume_token: str, deps: ChatDeps) -> None:
    """Refuse to resume a run that would call the model (an agent run, a ``@tools:`` call answered by the model)
    when the caller is over today's token budget, before its decisions are recorded: the token stays usable.

    Raises:
        ServiceError: 429 ``budget_exceeded``.
    """
    approval = await approvals.store.approval(token_hash(resume_token))
    if approval is None or approval["owner"] != deps.identity or approval["kind"] == "execute":
        return  # an unknown or another's token is claim's to refuse; running a tool by name calls no model
    refusal = await over_budget(deps)
    if refusal is not None:
        raise refusal


async def _live_flows(deps: ChatDeps) -> list[dict[str, Any]]:
    """The deployed flows, to re-validate the parts a resume ticked (raises NodeRedError)."""
    return list((await deps.nodered.get_flows())["flows"])


def _recording(send, result: ChatResult):
    async def recording(event: dict) -> None:
        if event.get("type") == "error":
            result.errors.append(event.get("code", "error"))
        await send(event)
    return recording


async def approvals_list(request: web.Request) -> web.Response:
    """``GET /ai-sidebar/approvals``, as :func:`service.web.routes.approvals_list` describes it."""
    caller = request_caller(request)
    approvals = request.app[APPROVALS].approvals
    if approvals is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    raw = request.query.get("limit", "50")
    if not raw.isdigit() or not 1 <= int(raw) <= 500:
        raise ServiceError("invalid_request", key="invalid_request.limit", params={"maximum": 500})
    pending = [{**run, "actions": _shown_actions(request, run["actions"])}
               for run in await approvals.store.pending_approvals(caller.identity)]
    return web.json_response({"pending": pending, "audit": await approvals.store.audit(caller.identity, int(raw))})


def _shown_actions(request: web.Request, actions: list[dict]) -> list[dict]:
    """A waiting run's actions as its ``approval_required`` event showed them, summaries in the request's
    language."""
    shown = [{**{key: action.get(key) for key in ("tool", "args", "summary", "diff")},
              **{key: action[key] for key in ("parts", "ticked", "adjusted") if action.get(key)}}
             for action in actions]
    return localized_summaries(shown, [action.get("sentence") for action in actions], request.app[MESSAGES],
                               request_language(request))


async def approval_applied(request: web.Request) -> web.Response:
    """``POST /ai-sidebar/approvals/{runId}/applied``, as :func:`service.web.routes.approval_applied` describes it."""
    body = await parse_body(request, AppliedRequest)
    caller = request_caller(request)
    caller.require_write()
    approvals = request.app[APPROVALS].approvals
    if approvals is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    run_id = request.match_info["runId"]
    outcome = body.outcome.model_dump(exclude_none=True)
    if not await approvals.store.record_applied(run_id, caller.identity, body.tool, outcome, body.later):
        raise ServiceError("approval_not_found", status=404)
    return web.json_response({"runId": run_id, "recorded": True})


async def approval_token(request: web.Request) -> web.Response:
    """``POST /ai-sidebar/approvals/{runId}/token``, as :func:`service.web.routes.approval_token` describes it."""
    await parse_body(request, EmptyBody)
    caller = request_caller(request)
    caller.require_write()
    approvals = request.app[APPROVALS].approvals
    if approvals is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    return web.json_response(await approvals.reissue(request.match_info["runId"], caller.identity))
