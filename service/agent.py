"""Agent mode: a LangChain 1.x agent (``create_agent``) per request whose model chooses the scenario's tools.

Every step streams: ``token`` events for the model's text (only from the model node), and each tool, when it
starts and when it ends, emits ``tool_call`` then ``tool_result`` itself, so several calls of one model turn (run
concurrently by the agent's tool node) are each reported in the order they really happen. Limits come from
LangChain middleware (``ModelCallLimitMiddleware``, ``ToolCallLimitMiddleware``) plus a per-request time limit.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.tools import StructuredTool

from .compact import MODEL_TOOL_LIMIT, bounded
from .errors import ServiceError
from .toolbox import Toolbox
from .tools import ToolContext, ToolFailure

if TYPE_CHECKING:
    from .pipeline import ChatResult

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], Awaitable[None]]
PREVIEW_LIMIT = 8_000      # characters of a tool result in a tool_result event


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
            args_schema=schema))
    return tools


def _runner(toolbox: Toolbox, name: str, context: ToolContext, emit: Emit, result: ChatResult):
    async def run(**arguments: Any) -> str:
        shown = {k: v for k, v in arguments.items() if v is not None}
        await emit({"type": "tool_call", "tool": name, "params": shown})
        result.tools.append(name)
        try:
            output = await toolbox.run(name, await toolbox.parse(name, shown), context)
        except ToolFailure as failure:
            await emit({"type": "tool_result", "tool": name, "result": failure.message, "ok": False})
            return f"The tool {name} failed: {failure.message}"
        await emit({"type": "tool_result", "tool": name, "result": bounded(output.text, PREVIEW_LIMIT), "ok": True})
        return f'<tool_result tool="{name}">\n{bounded(output.text, MODEL_TOOL_LIMIT)}\n</tool_result>'

    return run


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
