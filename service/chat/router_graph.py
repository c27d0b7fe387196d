"""The router graph (issue 21): a LangGraph ``StateGraph`` that takes each chat request down the cheapest path that
can answer it, its nodes being the steps of the chat's paths (:mod:`service.chat.keyword_path`,
:mod:`service.chat.direct`, :mod:`service.chat.retrieval_path`, :mod:`service.chat.agent_path`,
:mod:`service.chat.answer`).

The paths and the model calls each makes (the knowledge router's optional model fallback,
``AI_SIDEBAR_ROUTER_MODEL``, and the rewrite of a query that found nothing add one each):

- ``direct``: ``@tools:<name>`` runs the tool, one model call answers with its result; none when the run ends at
  the tool (a write waits for approval or is refused, the tool failed in a way no answer can mend).
- ``keyword``: a scenario keyword (or a caught error's source node) forces a tool, one model call answers; the
  agent answers instead when the message asks for a change or runtime facts (``Turn.needs_tools``).
- ``retrieval``: the knowledge router found node help or workspace chunks, one model call answers with them (none
  without a configured model: the retrieved text is the answer); a message that needs tools goes on to the agent
  with them in its prompt (path ``agent``).
- ``agent``: none of the above decided, the scenario offers tools: the agent, as many calls as its steps need.
- ``chat``: none decided and no tools may be used: one model call.

:data:`ROUTER` is compiled once; :func:`run_routed` runs one request through it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable
from typing import Any, Literal, TypedDict, TypeVar

from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph import END, START, StateGraph

from service.chat.agent_path import agent_answer, uses_agent
from service.chat.answer import stream_answer
from service.chat.checks import check_flow_types, warn_of_injection
from service.chat.context import FATAL_TOOL_CODES, ChatDeps, ChatResult, Turn, recording_errors
from service.chat.direct import ask_before_write, direct_trigger, run_tool
from service.chat.events import Emit
from service.chat.keyword_path import choose_scenario, follow_keywords, mark_needs_tools, read_error_source
from service.chat.ledger import within_budget
from service.chat.mode_notice import refuse_in_ask_mode, tell_how_to_change
from service.chat.model_limits import tell_model_limits
from service.chat.prompting import build_prompt
from service.chat.retrieval_path import answer_without_model, retrieve_knowledge
from service.errors import error_event
from service.llm.pii import mask_messages
from service.nodered.messages import CodedError
from service.requests import StreamChatRequest

log = logging.getLogger(__name__)

Path = Literal["direct", "keyword", "retrieval", "agent", "chat"]
PATHS: tuple[Path, ...] = ("direct", "keyword", "retrieval", "agent", "chat")
T = TypeVar("T")


class RouterState(TypedDict, total=False):
    """What flows through the graph: the request and what answers it (set at the start, never replaced), the turn
    the steps fill in, the path taken so far and whether the run ended before an answer (``stop``)."""

    request: StreamChatRequest
    deps: ChatDeps
    emit: Emit
    result: ChatResult
    turn: Turn
    path: Path | None
    stop: bool


async def _outside_graph(work: Awaitable[T]) -> T:
    """Run a step as it runs without the graph: LangChain's runnable configuration of the graph's node (its
    checkpoint namespace, stream, callbacks) is not inherited, so the agent's own LangGraph graph stays a top-level
    run whose checkpoints an approval resumes by thread id alone."""
    context = contextvars.copy_context()
    context.run(var_child_runnable_config.set, None)
    return await asyncio.create_task(work, context=context)  # type: ignore[arg-type]


async def classify(state: RouterState) -> RouterState:
    """The scenario in the request's language and the tools' context; over the caller's daily token budget one
    ``budget_exceeded`` error and the end; then a direct trigger (``@tools:``), else the scenario keywords (language,
    scenario, task, a forced tool) and a caught error's source node. A refused or invalid trigger is one ``error``
    event and the end.

    One node for these cheap decisions: every step of a LangGraph run costs time before the first token."""
    request, deps, emit, result = state["request"], state["deps"], state["emit"], state["result"]
    turn = choose_scenario(request, deps, result)
    if not await within_budget(deps, emit):
        return {"turn": turn, "stop": True}
    try:
        if await direct_trigger(request, deps, turn):
            return {"turn": turn, "path": "direct"}
        follow_keywords(request, deps, turn, result)
        read_error_source(request, deps, turn)
        mark_needs_tools(request, deps, turn)
    except CodedError as err:
        await emit(error_event(err))
        return {"turn": turn, "stop": True}
    return {"turn": turn, "path": "keyword" if turn.tool_run is not None else None}


async def approval(state: RouterState) -> RouterState:
    """A write tool by name: planned, and unless its policy lets it run, an approval is stored and the run waits;
    in Ask mode it is refused with the notice that says how to get the change."""
    if await refuse_in_ask_mode(state["request"], state["turn"], state["emit"], state["deps"]):
        return {"stop": True}
    return {"stop": await ask_before_write(state["request"], state["deps"], state["turn"], state["emit"],
                                                  state["result"])}


async def tool(state: RouterState) -> RouterState:
    """The decided tool runs; a failure no answer can mend ends the run (a caught error's source is still
    explained)."""
    run, result = state["turn"].tool_run, state["result"]
    assert run is not None
    await run_tool(run, state["deps"], state["turn"].context, state["emit"])
    result.tools.append(run.name)
    failure = run.failure
    return {"stop": failure is not None and failure.code in FATAL_TOOL_CODES and run.origin != "error"}


async def retrieve(state: RouterState) -> RouterState:
    """Routed retrieval from the node help and the workspace
    (:func:`~service.chat.retrieval_path.retrieve_knowledge`); with no model configured what was retrieved is the
    answer (and the run ends)."""
    deps, turn = state["deps"], state["turn"]
    await retrieve_knowledge(state["request"], deps, turn, state["result"], state["emit"])
    if turn.retrieved:
        stop = await answer_without_model(deps, turn, state["emit"], state["result"])
        # A request that needs tools keeps them: the agent answers with what was retrieved in its prompt.
        return {"path": "agent" if not stop and uses_agent(deps, turn) else "retrieval", "stop": stop}
    return {"path": "agent" if uses_agent(deps, turn) else "chat"}


async def _messages(state: RouterState) -> list:
    """The prompt, masked of PII (``AI_SIDEBAR_PII``) whatever the path; the agent's later tool results are masked
    by its middleware."""
    deps = state["deps"]
    prompt = await build_prompt(state["request"], deps, state["turn"], state["result"], state["emit"])
    return mask_messages(prompt, deps.settings.pii_types)


async def answer(state: RouterState) -> RouterState:
    """One model call streams the answer (after a tool, with retrieved knowledge, or a plain chat)."""
    messages = await _messages(state)
    await _outside_graph(stream_answer(messages, state["deps"], state["emit"], state["result"]))
    return {}


async def agent(state: RouterState) -> RouterState:
    """The agent: the model may call the scenario's tools, step after step, within the agent's limits."""
    messages = await _messages(state)
    turn = state["turn"]
    await _outside_graph(agent_answer(messages, turn.scenario.tools, state["deps"], turn.context,
                                             state["emit"], state["result"]))
    return {}


async def check_answer(state: RouterState) -> RouterState:
    """Before the answer ends: unknown node types of a generated flow, text in the flows that reads like
    instructions to the model, and how to get a change the answer could not propose (Ask mode, no tools)."""
    request, deps, turn = state["request"], state["deps"], state["turn"]
    await check_flow_types(deps, turn, state["emit"], state["result"])
    await warn_of_injection(request, deps, turn, state["emit"])
    await tell_how_to_change(request, deps, turn, state["emit"], state["result"])
    await tell_model_limits(deps, turn, state["emit"], state["result"])
    return {}


def _stopped_or(next_node: str):
    async def decide(state: RouterState) -> str:
        return END if state.get("stop") else next_node
    decide.__name__ = f"stop_or_{next_node}"
    return decide


# The edges' functions are coroutines: LangGraph runs a plain function's routing in a thread pool.
async def after_classify(state: RouterState) -> str:
    """Stopped, a decided tool to run (a write tool asks first), or routed retrieval."""
    if state.get("stop"):
        return END
    run = state["turn"].tool_run
    if run is None:
        return "retrieve"
    return "approval" if state["deps"].tools.writes(run.name) else "tool"


async def after_tool(state: RouterState) -> str:
    """Stopped; the agent when the message needs tools beyond the forced one (it reads the tool's result in its
    prompt); else one call answers."""
    if state.get("stop"):
        return END
    return "agent" if uses_agent(state["deps"], state["turn"]) else "answer"


async def after_retrieval(state: RouterState) -> str:
    """Answered without a model; retrieved knowledge answered in one call; else the agent when tools are offered,
    one call when not."""
    if state.get("stop"):
        return END
    return "agent" if state.get("path") == "agent" else "answer"


def build_router() -> Any:
    """The compiled router graph (a LangGraph ``CompiledStateGraph`` over :class:`RouterState`).

    Its drawing (``ROUTER.get_graph().draw_mermaid()``) is the one in the README.
    """
    graph = StateGraph(RouterState)
    for node in (classify, approval, tool, retrieve, answer, agent, check_answer):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "classify")
    graph.add_conditional_edges("classify", after_classify, ["approval", "tool", "retrieve", END])
    graph.add_conditional_edges("approval", _stopped_or("tool"), ["tool", END])
    graph.add_conditional_edges("tool", after_tool, ["answer", "agent", END])
    graph.add_conditional_edges("retrieve", after_retrieval, ["answer", "agent", END])
    graph.add_edge("answer", "check_answer")
    graph.add_edge("agent", "check_answer")
    graph.add_edge("check_answer", END)
    return graph.compile(name="router")


ROUTER = build_router()


async def run_routed(request: StreamChatRequest, deps: ChatDeps, emit: Emit,
                     result: ChatResult) -> Path | None:
    """Run one request through :data:`ROUTER`, filling ``result`` and emitting events as
    :func:`service.chat.pipeline.run_chat` documents; returns the path it took (``None``: it ended before one was
    decided, e.g. over the budget or an invalid trigger).

    Raises:
        ConnectionResetError: the client went away.
    """
    final = await ROUTER.ainvoke({"request": request, "deps": deps, "emit": recording_errors(emit, result),
                                  "result": result, "path": None, "stop": False})
    path = final.get("path")
    # ``route`` on the record: what the labelled-set test and the benchmark read (tests/support/router_paths.py).
    log.info("routed session=%s scenario=%s language=%s path=%s stopped_early=%s tools=%s chars=%d",
             result.session_id, result.scenario, result.language, path, bool(final.get("stop")), result.tools,
             len(result.answer), extra={"route": path})
    return path
