"""Deploy and test (issue 34) for a build applied in the editor (``apply: "editor"``, the sidebar): the agent's
``deploy_and_test`` tool (its action and event here, the tool itself in :mod:`service.chat.check`), which pauses the
run until the user deployed the editor's flows, then tests the plan's checks on the running flow.

In the sidebar the service never deploys: an approved write goes into the editor (``flow_change``). After each such
write of a plan's build, the model is told to call ``deploy_and_test`` once the step is applied
(:data:`service.chat.check.EDITOR_NOTE`). The call pauses the run through the approval machinery like a question
(one action, token hashed, bound to the identity, with an expiry) and the stream says ``deploy_test``. The sidebar
shows a "Deploy and test" card; on approval it deploys the editor's flows the normal Node-RED way
(``RED.actions.invoke("core:deploy-flows")``, waiting for the editor's ``deploy`` event) and then answers
``POST /ai-sidebar/resume`` with ``{type: "approve"}``; the tool then runs one round of checks
(:meth:`service.chat.check.BuildRun.round`: ``check``, and ``verdict`` when the loop ends) and the model gets the
outcome, exactly as after a deploy by the service. ``{type: "reject", message?}``: nothing was deployed, the model is
told and nothing is tested.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from service.chat import events

DEPLOY_AND_TEST = "deploy_and_test"
DESCRIPTION = (
    "Ask the user to deploy the changes you applied in their editor and test them on the running flow with the "
    "approved plan's checks. Call it alone, after all of a step's changes are applied; the check's outcome comes "
    "back as this tool's result (on a failure, propose a fix, then call it again).")


class DeployTestArgs(BaseModel):
    """The arguments of ``deploy_and_test``."""

    model_config = ConfigDict(extra="forbid")
    note: str = Field("", max_length=500, description="what was applied and will be tested, in the user's language")


def planned_deploy_test(args: Any, alone: bool) -> dict[str, Any]:
    """The approval action of one ``deploy_and_test`` call: ``{tool, args: {note}, plannedAt, summary, diff: None,
    ask: True}``, or a refused action (``refused``, ``code``) when its arguments are wrong or it shares its step
    with other calls."""
    action: dict[str, Any] = {"tool": DEPLOY_AND_TEST, "args": args, "plannedAt": time.time()}
    if not alone:
        return {**action, "refused": f"{DEPLOY_AND_TEST} must be the only tool call of its step",
                "code": "invalid_params"}
    try:
        parsed = DeployTestArgs.model_validate(args or {})
    except ValidationError as err:
        return {**action, "refused": f"its arguments are wrong: {err}", "code": "invalid_params"}
    return {**action, "args": parsed.model_dump(), "summary": parsed.note, "diff": None, "ask": True}


def is_deploy_test(actions: list[dict[str, Any]]) -> bool:
    """Whether the actions a run waits for are one ``deploy_and_test``."""
    return len(actions) == 1 and actions[0]["tool"] == DEPLOY_AND_TEST


def deploy_test_event(run_id: str, resume_token: str, action: dict[str, Any]) -> events.Event:
    """``{type: "deploy_test", runId, resumeToken, note}``: the run waits until the user deployed the editor's flows
    (``POST /ai-sidebar/resume`` with ``{type: "approve"}``, or ``reject``); ``done`` follows with ``status:
    "awaiting_approval"``."""
    return {"type": "deploy_test", "runId": run_id, "resumeToken": resume_token,
            "note": str((action.get("args") or {}).get("note") or "")}
