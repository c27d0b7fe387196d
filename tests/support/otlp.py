"""A small OTLP/HTTP trace receiver for tests: ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in binary
protobuf, as the OpenTelemetry Protocol specifies (https://opentelemetry.io/docs/specs/otlp/#otlphttp), decoded
with ``opentelemetry-proto``; every span received is kept in ``spans`` as a :class:`ReceivedSpan`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class ReceivedSpan:
    """One exported span: its name, ids (hex), the parent's id (``""`` for a root), its attributes as Python
    values, its status code (0 unset, 1 ok, 2 error), its length in nanoseconds and its resource's attributes."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status: int
    duration_ns: int
    resource: dict[str, Any]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """Started with :meth:`start` on the test's event loop at ``endpoint`` (the ``OTEL_EXPORTER_OTLP_ENDPOINT``
    to give a service); ``requests`` counts export requests and their content types."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.content_types: list[str] = []
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.endpoint = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/traces", self._export)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.endpoint = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def wait_for(self, predicate: Callable[[list[ReceivedSpan]], bool], timeout: float = 20.0) -> None:
        """Return once ``predicate(spans)`` holds; ``TimeoutError`` after ``timeout`` seconds."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: predicate(self.spans))

    async def _export(self, request: web.Request) -> web.Response:
        self.content_types.append(request.content_type)
        message = ExportTraceServiceRequest.FromString(await request.read())
        received = []
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                received += [ReceivedSpan(span.name, span.trace_id.hex(), span.span_id.hex(),
                                          span.parent_span_id.hex(),
                                          {a.key: _value(a.value) for a in span.attributes}, span.status.code,
                                          span.end_time_unix_nano - span.start_time_unix_nano, resource)
                             for span in scope_spans.spans]
        async with self._changed:
            self.spans += received
            self._changed.notify_all()
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")
