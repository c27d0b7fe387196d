"""The router graph's labelled requests (issue 21: ≥ 60, ≥ 80 % answered with ≤ 2 model calls) and the runner that
sends them through the real service and the scripted model server, counting model calls per request.

Each request carries the path it must take (see :mod:`service.chat.router_graph`): ``direct``, ``keyword``,
``retrieval``, ``agent``; or ``tools`` (:mod:`tests.support.tool_requests`): whichever path, a model call offers
tools. The scripted model answers text, except in the agent's requests (tools offered), where it
calls a tool ``agent_steps`` times before answering: how many steps a request needs is what the model decides, so
the labelled set says it (a greeting needs none, reworking a tab several).

Used by ``tests/test_router_graph.py`` and ``make bench`` (``tests/bench/router.py``).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import aiohttp

from service.chat.retrieval_path import REWRITE_PROMPT, ROUTER_PROMPT
from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.sse import read_events


@dataclass(frozen=True)
class Labelled:
    """One labelled request: its language, message and expected path; ``select`` is what the editor has open
    (``flow``: a tab, ``node``: a function node on it), ``agent_steps`` the tool calls the scripted model makes
    before answering when it is offered tools."""

    language: str
    message: str
    path: str
    select: str = ""
    agent_steps: int = 0


ROUTER_REQUESTS: list[Labelled] = [
    # Direct trigger: the tool runs, one call answers; none when the run ends at the tool.
    Labelled("en-US", "@tools:get_settings", "direct"),
    Labelled("en-US", "@tools:list_node_types", "direct"),
    Labelled("de", "@tools:get_flows", "direct"),
    Labelled("ja", "@tools:get_flow", "direct", select="flow"),
    Labelled("zh-CN", "@tools:get-settings", "direct"),
    Labelled("fr", "@tools:get_diagnostics", "direct"),
    Labelled("en-US", '@tools:get_flow|{"flow_id": "no-such-flow"}', "direct"),   # flow_not_found: 0 calls
    Labelled("en-US", '@tools:create_tab|{"label": "Router test"}', "direct"),     # waits for approval: 0 calls
    # Keyword-forced tool, one call.
    Labelled("en-US", "explain the current flow", "keyword", select="flow"),
    Labelled("en-US", "What does this flow do?", "keyword", select="flow"),
    Labelled("en-US", "show me the current config", "keyword"),
    Labelled("en-US", "run the diagnostics", "keyword"),
    Labelled("en-US", "why does this fail?", "keyword", select="flow"),
    Labelled("en-US", "what does the current node do?", "keyword", select="node"),
    Labelled("en-US", "Is this function node safe?", "keyword", select="node"),
    Labelled("de", "Erkläre den aktuellen Flow", "keyword", select="flow"),
    Labelled("de", "Zeig mir die aktuelle Konfiguration", "keyword"),
    Labelled("fr", "Explique le flux actuel", "keyword", select="flow"),
    Labelled("fr", "Montre-moi la configuration actuelle", "keyword"),
    Labelled("es-ES", "¿Qué hace el flujo actual?", "keyword", select="flow"),
    Labelled("es-ES", "¿Por qué falla?", "keyword", select="flow"),
    Labelled("pt-BR", "Explique o fluxo atual", "keyword", select="flow"),
    Labelled("ru", "Объясни текущий поток", "keyword", select="flow"),
    Labelled("ja", "現在のフローを説明して", "keyword", select="flow"),
    Labelled("ja", "現在の設定を見せて", "keyword"),
    Labelled("zh-CN", "解释一下当前流程", "keyword", select="flow"),
    Labelled("zh-CN", "为什么报错", "keyword", select="flow"),
    Labelled("zh-TW", "說明目前流程", "keyword", select="flow"),
    Labelled("ko", "현재 플로우를 설명해 줘", "keyword", select="flow"),
    Labelled("ko", "진단 정보 보여 줘", "keyword"),
    # Retrieval (node help, workspace or both), one call.
    Labelled("en-US", "Which node can I use to parse CSV?", "retrieval"),
    Labelled("en-US", "What does the trigger node do?", "retrieval"),
    Labelled("en-US", "How do I send an HTTP request with a custom header?", "retrieval"),
    Labelled("en-US", "How many function nodes do I have?", "retrieval"),
    Labelled("en-US", "How many debug nodes do I have?", "retrieval"),
    Labelled("en-US", "How do I add retry logic to my flow?", "retrieval"),
    Labelled("de", "Welcher Node wandelt XML in ein Objekt um?", "retrieval"),
    Labelled("de", "Wie viele Debug-Nodes habe ich?", "retrieval"),
    Labelled("fr", "Quel nœud permet d'analyser du YAML ?", "retrieval"),
    Labelled("fr", "Combien de nœuds function y a-t-il ?", "retrieval"),
    Labelled("es-ES", "¿Qué nodo convierte JSON en un objeto?", "retrieval"),
    Labelled("es-ES", "¿Cuántos nodos inject hay en mis flujos?", "retrieval"),
    Labelled("pt-BR", "Qual nó posso usar para ler um arquivo?", "retrieval"),
    Labelled("pt-BR", "Quantos nós function existem no meu fluxo?", "retrieval"),
    Labelled("ru", "Какой узел отправляет HTTP-запрос?", "retrieval"),
    Labelled("ru", "Сколько узлов function в моём потоке?", "retrieval"),
    Labelled("ja", "CSVを解析するにはどのノードを使いますか？", "retrieval"),
    Labelled("ja", "functionノードはいくつありますか？", "retrieval"),
    Labelled("zh-CN", "哪个节点可以解析CSV？", "retrieval"),
    Labelled("zh-CN", "我有多少个function节点？", "retrieval"),
    Labelled("zh-TW", "哪個節點可以發送HTTP請求？", "retrieval"),
    Labelled("ko", "CSV를 파싱하려면 어떤 노드를 써야 하나요?", "retrieval"),
    Labelled("ko", "function 노드가 몇 개 있나요?", "retrieval"),
    # The agent: nothing cheaper decided; as many calls as the steps the model takes, plus its answer.
    Labelled("en-US", "Hello!", "agent"),
    Labelled("en-US", "Thanks, that was helpful.", "agent"),
    Labelled("en-US", "Write me a haiku about spring", "agent"),
    Labelled("de", "Guten Morgen", "agent"),
    Labelled("fr", "Merci beaucoup", "agent"),
    Labelled("es-ES", "Buenos días", "agent"),
    Labelled("pt-BR", "Obrigado!", "agent"),
    Labelled("ru", "Привет", "agent"),
    Labelled("ja", "こんにちは", "agent"),
    Labelled("zh-CN", "你好", "agent"),
    Labelled("ko", "안녕하세요", "agent"),
    Labelled("en-US", "Tidy up the greenhouse and tell me what you changed", "agent", agent_steps=2),
    Labelled("en-US", "Compare the intervals of every inject in the greenhouse", "agent", agent_steps=2),
    Labelled("en-US", "Rename the sensors after their topics, then check nothing broke", "agent", agent_steps=3),
    Labelled("de", "Räume das Gewächshaus auf und sag mir, was du geändert hast", "agent", agent_steps=2),
]


@dataclass
class Outcome:
    """What one labelled request did: the path the graph logged and the model calls it made."""

    request: Labelled
    path: str | None
    model_calls: int
    errors: list[str]
    tools_offered: bool = False  # a model call of this request offered tools

    @property
    def as_labelled(self) -> bool:
        """The labelled path taken; for a request labelled ``tools`` (:mod:`tests.support.tool_requests`): a model
        call offered it tools, whichever path led there."""
        return self.tools_offered if self.request.path == "tools" else self.path == self.request.path


class _Routes(logging.Handler):
    """Collects the ``route`` the router graph puts on its log record for each request."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.paths: list[str | None] = []

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "route"):
            self.paths.append(record.route)


