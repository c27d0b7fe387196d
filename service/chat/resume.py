"""Resuming a run that waits for approval (``POST /ai-sidebar/resume``): check the token and the decisions, record
them, then continue the run where it stopped, emitting the same events as a chat.

A run is an agent run (continued from its checkpoint with LangChain's ``Command(resume=...)``), a ``@tools:`` call
(the tool runs, then the model answers with its result), or an execute-tool call (the tool runs).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from service.chat.agent_path import agent_answer
from service.chat.answer import stream_answer
from service.chat.approvals import AWAITING, Approvals, approved_as_shown, audit_entry, decisions_for, token_hash
from service.chat.context import ChatDeps, ChatResult, Resume, ToolRun
from service.chat.direct import run_tool
from service.chat.events import Emit
from service.chat.followups import suggest
from service.chat.keyword_path import choose_scenario
from service.chat.parts import SHOWN_AGAIN, Flows, note_parts, ticked_parts
from service.chat.pauses import OWN_TOOLS
from service.chat.plan import after_decision, plan_decisions
from service.chat.prompting import build_prompt
from service.chat.question import answer_decisions
from service.errors import ServiceError
from service.identity import Identity
from service.nodered.tooling import ToolFailure
from service.requests import ResumeRequest, SelectedFlow, SelectedNode, StreamChatRequest
from service.tools.context import ServiceToolContext
from service.tools.registry import ToolRegistry, failure_status

log = logging.getLogger(__name__)


@dataclass
class Claimed:
    """An approval the caller may answer, already marked answered with the decisions in the audit."""

    approval: dict[str, Any]
    decisions: list[dict[str, Any]]  # the request's decisions, as plain dicts, edited args validated
    reshow: list[dict[str, Any]] | None = None  # the actions to ask about again: ticked parts needed adjusting

    @property
    def run_id(self) -> str:
        return self.approval["runId"]

    @property
    def context(self) -> dict[str, Any]:
        return self.approval["context"]


async def claim(approvals: Approvals, registry: ToolRegistry, owner: Identity, body: ResumeRequest,
                live: Flows | None = None) -> Claimed:
    """Check a resume request and record its decisions; nothing is recorded when a check fails. A decision that
    approves only some parts of a write (``parts``) is re-validated on the live flows (``live`` reads them,
    :func:`~service.chat.parts.ticked_parts`); when that adjusts them, ``reshow`` holds the actions to ask about
    again and nothing will run.

    Raises:
        ServiceError: 404 ``approval_not_found`` (unknown token, or another owner's: the same answer), 409
            ``approval_used`` (already answered), 410 ``approval_expired`` (older than ``AI_SIDEBAR_APPROVAL_TTL``,
            also once purged), 400 ``invalid_request`` (not one decision per action) or ``invalid_params`` (edited
            arguments wrong, or ``parts`` naming no part of the card), a Node-RED error code (the flows cannot be
            read to re-validate ticked parts).
    """
    hashed = token_hash(body.resumeToken)
    approval = await approvals.store.approval(hashed)
    if approval is None and await approvals.store.expired_token(hashed):
        raise ServiceError("approval_expired", status=410, params={"seconds": approvals.settings.approval_ttl})
    if approval is None or approval["owner"] != owner:
        raise ServiceError("approval_not_found", status=404)
    if approval["status"] != "pending":
        raise ServiceError("approval_used", status=409)
    if approval["expiresAt"] <= time.time():
        if approval["kind"] == "agent":
            await approvals.saver.adelete_thread(approval["runId"])
        raise ServiceError("approval_expired", status=410, params={"seconds": approvals.settings.approval_ttl})
    actions = approval["actions"]
    decisions = plan_decisions(actions, answer_decisions(
        actions, [d.model_dump(exclude_none=True) for d in body.decisions], body.answer))
    decisions_for(actions, decisions)  # the count
    reshow = await ticked_parts(actions, decisions, live)
    audit = []
    for action, decision in zip(actions, decisions, strict=True):
        own = action["tool"] in OWN_TOOLS  # a question or a plan: its arguments with the user's answer
        args = decision.get("args") if own else None
        if decision["type"] == "edit" and not own:
            if "args" not in decision:
                raise ServiceError("invalid_request", key="invalid_request.plan_decision")
            try:
                decision["args"] = args = await registry.parse(action["tool"], decision["args"])
            except ToolFailure as failure:
                raise ServiceError(failure.code, status=failure_status(failure.code),
                                   **failure.sentence_args()) from None
        message = SHOWN_AGAIN if reshow is not None and decision.get("parts") else decision.get("message")
        audit.append(audit_entry(approval["runId"], action, decision["type"], "user", message, args))
    if not await approvals.store.claim_approval(approval["approvalId"], owner, audit):
        raise ServiceError("approval_used", status=409)
    return Claimed(approval, decisions, reshow)


async def continue_run(claimed: Claimed, deps: ChatDeps, emit: Emit, result: ChatResult) -> None:
    """Continue the claimed run, emitting ``tool_call``/``tool_result``/``flow_change``/``token``/``error`` (and
    ``approval_required`` when it pauses again; not ``done``)."""
    saved = claimed.context
    result.scenario, result.language = saved.get("scenario"), saved.get("language")
    kind = claimed.approval["kind"]
    if claimed.reshow is not None:  # nothing runs: the same run waits again, for the adjusted card
        assert deps.approvals is not None
        await emit(await deps.approvals.open(claimed.run_id, deps.identity, kind, claimed.approval["sessionId"],
                                             claimed.reshow, saved))
        result.status = AWAITING
        return
    if kind == "agent":
        context = ServiceToolContext(nodered=deps.nodered, flow_id=saved.get("flowId"),
                                     node_ids=saved.get("nodeIds") or [], user_token=deps.user_token,
                                     identity=deps.identity, memory=deps.memory, knowledge=deps.knowledge,
                                     language=saved.get("language"), apply=saved.get("apply", "deploy"),
                                     evidence=deps.evidence, run_id=claimed.run_id,
                                     approval_id=claimed.approval.get("approvalId"))
        converted = decisions_for(claimed.approval["actions"], claimed.decisions)
        for action, decision in zip(claimed.approval["actions"], claimed.decisions, strict=True):
            await note_parts(deps.tools, context, action, decision)
        deps.planning, deps.build_plan = after_decision(saved, claimed.approval["actions"], claimed.decisions)
        deps.offer_writes = saved.get("offerWrites", True)  # a run paused in Ask mode goes on without writes
        await agent_answer([], saved.get("tools") or [], deps, context, emit, result,
                            Resume(claimed.run_id, converted))
        _suggest(saved, deps, result)
        return
    action, decision = claimed.approval["actions"][0], claimed.decisions[0]
    args = decision.get("args", action["args"])
    request = StreamChatRequest(
        message=saved.get("message") or f"@tools:{action['tool']}", scenario=saved.get("scenario"),
        sessionId=claimed.approval["sessionId"], language=saved.get("language"), apply=saved.get("apply", "deploy"),
        selectedFlow=SelectedFlow(id=saved["flowId"]) if saved.get("flowId") else None,
        selectedNodes=[SelectedNode(id=i) for i in saved.get("nodeIds") or []])
    turn = choose_scenario(request, deps, result)
    turn.context.run_id, turn.context.approval_id = claimed.run_id, claimed.approval.get("approvalId")
    run = ToolRun(action["tool"], await deps.tools.parse(action["tool"], args))
    if decision["type"] == "reject":
        reason = decision.get("message")
        run.failure = ToolFailure("tool_failed", f"The user rejected running {action['tool']}"
                                                 + (f": {reason}" if reason else "") + ". Nothing was changed.")
    else:
        await approved_as_shown(deps.tools, turn.context, action, args)
        await note_parts(deps.tools, turn.context, action, decision)
        await run_tool(run, deps, turn.context, emit)
        result.tools.append(run.name)
    if kind == "execute":
        return
    turn.tool_run = run
    if saved.get("display"):  # a button's trigger: the model reads what the user saw, never the raw trigger
        request.message = saved["display"]
    await stream_answer(await build_prompt(request, deps, turn, result), deps, emit, result)
    _suggest(saved, deps, result)


def _suggest(saved: dict[str, Any], deps: ChatDeps, result: ChatResult) -> None:
    """The follow-up suggestions of the continued answer (:mod:`service.chat.followups`), as after a question."""
    suggest(result, locales_dir=deps.settings.locales_dir, scenarios=deps.scenarios,
            message=saved.get("display") or saved.get("message"), mode=saved.get("mode"),
            selected_nodes=bool(saved.get("nodeIds")), deployed=saved.get("apply", "deploy") == "deploy")


async def save_continuation(claimed: Claimed, deps: ChatDeps, result: ChatResult) -> None:
    """Add the continued answer to the run's session (when it remembers); a fault is logged, never raised."""
    session_id = claimed.approval["sessionId"]
    if deps.memory is None or not session_id or not claimed.context.get("remember"):
        return
    metadata: dict[str, Any] = {"scenario": result.scenario, "tools": result.tools, "language": result.language,
                                "resumed": claimed.run_id}
    if result.errors:
        metadata["errors"] = result.errors
    try:
        await deps.memory.append_answer(session_id, deps.identity, result.answer, metadata, result.shown())
    except ServiceError as err:
        log.warning("continued answer of session %s not saved: %s", session_id, err.code)
