"""The eval's stack and its runs: Node-RED 4.1 with the eval workspace (:mod:`tests.eval.workspace`), the service as
``python -m service`` (the bench's :class:`tests.bench.stack.Stack`), and the model: the scripted server (offline,
answering each question with what :func:`scripted_plan` planned) or whatever provider the environment configures.

Each task is one ``POST /ai-sidebar/stream-chat`` to the service in its own session; the answer is the ``token``
events' text, graded with the stream's events (:func:`tests.eval.graders.grade`).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench.stack import SERVICE_TOKEN, Stack
from tests.eval.graders import grade, passed
from tests.eval.tasks import Task
from tests.eval.workspace import eval_flows
from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed, free_port

# The environment a real provider is configured with (README, "Configuration"); passed on to the service as is.
PROVIDER_PREFIXES = ("AI_PROVIDER", "AI_MODEL", "OPENAI_", "DEEPSEEK_", "GOOGLE_", "ANTHROPIC_", "AZURE_OPENAI_",
                     "AI_LLM_TIMEOUT")
REQUEST_TIMEOUT = 300  # seconds for one whole answer: a real model's agent may call several tools
HEADERS = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "eval"}


@dataclass
class Planned:
    """What the scripted model answers to one task: ``text``, after a tool call of ``tool_calls`` when given."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def add_node_call(change: dict[str, str]) -> dict[str, Any]:
    """The ``add_nodes`` call that proposes ``change`` (a new unwired node of its type and name on its tab)."""
    node = {"id": "eval0new0node01", "type": change["type"], "name": change["name"], "x": 600, "y": 400,
            "wires": [] if change["type"] == "debug" else [[]]}
    return {"name": "add_nodes", "arguments": {"flow_id": change["flow_id"], "nodes": [node]}}


def scripted_plan(tasks: list[Task], answer_of: dict[str, Task] | None = None) -> dict[str, Planned]:
    """The scripted model's answer per task id: the reference of ``answer_of[task.id]`` (default: the task itself,
    the right answer), with that task's proposed change as a tool call for a change task."""
    plan = {}
    for task in tasks:
        source = (answer_of or {}).get(task.id, task)
        plan[task.id] = Planned(source.reference, [add_node_call(source.change)] if source.change else [])
    return plan


def letters(text: str) -> str:
    """``text`` without anything but letters and digits: a question found in a prompt however it was quoted."""
    return re.sub(r"\W+", "", text).casefold()