def scripted_model(model: ScriptedModelServer, steps: list[int]) -> None:
    """The model's replies: a rewrite for the rewrite prompt, ``neither`` for the router prompt, tool calls while
    the current request's agent (``steps[0]``) has steps left, else an answer."""
    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        system = str(messages[0].get("content") or "")
        if system.startswith(REWRITE_PROMPT[:40]):
            return Reply(text="node help")
        if system.startswith(ROUTER_PROMPT[:40]):
            return Reply(text="neither")
        offered = [tool["function"]["name"] for tool in body.get("tools") or []]
        done = sum(1 for message in messages if message.get("role") == "tool")
        if offered and done < steps[0]:
            name = next((n for n in ("get_flows", "list_node_types") if n in offered), offered[0])
            return Reply(tool_calls=[{"name": name, "arguments": {}}])
        return Reply(text="Here is the answer.")
    model.responder = respond


async def editor_selection(nodered_url: str) -> tuple[str, str]:
    """A tab of the running Node-RED and a function node on it (read through its Admin API)."""
    async with aiohttp.ClientSession() as http, http.get(f"{nodered_url}/flows",
                                                         headers={"Node-RED-API-Version": "v2"}) as answer:
        flows = (await answer.json())["flows"]
    function = next(n for n in flows if n.get("type") == "function" and n.get("z"))
    return function["z"], function["id"]


