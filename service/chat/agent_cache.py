"""The agent's compiled graphs, made once per shape and shared by requests (issue 34: ≤ 50 ms added per build round).

``create_agent`` builds and compiles a LangGraph ``StateGraph`` (one node per middleware hook, a tool node, their
edges): about 34 ms of CPU on this machine, every request and every resumed run, for a graph whose only differences
from the last one were the per-request objects in it (the stream, the turn's result, the approval run, the deadline).
Here the graph is compiled with stand-ins: each middleware is a :class:`_Delegate` with the same name, state schema
and hooks (sync and async, with their ``can_jump_to``) that forwards each hook to the request's own middleware at
its position, and each tool a LangChain tool with the same name, description and argument schema whose coroutine
is the request's own tool's. The request's objects are found through :data:`_SCOPE`, a ``ContextVar`` set for the
run: LangGraph runs the graph's nodes in tasks started from the run's task, which copy its context (asyncio), so
two requests running one graph at once each see their own (tests/test_agent_cache.py).

A *shape* is what the compiled graph depends on: the model object and the checkpointer (identities; the model
factory keeps one model per configuration, :class:`service.llm.providers.ChatModelFactory`), the tools' names,
descriptions and argument schemas, and each middleware's kind (class name, instance name, state schema, which hooks
it defines and where they may jump). The cache keeps the :data:`MAX_GRAPHS` shapes used last; a compiled graph of
the build loop's size (26 tools, 11 middlewares) takes about 0.25 MB (tracemalloc), so the cache at most about
4 MB; compiling it costs about 34 ms of CPU, finding it again and making the run's own tools and middlewares 3 ms.
A middleware that brings its own tools or a trace policy is not shared: such a run compiles its own graph, as
before.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from service.chat import trace_hooks

# The hooks of the graphs compiled here run without LangSmith's thread hops while it does not trace.
trace_hooks.install()

MAX_GRAPHS = 16

# The hooks create_agent looks for (factory.py compares each with AgentMiddleware's own), with their parameters.
_NODE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
_WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")
_HOOKS = (*_NODE_HOOKS, *(f"a{h}" for h in _NODE_HOOKS), *_WRAP_HOOKS, *(f"a{h}" for h in _WRAP_HOOKS))


@dataclass(frozen=True)
class _Scope:
    """One run's own middlewares (in the graph's order) and tools (by name)."""

    middleware: Sequence[AgentMiddleware]
    tools: dict[str, BaseTool]


_SCOPE: ContextVar[_Scope | None] = ContextVar("agent_scope", default=None)


def _scope() -> _Scope:
    scope = _SCOPE.get()
    if scope is None:
        raise RuntimeError("a shared agent graph ran outside its run (no agent scope is set)")
    return scope


class _Delegate(AgentMiddleware):
    """Stands in a shared graph for the middleware at position ``slot`` of each run (see :func:`_delegate_class`)."""

    def __init__(self, slot: int, name: str, state_schema: Any):
        super().__init__()
        self._slot = slot
        self._name = name
        self.state_schema = state_schema
        self.tools = []

    @property
    def name(self) -> str:
        return self._name

    def target(self) -> Any:
        return _scope().middleware[self._slot]


def _forwarder(hook: str, jump: Sequence[str] | None) -> Callable[..., Any]:
    """A method forwarding ``hook`` to the run's middleware; its parameter names are the hook's own, which
    LangGraph reads to decide what it passes (``runtime``)."""
    asynchronous = hook[1:] in (*_NODE_HOOKS, *_WRAP_HOOKS)  # "aafter_model", not "after_model"
    node = (hook[1:] if asynchronous else hook) in _NODE_HOOKS
    forward: Callable[..., Any]
    if node and asynchronous:
        async def forward(self: _Delegate, state: Any, runtime: Any) -> Any:
            return await getattr(self.target(), hook)(state, runtime)
    elif node:
        def forward(self: _Delegate, state: Any, runtime: Any) -> Any:
            return getattr(self.target(), hook)(state, runtime)
    elif asynchronous:
        async def forward(self: _Delegate, request: Any, handler: Any) -> Any:
            return await getattr(self.target(), hook)(request, handler)
    else:
        def forward(self: _Delegate, request: Any, handler: Any) -> Any:
            return getattr(self.target(), hook)(request, handler)
    if jump is not None:
        forward.__can_jump_to__ = list(jump)  # type: ignore[union-attr]
    return forward


def _kind(middleware: AgentMiddleware) -> tuple[Any, ...] | None:
    """What of ``middleware`` a compiled graph depends on: its name, state schema, hooks, their jumps and the kinds
    of its stream transformers (``PIIMiddleware`` has one per instance), or ``None`` when it cannot be shared (it
    brings tools, or a trace policy, of its own)."""
    if getattr(middleware, "tools", None) or middleware.trace_policy is not None:
        return None
    cls = type(middleware)
    hooks = tuple(h for h in _HOOKS if getattr(cls, h) is not getattr(AgentMiddleware, h))
    jumps = tuple(getattr(getattr(cls, h), "__can_jump_to__", None) for h in hooks)
    transformers = tuple(getattr(factory, "func", factory) for factory in middleware.transformers)
    return (middleware.name, middleware.state_schema, hooks,
            tuple(tuple(j) if j is not None else None for j in jumps), transformers)


def _transformer(slot: int, index: int) -> Callable[[tuple[str, ...]], Any]:
    """A stream transformer factory (LangGraph's ``stream_events(version="v3")``; the agent's ``astream`` makes
    none) making the run's own middleware's transformer at ``index``."""
    def factory(scope: tuple[str, ...]) -> Any:
        return _scope().middleware[slot].transformers[index](scope)
    return factory


_CLASSES: dict[tuple[Any, ...], type[_Delegate]] = {}


def _delegate_class(hooks: tuple[str, ...], jumps: tuple[tuple[str, ...] | None, ...]) -> type[_Delegate]:
    """The :class:`_Delegate` subclass defining exactly ``hooks`` (one class per set, made once)."""
    key = (hooks, jumps)
    cls = _CLASSES.get(key)
    if cls is None:
        namespace = {hook: _forwarder(hook, jump) for hook, jump in zip(hooks, jumps, strict=True)}
        cls = _CLASSES[key] = type("Delegate", (_Delegate,), namespace)
    return cls


def _tool_key(tool: BaseTool) -> tuple[Any, ...]:
    schema = tool.args_schema
    shown = json.dumps(schema, sort_keys=True, default=str) if isinstance(schema, dict) else schema
    return (tool.name, tool.description, shown, tool.return_direct, tool.response_format)


def _stand_in(tool: BaseTool) -> StructuredTool:
    """A tool like ``tool`` whose coroutine is the run's own tool of that name."""
    name = tool.name

    async def forward(*args: Any, **kwargs: Any) -> Any:
        own = _scope().tools[name]
        coroutine = getattr(own, "coroutine", None)
        if coroutine is None:
            raise RuntimeError(f"the tool {name} has no coroutine")
        return await coroutine(*args, **kwargs)

    return StructuredTool.from_function(coroutine=forward, name=name, description=tool.description,
                                        args_schema=tool.args_schema, return_direct=tool.return_direct,
                                        response_format=tool.response_format)


