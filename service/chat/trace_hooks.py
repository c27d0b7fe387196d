"""The agent's middleware hooks without a thread hop each when LangSmith tracing is off (issue 34: ≤ 50 ms added per
build round).

LangChain's ``create_agent`` wraps every middleware's ``wrap_model_call`` and ``wrap_tool_call`` in LangSmith's
``traceable`` (``langchain/agents/factory.py``), and ``traceable``'s async wrapper hands the set-up and the end of its
run record to the event loop's default executor (``langsmith.run_helpers``: ``aio_to_thread(_setup_run)``, then
``aio_to_thread(_on_run_end)``), whether tracing is on or not. The build bench's rounds made about 19 such hops each;
on a loaded 2-core machine a hop waits for a worker thread and then for the GIL (up to 5 ms,
``sys.getswitchinterval``), measured 18 ms per hop at a load average of 20.

With tracing off (the service's default: it traces with OpenTelemetry, :mod:`service.tracing`), what those calls do
is copy a context and return an empty record: no I/O, nothing to wait for. LangSmith's documented runtime override
(``langsmith.set_runtime_overrides(aio_to_thread=...)``, ``langsmith/_runtime_overrides.py``) runs them inline then;
with tracing on (``LANGSMITH_TRACING=true``, or a ``tracing_context`` that enables it) they go to the thread as
before.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import langsmith
from langsmith import utils as langsmith_utils


async def inline_unless_tracing(default: Callable[..., Awaitable[Any]], ctx: contextvars.Context,
                                func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """LangSmith's ``aio_to_thread`` for this process: ``func(*args, **kwargs)`` run inside ``ctx`` on the calling
    thread when tracing is off in ``ctx``, else ``default`` (LangSmith's own, a worker thread)."""
    if ctx.run(langsmith_utils.tracing_is_enabled):
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def install() -> None:
    """Make :func:`inline_unless_tracing` LangSmith's ``aio_to_thread`` (process-wide; idempotent)."""
    langsmith.set_runtime_overrides(aio_to_thread=inline_unless_tracing)
