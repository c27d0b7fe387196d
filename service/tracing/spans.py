"""The service's spans: one per HTTP request, per tool call and per knowledge search (model calls:
:mod:`service.tracing.models`).

Attribute names follow OpenTelemetry's semantic conventions where they have one (HTTP: ``http.request.method``,
``http.route``, ``http.response.status_code``; sessions and users: ``session.id``, ``user.id``; generative AI:
``gen_ai.operation.name``, ``gen_ai.tool.name``, ``error.type``; https://opentelemetry.io/docs/specs/semconv/);
the service's own carry the ``ai_sidebar.`` prefix. No span holds message text, tool arguments or search queries.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from opentelemetry import trace
from opentelemetry.trace import ProxyTracerProvider, SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from service.identity import Identity

TRACER_NAME = "ai-sidebar-service"


def active() -> bool:
    """Whether a tracer provider was installed (:func:`service.tracing.setup.install_from_env`); until then
    OpenTelemetry's global provider is a proxy and every span helper here does nothing."""
    return not isinstance(trace.get_tracer_provider(), ProxyTracerProvider)


def tracer() -> trace.Tracer:
    """The service's tracer from the installed provider."""
    return trace.get_tracer(TRACER_NAME)


def request_middleware(install_model_spans: Callable[[], None]) -> Callable:
    """An aiohttp middleware that wraps each request in a server span named ``METHOD route`` (the route's
    template, e.g. ``POST /ai-sidebar/stream-chat``) and, through ``install_model_spans``, has the request's
    model calls traced as its children. A stream's status is its HTTP status (200): its faults are events."""
    @web.middleware
    async def traced(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else request.path
        attributes = {"http.request.method": request.method, "http.route": route, "url.path": request.path}
        with tracer().start_as_current_span(f"{request.method} {route}", kind=SpanKind.SERVER,
                                            attributes=attributes) as span:
            install_model_spans()
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                span.set_attribute("http.response.status_code", exc.status)
                raise
            span.set_attribute("http.response.status_code", response.status)
            if response.status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            return response
    return traced


def describe_caller(session_id: str, identity: Identity) -> None:
    """Name the current request span's session (``session.id``) and caller: ``user.id`` (the Node-RED user name,
    or the ``ai-chat`` node id) and ``ai_sidebar.caller.kind`` (``user``, ``anonymous``, ``flow``)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute("session.id", session_id)
    span.set_attribute("ai_sidebar.caller.kind", identity.kind)
    if identity.name:
        span.set_attribute("user.id", identity.name)


@contextlib.contextmanager
def tool_span(name: str) -> Iterator[None]:
    """A span around one tool run: ``execute_tool <name>`` with ``gen_ai.operation.name`` ``execute_tool`` and
    ``gen_ai.tool.name``; a failure sets status error and ``error.type`` (its code, else its class name)."""
    if not active():
        yield
        return
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    with tracer().start_as_current_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes,
                                        record_exception=False, set_status_on_exception=False) as span:
        try:
            yield
        except Exception as exc:
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", getattr(exc, "code", None) or type(exc).__name__)
            raise


@contextlib.contextmanager
def search_span(store: str) -> Iterator[Callable[[int], None]]:
    """A span around one knowledge search: ``retrieval <store>`` with ``ai_sidebar.knowledge.store`` (the
X the number of hits through the function it is given."""
    if not active():
        yield lambda hits: None
        return
    attributes = {"gen_ai.operation.name": "retrieval", "ai_sidebar.knowledge.store": store}
    with tracer().start_as_current_span(f"retrieval {store}", kind=SpanKind.INTERNAL, attributes=attributes) as span:
        yield lambda hits: span.set_attribute("ai_sidebar.knowledge.hits", hits)
