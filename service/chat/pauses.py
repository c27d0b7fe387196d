"""The agent's own tools that pause a run for the user (issue 34): ``ask_user`` (:mod:`service.chat.question`),
``propose_plan`` (:mod:`service.chat.plan`) and ``deploy_and_test`` (:mod:`service.chat.deploy_test`). They pause
through the approval machinery like writes (:mod:`service.chat.approvals`); this module is where that machinery
tells them apart from writes: how a call is planned, which event a paused run shows, and ``done``'s status."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from service.chat import events
from service.chat.deploy_test import DEPLOY_AND_TEST, deploy_test_event, is_deploy_test, planned_deploy_test
from service.chat.events import Emit
from service.chat.plan import PROPOSE_PLAN, is_plan, plan_event, planned_plan, propose_plan_tool
from service.chat.question import (
    ASK_USER,
    AWAITING_ANSWER,
    ask_user_tool,
    is_question,
    planned_question,
    question_event,
)

OWN_TOOLS = (ASK_USER, PROPOSE_PLAN, DEPLOY_AND_TEST)


def pause_tools(emit: Emit, result: Any, planned: bool) -> list[StructuredTool]:
    """The pausing tools an agent run is offered (one with write tools, in plan mode or in Ask mode): ``ask_user``
    always, ``propose_plan`` in a run in plan mode
    (``planned``: planning, or building an approved plan, whose ``propose_plan`` call runs on the resume)."""
    return [ask_user_tool(emit, result), *((propose_plan_tool(emit, result),) if planned else ())]


def planned_pause(name: str, args: Any, alone: bool) -> dict[str, Any]:
    """The approval action of a call of one of :data:`OWN_TOOLS` (``alone``: the only call of its model turn)."""
    if name == DEPLOY_AND_TEST:
        return planned_deploy_test(args, alone)
    return planned_question(args, alone) if name == ASK_USER else planned_plan(args, alone)


def waiting_event(event: events.Event, actions: list[dict[str, Any]]) -> events.Event:
    """The event a paused run shows: ``event`` (its ``approval_required``) as a ``question``, a ``plan`` or a
    ``deploy_test`` when the run waits for one of those."""
    if is_question(actions):
        return question_event(event["runId"], event["resumeToken"], actions[0])
    if is_plan(actions):
        return plan_event(event["runId"], event["resumeToken"], actions[0])
    if is_deploy_test(actions):
        return deploy_test_event(event["runId"], event["resumeToken"], actions[0])
    return event


def waiting_status(actions: list[dict[str, Any]], awaiting_approval: str) -> str:
    """``done``'s status for a run paused on ``actions``: ``awaiting_answer`` for a question, else
    ``awaiting_approval``."""
    return AWAITING_ANSWER if is_question(actions) else awaiting_approval
