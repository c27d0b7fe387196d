"""Clarifying questions (issue 34): the agent's ``ask_user`` tool, which pauses the run until the user answers.

A question rides on the approval machinery (:mod:`service.chat.approvals`), not beside it: ``ask_user`` is one of the
run's interrupting tools, so ``HumanInTheLoopMiddleware`` pauses the run after the model asked it, the checkpointer
keeps the run, and the service stores an approval (token hashed, one use, bound to the identity, with an expiry)
whose single action is the question. The stream says ``question`` (not ``approval_required``) and ``done`` has
``status: "awaiting_answer"``. ``POST /ai-sidebar/resume`` with ``answer: {choice}`` or ``answer: {text}`` turns the
answer into an ``edit`` decision that fills the call's ``answer`` argument; the tool then runs and gives the model
the user's answer as its result.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field

from service.chat import events
from service.chat.events import Emit
from service.errors import ServiceError
from service.requests import Answer, AnswerChoice

ASK_USER = "ask_user"
AWAITING_ANSWER = "awaiting_answer"  # the ``status`` of ``done`` when a run waits for an answer
MAX_CHOICES = 4

DESCRIPTION = (
    "Ask the user a clarifying question when a fact you need is missing (which MQTT broker, which topic, units, "
    "QoS) instead of guessing. Offer up to 4 short quick-reply choices; set free to false only when one of the "
    "choices must be picked. Call it alone in its step. Leave 'answer' empty: the user's reply fills it, and it "
    "comes back as this tool's result.")


class AskUserArgs(BaseModel):
    """The arguments of ``ask_user``."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=500, description="the question, in the user's language")
    choices: list[str] = Field(default_factory=list, max_length=MAX_CHOICES,
                               description="up to 4 short quick-reply answers")
    free: bool = Field(True, description="whether the user may answer in their own words")
    answer: str | None = Field(None, max_length=2000, description="leave empty: filled with the user's reply")




def ask_user_tool(emit: Emit, result: Any) -> StructuredTool:
    """The LangChain tool offered to the model (``result``: the turn's :class:`service.chat.pipeline.ChatResult`,
    whose ``tools`` gets its name). It runs only after the user answered (the run pauses before), with the answer in
    ``answer``; it reports itself like every agent tool (``tool_call`` with the question and the answer, then
    ``tool_result``) and its result tells the model the answer."""
    async def ask_user(question: str, choices: list[str] | None = None, free: bool = True,
                       answer: str | None = None) -> str:
        await emit(events.tool_call(ASK_USER, {"question": question, "choices": choices or [], "free": free,
                                               "answer": answer}, "agent"))
        result.tools.append(ASK_USER)
        text = (f"The user answered the question {question!r}:\n<user_answer>\n{answer}\n</user_answer>" if answer
                else "The user has not answered this question; do not assume an answer.")
        await emit(events.tool_result(ASK_USER, text, ok=bool(answer)))
        return text

    return StructuredTool.from_function(coroutine=ask_user, name=ASK_USER, description=DESCRIPTION,
                                        args_schema=AskUserArgs)


def planned_question(args: Any, alone: bool) -> dict[str, Any]:
    """The approval action of one ``ask_user`` call: ``{tool, args, plannedAt, summary, ask: True}`` with ``args``
    validated (choices trimmed to :data:`MAX_CHOICES`, no ``answer``), or a refused action (``refused``, ``code``)
    when the arguments are wrong or the call shares its step with other calls (``alone`` false): a question waits
    for the user alone."""
    action: dict[str, Any] = {"tool": ASK_USER, "args": args, "plannedAt": time.time()}
    if not alone:
        return {**action, "refused": "ask_user must be the only tool call of its step; ask the question first",
                "code": "invalid_params"}
    try:
        parsed = AskUserArgs.model_validate({k: v for k, v in (args or {}).items() if k != "answer"})
    except ValueError as err:
        return {**action, "refused": f"its arguments are wrong: {err}", "code": "invalid_params"}
    shown = parsed.model_dump(exclude={"answer"})
    return {**action, "args": shown, "summary": parsed.question, "diff": None, "ask": True}


def is_question(actions: list[dict[str, Any]]) -> bool:
    """Whether the actions a run waits for are one question (never mixed with writes: see
    :func:`planned_question`)."""
    return len(actions) == 1 and actions[0]["tool"] == ASK_USER


def question_event(run_id: str, resume_token: str, action: dict[str, Any]) -> events.Event:
    """``{type: "question", runId, resumeToken, question, choices[], free}``: the run waits for the answer
    (``POST /ai-sidebar/resume`` with ``answer``); ``done`` follows with ``status: "awaiting_answer"``."""
    args = action["args"]
    return {"type": "question", "runId": run_id, "resumeToken": resume_token, "question": args["question"],
            "choices": list(args.get("choices") or []), "free": bool(args.get("free", True))}


def answer_decisions(actions: list[dict[str, Any]], decisions: list[dict[str, Any]],
                     answer: Answer | None) -> list[dict[str, Any]]:
    """The decisions that answer a waiting run: for a question, one ``edit`` whose args carry the answer (the audit
    keeps it as such; a choice must be one offered; free text only when ``free``); for writes, ``decisions`` as given).

    Raises:
        ServiceError: 400 ``invalid_request`` (``invalid_request.answer_needed``: decisions for a question or an
            answer for writes; ``invalid_request.answer_choice``: a choice not offered, or text where only a choice
            may answer).
    """
    question = is_question(actions)
    if question != (answer is not None) or (question and decisions):
        raise ServiceError("invalid_request", key="invalid_request.answer_needed",
                           params={"expected": "answer" if question else "decisions"})
    if answer is None:
        return decisions
    args = actions[0]["args"]
    if isinstance(answer, AnswerChoice):
        given, fits = answer.choice, answer.choice in (args.get("choices") or [])
    else:
        given, fits = answer.text, bool(args.get("free", True))
    if not fits:
        raise ServiceError("invalid_request", key="invalid_request.answer_choice",
                           params={"choices": ", ".join(args.get("choices") or [])})
    return [{"type": "edit", "args": {**args, "answer": given}}]
