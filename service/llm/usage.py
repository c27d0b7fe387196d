"""Token usage of a turn: every model call made while the turn runs is counted (the answer, each agent step, the
knowledge router's and rewriter's short calls), priced with :class:`~service.llm.prices.PriceTable`.

Counting uses LangChain's ``UsageMetadataCallbackHandler`` (each call's ``AIMessage.usage_metadata``, keyed by the
model name the provider answered with), installed for the turn through a context variable that LangChain's
callback configuration reads, so model calls inside LangGraph's tasks are counted too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tracers.context import register_configure_hook

from service.llm.prices import PriceTable

T = TypeVar("T")



class TurnCounter(UsageMetadataCallbackHandler):
    """LangChain's usage counter, called inline. LangChain's async callback manager hands every event of a handler
    that is not ``run_inline`` (the base class's default) to a thread-pool executor, one hand-off per streamed
    token (``langchain_core.callbacks.manager._ahandle_event_for_handler``): that cost a thread switch per token.
    The counter's own work is a dictionary update under a lock, done at the end of each model call."""

    run_inline = True


# One variable, registered once: langchain_core's get_usage_metadata_callback() registers a new configure hook on
# every call, which would grow LangChain's hook list by one per chat turn for the life of the process.
_COUNTER: ContextVar[UsageMetadataCallbackHandler | None] = ContextVar("ai_sidebar_turn_usage", default=None)
register_configure_hook(_COUNTER, inheritable=True)


@dataclass(frozen=True)
class TurnUsage:
    """What one turn's model calls used: ``provider`` and ``model`` (the model asked for), the summed input and
    output tokens, and ``cost`` in USD (``None`` when a model that answered has no price)."""

    provider: str
    model: str | None
    input_tokens: int
    output_tokens: int
    cost: float | None

    def event(self) -> dict[str, Any]:
        """The ``usage`` of the ``done`` event: ``{inputTokens, outputTokens, cost}``."""
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens, "cost": self.cost}


def turn_usage(by_model: dict[str, UsageMetadata], provider: str, model: str | None,
               prices: PriceTable) -> TurnUsage | None:
    """The turn's usage from LangChain's per-model totals (``by_model``: the answering model's name → its
    ``UsageMetadata``); ``None`` when no model call reported usage. Each answering model is priced by its own name,
    else by ``model`` (a provider may answer with a dated version of the name asked for)."""
    if not by_model:
        return None
    costs = [prices.cost(provider, (name, model), used.get("input_tokens", 0), used.get("output_tokens", 0),
                         *_cached(used)) for name, used in by_model.items()]
    cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    return TurnUsage(provider, model, sum(used.get("input_tokens", 0) for used in by_model.values()),
                     sum(used.get("output_tokens", 0) for used in by_model.values()), cost)


def _cached(used: UsageMetadata) -> tuple[int, int]:
    """The input tokens read from and written to the provider's prompt cache (0 and 0 when it says nothing)."""
    details = used.get("input_token_details") or {}
    return details.get("cache_read") or 0, details.get("cache_creation") or 0


async def counted(work: Awaitable[T], report: Callable[[dict[str, UsageMetadata]], None]) -> T:
    """Await ``work`` counting the tokens of every model call it makes; ``report`` receives the per-model totals
    when it ends, also when it fails or is cancelled (what was used is still used)."""
    counter = TurnCounter()
    token = _COUNTER.set(counter)
    try:
        return await work
    finally:
        _COUNTER.reset(token)
        report(dict(counter.usage_metadata))


def day_start(now: datetime | None = None) -> float:
    """Unix seconds of the start of the current UTC day (budgets are per UTC day)."""
    now = now or datetime.now(UTC)
    return now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