class _ConvertedTools(AgentMiddleware):
    """The innermost middleware of a shared graph with an OpenAI-family model: each model call is sent its tools as
    the OpenAI tool dicts ``bind_tools`` would make of them (``convert_to_openai_tool``, which hands such a dict on
    as it is), converted once per tool of the graph instead of at every model call (issue 34's bench: 0.5 to 2 ms a
    tool and call, through pydantic). The graph's tools never change, so neither do their dicts."""

    def __init__(self) -> None:
        super().__init__()
        self._converted: dict[int, tuple[BaseTool, dict[str, Any]]] = {}

    @property
    def name(self) -> str:
        return "ConvertedTools"

    def _converted_request(self, request: ModelRequest) -> ModelRequest:
        tools: list[Any] = []
        for tool in request.tools:
            if not isinstance(tool, BaseTool):
                tools.append(tool)
                continue
            kept = self._converted.get(id(tool))
            if kept is None or kept[0] is not tool:
                kept = self._converted[id(tool)] = (tool, convert_to_openai_tool(tool))
            tools.append(kept[1])
        return request.override(tools=tools)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._converted_request(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return await handler(self._converted_request(request))


def _own_middleware(model: BaseChatModel) -> list[AgentMiddleware]:
    """The middleware a shared graph adds after the run's: :class:`_ConvertedTools` for an OpenAI-family model (its
    ``bind_tools`` passes such dicts on unchanged; other providers' clients convert them their own way)."""
    from langchain_openai.chat_models.base import BaseChatOpenAI  # noqa: PLC0415 - as service.chat.summary does

    return [_ConvertedTools()] if isinstance(model, BaseChatOpenAI) else []


@dataclass
class _Entry:
    model: BaseChatModel
    checkpointer: Any
    graph: Any


_GRAPHS: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()


def shared_agent(model: BaseChatModel, tools: Sequence[BaseTool], middleware: Sequence[AgentMiddleware],
                 checkpointer: Any) -> tuple[Any, _Scope | None]:
    """The compiled agent of this shape, and the scope a run of it needs (:func:`scoped`).

    ``tools`` and ``middleware`` are the run's own (``tools``: ``StructuredTool`` with a coroutine). When one of
    them cannot be shared, a graph is compiled for this run alone and the scope is ``None``. Compiling raises what
    ``create_agent`` raises.
    """
    kinds = [_kind(m) for m in middleware]
    if any(kind is None for kind in kinds) or any(getattr(t, "coroutine", None) is None for t in tools):
        return create_agent(model, list(tools), middleware=list(middleware), checkpointer=checkpointer), None
    key = (id(model), id(checkpointer), tuple(_tool_key(t) for t in tools), tuple(kinds))
    entry = _GRAPHS.get(key)
    if entry is None or entry.model is not model or entry.checkpointer is not checkpointer:
        stand_ins: list[Any] = []
        for slot, (m, kind) in enumerate(zip(middleware, kinds, strict=True)):
            assert kind is not None
            stand_in = _delegate_class(kind[2], kind[3])(slot, m.name, m.state_schema)
            stand_in.transformers = tuple(_transformer(slot, index) for index in range(len(kind[4])))
            stand_ins.append(stand_in)
        graph = create_agent(model, [_stand_in(t) for t in tools], middleware=[*stand_ins, *_own_middleware(model)],
                             checkpointer=checkpointer)
        entry = _GRAPHS[key] = _Entry(model, checkpointer, graph)
        while len(_GRAPHS) > MAX_GRAPHS:
            _GRAPHS.popitem(last=False)
    _GRAPHS.move_to_end(key)
    return entry.graph, _Scope(list(middleware), {t.name: t for t in tools})


def enter(scope: _Scope | None) -> Any:
    """Sets the run's scope in this task's context; returns the token for :func:`leave`."""
    return _SCOPE.set(scope)


def leave(token: Any) -> None:
    """Restores the context :func:`enter` changed."""
    _SCOPE.reset(token)


def cached_graphs() -> int:
    """How many compiled graphs the cache holds now (at most :data:`MAX_GRAPHS`)."""
    return len(_GRAPHS)
