"""Agent mode: a LangChain 1.x agent (``create_agent``) per request whose model chooses the scenario's tools.

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
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
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from service.errors import ServiceError
from service.llm.providers import llm_timeout
from service.nodered.compact import MODEL_TOOL_LIMIT, bounded
from service.tools.builtin import ToolContext, ToolFailure
from service.tools.toolbox import Toolbox

if TYPE_CHECKING:
    from service.chat.pipeline import ChatResult

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], Awaitable[None]]
PREVIEW_LIMIT = 8_000      # characters of a tool result in a tool_result event


@dataclass(frozen=True)
class AgentLimits:
    """Per-request limits: model calls, tool calls, wall-clock seconds for the whole run
    (``AI_AGENT_TIME_LIMIT``), and seconds each model call may take to start answering, its client's retries
    included (``AI_LLM_TIMEOUT``; ``None``: no such bound)."""

    model_calls: int = 8
    tool_calls: int = 12
    seconds: float = 120.0
    first_token: float | None = None


def agent_tools(toolbox: Toolbox, names: list[str], context: ToolContext, emit: Emit,
                result: ChatResult) -> list[StructuredTool]:
    """LangChain structured tools for the scenario's tool ``names`` that the toolbox can run.

    Each reports itself (``tool_call`` before, ``tool_result`` after) and answers the model with a bounded,
    delimited result; a failure is told to the model (and shown as ``ok: false``), not raised.
    """
    tools = []
    for name in names:
        if not toolbox.has(name):
            continue
        description, schema = toolbox.describe(name)
        tools.append(StructuredTool.from_function(
            coroutine=_runner(toolbox, name, context, emit, result), name=name, description=description,
            args_schema=_shown_schema(name, description, schema)))
    return tools


def _shown_schema(name: str, description: str, schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """The argument schema as a JSON Schema dict: exactly what LangChain shows the model for ``schema``.

    LangChain validates a pydantic ``args_schema`` before the tool runs, and a failure there never reaches the
    runner, so the user would not see the call (issue 13). With a dict it passes the model's raw arguments on,
    and the runner validates them with the same model (``Toolbox.parse``).
    """
    if isinstance(schema, dict):
        return schema
    probe = StructuredTool.from_function(coroutine=_unused, name=name, description=description, args_schema=schema)
    return convert_to_openai_tool(probe)["function"]["parameters"]


async def _unused(**_: Any) -> str:
    raise NotImplementedError


def _runner(toolbox: Toolbox, name: str, context: ToolContext, emit: Emit, result: ChatResult):
    async def run(**arguments: Any) -> str:
        shown = {k: v for k, v in arguments.items() if v is not None}
        await emit({"type": "tool_call", "tool": name, "params": shown, "origin": "agent"})
        result.tools.append(name)
        try:
            output = await toolbox.run(name, await toolbox.parse(name, shown), context)
        except ToolFailure as failure:
            await emit({"type": "tool_result", "tool": name, "result": failure.message, "ok": False})
            return f"The tool {name} failed: {failure.message}"
        await emit({"type": "tool_result", "tool": name, "result": bounded(output.text, PREVIEW_LIMIT), "ok": True})
        return f'<tool_result tool="{name}">\n{bounded(output.text, MODEL_TOOL_LIMIT)}\n</tool_result>'

    return run


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
            await self._emit({"type": "tool_call", "tool": name, "params": arguments, "origin": "agent"})
            self._result.tools.append(name)
            message = f"The tool {name} was not called: {problem}."
            await self._emit({"type": "tool_result", "tool": name, "result": message, "ok": False})
            if call_id is not None:
                answers.append(ToolMessage(content=message, name=name, tool_call_id=call_id, status="error"))
        update: dict[str, Any] = {"messages": answers}
        if answers and not any(call["name"] in self._offered for call in last.tool_calls):
            update["jump_to"] = "model"  # nothing else to run: let the model answer or try again
        return update


async def run_agent(model: BaseChatModel, tools: list[StructuredTool], messages: list[BaseMessage],
                    limits: AgentLimits, emit: Emit, result: ChatResult) -> None:
    """Run the agent over ``messages`` (system prompt first), streaming its text as ``token`` events.

    Raises:
        ServiceError: ``agent_limit`` (model or tool calls exhausted), ``agent_timeout`` (the run passed
            ``limits.seconds``, ``AI_AGENT_TIME_LIMIT``) or ``llm_timeout`` (a model call did not start answering
            within ``limits.first_token``, ``AI_LLM_TIMEOUT``), whichever comes first; provider faults propagate
            as the client raised them, for the caller to map once.
    """
    run_deadline = asyncio.get_running_loop().time() + limits.seconds
    watch = _FirstTokenWatch(run_deadline, limits.first_token)
    agent = create_agent(model, tools, middleware=[
        ModelCallLimitMiddleware(run_limit=limits.model_calls, exit_behavior="error"),
        ToolCallLimitMiddleware(run_limit=limits.tool_calls, exit_behavior="error"),
        UnrunnableToolCalls([tool.name for tool in tools], emit, result),
        watch.middleware(),
    ])
    try:
        async with (asyncio.timeout_at(run_deadline) as deadline,
                    contextlib.aclosing(agent.astream({"messages": messages}, stream_mode="messages")) as stream):
            watch.deadline = deadline
            async for chunk, metadata in stream:
                if metadata.get("langgraph_node") != "model" or not isinstance(chunk, AIMessageChunk):
                    continue
                watch.answered()
                text = chunk.text if isinstance(chunk.text, str) else chunk.text()
                if text:
                    result.answer += text
                    await emit({"type": "token", "content": text})
                if chunk.usage_metadata:
                    usage = result.usage or {"inputTokens": 0, "outputTokens": 0}
                    usage["inputTokens"] += chunk.usage_metadata.get("input_tokens", 0)
                    usage["outputTokens"] += chunk.usage_metadata.get("output_tokens", 0)
                    result.usage = usage
    except ModelCallLimitExceededError:
        raise ServiceError("agent_limit", status=500, params={"limit": limits.model_calls}) from None
    except ToolCallLimitExceededError:
        raise ServiceError("agent_limit", status=500, key="agent_limit.tool_calls",
                           params={"limit": limits.tool_calls}) from None
    except TimeoutError:
        if watch.waiting:
            raise llm_timeout(limits.first_token) from None
        raise ServiceError("agent_timeout", status=504, params={"seconds": f"{limits.seconds:g}"}) from None


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
