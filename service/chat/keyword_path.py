"""The first decisions of a turn: its scenario and tools' context, the scenario keywords (language, task, a forced
tool: the keyword path), a caught error's source node, and whether the message needs tools."""

from __future__ import annotations

from service.chat.context import ChatDeps, ChatResult, ToolRun, Turn
from service.requests import StreamChatRequest
from service.tools.context import ServiceToolContext
from service.tools.registry import canonical_name


def choose_scenario(request: StreamChatRequest, deps: ChatDeps, result: ChatResult) -> Turn:
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


def follow_keywords(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult) -> None:
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
    forced = deps.tools.resolve(forced_tool(match.group.tool, turn.context))
    if deps.tools_enabled and forced is not None:
        turn.tool_run = ToolRun(forced, {}, origin="keyword")


def mark_needs_tools(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> None:
    """Whether the message asks for what only tools can do (:meth:`service.knowledge.router.Router.needs_tools`):
    then neither retrieved knowledge nor a keyword's forced tool ends in a model call without tools; the agent
    answers, with what was retrieved or the forced tool's result in its prompt. Only where the scenario offers
    tools and tools are on (an ``ai-chat`` node without tools keeps its one call)."""
    router = deps.knowledge.router if deps.knowledge is not None else None
    turn.needs_tools = bool(turn.scenario.tools and deps.tools_enabled and (deps.planning or (
        router is not None and router.needs_tools(request.message, turn.catalog.language))))


def read_error_source(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> None:
    """A caught error (an ``ai-chat`` node in a catch path) with tools on: the node that raised it is read with
    get_node_info before answering, instead of a keyword's tool, so the model sees the configuration (function code
    included, secrets redacted) next to the error."""
    source = request.error.source if request.error is not None else None
    if source is None or not source.id or not deps.tools_enabled:
        return
    turn.task = ""
    turn.tool_run = ToolRun("get_node_info", {"node_ids": [source.id]}, origin="error")


def forced_tool(tool: str | None, context: ServiceToolContext) -> str | None:
    """The tool a keyword forces, adapted to what the editor has selected: "this node" with no node selected reads
    the open tab instead (the model finds the node there); with nothing open either, no tool is forced and the
    question is answered as it stands (a quick start must never end in an error)."""
    tool = canonical_name(tool) if tool else None
    if tool == "get_node_info" and not context.node_ids:
        tool = "get_flow"
    if tool == "get_flow" and not context.flow_id:
        return None
    return tool
