"""Check and fix (issue 34): after each deploy of an approved plan's build, the service tests the change on the
running flow and tells the model and the user what it saw.

For each plan step with a ``check`` (``{inject, debug, expect}``, see :class:`service.chat.plan.PlanCheck`) the
check reads the deployed flows back (both nodes there, a wire path from the inject to the debug node), triggers the
inject (``POST /inject/:id``, audited as part of the approved plan), and waits (up to :data:`CHECK_SECONDS`, woken by
each arriving message, never a fixed sleep) for what the path's nodes send to the runtime evidence buffer: the debug
node's value, or a node's error. The stream gets a ``check`` event; the model gets the outcome with the write's
result: on a failure it proposes a fix (a write behind its approval card, as always) and the next deploy checks again.
The first passing check ends the loop with ``verdict`` ``done``; after ``AI_SIDEBAR_BUILD_MAX_ROUNDS`` failing
rounds, ``verdict`` ``not_done``. The rounds and the verdict travel with the plan in the paused run's context.

Stop (the client going away) cancels the run between or during these reads; a check never writes flows, so nothing
is left half-written.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool

from service.chat import events
from service.chat.deploy_test import DEPLOY_AND_TEST, DESCRIPTION, DeployTestArgs
from service.chat.events import Emit, Summarised
from service.chat.scratch_tab import scratch_tab
from service.nodered.client import NodeRedError
from service.nodered.evidence import EvidenceBuffer
from service.nodered.messages import Sentence
from service.nodered.tooling import ToolContext
from service.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from service.chat.approvals import AgentApproval

CHECK_SECONDS = 10.0  # how long a check waits for the first message of the path after triggering the inject
TOLERANCE = 0.05  # numbers match an expected number within this
PLAN_TEST = "the approved plan's test"  # the audit message of the inject a check triggers
EDITOR_NOTE = (f"The change is in the user's editor, not deployed. When all of this step's changes are applied, call "
               f"{DEPLOY_AND_TEST} alone: the user deploys, and the service tests the plan's checks on the running "
               "flow.")


@dataclass
class Outcome:
    """What one round of checks saw: ``evidence`` ``[{kind, node, value?, message?, expected?, from?}]``
    (``kind``: ``debug``, ``error``, ``missing``, ``ambiguous``, ``unwired``, ``silent``, ``mismatch``) and
    ``failed``, English sentences of what failed (for the model)."""

    evidence: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failed


def matches(value: Any, expected: Any) -> bool:
    """Whether a debug ``value`` is the ``expected`` one (``None``: any value): numbers within :data:`TOLERANCE`
    (a number sent as text counts), anything else equal."""
    if expected is None:
        return True
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return math.isfinite(number) and abs(number - float(expected)) <= TOLERANCE
    return bool(value == expected)


def find(flows: list[dict[str, Any]], wanted: str, node_type: str) -> list[dict[str, Any]]:
    """The deployed nodes of ``node_type`` that ``wanted`` names: the one with that id, else those with that name
    (several: the check cannot tell which one the plan meant)."""
    typed = [n for n in flows if n.get("type") == node_type]
    by_id = [n for n in typed if n.get("id") == wanted]
    return by_id or [n for n in typed if n.get("name") == wanted]


def route(flows: list[dict[str, Any]], start: str, end: str) -> list[str] | None:
    """The ids of the nodes on a wire path from ``start`` to ``end`` (both included; a ``link out`` leads to its link
    in nodes), or ``None``."""
    wires = {n["id"]: [t for port in n.get("wires") or [] for t in port]
             + (list(n.get("links") or []) if n.get("type") == "link out" and n.get("mode", "link") == "link" else [])
             for n in flows if isinstance(n.get("id"), str)}
    came_from: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if node == end:
            path = [node]
            while came_from[path[-1]] is not None:
                path.append(came_from[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for target in wires.get(node, []):
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    return None


def _name(node: dict[str, Any]) -> str:
    return node.get("name") or node["id"]


async def run_checks(checks: list[dict[str, Any]], context: ToolContext, buffer: EvidenceBuffer | None,
                     audit: Callable[[str], Awaitable[None]], seconds: float = CHECK_SECONDS) -> Outcome:
    """One round: each check (``{inject, debug, expect}``) read back, triggered and watched on the running flow
    (``audit(inject_id)`` records the trigger before it happens).

    First waits (up to ``seconds``) until Node-RED has started the deployed revision: its deploy answers before
    the new nodes run, and an inject triggered earlier is not found.

    Raises:
        NodeRedError: the deployed flows cannot be read.
    """
    outcome = Outcome()
    deployed = await context.nodered.get_flows()
    flows = deployed["flows"]
    if buffer is not None and deployed.get("rev") and not await buffer.started(deployed["rev"], seconds):
        outcome.failed.append(f"the deployed flows (revision {deployed['rev']}) did not start within {seconds:g} s")
        return outcome
    for check in checks:
        found = {kind: find(flows, check[kind], kind) for kind in ("inject", "debug")}
        for kind, nodes in found.items():
            if len(nodes) != 1:
                outcome.evidence.append({"kind": "missing" if not nodes else "ambiguous", "node": check[kind]})
                outcome.failed.append(f"no deployed {kind} node is named or has the id {check[kind]!r}" if not nodes
                                      else f"{len(nodes)} deployed {kind} nodes are named {check[kind]!r}: the "
                                           "check must name one (its id or a name of its own)")
        if any(len(nodes) != 1 for nodes in found.values()):
            continue
        inject, debug = found["inject"][0], found["debug"][0]
        path = route(flows, inject["id"], debug["id"])
        if path is None:
            outcome.evidence.append({"kind": "unwired", "node": _name(debug), "from": _name(inject)})
            outcome.failed.append(f"no wire path leads from the inject {_name(inject)!r} to the debug "
                                  f"{_name(debug)!r}")
            continue
        if buffer is None:
            outcome.failed.append("runtime evidence is off (AI_SIDEBAR_EVIDENCE=false): the check cannot read "
                                  "debug messages")
            continue
        after = buffer.last_seq
        await audit(inject["id"])
        try:
            await context.nodered.inject(inject["id"])
        except NodeRedError as err:
            outcome.evidence.append({"kind": "error", "node": _name(inject), "message": err.message})
            outcome.failed.append(f"the inject {_name(inject)!r} could not be triggered: {err.message}")
            continue
        seen = await buffer.arrivals(set(path), after, seconds)
        _judge(check, debug, seen, outcome)
    return outcome


def _judge(check: dict[str, Any], debug: dict[str, Any], seen: list[Any], outcome: Outcome) -> None:
    for entry in seen:
        if entry.kind == "error":
            outcome.evidence.append({"kind": "error", "node": entry.node_name or entry.node_id,
                                     "message": str(entry.value)})
    shown = [entry for entry in seen if entry.kind == "debug" and entry.node_id == debug["id"]]
    errors = [e for e in outcome.evidence if e["kind"] == "error"]
    if not shown:
        outcome.evidence.append({"kind": "silent", "node": _name(debug)})
        outcome.failed.append(f"the debug node {_name(debug)!r} showed nothing"
                              + (f"; errors: {'; '.join(e['message'] for e in errors)}" if errors else ""))
        return
    value = _value(shown[0])
    if matches(value, check.get("expect")):
        outcome.evidence.append({"kind": "debug", "node": _name(debug), "value": value})
        return
    outcome.evidence.append({"kind": "mismatch", "node": _name(debug), "value": value,
                             "expected": check.get("expect")})
    outcome.failed.append(f"the debug node {_name(debug)!r} showed {value!r}, the plan expects "
                          f"{check.get('expect')!r}")


def _value(entry: Any) -> Any:
    """A debug message's value; a number (the editor's ``format`` ``number``, sent as text) as a number."""
    if entry.format == "number" and isinstance(entry.value, str):
        try:
            number = float(entry.value)
        except ValueError:
            return entry.value
        return int(number) if number.is_integer() else number
    return entry.value


def check_event(run_id: str, round_: int, outcome: Outcome) -> dict[str, Any]:
    """``{type: "check", runId, round, passed, evidence[]}``."""
    return {"type": "check", "runId": run_id, "round": round_, "passed": outcome.passed, "evidence": outcome.evidence}


def verdict_event(run_id: str, round_: int, outcome: Outcome) -> Summarised:
    """``{type: "verdict", runId, status: "done" | "not_done", summary, evidence[]}``; ``summary`` is worded in the
    request's language on its way out."""
    if outcome.passed:
        shown = next((e for e in outcome.evidence if e["kind"] == "debug"), None)
        sentence = Sentence("change.verdict.done", node=shown["node"] if shown else "",
                            value=_short(shown["value"]) if shown else "")
    else:
        sentence = Sentence("change.verdict.not_done", rounds=round_)
    return Summarised({"type": "verdict", "runId": run_id, "status": "done" if outcome.passed else "not_done",
                       "summary": sentence.english, "evidence": outcome.evidence}, sentence)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 200 else text[:199] + "…"


