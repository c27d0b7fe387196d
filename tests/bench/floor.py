"""The floor under the service's CPU per request and per token: LangChain's chat model alone, built as the service
builds it (:func:`service.llm.providers.model_http_client`, ``ChatOpenAI``, :func:`chunks_as_dicts`), streaming the
very request the service sent the model (its messages and tools, read back from the scripted model server), with
no service around it; and LangGraph's machinery alone for the router graph (:func:`router_alone_us`), which issue 21
requires on the request path.

Whatever the service does, a request start and a relayed token cost at least this much CPU while LangChain is the
model layer and the router a LangGraph graph; the time to first token of ``n`` chats that start at once on ``c``
cores is then at least about ``n × (per_request + router) / c`` (:func:`lowest_ttft_ms`).

Run by :mod:`tests.bench.cost` as its own process (``python -m tests.bench.floor``; its CPU is its own, read with
``time.process_time``): arguments on stdin as JSON ``{"port", "control_port", "body", "streams", "rounds",
"words"}`` (the scripted model server's ports, see :class:`tests.bench.stack.ModelProcess`), the
result on stdout as JSON ``{"per_request_us", "per_token_us", "router_graph_us", ...}``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from tests.support.nodered import REPO

from .stack import ModelProcess


async def _measure(server: ModelProcess, body: dict[str, Any], streams: int, rounds: int,
                   words: int) -> dict[str, Any]:
    from langchain_core.messages import convert_to_messages
    from pydantic import SecretStr

    from service.llm.providers import ChatModelFactory, ProviderConfig

    cache = ChatModelFactory()
    model = cache.get(ProviderConfig(provider="openai-compatible", model=body.get("model") or "bench-model",
                                     api_key=SecretStr("sk-bench-floor"), base_url=server.base_url))
    if body.get("tools"):
        model = model.bind(tools=body["tools"])
    messages = convert_to_messages(body["messages"])

    def reply(pieces: int) -> None:
        server.control("reply", {"words": pieces, "token_delay": 0.02})

    async def chats(count: int) -> tuple[float, int]:
        received = 0

        async def one() -> None:
            nonlocal received
            async for _ in model.astream(messages):
                received += 1

        started = time.process_time()
        for _ in range(count):
            await asyncio.gather(*(one() for _ in range(streams)))
        return time.process_time() - started, received

    try:
        reply(1)
        await chats(2)  # connections, lazy imports
        one_cpu, one_chunks = await chats(rounds)
        reply(words)
        many_cpu, many_chunks = await chats(rounds)
    finally:
        await cache.aclose()
    requests = streams * rounds
    # Each answer also carries a final chunk (the usage) besides its pieces: the extra pieces are words - 1.
    return {"requests": requests, "chunks": {"one_piece": one_chunks, "many_pieces": many_chunks},
            "per_request_us": 1e6 * one_cpu / requests,
            "per_token_us": 1e6 * (many_cpu - one_cpu) / (requests * (words - 1))}


def run(server: ModelProcess, body: dict[str, Any], *, streams: int, rounds: int, words: int) -> dict[str, Any]:
    """The floor against the running scripted model ``server``, measured in a process of its own (see the module).
    Raises ``RuntimeError`` when it fails."""
    arguments = {"port": server.port, "control_port": server.control_port, "body": body, "streams": streams,
                 "rounds": rounds, "words": words}
    done = subprocess.run([sys.executable, "-m", "tests.bench.floor"], cwd=REPO, input=json.dumps(arguments),
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the floor measurement failed: {done.stderr[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def router_alone_us(path: tuple[str, ...] = ("classify", "retrieve", "agent", "check_answer"),
                    runs: int = 2000, at_once: int = 20) -> float:
    """CPU µs per run of LangGraph's machinery alone for the router graph: a graph of the same nodes and edges as
    :data:`service.chat.router_graph.ROUTER` (read from ``ROUTER.get_graph()``) whose nodes do nothing and whose
    conditional edges follow ``path`` (the pure chat's: classify, retrieve, agent, check_answer), ``at_once`` runs
    at a time. Measured in this process (``time.process_time``)."""
    from langgraph.graph import END, START, StateGraph

    from service.chat.router_graph import ROUTER, RouterState

    drawn = ROUTER.get_graph()
    graph = StateGraph(RouterState)
    names = [name for name in drawn.nodes if name not in (START, END)]
    for name in names:
        async def nothing(state: Any) -> dict[str, Any]:
            return {}
        graph.add_node(name, nothing)
    branches: dict[str, list[str]] = {}
    for edge in drawn.edges:
        if edge.conditional:
            branches.setdefault(edge.source, []).append(edge.target)
        else:
            graph.add_edge(edge.source, edge.target)
    for source, targets in branches.items():
        chosen = next((t for t in targets if t in path), END)

        async def route(state: Any, chosen: str = chosen) -> str:
            return chosen
        graph.add_conditional_edges(source, route, targets)
    compiled = graph.compile()
    state = {"request": None, "deps": None, "emit": None, "result": None, "path": None, "stop": False}

    async def measure() -> float:
        for _ in range(at_once * 5):  # warm
            await compiled.ainvoke(state)
        started = time.process_time()
        for _ in range(runs // at_once):
            await asyncio.gather(*(compiled.ainvoke(state) for _ in range(at_once)))
        return 1e6 * (time.process_time() - started) / (runs // at_once * at_once)

    return asyncio.run(measure())


def lowest_ttft_ms(per_request_us: float, streams: int, cores: int) -> float:
    """The least time until the last of ``streams`` chats that start at once has its first token, when each needs
    ``per_request_us`` of CPU before it and ``cores`` cores share the work (nothing else running), in ms."""
    return streams * per_request_us / cores / 1000


def main() -> None:
    arguments = json.loads(sys.stdin.read())
    server = ModelProcess(port=arguments["port"], control_port=arguments["control_port"])
    result = asyncio.run(_measure(server, arguments["body"], arguments["streams"], arguments["rounds"],
                                  arguments["words"]))
    result["router_graph_us"] = router_alone_us()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