class ScriptedModel(ScriptedModelServer):
    """The scripted model server answering each request by the task whose question its last user message holds."""

    def __init__(self) -> None:
        super().__init__()
        self.plan: dict[str, Planned] = {}
        self.questions: dict[str, str] = {}
        self.responder = self.answer

    def answer(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        last = letters(json.dumps(users[-1].get("content"), ensure_ascii=False)) if users else ""
        task_id = next((tid for question, tid in self.questions.items() if letters(question) in last), None)
        planned = self.plan.get(task_id or "")
        if planned is None:
            return Reply(text="I do not know.")
        if planned.tool_calls and not any(m.get("role") == "tool" for m in messages) and body.get("tools"):
            return Reply(tool_calls=planned.tool_calls)
        return Reply(text=planned.text)


class RealModel:
    """Stands in for the model server when a real provider is configured: the service talks to it directly."""

    base_url = ""

    def start(self) -> None: ...

    def stop(self) -> None: ...


def provider_env() -> dict[str, str]:
    """The provider settings of this environment (:data:`PROVIDER_PREFIXES`)."""
    return {k: v for k, v in os.environ.items() if k.startswith(PROVIDER_PREFIXES)}


class EvalStack(Stack):
    """The bench's stack on the eval workspace; ``real``: the service uses the provider the environment configures."""

    def __init__(self, workdir: Path, secrets: list[str], real: bool = False) -> None:
        super().__init__(workdir=workdir, model=RealModel() if real else ScriptedModel())  # type: ignore[arg-type]
        self.secrets, self.real = secrets, real

    def start(self) -> EvalStack:
        self.model.start()
        service_port = free_port()
        self.flows = eval_flows(self.secrets)
        self.nodered = NodeRed(userdir=self.workdir / "nodered", port=free_port(), flows=self.flows,
                               with_contrib=True, env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}",
                                                       "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
        self.nodered.start(timeout=90)  # a cold Node-RED with ~400 example nodes on a busy machine
        self.service = self.new_service(service_port, "service")
        if self.real:
            for key in ("AI_PROVIDER", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
                self.service.env.pop(key, None)
            self.service.env.update(provider_env())
        self.service.start(timeout=120)  # its first workspace index of the large workspace
        return self

    @property
    def model_name(self) -> str:
        """``provider/model`` as the environment names it (``scripted`` offline)."""
        if not self.real:
            return "scripted"
        env = provider_env()
        return f"{env.get('AI_PROVIDER', 'openai')}/{env.get('AI_MODEL', 'default')}"


@dataclass
class Outcome:
    """One task's run: the answer, the events (``token`` left out), the checks and the measurements."""

    task: Task
    answer: str
    events: list[dict[str, Any]]
    checks: dict[str, tuple[bool, str]]
    ttft_ms: float | None
    seconds: float
    usage: dict[str, Any]

    @property
    def passed(self) -> bool:
        return passed(self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.task.id, "kind": self.task.kind, "language": self.task.language, "passed": self.passed,
                "checks": {k: {"ok": ok, "detail": d} for k, (ok, d) in self.checks.items()},
                "ttft_ms": self.ttft_ms, "seconds": round(self.seconds, 3), "usage": self.usage,
                "answer": self.answer, "events": [e.get("type") for e in self.events]}


async def ask(http: aiohttp.ClientSession, stack: EvalStack, task: Task) -> Outcome:
    """Ask ``task`` through the service's stream route and grade the answer."""
    started = time.monotonic()
    first: float | None = None
    parts: list[str] = []
    events: list[dict[str, Any]] = []
    body = {"message": task.question, "language": task.service_language, "sessionId": f"eval-{task.id}"}
    async with http.post(f"{stack.service.url}/ai-sidebar/stream-chat", json=body, headers=HEADERS) as answer:
        if answer.status != 200:
            events.append({"type": "error", "code": f"http_{answer.status}", "message": await answer.text()})
        else:
            async for line in answer.content:
                if not line.startswith(b"data: "):
                    continue
                event = json.loads(line[6:])
                if event.get("type") == "token":
                    first = first if first is not None else time.monotonic()
                    parts.append(event.get("content", ""))
                else:
                    events.append(event)
    text = "".join(parts)
    done = next((e for e in events if e.get("type") == "done"), {})
    return Outcome(task, text, events, grade(task, text, events),
                   None if first is None else round((first - started) * 1000, 1), time.monotonic() - started,
                   done.get("usage") or {})


async def run_tasks(stack: EvalStack, tasks: list[Task], plan: dict[str, Planned] | None = None) -> list[Outcome]:
    """Every task, one after another (a real provider's rate limits); ``plan``: the scripted model's answers."""
    if isinstance(stack.model, ScriptedModel):
        stack.model.plan = plan if plan is not None else scripted_plan(tasks)
        stack.model.questions = {t.question: t.id for t in tasks}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)) as http:
        return [await ask(http, stack, task) for task in tasks]


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, Any]]:
    """Per task kind and ``all``: tasks, passed, score (share passed), input/output tokens, cost (USD), median time
    to first token (ms)."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.task.kind, []).append(outcome)
    groups["all"] = outcomes
    table = {}
    for kind, group in groups.items():
        ttfts = [o.ttft_ms for o in group if o.ttft_ms is not None]
        table[kind] = {"tasks": len(group), "passed": sum(o.passed for o in group),
                       "score": round(sum(o.passed for o in group) / len(group), 3) if group else 0.0,
                       "input_tokens": sum(int(o.usage.get("inputTokens") or 0) for o in group),
                       "output_tokens": sum(int(o.usage.get("outputTokens") or 0) for o in group),
                       "cost": round(sum(float(o.usage.get("cost") or 0) for o in group), 6),
                       "ttft_ms": round(statistics.median(ttfts), 1) if ttfts else None}
    return table
