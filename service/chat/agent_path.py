"""The agent path: the model may call the scenario's tools, step after step, within the agent's limits; which
tools it is offered, and when a turn is answered by the agent rather than one model call."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from service.chat import events
from service.chat.agent import AgentLimits, agent_tools, run_agent
from service.chat.answer import tools_unsupported, with_model
from service.chat.approvals import AWAITING, AgentApproval
from service.chat.check import build_checks, build_run, deploy_test_tool
from service.chat.context import ChatDeps, ChatResult, Resume, Turn
from service.chat.events import Emit
from service.chat.history import agent_summarisation
from service.chat.injection import DEFAULT_LANGUAGE, load_patterns
from service.chat.pauses import OWN_TOOLS, pause_tools, waiting_status
from service.chat.plan import PLAN_NOTE
from service.chat.tool_search import tool_selector
from service.errors import ServiceError, error_event
from service.llm.pii import pii_middleware
from service.llm.providers import ProviderConfig, first_chunk_within
from service.tools.context import ServiceToolContext

log = logging.getLogger(__name__)


TOOL_DEFAULTS_NOTE = ("Tools read the user's Node-RED. get_flow without flow_id reads the tab open in the editor; "
                      "get_node_info without node_ids reads the selected nodes. Call a tool only when the answer "
                      "needs the user's own flows, nodes, settings or memory.")


def uses_agent(deps: ChatDeps, turn: Turn) -> bool:
    """Whether the answer comes from the agent rather than one model call: :func:`wants_agent`, and the model can
    call tools (:attr:`ChatDeps.model_calls_tools`)."""
    return wants_agent(deps, turn) and deps.model_calls_tools


def wants_agent(deps: ChatDeps, turn: Turn) -> bool:
    """Whether the turn is for the agent, whatever the model can do: tools are offered and either the message
    needs them (:func:`mark_needs_tools`; a direct trigger's run is never followed by the agent) or neither a tool
    run nor retrieved knowledge decided the answer."""
    if not (turn.scenario.tools and deps.tools_enabled):
        return False
    if turn.needs_tools:
        return turn.tool_run is None or turn.tool_run.origin != "direct"
    return turn.tool_run is None and not turn.retrieved


def agent_tool_names(deps: ChatDeps, turn: Turn) -> list[str]:
    """The tools an agent run of this turn is offered (see :func:`offered_tools`)."""
    return offered_tools(deps, turn.scenario.tools)


def offered_tools(deps: ChatDeps, tool_names: list[str]) -> list[str]:
    """The scenario's ``tool_names`` and the external MCP servers' tools, as far as this caller may use them.

    Without memory (an ai-chat node without it, an ai-config node that turned it off) memory tools are not
    offered: they would read nothing; without an approval store, or in Ask mode, no write tool is."""
    names = [*tool_names, *(name for name in deps.tools.external_names() if name not in tool_names)]
    offered = deps.tools.offered(names, permission=deps.permission, memory=deps.memory is not None)
    writes_allowed = deps.approvals is not None and deps.offer_writes
    return [name for name in offered if writes_allowed or not deps.tools.writes(name)]


async def external_notices(deps: ChatDeps, emit: Emit, known: set[str], language: str) -> set[str]:
    """One ``mcp_server_unavailable`` notice (``server``: its name, ``reason``: why, as the server or its start
    said it) for each external MCP server that is unavailable and not in ``known`` (already told), worded in
    ``language`` (``mcpServerUnavailable`` of ``locales/<lang>/guardrails.json``); returns all unavailable
    servers."""
    external = deps.tools.external
    unavailable = external.unavailable() if external else {}
    patterns = load_patterns(deps.settings.locales_dir) if unavailable else None
    for server, reason in unavailable.items():
        if server not in known and patterns is not None:
            message = patterns.notice("mcpServerUnavailable", language, server=server, reason=reason)
            await emit(events.notice("mcp_server_unavailable", message, server=server, reason=reason))
    return set(unavailable)


async def agent_answer(messages: list[BaseMessage], tool_names: list[str], deps: ChatDeps,
                        context: ServiceToolContext, emit: Emit, result: ChatResult,
                        resume: Resume | None = None) -> None:
    """Agent mode: the model may call the scenario's tools; faults and limits become one ``error`` event.

    Write tools are offered only with an approval store; the run then pauses before writes and, when it does,
    stores an approval and emits ``approval_required`` (``result.status`` ``awaiting_approval``). ``resume``
    continues such a paused run with the user's decisions instead of starting from ``messages``.
    """
    settings = deps.settings
    limits = AgentLimits(settings.agent_max_model_calls, settings.agent_max_tool_calls, settings.agent_time_limit,
                         settings.llm_timeout)
    if deps.tools.external:
        await deps.tools.external.start()
    if deps.tools.mcp is not None:
        # The child starts in the background: the model is shown the tools it listed (none when it cannot start).
        await deps.tools.mcp.listed()
    told = await external_notices(deps, emit, set(), result.language or DEFAULT_LANGUAGE)
    built = offered_tools(deps, tool_names)
    offered = [name for name in built if not deps.tools.writes(name)] if deps.planning else built  # plan: read
    tools = agent_tools(deps.tools, offered, context, emit, result, deps.permission)
    writes = [name for name in offered if deps.tools.writes(name)]
    # Questions and plans pause like writes; in Ask mode a question too (it writes nothing).
    if deps.approvals is not None and (writes or deps.planning or not deps.offer_writes):
        own = pause_tools(emit, result, deps.planning or deps.build_plan is not None)
        tools += own
        writes += [tool.name for tool in own]
    approval = AgentApproval(deps.approvals, resume.run_id if resume else uuid.uuid4().hex, deps.identity,
                             deps.tools, context, emit, writes, resume.decisions if resume else None,
                             called=result.tools, plan=deps.build_plan) \
        if writes and deps.approvals is not None else None
    build = build_run(approval, deps.evidence, settings.build_max_rounds)
    if build is not None and context.apply == "editor" and build.checks():  # the user deploys, then it is tested
        tools.append(deploy_test_tool(build, result))
        writes.append(tools[-1].name)  # approval.writes: it pauses like a question
    if approval is not None and context.run_id is None:  # a write a policy approves deploys in this run
        context.run_id = approval.run_id
    system = messages[0] if messages else None
    if system is not None:
        messages[0] = SystemMessage(f"{system.content}\n\n{TOOL_DEFAULTS_NOTE}{PLAN_NOTE if deps.planning else ''}")
    pending: list[dict[str, Any]] | None = None

    async def agent_or_chat(model: BaseChatModel) -> None:
        nonlocal pending
        try:
            pending = await run_agent(model, tools, messages, limits, emit, result, approval,
                                      tool_selector(offered, settings.tool_search_threshold,
                                                    [tool.name for tool in tools if tool.name in OWN_TOOLS]),
                                      guards=[*pii_middleware(settings.pii_types),
                                              *build_checks(build)],
                                      condense=agent_summarisation(deps, model, messages[0] if messages else None,
                                                                   offered))
            await events.relay_end(emit, result)
        except Exception as exc:
            if result.answer or result.tools or system is None or not tools_unsupported(exc):
                raise
            # Some OpenAI-compatible servers (models without tool calling in Ollama, LM Studio) refuse a request
            # that offers tools: answer as a plain chat instead of failing.
            log.info("the model refused tool calling (%s); answering without tools", type(exc).__name__)
            deps.models.mark_without_tools(ProviderConfig.from_settings(settings, deps.provider))
            messages[0] = system
            async for chunk in first_chunk_within(model.astream(messages), settings.llm_timeout):
                await events.relay_chunk(chunk, emit, result)
            await events.relay_end(emit, result)

    await with_model(deps, emit, agent_or_chat)
    # A server that died during the run.
    await external_notices(deps, emit, told, result.language or DEFAULT_LANGUAGE)
    if pending and approval is not None and deps.approvals is not None:
        saved = {"tools": built, "planning": deps.planning, "plan": deps.build_plan, "offerWrites": deps.offer_writes,
                 "scenario": result.scenario, "language": result.language,
                 "apply": context.apply, "flowId": context.flow_id, "nodeIds": context.node_ids,
                 "remember": deps.memory is not None}
        try:
            await emit(await deps.approvals.open(approval.run_id, deps.identity, "agent", result.session_id,
                                                 pending, saved))
        except ServiceError as err:  # too many pending approvals: said, and the paused run is gone
            await emit(error_event(err))
            return
        result.tools.extend(action["tool"] for action in pending)  # waiting for the user, named like the others
        result.status = waiting_status(pending, AWAITING)
