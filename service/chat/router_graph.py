"""The router graph (issue 21): a LangGraph ``StateGraph`` that takes each chat request down the cheapest path that
can answer it, its nodes being the pipeline's own steps (:mod:`service.chat.pipeline`).

The paths and the model calls each makes (the knowledge router's optional model fallback,
``AI_SIDEBAR_ROUTER_MODEL``, and the rewrite of a query that found nothing add one each):

- ``direct``: ``@tools:<name>`` runs the tool, one model call answers with its result; none when the run ends at
  the tool (a write waits for approval or is refused, the tool failed in a way no answer can mend).
- ``keyword``: a scenario keyword (or a caught error's source node) forces a tool, one model call answers.
- ``retrieval``: the knowledge router found node help or workspace chunks, one model call answers with them (none
  without a configured model: the retrieved text is the answer).
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

from service.chat import pipeline as steps
from service.chat.events import Emit
from service.errors import error_event
from service.llm.pii import mask_messages
from service.nodered.messages import CodedError
from service.web.schemas import StreamChatRequest

log = logging.getLogger(__name__)

Path = Literal["direct", "keyword", "retrieval", "agent", "chat"]
PATHS: tuple[Path, ...] = ("direct", "keyword", "retrieval", "agent", "chat")
T = TypeVar("T")


class RouterState(TypedDict, total=False):
    """What flows through the graph: the request and what answers it (set at the start, never replaced), the turn
    the steps fill in, the path taken so far and whether the run ended before an answer (``stop``)."""

    request: StreamChatRequest
    deps: steps.ChatDeps
    emit: Emit
    result: steps.ChatResult
    turn: steps.Turn
    path: Path | None
    stop: bool


async def _outside_graph(work: Awaitable[T]) -> T:
    """Run a step as it runs without the graph: LangChain's runnable configuration of the graph's node (its
    checkpoint namespace, stream, callbacks) is not inherited, so the agent's own LangGraph graph stays a top-level
    run whose checkpoints an approval resumes by thread id alone."""
    context = contextvars.copy_context()
    context.run(var_child_runnable_config.set, None)
    return await asyncio.create_task(work, context=context)  # type: ignore[arg-type]


async def scenario(state: RouterState) -> RouterState:
    """The scenario in the request's language and the tools' context (:func:`steps._choose_scenario`)."""
    return {"turn": steps._choose_scenario(state["request"], state["deps"], state["result"]), "stop": False}


async def budget(state: RouterState) -> RouterState:
    """Over the caller's daily token budget: one ``budget_exceeded`` error, nothing else runs."""
    return {"stop": not await steps.within_budget(state["deps"], state["emit"])}


async def direct_trigger(state: RouterState) -> RouterState:
    """``@tools:<name>``: the tool to run; a refused or invalid trigger is one ``error`` event and the end."""
    try:
        if await steps._direct_trigger(state["request"], state["deps"], state["turn"]):
            return {"path": "direct"}
    except CodedError as err:
        await state["emit"](error_event(err))
        return {"stop": True}
    return {}


async def keywords(state: RouterState) -> RouterState:
    """Scenario keywords (language, scenario, task, a forced tool), then a caught error's source node."""
    request, deps, turn = state["request"], state["deps"], state["turn"]
    try:
        steps._follow_keywords(request, deps, turn, state["result"])
        steps._read_error_source(request, deps, turn)
    except CodedError as err:
        await state["emit"](error_event(err))
        return {"stop": True}
    return {"path": "keyword"} if turn.tool_run is not None else {}


async def approval(state: RouterState) -> RouterState:
    """A write tool by name: planned, and unless its policy lets it run, an approval is stored and the run waits."""
    return {"stop": await steps._ask_before_write(state["request"], state["deps"], state["turn"], state["emit"],
                                                  state["result"])}


async def tool(state: RouterState) -> RouterState:
    """The decided tool runs; a failure no answer can mend ends the run (a caught error's source is still
    explained)."""
    run, result = state["turn"].tool_run, state["result"]
    assert run is not None
    await steps._run_tool(run, state["deps"], state["turn"].context, state["emit"])
    result.tools.append(run.name)
    failure = run.failure
    return {"stop": failure is not None and failure.code in steps.FATAL_TOOL_CODES and run.origin != "error"}


async def retrieve(state: RouterState) -> RouterState:
    """Routed retrieval from the node help and the workspace (:func:`steps._retrieve`)."""
    turn = state["turn"]
    await steps._retrieve(state["request"], state["deps"], turn, state["result"], state["emit"])
    if turn.retrieved:
        return {"path": "retrieval"}
    return {"path": "agent" if steps._uses_agent(state["deps"], turn) else "chat"}


async def without_model(state: RouterState) -> RouterState:
    """With no model configured the retrieved text is the answer (and the run ends)."""
    return {"stop": await steps._answer_without_model(state["deps"], state["turn"], state["emit"], state["result"])}