async def run_labelled(client: Any, model: ScriptedModelServer, nodered_url: str,
                       requests: list[Labelled] | None = None) -> list[Outcome]:
    """Send each labelled request to ``POST /ai-sidebar/stream-chat`` of ``client`` (an aiohttp test client of the
    service, whose model is ``model``) one after the other; returns each request's outcome."""
    tab, node = await editor_selection(nodered_url)
    steps = [0]
    scripted_model(model, steps)
    routes = _Routes()
    logger = logging.getLogger("service.chat.router_graph")
    level = logger.level
    logger.addHandler(routes)
    logger.setLevel(logging.INFO)
    outcomes = []
    try:
        for labelled in requests or ROUTER_REQUESTS:
            steps[0] = labelled.agent_steps
            body: dict[str, Any] = {"message": labelled.message, "language": labelled.language}
            if labelled.select:
                body["selectedFlow"] = {"id": tab}
            if labelled.select == "node":
                body["selectedNodes"] = [{"id": node, "type": "function"}]
            before, seen = len(model.requests), len(routes.paths)
            response = await client.post("/ai-sidebar/stream-chat", json=body)
            events = await read_events(response)
            path = routes.paths[seen] if len(routes.paths) > seen else None
            outcomes.append(Outcome(labelled, path, len(model.requests) - before,
                                    [e.get("code", "") for e in events if e["type"] == "error"],
                                    any(body.get("tools") for body in model.requests[before:])))
    finally:
        logger.removeHandler(routes)
        logger.setLevel(level)
    return outcomes


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 3) if flags else None


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """Model calls per path (count, min, max, mean), the share answered with ≤ 2 calls and the requests that did
    not take their labelled path."""
    per_path: dict[str, list[int]] = {}
    for outcome in outcomes:
        per_path.setdefault(outcome.request.path, []).append(outcome.model_calls)
    return {
        "requests": len(outcomes),
        "languages": len({o.request.language for o in outcomes}),
        "paths": {path: {"requests": len(calls), "model_calls_min": min(calls), "model_calls_max": max(calls),
                         "model_calls_mean": round(sum(calls) / len(calls), 2),
                         "model_calls": dict(sorted(Counter(calls).items()))}
                  for path, calls in per_path.items()},
        "share_at_most_2_calls": round(sum(o.model_calls <= 2 for o in outcomes) / len(outcomes), 3),
        "share_needing_tools_offered_them": _share([o.tools_offered for o in outcomes if o.request.path == "tools"]),
        "off_path": [{"message": o.request.message, "language": o.request.language, "labelled": o.request.path,
                      "taken": o.path, "model_calls": o.model_calls} for o in outcomes if not o.as_labelled],
    }
