"""What a turn stores and spends: the turn and its token usage saved in memory, and the daily token budget
checked before a model is called."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from service.chat.context import ChatDeps, ChatResult
from service.chat.direct import DIRECT_TRIGGER
from service.chat.events import Emit
from service.errors import ServiceError, error_event
from service.llm.usage import day_start
from service.memory.usage import UsageStore
from service.requests import StreamChatRequest

if TYPE_CHECKING:
    from service.llm.usage import TurnUsage

log = logging.getLogger(__name__)


async def save_turn(request: StreamChatRequest, deps: ChatDeps, result: ChatResult) -> ServiceError | None:
    """Store the user's original message and the answer (as far as it went) with the turn's token usage; returns
    the fault, never raises.

    A ``silent`` request, or a caller without memory, stores no message; its usage is recorded all the same.
    A direct trigger sent with a ``display`` text is stored as that text (what the user saw; it names a new
    session): the trigger ran without the model, which never needs it.
    """
    if deps.memory is None or request.silent:
        return await save_usage(deps, result.session_id, result.usage)
    question = request.message
    if request.display and DIRECT_TRIGGER.match(request.message):
        question = request.display
    try:
        await deps.memory.save_turn(result.session_id, deps.identity, question, result.answer,
                                    result.metadata(request), result.scenario, create=not result.session_existed,
                                    usage=result.usage, events=result.shown())
    except ServiceError as err:
        log.warning("turn of session %s not saved: %s", result.session_id, err.code)
        return err
    return None


async def save_usage(deps: ChatDeps, session_id: str, usage: TurnUsage | None) -> ServiceError | None:
    """Record a run's token ``usage`` without its messages (see :func:`save_turn`); returns the fault, never
    raises. Nothing is recorded without usage or without a memory database."""
    if usage is None or deps.ledger is None:
        return None
    try:
        await deps.ledger.record_usage(deps.identity, session_id, usage)
    except ServiceError as err:
        log.warning("usage of session %s not recorded: %s", session_id, err.code)
        return err
    return None


async def over_budget(deps: ChatDeps) -> ServiceError | None:
    """The 429 ``budget_exceeded`` error when the caller has used up today's (UTC) tokens, else ``None``.

    Budgets: ``AI_SIDEBAR_DAILY_TOKEN_BUDGET``, per user ``AI_SIDEBAR_USER_TOKEN_BUDGETS``; counted from the usage
    rows in the memory database (none: no budget holds).
    """
    budget = deps.settings.token_budget(deps.identity.name if deps.identity.kind == "user" else None)
    if not budget or deps.ledger is None:
        return None
    used = await UsageStore(deps.ledger).tokens_since(deps.identity, day_start())
    if used < budget:
        return None
    return ServiceError("budget_exceeded", status=429, params={"used": used, "budget": budget})


async def within_budget(deps: ChatDeps, emit: Emit) -> bool:
    """Whether the model may be called: over the budget, one ``budget_exceeded`` error is emitted (``False``)."""
    refusal = await over_budget(deps)
    if refusal is None:
        return True
    await emit(error_event(refusal))
    return False
