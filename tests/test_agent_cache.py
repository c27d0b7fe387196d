"""The agent's compiled graph is shared by the runs of one shape (service/chat/agent_cache.py): two runs at once on
the one graph each see their own tools, stream and answer; a run of another shape gets a graph of its own."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import langsmith

from service.chat import agent_cache
from service.chat.trace_hooks import inline_unless_tracing
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events

# Generous: the runs wait for Node-RED and the scripted model on a busy shared machine.
DEADLINE = 60.0


def last_user_text(body: dict[str, Any]) -> str:
    return str(next(m for m in reversed(body["messages"]) if m["role"] == "user")["content"])


async def chat(client, message: str) -> list[dict[str, Any]]:
    response = await client.post("/ai-sidebar/stream-chat", json={"message": message})
    assert response.status == 200, await response.text()
    return await read_events(response)


def count_compiles(monkeypatch) -> list[int]:
    """create_agent as agent_cache calls it, counted (one entry per compile)."""
    compiled: list[int] = []
    original = agent_cache.create_agent

    def counted(*args: Any, **kwargs: Any) -> Any:
        compiled.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(agent_cache, "create_agent", counted)
    return compiled


def check_own(events: list[dict[str, Any]], own: dict[str, Any], other: dict[str, Any], nodered) -> None:
    """``events`` are one run's alone: its own tool call and result, its own answer, nothing of the other run."""
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [c["params"] for c in calls] == [{"flow_id": own["id"]}]
    assert len(results) == 1 and results[0]["ok"]
    own_nodes = {n["id"] for n in nodered.nodes_of(own["id"])}
    other_nodes = {n["id"] for n in nodered.nodes_of(other["id"])} - own_nodes
    assert all(node in results[0]["result"] for node in own_nodes)
    assert not any(node in results[0]["result"] for node in other_nodes)
    answer = "".join(e["content"] for e in events if e["type"] == "token")
    assert answer == f"Flow {own['id']} is read."
    assert events[-1]["type"] == "done"
    assert not any(e["type"] == "error" for e in events)


async def test_two_runs_at_once_on_one_compiled_graph_keep_their_own_events(aiohttp_client, settings, nodered, model,
                                                                           monkeypatch):
    first, second = nodered.tabs()[:2]
    compiled = count_compiles(monkeypatch)

    def respond(body: dict[str, Any]) -> Reply:
        tab = first if first["id"] in last_user_text(body) else second
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}])
        return Reply(text=f"Flow {tab['id']} is read.")

    model.responder = respond
    # The first run's first model call is held at the model server until the second run is done, so the second
    # run goes through the whole graph while the first is inside it (in its model node); the first run's tool, its
    # middlewares' later hooks and its answer all come after the second run used the graph.
    release = threading.Event()
    held = threading.Event()
    reply_to = model.reply_to

    async def gated(request: Any, body: dict[str, Any]) -> Reply | None:
        reply = await reply_to(request, body)
        if first["id"] in last_user_text(body) and not any(m["role"] == "tool" for m in body["messages"]):
            held.set()
            await asyncio.to_thread(release.wait, DEADLINE)
        return reply

    monkeypatch.setattr(model, "reply_to", gated)
    client = await aiohttp_client(create_app(settings))
    first_run = asyncio.create_task(chat(client, f"Check my flow {first['id']} for problems"))
    started = time.monotonic()
    while not held.is_set():
        assert time.monotonic() - started < DEADLINE, "the first run's model call never came"
        assert not first_run.done(), await first_run
        await asyncio.sleep(0.05)
    try:
        second_events = await chat(client, f"Check my flow {second['id']} for problems")
    finally:
        release.set()
    first_events = await asyncio.wait_for(first_run, DEADLINE)

    check_own(first_events, first, second, nodered)
    check_own(second_events, second, first, nodered)
    assert len(compiled) == 1  # both ran the graph the first one compiled


async def test_runs_of_one_app_share_a_graph_and_the_cache_keeps_the_last_shapes(aiohttp_client, settings, nodered,
                                                                                 model, monkeypatch):
    tab = nodered.tabs()[0]
    compiled = count_compiles(monkeypatch)
    monkeypatch.setattr(agent_cache, "MAX_GRAPHS", 2)

    async def read_flow(client) -> None:
        model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}]),
                     Reply(text=f"Flow {tab['id']} is read."))
        events = await chat(client, f"Check my flow {tab['id']} for problems")
        assert [e["type"] for e in events if e["type"].startswith("tool")] == ["tool_call", "tool_result"]
        assert "".join(e["content"] for e in events if e["type"] == "token") == f"Flow {tab['id']} is read."

    # Each app has its own model (its model factory): another shape.
    apps = [await aiohttp_client(create_app(settings)) for _ in range(3)]
    await read_flow(apps[0])
    await read_flow(apps[0])
    assert len(compiled) == 1
    await read_flow(apps[1])
    await read_flow(apps[2])
    assert len(compiled) == 3 and agent_cache.cached_graphs() == 2
    await read_flow(apps[0])  # the oldest shape was let go: compiled again
    assert len(compiled) == 4 and agent_cache.cached_graphs() == 2


class RecordingExecutor(ThreadPoolExecutor):
    """The event loop's default executor, noting the name of each function handed to it (run_in_executor)."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.names: list[str] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[override]
        inner = getattr(fn, "args", ())  # LangSmith hands over partial(ctx.run, func, ...)
        target = inner[0] if inner else fn
        self.names.append(getattr(getattr(target, "func", target), "__name__", "?"))  # a partial: its function
        return super().submit(fn, *args, **kwargs)


async def test_an_agent_turn_runs_its_middleware_hooks_without_handing_langsmith_records_to_threads(
        aiohttp_client, settings, nodered, model):
    """LangChain wraps each middleware hook in LangSmith's traceable, which hands its run record's set-up and end to
    the default executor, tracing or not (service/chat/trace_hooks.py); with tracing off they stay on the loop."""
    tab = nodered.tabs()[0]
    executor = RecordingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    client = await aiohttp_client(create_app(settings))
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}]),
                 Reply(text=f"Flow {tab['id']} is read."))
    events = await chat(client, f"Check my flow {tab['id']} for problems")
    assert [e["type"] for e in events if e["type"].startswith("tool")] == ["tool_call", "tool_result"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == f"Flow {tab['id']} is read."
    assert not [name for name in executor.names if name in ("_setup_run", "_handle_container_end", "_on_run_end")]


async def test_with_langsmith_tracing_on_the_records_go_to_langsmiths_thread_as_before():
    handed: list[Any] = []

    async def default(ctx: contextvars.Context, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed.append(func)
        return await asyncio.to_thread(ctx.run, func, *args, **kwargs)

    assert await inline_unless_tracing(default, contextvars.copy_context(), threading.get_ident) == \
        threading.get_ident()
    assert handed == []
    with langsmith.tracing_context(enabled=True):
        traced = contextvars.copy_context()
    assert await inline_unless_tracing(default, traced, threading.get_ident) != threading.get_ident()
    assert handed == [threading.get_ident]
