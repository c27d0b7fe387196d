"""The chat pipeline (DESIGN.md, "The chat pipeline"): direct trigger, keyword-forced tool, pure chat.

Every run emits events through ``emit`` and always ends with exactly one ``done``; each fault gives exactly one
``error`` event. A client that goes away raises ``ConnectionResetError`` out of ``emit``; the run stops there.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import re
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from service.chat import events
from service.chat.agent import AgentLimits, agent_tools, announce_change, run_agent
from service.chat.approvals import AWAITING, AgentApproval, Approvals, plan_action, refusal
from service.chat.events import Emit, Origin
from service.chat.history import agent_summarisation, fitted_history, left_out_notice
from service.chat.injection import DEFAULT_LANGUAGE, load_patterns, suspicious_nodes
from service.chat.injection import notice_message as injection_message
from service.chat.named_context import with_named_nodes
from service.chat.prompts import (
    describe_flow,
    describe_nodes,
    system_message,
    tool_answer_prompt,
    with_caught_error,
    with_debug_messages,
)
from service.chat.scenarios import Catalog, Scenario, ScenarioCatalog
from service.chat.tool_search import tool_selector
from service.errors import ServiceError, error_event
from service.identity import ANONYMOUS, Identity
from service.knowledge.flowcheck import flow_node_types, notice_message, unknown_types
from service.knowledge.grading import grade, rewrite
from service.knowledge.refresher import KnowledgeSlot
from service.knowledge.retrieval import (
    DOCS_TOOL,
    StoreResult,
    context_message,
    is_follow_up,
    retrieve,
    retrieve_store,
    sources,
    standalone_query,
    without_model,
)
from service.knowledge.router import Route
from service.llm.endpoints import located
from service.llm.pii import mask, pii_middleware
from service.llm.providers import ChatModelFactory, ProviderConfig, first_chunk_within, provider_error
from service.llm.usage import day_start
from service.memory.db import MemoryUnavailable
from service.memory.usage import UsageStore
from service.nodered.client import UNKNOWN_VERSION, NodeRedClient, NodeRedError
from service.nodered.tooling import ToolFailure, ToolOutput
from service.settings import Settings
from service.tools.context import ServiceToolContext
from service.tools.registry import Permission, ToolRegistry, canonical_name
from service.tracing.spans import search_span
from service.web.schemas import ProviderOverride, StreamChatRequest, load_json

if TYPE_CHECKING:
    from service.llm.usage import TurnUsage
    from service.memory.store import MemoryStore
    from service.nodered.evidence import EvidenceBuffer

log = logging.getLogger(__name__)

DIRECT_TRIGGER = re.compile(r"^\s*@tools:([A-Za-z0-9_\-]+)\s*(?:\|(.*))?$", re.S)
TOOL_DEFAULTS_NOTE = ("Tools read the user's Node-RED. get_flow without flow_id reads the tab open in the editor; "
                      "get_node_info without node_ids reads the selected nodes. Call a tool only when the answer "
                      "needs the user's own flows, nodes, settings or memory.")
# Tool failures after which answering makes no sense: the user must change the request.
# English fallback of ``noModelNotice`` in locales/<lang>/knowledge.json.
NO_MODEL_NOTICE = ("A model is needed for a written answer: the text above is what was found in the installed "
                   "nodes' help or your workspace. Configure a provider (AI_PROVIDER and its key) in the assistant "
                   "service or in an ai-config node.")
ROUTER_PROMPT = ("Classify the user's message for a Node-RED assistant. Answer with one word: docs (about node "
                 "types, what a node does, how to do something with nodes), workspace (about the user's own flows, "
                 "tabs, nodes, counts, where something is used), both, or neither.")
REWRITE_PROMPT = ("The search query below found nothing relevant in Node-RED's node help or the user's flows. Rewrite "
                  "it as a short keyword query in the same language, using the words Node-RED's documentation would "
                  "use (node type names, properties). Answer with the query only.")
FATAL_TOOL_CODES = frozenset({"flow_not_found", "node_not_found", "flow_not_selected", "node_not_selected",
                              "invalid_params", "unknown_tool"})


@dataclass
class ChatDeps:
    """What one chat run uses; built per request by the route."""

    settings: Settings
    nodered: NodeRedClient
    models: ChatModelFactory
    scenarios: ScenarioCatalog
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    user_token: str | None = field(default=None, repr=False)
    identity: Identity = ANONYMOUS
    memory: MemoryStore | None = None
    knowledge: KnowledgeSlot | None = None
    evidence: EvidenceBuffer | None = None
    provider: ProviderOverride | None = field(default=None, repr=False)
    may_write: bool = True       # write permission: needed to run a tool by name (@tools:)
    granted_tools: bool = True   # an ai-chat node's own config may withhold tools (X-AI-Sidebar-Flow-Grants)
    approvals: Approvals | None = None  # None: no approval store, so write tools are not offered
    offer_writes: bool = True  # False in the sidebar's Ask mode: the model is offered no write tool (issue 31)
    # Where turn usage is recorded and budgets are read: the memory database, also when this caller has no memory.
    ledger: MemoryStore | None = None

    @property
    def permission(self) -> Permission:
        return "write" if self.may_write else "read"

    @property
    def tools_enabled(self) -> bool:
        """Tools run only when the caller has them (an ``ai-chat`` node's grants) and the ``ai-config`` node, if
        any, has not turned them off; the environment's provider always has them."""
        return self.granted_tools and (self.provider is None or self.provider.tools)

    def allowed(self, scenario: str | None) -> bool:
        """Whether the ``ai-config`` node allows ``scenario`` (all are allowed without a list)."""
        return self.provider is None or not self.provider.scenarios or scenario in self.provider.scenarios


@dataclass
class ToolRun:
    """One tool call of the pipeline; ``origin`` is ``direct`` (the user's ``@tools:``), ``keyword`` (forced by a
    scenario keyword) or ``error`` (the node that raised the caught error an ``ai-chat`` node asks about); the
    agent's own calls are ``agent`` (agent.py)."""

    name: str
    params: dict[str, Any]
    origin: Origin = "direct"
    output: ToolOutput | None = None
    failure: ToolFailure | None = None


@dataclass
class ChatResult:
    """What a run produced so far: answer text, tools used, faults, token usage (for memory and ``done``).

    The caller creates it, so that what was already said survives a client that goes away mid-answer.
    """

    session_id: str
    answer: str = ""
    tools: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: TurnUsage | None = None  # every model call of the run, summed (service.llm.usage.counted)
    scenario: str | None = None
    language: str | None = None
    stopped: bool = False  # the client went away (Stop, tab closed, service shutting down) before the end
    session_existed: bool = False  # the session was already stored when the request came in
    status: str | None = None  # "awaiting_approval": the run waits for the user's decisions on writes
    view: list[dict[str, Any]] = field(default_factory=list)  # the events shown besides text (service.chat.view)

    def shown(self) -> list[dict[str, Any]]:
        """What the sidebar showed of the answer besides its text, to store with it: the recorded events, then the
        turn's usage as the ``done`` event carried it (``[]``: nothing but text)."""
        if self.usage is None:
            return list(self.view)
        return [*self.view, {"type": "done", "usage": self.usage.event(), "at": len(self.answer)}]

    def metadata(self, request: StreamChatRequest) -> dict[str, Any]:
        """What is stored with the turn: scenario, selected flow id, tools used, language, error codes, and the
        context the question went out with (``context``: the open tab's id and label, how many nodes were selected
        and debug messages attached), which the sidebar shows under a reloaded question."""
        flow = request.selectedFlow
        meta: dict[str, Any] = {"scenario": self.scenario, "flowId": request.flow_id, "tools": self.tools,
                                "language": self.language,
                                "context": {"flow": {"id": flow.id, "label": flow.label} if flow else None,
                                            "nodes": len(request.selectedNodes),
                                            "debug": len(request.debugMessages)}}
        if self.errors:
            meta["errors"] = self.errors
        if self.stopped:
            meta["stopped"] = True
        return meta


async def save_turn(request: StreamChatRequest, deps: ChatDeps, result: ChatResult) -> ServiceError | None:
    """Store the user's original message and the answer (as far as it went) with the turn's token usage; returns
    the fault, never raises.

    A ``silent`` request, or a caller without memory, stores no message; its usage is recorded all the same.
    """
    if deps.memory is None or request.silent:
        return await save_usage(deps, result.session_id, result.usage)
    try:
        await deps.memory.save_turn(result.session_id, deps.identity, request.message, result.answer,
                                    result.metadata(request), result.scenario, create=not result.session_existed,
                                    usage=result.usage, events=result.shown())
    except ServiceError as err:
        log.warning("turn of session %s not saved: %s", result.session_id, err.code)
        return err
    return None


async def save_usage(deps: ChatDeps, session_id: str, usage: TurnUsage | None) -> ServiceError | None:
    """Record a run's token ``usage`` without its messages (see :func:`save_turn`); returns the fault, never
    raises. Nothing is recorded without usage or without a memory database."""
    if usage is None or deps.ledger is None:
        return None
    try:
        await deps.ledger.record_usage(deps.identity, session_id, usage)
    except ServiceError as err:
        log.warning("usage of session %s not recorded: %s", session_id, err.code)
        return err
    return None


def parse_direct_trigger(message: str) -> tuple[str, Any] | None:
    """``@tools:<name>`` or ``@tools:<name>|<params>`` → ``(name, params)``; params is a list/dict or ``None``.

    Params may be JSON or a Python literal (``['a','b']``), never evaluated as code.

    Raises:
        ServiceError: ``invalid_params`` when the part after ``|`` is not a list or object literal.
    """
    match = DIRECT_TRIGGER.match(message)
    if not match:
        return None
    name, raw = match.group(1), (match.group(2) or "").strip()
    if not raw:
        return name, None
    try:
        params = load_json(raw)
    except ValueError:
        try:
            params = ast.literal_eval(raw)
        # CPython's parser answers deep nesting with SyntaxError, RecursionError or MemoryError (its own stack,
        # not the process's memory): all mean "not a literal we take".
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raise ServiceError("invalid_params", key="invalid_params.trigger", params={"tool": name}) from None
    if not isinstance(params, (list, dict)):
        params = [params]
    return name, params


def new_result(request: StreamChatRequest) -> ChatResult:
    """The result object of a run: the request's session id, or a new one."""
    return ChatResult(session_id=request.sessionId or uuid.uuid4().hex)


@dataclass
class Turn:
    """What the steps of one run decide: the language's catalog, the scenario, the tools' context, the keyword's
    task for the model and the tool to run before answering (``None``: none)."""

    catalog: Catalog
    scenario_key: str
    scenario: Scenario
    context: ServiceToolContext
    task: str = ""
    tool_run: ToolRun | None = None
    history: list[dict[str, Any]] | None = None  # read once, by the first step that needs it
    summary: str | None = None  # the stored summary of the turns before ``history`` (issue 22)
    retrieved: list[StoreResult] = field(default_factory=list)
    needs_tools: bool = False  # the message asks for a change or for runtime facts: the agent answers (issue 30)


async def run_chat(request: StreamChatRequest, deps: ChatDeps, emit: Emit, result: ChatResult) -> ChatResult:
    """Answer one chat request, emitting ``tool_call``/``tool_result``/``token``/``error`` events (not ``done``)
    and filling ``result`` as it goes.

    The router graph (:mod:`service.chat.router_graph`) runs this module's steps: scenario and budget, then a direct
    trigger (``@tools:``) or the scenario keywords (which may switch the language and force a tool), the tool run
    or else the routed retrieval (which answers alone when no model is configured), the prompt, and the answer:
    one model call after a tool or retrieval, else the agent (or a plain chat without tools). The caller sends
    ``done`` and saves the turn. Raises ``ConnectionResetError`` when the client is gone.
    """
    # Imported here: the graph's nodes are this module's steps, so the graph module imports this one.
    from service.chat.router_graph import run_routed

    await run_routed(request, deps, emit, result)
    return result


async def over_budget(deps: ChatDeps) -> ServiceError | None:
    """The 429 ``budget_exceeded`` error when the caller has used up today's (UTC) tokens, else ``None``.

    Budgets: ``AI_SIDEBAR_DAILY_TOKEN_BUDGET``, per user ``AI_SIDEBAR_USER_TOKEN_BUDGETS``; counted from the usage
    rows in the memory database (none: no budget holds).
    """
    budget = deps.settings.token_budget(deps.identity.name if deps.identity.kind == "user" else None)
    if not budget or deps.ledger is None:
        return None
    used = await UsageStore(deps.ledger).tokens_since(deps.identity, day_start())
    if used < budget:
        return None
    return ServiceError("budget_exceeded", status=429, params={"used": used, "budget": budget})


async def within_budget(deps: ChatDeps, emit: Emit) -> bool:
    """Whether the model may be called: over the budget, one ``budget_exceeded`` error is emitted (``False``)."""
    refusal = await over_budget(deps)
    if refusal is None:
        return True
    await emit(error_event(refusal))
    return False


def _choose_scenario(request: StreamChatRequest, deps: ChatDeps, result: ChatResult) -> Turn:
    """The requested scenario in the request's language (the ``ai-config`` node's first one when it does not allow
    the requested one), and the tools' context from the editor's selection."""
    catalog = deps.scenarios.get(request.language)
    wanted = request.scenario
    if not deps.allowed(wanted) and deps.provider is not None and deps.provider.scenarios:
        wanted = deps.provider.scenarios[0]
    scenario_key, scenario = catalog.scenario(wanted)
    result.scenario, result.language = scenario_key, catalog.language
    context = ServiceToolContext(nodered=deps.nodered, flow_id=request.flow_id,
                                 node_ids=([n.id for n in request.selectedNodes]
                                           or ([request.nodeId] if request.nodeId else [])),
                                 user_token=deps.user_token, identity=deps.identity, memory=deps.memory,
                                 flow_data=request.flowData, knowledge=deps.knowledge, language=catalog.language,
                                 locked_flows=(frozenset(request.lockedFlows) if request.lockedFlows is not None
                                               else None),
                                 apply=request.apply, evidence=deps.evidence)
    return Turn(catalog, scenario_key, scenario, context)


async def _direct_trigger(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> bool:
    """``@tools:<name>``: the tool to run, its parameters validated; ``False`` when the message is no trigger.

    Raises:
        CodedError: ``forbidden`` (running a tool by name needs write permission), ``tools_disabled``,
            ``invalid_params``, ``unknown_tool``.
    """
    if not DIRECT_TRIGGER.match(request.message):
        return False
    # A flow node never runs a tool by name, even one allowed flow changes: its message comes from whoever
    # triggers the flow, and its write permission is only for write tools the agent offers (each approved).
    if not deps.may_write or deps.identity.kind == "flow":
        raise ServiceError("forbidden", status=403, key="forbidden.run_tool")
    trigger = parse_direct_trigger(request.message)
    assert trigger is not None  # the message matched DIRECT_TRIGGER above
    name, params = trigger
    if not deps.tools_enabled:
        raise ServiceError("tools_disabled")
    name = deps.tools.resolve(name) or name
    turn.tool_run = ToolRun(name, await deps.tools.parse(name, params))
    return True


def _follow_keywords(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult) -> None:
    """The scenario keywords: a question written in another shipped language is answered in that language; a
    keyword group switches the scenario (when allowed), gives the model its task and may force a tool."""
    match, written_in = deps.scenarios.match_any(request.message, turn.catalog.language)
    if written_in is not None and written_in.language not in (turn.catalog.language, "en-US"):
        turn.catalog = written_in
        turn.scenario_key, turn.scenario = written_in.scenario(turn.scenario_key)
        result.language = written_in.language
    if match is None:
        return
    if deps.allowed(match.group.scenario):
        turn.scenario_key, turn.scenario = turn.catalog.scenario(match.group.scenario)
        result.scenario = turn.scenario_key
    turn.task = match.group.newHumanPrompt
    forced = deps.tools.resolve(_forced_tool(match.group.tool, turn.context))
    if deps.tools_enabled and forced is not None:
        turn.tool_run = ToolRun(forced, {}, origin="keyword")


def _mark_needs_tools(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> None:
    """Whether the message asks for what only tools can do (:meth:`service.knowledge.router.Router.needs_tools`):
    then neither retrieved knowledge nor a keyword's forced tool ends in a model call without tools; the agent
    answers, with what was retrieved or the forced tool's result in its prompt. Only where the scenario offers
    tools and tools are on (an ``ai-chat`` node without tools keeps its one call)."""
    router = deps.knowledge.router if deps.knowledge is not None else None
    turn.needs_tools = bool(router is not None and turn.scenario.tools and deps.tools_enabled
                            and router.needs_tools(request.message, turn.catalog.language))


def _read_error_source(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> None:
    """A caught error (an ``ai-chat`` node in a catch path) with tools on: the node that raised it is read with
    get_node_info before answering, instead of a keyword's tool, so the model sees the configuration (function code
    included, secrets redacted) next to the error."""
    source = request.error.source if request.error is not None else None
    if source is None or not source.id or not deps.tools_enabled:
        return
    turn.task = ""
    turn.tool_run = ToolRun("get_node_info", {"node_ids": [source.id]}, origin="error")


async def _prompt(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                  emit: Emit | None = None) -> list[BaseMessage]:
    """System prompt, history, then the user's message, or after a tool the answer prompt with its result. When
    earlier turns had to be left out (not even their summary fits), one ``history_left_out`` notice says so
    through ``emit``."""
    flow_label = request.selectedFlow.label if request.selectedFlow else None
    words = turn.catalog.data.placeholderWords  # the values in the prompt's language
    values = {"selectedFlow": describe_flow(request.flow_id, flow_label, words),
              "selectedNodes": describe_nodes(request.selectedNodes, words)}
    if "nodeRedVersion" in turn.scenario.systemPrompt:
        version = await deps.nodered.version()
        values["nodeRedVersion"] = words["unknown"] if version == UNKNOWN_VERSION else version
    messages: list[BaseMessage] = [system_message(turn.catalog, turn.scenario, values)]
    if turn.history is None:
        turn.history = await _history(request, deps, result, turn)
    question = with_caught_error(with_debug_messages(request.message, request.debugMessages), request.error)
    run = turn.tool_run
    if deps.tools_enabled:  # reading node configuration is a tool's reach: withheld with the tools
        question = await with_named_nodes(question, request, deps.nodered, run.output if run else None)
    if run is None:
        asked = HumanMessage(context_message(question, turn.retrieved) if turn.retrieved else question)
    else:
        asked = tool_answer_prompt(
            question, turn.task, run.name,
            deps.tools.for_model(run.name, run.output.text, run.output.config_at) if run.output else None,
            run.failure.message if run.failure else None,
            turn.catalog.data.answerInstruction)
    tools = _agent_tools(deps, turn) if _uses_agent(deps, turn) else []
    history = await fitted_history(deps, result.session_id if result.session_existed else None, turn.summary,
                                   turn.history, [*messages, asked], tools)
    if history.left_out and emit is not None:
        await emit(left_out_notice(deps.settings.locales_dir, result.language or DEFAULT_LANGUAGE, history.left_out))
    return [*messages, *history.messages, asked]


def _uses_agent(deps: ChatDeps, turn: Turn) -> bool:
    """Whether the answer comes from the agent rather than one model call: tools are offered and either the
    message needs them (:func:`_mark_needs_tools`; a direct trigger's run is never followed by the agent) or
    neither a tool run nor retrieved knowledge decided the answer."""
    if not (turn.scenario.tools and deps.tools_enabled):
        return False
    if turn.needs_tools:
        return turn.tool_run is None or turn.tool_run.origin != "direct"
    return turn.tool_run is None and not turn.retrieved


def _agent_tools(deps: ChatDeps, turn: Turn) -> list[str]:
    """The tools an agent run of this turn is offered (see :func:`_offered`)."""
    return _offered(deps, turn.scenario.tools)


def _offered(deps: ChatDeps, tool_names: list[str]) -> list[str]:
    """The scenario's ``tool_names`` and the external MCP servers' tools, as far as this caller may use them.

    Without memory (an ai-chat node without it, an ai-config node that turned it off) memory tools are not
    offered: they would read nothing; without an approval store, or in Ask mode, no write tool is."""
    names = [*tool_names, *(name for name in deps.tools.external_names() if name not in tool_names)]
    offered = deps.tools.offered(names, permission=deps.permission, memory=deps.memory is not None)
    writes_allowed = deps.approvals is not None and deps.offer_writes
    return [name for name in offered if writes_allowed or not deps.tools.writes(name)]


async def _external_notices(deps: ChatDeps, emit: Emit, known: set[str], language: str) -> set[str]:
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


async def _retrieve(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                    emit: Emit) -> None:
    """Routed retrieval: the router reads the latest user message alone (never the history); the stores it names
    are searched with a standalone query (a follow-up is joined to the previous question), each chunk is graded
    and dropped under ``AI_SIDEBAR_KNOWLEDGE_MIN_RELEVANCE``, and a store left with nothing is searched once more
    with a rewritten query (seed 002). Every search is shown as ``tool_call``/``tool_result`` events of origin
    ``router``. The workspace is searched only for a request that may use tools (an ``ai-chat`` node whose config
    withholds them gets the node help alone)."""
    slot = deps.knowledge
    if slot is None or slot.knowledge is None or slot.router is None or slot.refresher is None:
        return
    fallback = _route_by_model(deps) if deps.settings.router_model else None
    route = await slot.router.route(request.message, turn.catalog.language, fallback,
                                    names=slot.knowledge.workspace.names)
    if route is Route.NEITHER:
        return
    if not deps.tools_enabled:
        route = Route.DOCS if route in (Route.DOCS, Route.BOTH) else Route.NEITHER
        if route is Route.NEITHER:
            return
    # Right after a start, before any help is indexed (an index kept from an earlier run answers at once): say that
    # the installed help is not in this answer yet.
    if slot.refresher.building and not await slot.knowledge.index.holds("docs", DEFAULT_LANGUAGE):
        await emit(events.notice("knowledge_index_building", load_patterns(deps.settings.locales_dir).notice(
            "knowledgeIndexBuilding", turn.catalog.language)))
    query = request.message
    if is_follow_up(request.message):
        turn.history = await _history(request, deps, result, turn)
        query = standalone_query(request.message, turn.history)
    language = await slot.refresher.docs_language(turn.catalog.language)
    lexicon = slot.knowledge.lexicons.get(turn.catalog.language)
    threshold = deps.settings.knowledge_min_relevance
    try:
        with search_span(route.value) as traced:
            found = await retrieve(slot.knowledge, route, query, language)
            traced(sum(len(store.hits) for store in found))
        for store in found:
            store.hits = grade(store.hits, query, lexicon, threshold)
        # Rewritten only when no store found anything relevant: with both routed, one store's relevant chunks answer
        # (a named tab found in the workspace needs no node help for the words around it). An index that holds
        # nothing yet (never refreshed) has nothing a rewrite could find.
        # A request that needs tools is not rewritten: the agent answers it and may search again itself.
        retry = [] if turn.needs_tools or any(store.hits for store in found) else [
            store for store in found if await slot.knowledge.index.holds(
                "docs" if store.tool == DOCS_TOOL else "workspace", language if store.tool == DOCS_TOOL else "")]
        rewritten = await rewrite(query, lexicon, _rewrite_by_model(deps)) if retry else None
        retried = []
        if rewritten is not None:
            for store in retry:
                with search_span(store.tool) as traced:
                    again = await retrieve_store(slot.knowledge, store.tool, rewritten, language)
                    traced(len(again.hits))
                again.hits = grade(again.hits, rewritten, lexicon, threshold)
                retried.append(again)
    except sqlite3.Error as err:  # a locked or damaged index: answer without it, as without memory
        log.warning("knowledge not searched: %s", err)
        return
    # A store that found nothing is shown only when it was retried: the user sees the first query, then the
    # rewritten one.
    shown = [store for store in found if store.hits or retried] + retried
    for store in shown:
        await emit(events.tool_call(store.tool, {"query": store.query}, "router"))
        await emit(events.tool_result(store.tool, store.text, ok=True, sources=sources(store.hits)))
        result.tools.append(store.tool)
    turn.retrieved = [store for store in found + retried if store.hits]


def _route_by_model(deps: ChatDeps) -> Callable[[str], Awaitable[Route | None]] | None:
    """The router's model fallback (``AI_SIDEBAR_ROUTER_MODEL``): the request's model classifies the one message
    it is given; ``None`` (undecided) when no model is configured or it fails or answers something else."""
    async def classify(message: str) -> Route | None:
        answer = await _ask_model(deps, ROUTER_PROMPT, message)
        word = (answer or "").strip().strip(".").casefold()
        return next((route for route in Route if route.value == word), None)
    return classify


def _rewrite_by_model(deps: ChatDeps) -> Callable[[str], Awaitable[str | None]] | None:
    """The rewrite of a query that found nothing, by the request's model (``None`` when none is configured)."""
    try:
        deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
    except ServiceError:
        return None

    async def rewrite_query(query: str) -> str | None:
        return await _ask_model(deps, REWRITE_PROMPT, query)
    return rewrite_query


async def _ask_model(deps: ChatDeps, instruction: str, text: str) -> str | None:
    """One short model call (``instruction`` as system prompt, ``text`` as the one user message) within
    ``AI_LLM_TIMEOUT``; ``None`` when no model is configured or the call fails (the caller has a fallback)."""
    try:
        model = deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
        async with asyncio.timeout(deps.settings.llm_timeout):
            question = HumanMessage(mask(text, deps.settings.pii_types))
            answer = await model.ainvoke([SystemMessage(instruction), question])
    except Exception as err:  # noqa: BLE001 - any provider fault: the deterministic path decides
        log.info("knowledge model step skipped (%s)", type(err).__name__)
        return None
    return answer.text if isinstance(answer.text, str) else answer.text()


async def _answer_without_model(deps: ChatDeps, turn: Turn, emit: Emit, result: ChatResult) -> bool:
    """With no model configured, a question that retrieved something is answered with what was retrieved and a
    notice that a model is needed for a written answer (``True``); otherwise ``False`` and the run goes on (and
    ends in the usual ``provider_not_configured`` error)."""
    try:
        deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
    except ServiceError as err:
        if err.code != "provider_not_configured":
            return False
        notice = NO_MODEL_NOTICE
        if deps.knowledge is not None and deps.knowledge.knowledge is not None:
            notice = deps.knowledge.knowledge.lexicons.get(turn.catalog.language).no_model_notice or notice
        text = without_model(turn.retrieved, notice)
        result.answer += text
        await emit(events.token(text))
        return True
    return False


async def _check_flow_types(deps: ChatDeps, turn: Turn, emit: Emit, result: ChatResult) -> None:
    """Before the answer ends: every node type of a flow export in a ```json block of the answer is checked
    against the installed node sets (the knowledge refresher's ``GET /nodes``, else the request's own read); the
    unknown ones are named in one ``notice`` event (``unknown_node_types``) in the request's language. Node-RED
    unreadable: no check (the answer stands)."""
    types = flow_node_types(result.answer)
    if not types:
        return
    slot = deps.knowledge
    try:
        node_sets = (await slot.refresher.node_sets() if slot is not None and slot.refresher is not None
                     else await deps.nodered.get_nodes())
    except NodeRedError as err:
        log.info("generated flow not checked: %s", err.code)
        return
    unknown = unknown_types(types, node_sets)
    if not unknown:
        return
    sentences = {}
    if slot is not None and slot.knowledge is not None:
        sentences = slot.knowledge.lexicons.get(turn.catalog.language).unknown_node_types
    await emit(events.notice("unknown_node_types", notice_message(unknown, sentences),
                             types=[item.as_event() for item in unknown]))


async def _warn_of_injection(request: StreamChatRequest, deps: ChatDeps, turn: Turn, emit: Emit) -> None:
    """Before the answer ends: the editor's flow (``flowData``) holding text that reads like instructions to the
    model gets one ``notice`` (``possible_injection``) naming those nodes (``nodes`` ``[{id, type, name}]``)."""
    patterns = load_patterns(deps.settings.locales_dir)
    # The flow's text (every function's code, megabytes in a hostile request) is searched off the event loop.
    found = await asyncio.to_thread(suspicious_nodes, request.flowData, patterns) if request.flowData else []
    if found:
        sentence = patterns.sentence(turn.catalog.language)
        await emit(events.notice("possible_injection", injection_message(found, sentence), nodes=found))


def _forced_tool(tool: str | None, context: ServiceToolContext) -> str | None:
    """The tool a keyword forces, adapted to what the editor has selected: "this node" with no node selected reads
    the open tab instead (the model finds the node there); with nothing open either, no tool is forced and the
    question is answered as it stands (a quick start must never end in an error)."""
    tool = canonical_name(tool) if tool else None
    if tool == "get_node_info" and not context.node_ids:
        tool = "get_flow"
    if tool == "get_flow" and not context.flow_id:
        return None
    return tool


def recording_errors(emit: Emit, result: ChatResult) -> Emit:
    """``emit`` that also notes the code of every ``error`` event in ``result.errors``."""
    async def recording(event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            result.errors.append(event.get("code", "error"))
        await emit(event)
    return recording


async def _history(request: StreamChatRequest, deps: ChatDeps, result: ChatResult,
                   turn: Turn) -> list[dict[str, Any]]:
    """Earlier turns for the model: the session's turns after its stored summary (which goes to
    ``turn.summary``) from memory, else what the client sent; :func:`fitted_history` fits them to the budget."""
    session_id = result.session_id
    if deps.memory is not None and request.sessionId:
        try:
            owned = await deps.memory.owns(deps.identity, session_id)
            # Stored when the request came in (the route checks before the stream opens) stays so: a session the
            # user deletes while this answer is prepared must not be created again by saving it.
            result.session_existed = result.session_existed or owned
            summary, turns = (await deps.memory.conversation(deps.identity, session_id) if owned else (None, []))
        except ServiceError as err:
            log.warning("history of session %s not read: %s", session_id, err.code)
            summary, turns = None, []
        if summary is not None:
            turn.summary = summary.text
        if turns or summary is not None:
            return [{"role": t.role, "content": t.content, "id": t.id} for t in turns]
    return [turn.model_dump() for turn in request.history]


async def _run_tool(run: ToolRun, deps: ChatDeps, context: ServiceToolContext, emit: Emit) -> None:
    """Emit ``tool_call``, run the tool (in-process or through the MCP child), emit ``tool_result`` (and one
    ``error`` when it failed)."""
    shown = {k: v for k, v in run.params.items() if v is not None}
    if run.name == "get_flow" and not shown.get("flow_id") and context.flow_id:
        shown["flow_id"] = context.flow_id
    if run.name == "get_node_info" and not shown.get("node_ids") and context.node_ids:
        shown["node_ids"] = context.node_ids
    await emit(events.tool_call(run.name, shown, run.origin))
    try:
        run.output = await deps.tools.run(run.name, run.params, context, deps.permission)
    except ToolFailure as failure:
        run.failure = failure
        await emit(events.tool_result(run.name, failure.message, ok=False, failure=failure))
        # The node behind a caught error may be gone or inside a subflow instance (an id no flow holds): the error
        # is still worth explaining, so that failure is no fault of the request.
        if run.origin != "error":
            await emit(error_event(failure))
        return
    await emit(events.tool_result(run.name, run.output.text, ok=True, sources=run.output.sources))
    await announce_change(deps.tools, run.name, run.output.data, emit)


async def _ask_before_write(request: StreamChatRequest, deps: ChatDeps, turn: Turn, emit: Emit,
                            result: ChatResult) -> bool:
    """``@tools:`` naming a write tool: plan it; unless its policy lets it run, store an approval and emit
    ``approval_required`` (``True``: the run stops here and waits). A plan that fails is the tool's failure."""
    run = turn.tool_run
    assert run is not None
    if deps.approvals is None:  # no approval store, no record: the write cannot be asked for
        await emit(error_event(ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")))
        return True
    run_id = uuid.uuid4().hex
    action = await plan_action(deps.tools, deps.approvals, turn.context, run.name, run.params)
    if "refused" in action:
        failure = refusal(action)
        await emit(events.tool_call(run.name, run.params, run.origin))
        await emit(events.tool_result(run.name, action["refused"], ok=False, failure=failure))
        await emit(error_event(failure))
        result.tools.append(run.name)
        return True
    if not action["ask"]:
        await deps.approvals.record_policy(run_id, deps.identity, action)
        return False
    context = {"message": request.message, "scenario": turn.scenario_key, "language": turn.catalog.language,
               "apply": request.apply, "flowId": request.flow_id, "nodeIds": turn.context.node_ids,
               "remember": deps.memory is not None}
    try:
        await emit(await deps.approvals.open(run_id, deps.identity, "direct", result.session_id, [action], context))
    except ServiceError as err:  # too many pending approvals: said, and nothing waits
        await emit(error_event(err))
        return True
    result.status = AWAITING
    return True


async def _agent_answer(messages: list[BaseMessage], tool_names: list[str], deps: ChatDeps,
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
    told = await _external_notices(deps, emit, set(), result.language or DEFAULT_LANGUAGE)
    offered = _offered(deps, tool_names)
    tools = agent_tools(deps.tools, offered, context, emit, result, deps.permission)
    writes = [name for name in offered if deps.tools.writes(name)]
    approval = AgentApproval(deps.approvals, resume.run_id if resume else uuid.uuid4().hex, deps.identity,
                             deps.tools, context, emit, writes, resume.decisions if resume else None,
                             called=result.tools) \
        if writes and deps.approvals is not None else None
    system = messages[0] if messages else None
    if system is not None:
        messages[0] = SystemMessage(f"{system.content}\n\n{TOOL_DEFAULTS_NOTE}")
    pending: list[dict[str, Any]] | None = None

    async def agent_or_chat(model: BaseChatModel) -> None:
        nonlocal pending
        try:
            pending = await run_agent(model, tools, messages, limits, emit, result, approval,
                                      tool_selector(offered, settings.tool_search_threshold),
                                      guards=pii_middleware(settings.pii_types),
                                      condense=agent_summarisation(deps, model, messages[0] if messages else None,
                                                                   offered))
        except Exception as exc:
            if result.answer or result.tools or system is None or not _tools_unsupported(exc):
                raise
            # Some OpenAI-compatible servers (models without tool calling in Ollama, LM Studio) refuse a request
            # that offers tools: answer as a plain chat instead of failing.
            log.info("the model refused tool calling (%s); answering without tools", type(exc).__name__)
            messages[0] = system
            async for chunk in first_chunk_within(model.astream(messages), settings.llm_timeout):
                await events.relay_chunk(chunk, emit, result)

    await _with_model(deps, emit, agent_or_chat)
    # A server that died during the run.
    await _external_notices(deps, emit, told, result.language or DEFAULT_LANGUAGE)
    if pending and approval is not None and deps.approvals is not None:
        saved = {"tools": offered, "scenario": result.scenario, "language": result.language,
                 "apply": context.apply, "flowId": context.flow_id, "nodeIds": context.node_ids,
                 "remember": deps.memory is not None}
        try:
            await emit(await deps.approvals.open(approval.run_id, deps.identity, "agent", result.session_id,
                                                 pending, saved))
        except ServiceError as err:  # too many pending approvals: said, and the paused run is gone
            await emit(error_event(err))
            return
        result.tools.extend(action["tool"] for action in pending)  # waiting for the user, named like the others
        result.status = AWAITING


@dataclass
class Resume:
    """A paused agent run to continue: its run id (thread id) and the decisions in LangChain's form."""

    run_id: str
    decisions: list[dict[str, Any]]


def _tools_unsupported(exc: BaseException) -> bool:
    """A 400 from the provider that says the model does not do tool calling."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status == 400 and "tool" in text and any(w in text for w in ("support", "not allowed", "unknown"))


async def stream_answer(messages: list[BaseMessage], deps: ChatDeps, emit: Emit,
                        result: ChatResult) -> None:
    """Pure chat: stream the model's answer as ``token`` events."""
    async def stream(model: BaseChatModel) -> None:
        async for chunk in first_chunk_within(model.astream(messages), deps.settings.llm_timeout):
            await events.relay_chunk(chunk, emit, result)

    await _with_model(deps, emit, stream)


async def _with_model(deps: ChatDeps, emit: Emit, work: Callable[[BaseChatModel], Awaitable[None]]) -> None:
    """Run ``work`` with the request's chat model; a missing configuration or a provider fault becomes exactly one
    ``error`` event (the provider's exception mapped once, never its stack, its text redacted of the request's
    keys and tokens before it is emitted or logged)."""
    config = ProviderConfig.from_settings(deps.settings, deps.provider)
    try:
        model = deps.models.get(config)
    except ServiceError as err:
        await emit(error_event(err))
        return
    try:
        await work(model)
    except ConnectionResetError:
        raise
    except MemoryUnavailable as exc:
        # The agent's checkpointer (approvals._without_errors) or an approval record on a locked, broken or
        # unreachable memory database, SQLite or PostgreSQL: the memory's fault, not the model's.
        log.warning("memory failed during the run (agent checkpoint or approval record): %s", exc.message)
        await emit(error_event(exc))
    except Exception as exc:  # provider clients raise many types; each is mapped once, without its stack
        fault = located(provider_error(exc, timeout=config.timeout, secrets=_secrets(deps, config)), config,
                        from_node=bool(deps.provider and deps.provider.baseUrl))
        log.warning("model request failed: %s (%s: %s)", fault.code, type(exc).__name__, fault.message)
        await emit(error_event(fault))


def _secrets(deps: ChatDeps, config: ProviderConfig) -> list[Any]:
    """Every key and token this request could hand to a provider or echo: the model key in use (an ai-config
    node's included), the environment's provider keys, the service token and the Node-RED credentials."""
    settings = deps.settings
    return [config.api_key, settings.openai_api_key, settings.deepseek_api_key, settings.google_api_key,
            settings.anthropic_api_key, settings.token, settings.nodered.token, settings.nodered.password,
            deps.user_token]
