"""Plan mode (issue 34): the agent reads, proposes a plan with ``propose_plan``, and builds only once the user approved.

A request in plan mode (``mode: "plan"`` in stream-chat, or a message that starts with ``/plan ``) offers the agent
its read tools, ``ask_user`` and ``propose_plan``, no write tool. ``propose_plan`` pauses the run through the
approval machinery (:mod:`service.chat.approvals`: checkpointer, stored approval with a hashed one-use token bound to
the identity, expiry) and the stream says ``plan``. ``POST /ai-sidebar/resume`` answers it with one decision:

- ``{type: "approve"}``: the run continues with the write tools; every write still asks with its own card;
- ``{type: "approve", planChanges: true}``: the same, but a write the plan listed (same tool, and a target the
  change names: the tab or node id, or the new tab's label) runs without another card (audited as ``policy``,
  "listed in the approved plan"); anything else still asks;
- ``{type: "edit", message}``: the model is told what to change and proposes again (still without writes);
- ``{type: "reject", message?}``: the model is told; nothing is built.

The plan and the phase travel with the paused run in its approval's context (``planning``, ``plan``), so a resume
after a service restart continues in the same phase.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from service.chat import events
from service.chat.events import Emit
from service.errors import ServiceError

PROPOSE_PLAN = "propose_plan"
PLAN_PREFIX = "/plan "
TARGET_ARGS = ("flow_id", "node_id", "label", "new_tab_label")  # write tools' arguments that name what they change

PLAN_NOTE = ("\n\nPlan mode: you cannot write yet. Read what the change needs, ask the user with ask_user when a "
             "fact is missing, then call propose_plan with the steps; build only after the user approved it.")
DESCRIPTION = (
    "Propose the plan of a change that needs more than one step, after reading what you need (flows, nodes, "
    "config nodes, runtime evidence) and before writing anything. Each step: a title, the changes it makes "
    "(tool: the write tool you will call, target: the tab id, node id or new tab label it changes, summary), and "
    "how you will test it on the running flow (check: the inject to trigger, or when the flow has none a "
    "test_inject the service adds on a temporary test tab and removes after, the debug node and the value it "
    "should show; the service runs it after each deploy). List what you assume. Call it alone in its step; the "
    "user approves, edits or rejects it, and the answer comes back as this tool's result.")


class PlannedChange(BaseModel):
    """One change a plan step makes."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(max_length=64, description="the write tool, e.g. add_nodes, update_node, create_tab")
    target: str = Field("", max_length=200, description="the tab id, node id or new tab label it changes")
    summary: str = Field("", max_length=500, description="what it changes, in the user's language")


class TestInject(BaseModel):
    """An inject the flow does not have, added for the check on a temporary test tab (:mod:`service.chat.scratch_tab`)
    and linked to the node ``to``."""

    model_config = ConfigDict(extra="forbid")
    to: str = Field(min_length=1, max_length=200, description="name or id of the node the test message goes into")
    payload: Any = Field("", description="the test message's payload")
    payloadType: Literal["str", "num", "json", "bool"] = Field("str", description="how the payload is read")


class PlanCheck(BaseModel):
    """How the service tests a step on the running flow after a deploy (:mod:`service.chat.check`): the plan's
    inject, or a ``test_inject`` added on a test tab for the check and removed after it."""

    model_config = ConfigDict(extra="forbid")
    inject: str | None = Field(None, min_length=1, max_length=200,
                               description="name or id of the inject node to trigger")
    test_inject: TestInject | None = Field(None, description="when the flow has no inject for the test: the test "
                                                             "inject the service adds on a test tab, then removes")
    debug: str = Field(min_length=1, max_length=200, description="name or id of the debug node showing the result")
    expect: Any = Field(None, description="the value the debug node should show (numbers match within 0.05); "
                                          "leave out to accept any message")

    @model_validator(mode="after")
    def _one_inject(self) -> PlanCheck:
        if (self.inject is None) == (self.test_inject is None):
            raise ValueError("a check names an inject or a test_inject (one of them)")
        return self


