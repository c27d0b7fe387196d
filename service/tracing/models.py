"""A span per model call, from LangChain's callbacks: every chat model call made while a traced request runs (the
answer, each agent step, the knowledge router's and rewriter's short calls), as a child of the request's span.

The handler is installed for the request through a context variable that LangChain's callback configuration reads
(as :mod:`service.llm.usage` counts tokens), so calls inside LangGraph's tasks are seen too. Attributes follow
OpenTelemetry's generative-AI conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/):
``gen_ai.operation.name`` ``chat``, ``gen_ai.provider.name`` and ``gen_ai.request.model`` (LangChain's
``ls_provider`` and ``ls_model_name``), ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` and
``gen_ai.usage.output_tokens`` (the call's ``AIMessage.usage_metadata``), ``error.type``; plus
``ai_sidebar.time_to_first_token`` (seconds from the call's start to its first streamed chunk). The span's own
length is the call's duration. Message text only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
(``gen_ai.input.messages``, ``gen_ai.output.messages``, JSON).
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from service.tracing.spans import tracer

_HANDLER: ContextVar[ModelSpans | None] = ContextVar("ai_sidebar_model_spans", default=None)


class ModelSpans(BaseCallbackHandler):
    """LangChain callback handler that opens a ``chat <model>`` span when a chat model call starts and ends it
    when the call ends or fails. ``capture_content``: also record the messages sent and the answer."""

    # Called in the caller's context (not an executor thread), so the span's parent is the current span.
    run_inline = True

    def __init__(self, capture_content: bool = False):
        super().__init__()
        self.capture_content = capture_content
        self._open: dict[UUID, tuple[Span, float, list[float]]] = {}

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        metadata = metadata or {}
        model = metadata.get("ls_model_name") or ""
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                      "gen_ai.provider.name": metadata.get("ls_provider") or "unknown"}
        if model:
            attributes["gen_ai.request.model"] = model
        if self.capture_content and messages:
            attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": message.type, "content": message.text} for message in messages[0]], ensure_ascii=False)
        span = tracer().start_span(f"chat {model}".strip(), kind=SpanKind.CLIENT, attributes=attributes)
        self._open[run_id] = (span, time.monotonic(), [])

    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        entry = self._open.get(run_id)
        if entry is not None and not entry[2]:
            entry[2].append(time.monotonic() - entry[1])
            entry[0].set_attribute("ai_sidebar.time_to_first_token", round(entry[2][0], 6))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        entry = self._open.pop(run_id, None)
        if entry is None:
            return
        span = entry[0]
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        if isinstance(generation, ChatGeneration):
            message = generation.message
            usage = getattr(message, "usage_metadata", None)
            if usage:
                span.set_attribute("gen_ai.usage.input_tokens", usage.get("input_tokens", 0))
                span.set_attribute("gen_ai.usage.output_tokens", usage.get("output_tokens", 0))
            answered = message.response_metadata.get("model_name")
            if answered:
                span.set_attribute("gen_ai.response.model", answered)
            if self.capture_content:
                span.set_attribute("gen_ai.output.messages", json.dumps(
                    [{"role": "assistant", "content": message.text}], ensure_ascii=False))
        span.end()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        entry = self._open.pop(run_id, None)
        if entry is None:
            return
        entry[0].set_status(Status(StatusCode.ERROR))
        entry[0].set_attribute("error.type", type(error).__name__)
        entry[0].end()


def model_spans_installer(capture_content: bool) -> Any:
    """A function that installs one shared :class:`ModelSpans` for the current request's context (called by the
    request span's middleware; the context variable is the request task's own)."""
    handler = ModelSpans(capture_content)

    def install() -> None:
        _HANDLER.set(handler)
    return install


# Registered once, when tracing is first wired into an app (this module is imported only then).
register_configure_hook(_HANDLER, inheritable=True)
