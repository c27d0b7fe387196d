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
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware, ToolCallLimitMiddleware, hook_config
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from .compact import bounded
from .errors import ServiceError
from .toolbox import Toolbox
from .tools import ToolContext, ToolFailure

if TYPE_CHECKING:
    from .pipeline import ChatResult

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], Awaitable[None]]
PREVIEW_LIMIT = 8_000      # characters of a tool result in a tool_result event
MODEL_TOOL_LIMIT = 30_000  # characters of a tool result sent back to the model


@dataclass(frozen=True)
class AgentLimits:
    """Per-request limits: model calls, tool calls, and wall-clock seconds for the whole run."""

    model_calls: int = 8
    tool_calls: int = 12
    seconds: float = 120.0


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
        ServiceError: ``agent_limit`` (model or tool calls exhausted) or ``agent_timeout``; provider faults
            propagate as the client raised them, for the caller to map once.
    """
    agent = create_agent(model, tools, middleware=[
        ModelCallLimitMiddleware(run_limit=limits.model_calls, exit_behavior="error"),
        ToolCallLimitMiddleware(run_limit=limits.tool_calls, exit_behavior="error"),
        UnrunnableToolCalls([tool.name for tool in tools], emit, result),
    ])
    try:
        async with asyncio.timeout(limits.seconds):
            async for chunk, metadata in agent.astream({"messages": messages}, stream_mode="messages"):
                if metadata.get("langgraph_node") != "model" or not isinstance(chunk, AIMessageChunk):
                    continue
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
        raise ServiceError("agent_limit", f"The assistant stopped after {limits.model_calls} model calls without "
                                          "finishing; ask a narrower question.", 500) from None
    except ToolCallLimitExceededError:
        raise ServiceError("agent_limit", f"The assistant stopped after {limits.tool_calls} tool calls without "
                                          "finishing; ask a narrower question.", 500) from None
    except TimeoutError:
        raise ServiceError("agent_timeout", f"The assistant did not finish within {limits.seconds:g} seconds.",
                           504) from None
