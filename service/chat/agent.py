"""Agent mode: a LangChain 1.x agent (``create_agent``, compiled once per shape: :mod:`service.chat.agent_cache`)
whose model chooses the scenario's tools.

Every step streams: ``token`` events for the model's text (only from the model node), and each tool, when it
starts and when it ends, emits ``tool_call`` (``origin: "agent"``) then ``tool_result`` itself, so several calls of
one model turn (run concurrently by the agent's tool node) are each reported in the order they really happen.
Every call the model attempts is reported, also one whose arguments are invalid: the runner validates them itself,
and calls that never reach a runner (arguments that are not JSON, a tool that was not offered) are reported by
:class:`UnrunnableToolCalls`. Limits come from LangChain middleware (``ModelCallLimitMiddleware``,
``ToolCallLimitMiddleware``) plus a per-request time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ModelRequest,
    ToolCallLimitMiddleware,
    hook_config,
    wrap_model_call,
)
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool

from service.chat import events
from service.chat.agent_cache import enter, leave, shared_agent
from service.chat.events import Emit
from service.errors import ServiceError
from service.llm.providers import llm_timeout
from service.nodered.tooling import ToolContext, ToolFailure
from service.tools.registry import Permission, ToolRegistry

if TYPE_CHECKING:
    from service.chat.approvals import AgentApproval
    from service.chat.context import ChatResult

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class AgentLimits:
    """Per-request limits: model calls, tool calls, wall-clock seconds for the whole run
    (``AI_AGENT_TIME_LIMIT``), and seconds each model call may take to start answering, its client's retries
    included (``AI_LLM_TIMEOUT``; ``None``: no such bound)."""

    model_calls: int = 8
    tool_calls: int = 12
    seconds: float = 120.0
    first_token: float | None = None


def agent_tools(registry: ToolRegistry, names: list[str], context: ToolContext, emit: Emit, result: ChatResult,
                permission: Permission = "read") -> list[StructuredTool]:
    """LangChain structured tools for the tool ``names`` the registry offers (see :meth:`ToolRegistry.offered`).

    Each reports itself (``tool_call`` before, ``tool_result`` after) and answers the model with its result bounded
    as its declaration says, delimited; a failure is told to the model (and shown as ``ok: false``), not raised.
    A tool that cannot be described now (an MCP server's tool while the server is down) is not offered.
    """
    tools = []
    for name in names:
        if not registry.has(name):
            continue
        try:
            tools.append(registry.langchain_tool(name, _runner(registry, name, context, emit, result, permission)))
        except ToolFailure as failure:
            log.info("tool %s not offered: %s", name, failure.code)
    return tools


def _runner(registry: ToolRegistry, name: str, context: ToolContext, emit: Emit, result: ChatResult,
            permission: Permission):
    async def run(**arguments: Any) -> str:
        shown = {k: v for k, v in arguments.items() if v is not None}
        await emit(events.tool_call(name, shown, "agent"))
        result.tools.append(name)
        try:
            output = await registry.run(name, await registry.parse(name, shown), context, permission)
        except ToolFailure as failure:
            await emit(events.tool_result(name, failure.message, ok=False, failure=failure))
            return f"The tool {name} failed: {failure.message}"
        await emit(events.tool_result(name, output.text, ok=True, sources=output.sources))
        await announce_change(registry, name, output.data, emit)
        return f'<tool_result tool="{name}">\n{registry.for_model(name, output.text, output.config_at)}\n</tool_result>'

    return run


async def announce_change(registry: ToolRegistry, name: str, data: dict[str, Any], emit: Emit) -> None:
    """A write handed to the editor (``status: editor``) goes to the sidebar as a ``flow_change`` event."""
    if registry.writes(name) and data.get("status") == "editor":
        await emit(events.flow_change(name, data["changes"]))


class UnrunnableToolCalls(AgentMiddleware):
    """Reports the model's tool calls that no runner would see, and answers them so the model can try again.

    LangChain sets aside a call whose arguments are not JSON (``AIMessage.invalid_tool_calls``; when it is the
    turn's only call the agent simply ends) and answers a call of a tool it was not offered in its tool node; in
    neither case does a tool run, so the user would see nothing. Each gets ``tool_call`` (the raw arguments) and
    ``tool_result`` ``ok: false``, and the model a tool message saying what was wrong.
    """

    def __init__(self, offered: list[str], emit: Emit, result: ChatResult):
        super().__init__()
        self._offered = set(offered)
        self._emit = emit
        self._result = result

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = state["messages"][-1] if state["messages"] else None
        if not isinstance(last, AIMessage):
            return None
        refused: list[tuple[str, str | None, Any, str]] = [
            (call.get("name") or "unknown", call.get("id"), call.get("args"),
             "its arguments are not valid JSON" + (f" ({call['error']})" if call.get("error") else "")
             + "; call it again with a JSON object of arguments")
            for call in last.invalid_tool_calls]
        refused += [(call["name"], call["id"], call["args"],
                     f"there is no such tool; the tools are {', '.join(sorted(self._offered)) or 'none'}")
                    for call in last.tool_calls if call["name"] not in self._offered]
        if not refused:
            return None
        answers = []
        for name, call_id, arguments, problem in refused:
            await self._emit(events.tool_call(name, arguments, "agent"))
            self._result.tools.append(name)
            message = f"The tool {name} was not called: {problem}."
            await self._emit(events.tool_result(name, message, ok=False))
            if call_id is not None:
                answers.append(ToolMessage(content=message, name=name, tool_call_id=call_id, status="error"))
        update: dict[str, Any] = {"messages": answers}
        if answers and not any(call["name"] in self._offered for call in last.tool_calls):
            update["jump_to"] = "model"  # nothing else to run: let the model answer or try again
        return update


async def run_agent(model: BaseChatModel, tools: list[StructuredTool], messages: list[BaseMessage],
                    limits: AgentLimits, emit: Emit, result: ChatResult,
                    approval: AgentApproval | None = None,
                    selector: AgentMiddleware | None = None,
                    guards: Sequence[AgentMiddleware] = (),
                    condense: AgentMiddleware | None = None) -> list[dict[str, Any]] | None:
    """Run the agent over ``messages`` (system prompt first), streaming its text as ``token`` events.

    With ``approval`` (the run offers write tools) the agent runs with the checkpointer under the run's thread id
    and pauses before writes (see :mod:`service.chat.approvals`); ``approval.resume`` continues a paused run
    instead of starting with ``messages``. ``selector`` (tool search, see :mod:`service.chat.tool_search`) picks
    the tools each model call is sent. ``guards`` run before every model call (the PII middleware, see
    :mod:`service.llm.pii`). ``condense`` (see :func:`service.chat.history.agent_summarisation`) folds the run's
    messages into a summary before a model call that would outgrow the context budget; it runs after the guards,
    so the summary request, too, reads masked text. Returns the actions the paused run waits for, or ``None`` when
    it ended.

    Raises:
        ServiceError: ``agent_limit`` (model or tool calls exhausted), ``agent_timeout`` (the run passed
            ``limits.seconds``, ``AI_AGENT_TIME_LIMIT``) or ``llm_timeout`` (a model call did not start answering
            within ``limits.first_token``, ``AI_LLM_TIMEOUT``), whichever comes first; provider faults propagate
            as the client raised them, for the caller to map once.
    """
    run_deadline = asyncio.get_running_loop().time() + limits.seconds
    watch = _FirstTokenWatch(run_deadline, limits.first_token)
    # The limit middlewares are typed with their own state (a subclass of AgentState) while create_agent wants one
    # state type for the whole list; AgentMiddleware's state parameter is invariant, so the list is typed loosely.
    middleware: list[Any] = [
        ModelCallLimitMiddleware(run_limit=limits.model_calls, exit_behavior="error"),
        ToolCallLimitMiddleware(run_limit=limits.tool_calls, exit_behavior="error"),
        *(approval.middleware() if approval is not None else ()),
        UnrunnableToolCalls([tool.name for tool in tools], emit, result),
        *((selector,) if selector is not None else ()),
        watch.middleware(),
        *guards,
        *((condense,) if condense is not None else ()),
    ]
    # One compiled graph per shape, shared by the runs of that shape (each run's own middlewares and tools are
    # found through its context, see service.chat.agent_cache).
    agent, scope = shared_agent(model, tools, middleware,
                                approval.approvals.saver if approval is not None else None)
    # astream's input is typed list[AnyMessage] (the concrete message classes), narrower than the list[BaseMessage]
    # (or the Command that resumes a paused run) it accepts at run time; its answer is an async generator.
    agent_input: Any = approval.input(messages) if approval is not None else {"messages": messages}
    # Checkpoints are written once, when the run ends or pauses for approval (LangGraph's durability "exit"): a
    # paused run is all a resume needs, and one write per request instead of two per step (middleware nodes
    # included) is cheaper and, on a locked database, fails once instead of once per step (40 s of lock waits).
    options: dict[str, Any] = ({"config": approval.config, "durability": "exit"} if approval is not None else {})
    chunks: Any = agent.astream(agent_input, stream_mode="messages", **options)
    token = enter(scope)
    try:
        async with (asyncio.timeout_at(run_deadline) as deadline, contextlib.aclosing(chunks) as stream):
            watch.deadline = deadline
            async for chunk, metadata in stream:
                if metadata.get("langgraph_node") != "model" or not isinstance(chunk, AIMessageChunk):
                    continue
                watch.answered()
                await events.relay_chunk(chunk, emit, result)
    except ModelCallLimitExceededError:
        raise ServiceError("agent_limit", status=500, params={"limit": limits.model_calls}) from None
    except ToolCallLimitExceededError:
        raise ServiceError("agent_limit", status=500, key="agent_limit.tool_calls",
                           params={"limit": limits.tool_calls}) from None
    except TimeoutError:
        if watch.waiting:
            raise llm_timeout(limits.first_token) from None
        raise ServiceError("agent_timeout", status=504, params={"seconds": f"{limits.seconds:g}"}) from None
    finally:
        leave(token)
    return await approval.pending(agent) if approval is not None else None


class _FirstTokenWatch:
    """Bounds each model call's wait for its first chunk by moving the run's deadline: nearer while a call
    waits (``first_token`` seconds, when that comes before the run's own deadline), back once the model
    answers. ``waiting`` stays true when the deadline expired during such a wait."""

    def __init__(self, run_deadline: float, first_token: float | None):
        self.deadline: asyncio.Timeout | None = None
        self._run_deadline = run_deadline
        self._first_token = first_token
        self.waiting = False

    def middleware(self) -> AgentMiddleware:
        @wrap_model_call
        async def first_token_deadline(request: ModelRequest, handler: Callable) -> Any:
            self.started()
            try:
                return await handler(request)
            finally:
                self.answered()
        return first_token_deadline

    def started(self) -> None:
        if self._first_token is None:
            return
        wait_until = asyncio.get_running_loop().time() + self._first_token
        if wait_until < self._run_deadline:
            self.waiting = True
            self._move(wait_until)

    def answered(self) -> None:
        # An expired deadline keeps ``waiting`` for run_agent to tell which limit it was.
        if self.waiting and self.deadline is not None and not self.deadline.expired():
            self.waiting = False
            self._move(self._run_deadline)

    def _move(self, when: float) -> None:
        # The stream is closed inside the deadline's block, so no model call outlives it; a late one changes
        # nothing (asyncio.Timeout refuses to move once left).
        if self.deadline is not None:
            with contextlib.suppress(RuntimeError):
                self.deadline.reschedule(when)