def for_model(round_: int, limit: int, outcome: Outcome, apply: str = "deploy") -> str:
    """What the model is told after the write's result (``apply`` ``deploy``), or as ``deploy_and_test``'s result
    (``apply`` ``editor``: the next round needs the user's next deploy)."""
    if outcome.passed:
        seen = "; ".join(f"{e['node']} showed {e['value']!r}" for e in outcome.evidence if e["kind"] == "debug")
        return (f"The service tested the deployed change on the running flow (round {round_}): the check passed "
                f"({seen}). Tell the user the task is done, with this evidence.")
    failed = "; ".join(outcome.failed)
    if round_ >= limit:
        return (f"The service tested the deployed change on the running flow: the check failed again (round "
                f"{round_} of {limit}: {failed}). The round limit is reached: change nothing more; tell the user "
                "what failed, what you tried and what you suggest.")
    return (f"The service tested the deployed change on the running flow: the check failed (round {round_} of "
            f"{limit}): {failed}. Find the cause and propose a fix with the write tools; "
            + ("the next deploy is checked again." if apply == "deploy" else
               f"once it is applied, call {DEPLOY_AND_TEST} (alone) again."))


@dataclass
class BuildRun:
    """What the checks of one build need: the plan (``{steps, planChanges, rounds?, verdict?}``, changed in place:
    it is saved with the paused run), the tools' context, the evidence buffer, the registry (which tools write),
    ``audit(inject_id)``, the stream and ``record(action)`` (a test tab's deploys, :mod:`service.chat.scratch_tab`)."""

    run_id: str
    plan: dict[str, Any]
    context: ToolContext
    buffer: EvidenceBuffer | None
    registry: ToolRegistry
    audit: Callable[[str], Awaitable[None]]
    emit: Emit
    max_rounds: int
    record: Callable[[dict[str, Any]], Awaitable[None]]  # audits a deploy of the plan's test ({tool, args, summary})

    def checks(self) -> list[dict[str, Any]]:
        return [step["check"] for step in self.plan.get("steps") or [] if isinstance(step.get("check"), dict)]

    async def round(self) -> str:
        """One round on the deployed flows: counts it in the plan, runs the checks, emits ``check`` (and
        ``verdict`` when the loop ends) and returns what the model is told (:func:`for_model`)."""
        round_ = int(self.plan.get("rounds") or 0) + 1
        self.plan["rounds"] = round_
        try:
            async with scratch_tab(self.run_id, self.checks(), self.context, self.record) as checks:
                outcome = await run_checks(checks, self.context, self.buffer, self.audit)
        except NodeRedError as err:  # the flows cannot be read back: the round fails, the run goes on
            outcome = Outcome(failed=[f"the deployed flows could not be read: {err.message}"])
        await self.emit(check_event(self.run_id, round_, outcome))
        if outcome.passed or round_ >= self.max_rounds:
            self.plan["verdict"] = "done" if outcome.passed else "not_done"
            await self.emit(verdict_event(self.run_id, round_, outcome))
        return for_model(round_, self.max_rounds, outcome, self.context.apply)