async def _messages(state: RouterState) -> list:
    """The prompt, masked of PII (``AI_SIDEBAR_PII``) whatever the path; the agent's later tool results are masked
    by its middleware."""
    deps = state["deps"]
    prompt = await steps._prompt(state["request"], deps, state["turn"], state["result"])
    return mask_messages(prompt, deps.settings.pii_types)


async def answer(state: RouterState) -> RouterState:
    """One model call streams the answer (after a tool, with retrieved knowledge, or a plain chat)."""
    messages = await _messages(state)
    await _outside_graph(steps.stream_answer(messages, state["deps"], state["emit"], state["result"]))
    return {}


async def agent(state: RouterState) -> RouterState:
    """The agent: the model may call the scenario's tools, step after step, within the agent's limits."""
    messages = await _messages(state)
    turn = state["turn"]
    await _outside_graph(steps._agent_answer(messages, turn.scenario.tools, state["deps"], turn.context,
                                             state["emit"], state["result"]))
    return {}


async def check_answer(state: RouterState) -> RouterState:
    """Before the answer ends: unknown node types of a generated flow, text in the flows that reads like
    instructions to the model."""
    request, deps, turn = state["request"], state["deps"], state["turn"]
    await steps._check_flow_types(deps, turn, state["emit"], state["result"])
    await steps._warn_of_injection(request, deps, turn, state["emit"])
    return {}


def _stopped_or(next_node: str):
    def decide(state: RouterState) -> str:
        return END if state.get("stop") else next_node
    decide.__name__ = f"stop_or_{next_node}"
    return decide


def _run_decided_tool(state: RouterState) -> str:
    """A write tool asks first; any other decided tool runs."""
    run = state["turn"].tool_run
    assert run is not None
    return "approval" if state["deps"].tools.writes(run.name) else "tool"


def after_trigger(state: RouterState) -> str:
    """Stopped, a tool to run, or no trigger: the keywords decide."""
    if state.get("stop"):
        return END
    return _run_decided_tool(state) if state.get("path") == "direct" else "keywords"


def after_keywords(state: RouterState) -> str:
    """Stopped, a forced tool to run, or routed retrieval."""
    if state.get("stop"):
        return END
    return _run_decided_tool(state) if state["turn"].tool_run is not None else "retrieve"


def after_retrieval(state: RouterState) -> str:
    """Retrieved knowledge: answered with it (without a model when none is configured); else the agent when tools
    are offered, a plain answer when not."""
    path = state.get("path")
    return "without_model" if path == "retrieval" else "agent" if path == "agent" else "answer"


def build_router() -> Any:
    """The compiled router graph (a LangGraph ``CompiledStateGraph`` over :class:`RouterState`).

    Its drawing (``ROUTER.get_graph().draw_mermaid()``) is the one in the README.
    """
    graph = StateGraph(RouterState)
    for node in (scenario, budget, direct_trigger, keywords, approval, tool, retrieve, without_model, answer, agent,
                 check_answer):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "scenario")
    graph.add_edge("scenario", "budget")
    graph.add_conditional_edges("budget", _stopped_or("direct_trigger"), ["direct_trigger", END])
    graph.add_conditional_edges("direct_trigger", after_trigger, ["approval", "tool", "keywords", END])
    graph.add_conditional_edges("keywords", after_keywords, ["approval", "tool", "retrieve", END])
    graph.add_conditional_edges("approval", _stopped_or("tool"), ["tool", END])
    graph.add_conditional_edges("tool", _stopped_or("answer"), ["answer", END])
    graph.add_conditional_edges("retrieve", after_retrieval, ["without_model", "agent", "answer"])
    graph.add_conditional_edges("without_model", _stopped_or("answer"), ["answer", END])
    graph.add_edge("answer", "check_answer")
    graph.add_edge("agent", "check_answer")
    graph.add_edge("check_answer", END)
    return graph.compile(name="router")


ROUTER = build_router()


async def run_routed(request: StreamChatRequest, deps: steps.ChatDeps, emit: Emit,
                     result: steps.ChatResult) -> Path | None:
    """Run one request through :data:`ROUTER`, filling ``result`` and emitting events as
    :func:`service.chat.pipeline.run_chat` documents; returns the path it took (``None``: it ended before one was
    decided, e.g. over the budget or an invalid trigger).

    Raises:
        ConnectionResetError: the client went away.
    """
    final = await ROUTER.ainvoke({"request": request, "deps": deps, "emit": steps.recording_errors(emit, result),
                                  "result": result, "path": None, "stop": False})
    path = final.get("path")
    # ``route`` on the record: what the labelled-set test and the benchmark read (tests/support/router_paths.py).
    log.info("routed session=%s scenario=%s language=%s path=%s stopped_early=%s tools=%s chars=%d",
             result.session_id, result.scenario, result.language, path, bool(final.get("stop")), result.tools,
             len(result.answer), extra={"route": path})
    return path