class PlanStep(BaseModel):
    """One step of a plan."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=300)
    changes: list[PlannedChange] = Field(default_factory=list, max_length=20)
    test: str = Field("", max_length=1000, description="how the step is tested on the running flow")
    check: PlanCheck | None = Field(None, description="the test the service runs after each deploy of the build")


class ProposePlanArgs(BaseModel):
    """The arguments of ``propose_plan`` (``decision`` and ``message`` are the user's, filled on resume)."""

    model_config = ConfigDict(extra="forbid")
    steps: list[PlanStep] = Field(min_length=1, max_length=20)
    assumptions: list[str] = Field(default_factory=list, max_length=20)
    decision: str | None = Field(None, description="leave empty: filled with the user's decision")
    message: str | None = Field(None, description="leave empty: filled with the user's words")


def planning(mode: str | None, message: str) -> tuple[bool, str]:
    """Whether a stream-chat request is in plan mode (``mode == "plan"`` or the ``/plan `` prefix) and its message
    without the prefix."""
    if message.startswith(PLAN_PREFIX):
        return True, message[len(PLAN_PREFIX):].lstrip()
    return mode == "plan", message


def propose_plan_tool(emit: Emit, result: Any) -> StructuredTool:
    """The LangChain tool offered in plan mode. It runs only after the user decided (the run pauses before); it
    reports itself (``tool_call``, ``tool_result``) and tells the model the decision."""
    async def propose_plan(steps: list[Any], assumptions: list[str] | None = None, decision: str | None = None,
                           message: str | None = None) -> str:
        await emit(events.tool_call(PROPOSE_PLAN, {"decision": decision, "message": message}, "agent"))
        result.tools.append(PROPOSE_PLAN)
        if decision == "approve":
            text = ("The user approved the plan. Build it now, step by step, with the write tools; then deploy and "
                    "test it as the plan says.")
        elif decision == "edit":
            text = (f"The user wants the plan changed:\n<user_request>\n{message}\n</user_request>\nPropose a "
                    "revised plan with propose_plan.")
        else:
            text = "The user has not decided on this plan; do not build it."
        await emit(events.tool_result(PROPOSE_PLAN, text, ok=decision in ("approve", "edit")))
        return text

    return StructuredTool.from_function(coroutine=propose_plan, name=PROPOSE_PLAN, description=DESCRIPTION,
                                        args_schema=ProposePlanArgs)


def planned_plan(args: Any, alone: bool) -> dict[str, Any]:
    """The approval action of one ``propose_plan`` call: ``{tool, args, plannedAt, summary, diff: None, ask: True}``
    with ``args`` validated (``{steps, assumptions}``), or a refused action (``refused``, ``code``) when the
    arguments are wrong or the call shares its step with other calls."""
    action: dict[str, Any] = {"tool": PROPOSE_PLAN, "args": args, "plannedAt": time.time()}
    if not alone:
        return {**action, "refused": "propose_plan must be the only tool call of its step", "code": "invalid_params"}
    try:
        parsed = ProposePlanArgs.model_validate({k: v for k, v in (args or {}).items()
                                                 if k not in ("decision", "message")})
    except ValidationError as err:
        return {**action, "refused": f"its arguments are wrong: {err}", "code": "invalid_params"}
    shown = parsed.model_dump(exclude={"decision", "message"})
    return {**action, "args": shown, "summary": parsed.steps[0].title, "diff": None, "ask": True}


def plan_event(run_id: str, resume_token: str, action: dict[str, Any]) -> events.Event:
    """``{type: "plan", runId, resumeToken, steps[{title, changes[{tool, target, summary}], test}], assumptions[]}``:
    the plan waits for the user's decision (``POST /ai-sidebar/resume`` with one decision); ``done`` follows with
    ``status: "awaiting_approval"``."""
    args = action["args"]
    return {"type": "plan", "runId": run_id, "resumeToken": resume_token, "steps": args["steps"],
            "assumptions": args.get("assumptions") or []}


def is_plan(actions: list[dict[str, Any]]) -> bool:
    """Whether the actions a run waits for are one plan."""
    return len(actions) == 1 and actions[0]["tool"] == PROPOSE_PLAN


def plan_decisions(actions: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions on a plan with the plan's arguments and the decision in ``args`` (what the tool runs with);
    decisions on writes as given.

    Raises:
        ServiceError: 400 ``invalid_request`` (``invalid_request.plan_decision``): ``planChanges`` on a write's
            decision, an ``edit`` of a plan without ``message``, or with ``args``.
    """
    if not is_plan(actions):
        if any("planChanges" in d or ("message" in d and d["type"] == "edit") for d in decisions):
            raise ServiceError("invalid_request", key="invalid_request.plan_decision")
        return decisions
    if len(decisions) != 1:
        return decisions  # the count is refused by approvals.decisions_for
    decision = decisions[0]
    if decision["type"] == "reject":
        return decisions
    if decision["type"] == "edit" and (not decision.get("message") or "args" in decision):
        raise ServiceError("invalid_request", key="invalid_request.plan_decision")
    args = {**actions[0]["args"], "decision": decision["type"], "message": decision.get("message")}
    return [{**decision, "args": args}]


def after_decision(saved: dict[str, Any], actions: list[dict[str, Any]],
                   decisions: list[dict[str, Any]]) -> tuple[bool, dict[str, Any] | None]:
    """The phase a resumed run continues in: ``(planning, plan)``. An approved plan ends planning and becomes the
    run's plan (``{steps, planChanges}``; with ``planChanges`` its listed writes need no card); any other answer
    keeps the phase the run paused in."""
    planning_now, plan = bool(saved.get("planning")), saved.get("plan")
    if is_plan(actions) and decisions and decisions[0]["type"] == "approve":
        return False, {"steps": actions[0]["args"]["steps"], "planChanges": bool(decisions[0].get("planChanges"))}
    return planning_now, plan


def listed(plan: dict[str, Any] | None, tool: str, args: Any, flow_id: str | None) -> bool:
    """Whether the approved ``plan`` (with ``planChanges``) lists a write call of ``tool`` with ``args``: a change of
    the same tool whose target is one the call names (``flow_id``, ``node_id``, ``label``, ``new_tab_label``, one of
    ``node_ids``; a call without ``flow_id``/``new_tab_label`` names the request's tab ``flow_id``)."""
    if not plan or not plan.get("planChanges") or not isinstance(args, dict):
        return False
    names = {str(args[key]) for key in TARGET_ARGS if isinstance(args.get(key), str) and args[key]}
    names.update(str(i) for i in args.get("node_ids") or [] if isinstance(i, str))
    if tool == "add_nodes" and not args.get("flow_id") and not args.get("new_tab_label") and flow_id:
        names.add(flow_id)
    return any(change.get("tool") == tool and change.get("target") in names
               for step in plan.get("steps") or [] for change in step.get("changes") or [])