class BuildCheck(AgentMiddleware):
    """After each write of the build that answered a result: when the request applies by deploy, runs a round of
    checks (:meth:`BuildRun.round`) and adds the outcome to the model's tool message; when it applies in the editor,
    tells the model to call ``deploy_and_test`` once the step is applied (:mod:`service.chat.deploy_test`)."""

    def __init__(self, run: BuildRun):
        super().__init__()
        self._run = run

    async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
        answer = await handler(request)
        run = self._run
        name = request.tool_call["name"]
        if not (isinstance(answer, ToolMessage) and run.registry.has(name) and run.registry.writes(name)
                and name != "trigger_inject" and str(answer.content).startswith("<tool_result")
                and run.plan.get("verdict") is None and run.checks()):
            return answer
        told = await run.round() if run.context.apply == "deploy" else EDITOR_NOTE
        return answer.model_copy(update={"content": f"{answer.content}\n\n{told}"})


def build_run(approval: AgentApproval | None, buffer: EvidenceBuffer | None, max_rounds: int) -> BuildRun | None:
    """The :class:`BuildRun` of an agent run building an approved plan (``approval.plan``), else ``None``. The inject
    a check triggers is audited as decided by ``policy`` with the message :data:`PLAN_TEST` (the user approved the
    plan with its tests)."""
    if approval is None or approval.plan is None:
        return None

    async def audit(inject_id: str) -> None:
        await approval.approvals.record_policy(approval.run_id, approval.owner, {
            "tool": "trigger_inject", "args": {"node_id": inject_id}, "summary": PLAN_TEST}, PLAN_TEST)

    async def record(action: dict[str, Any]) -> None:
        await approval.approvals.record_policy(approval.run_id, approval.owner, action, PLAN_TEST)

    return BuildRun(approval.run_id, approval.plan, approval.context, buffer, approval.registry, audit,
                    approval.emit, max_rounds, record)


def build_checks(run: BuildRun | None) -> list[AgentMiddleware]:
    """The :class:`BuildCheck` of a build's run, else nothing."""
    return [BuildCheck(run)] if run is not None else []


def deploy_test_tool(run: BuildRun, result: Any) -> StructuredTool:
    """The tool offered in a plan's build applied in the editor (``result``: the turn's ``ChatResult``, whose
    ``tools`` gets its name). It runs only after the user approved (the sidebar deployed first); it reports itself
    (``tool_call``, ``tool_result``) and returns what the round of checks tells the model."""
    async def deploy_and_test(note: str = "") -> str:
        await run.emit(events.tool_call(DEPLOY_AND_TEST, {"note": note}, "agent"))
        result.tools.append(DEPLOY_AND_TEST)
        if run.plan.get("verdict") is not None:
            text = f"The build has its verdict ({run.plan['verdict']}) already: nothing more is tested."
        else:
            text = await run.round()
        await run.emit(events.tool_result(DEPLOY_AND_TEST, text, ok=True))
        return text

    return StructuredTool.from_function(coroutine=deploy_and_test, name=DEPLOY_AND_TEST, description=DESCRIPTION,
                                        args_schema=DeployTestArgs)
