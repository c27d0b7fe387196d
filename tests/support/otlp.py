"""A small OTLP/HTTP trace receiver for tests: ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in binary
protobuf, as the OpenTelemetry Protocol specifies (https://opentelemetry.io/docs/specs/otlp/#otlphttp), decoded
with ``opentelemetry-proto``; every span received is kept in ``spans`` as a :class:`ReceivedSpan`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.conftest import SERVICE_TOKEN, TEST_API_KEY
from tests.support.health import START_TIMEOUT
from tests.support.nodered import REPO, free_port
from tests.support.sse import read_events


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


@contextlib.asynccontextmanager
async def traced_service(nodered: Any, model: Any, tmp_path: Path,
                         **otel: str) -> AsyncIterator[tuple[str, list[str]]]:
    """The service as its console script runs it against ``nodered`` and the scripted ``model``, with ``otel``
    variables added (or any other variable, e.g. another provider's); yields its base URL and its log lines."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
           "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "NODE_RED_URL": nodered.url,
           "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": TEST_API_KEY, "MCP_TOOLS_ENABLED": "false",
           "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "AI_SIDEBAR_KNOWLEDGE_REFRESH": "0", **otel}
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "service", env=env, cwd=REPO,
                                                   stderr=asyncio.subprocess.PIPE)
    assert process.stderr is not None
    log: list[str] = []
    # START_TIMEOUT (tests/support/health.py): a bound on a hang, not a measure of speed; 30 s failed two tests of
    # a fresh clone's make test beside six other jobs (load average about 15, 2026-12-02).
    async with asyncio.timeout(START_TIMEOUT):
        while not any("Running on" in line for line in log):
            line = (await process.stderr.readline()).decode()
            assert line, "".join(log)
            log.append(line)

    async def drain() -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            log.append(line.decode())
    draining = asyncio.create_task(drain())
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        process.terminate()
        await process.wait()  # the SDK flushes its batch at exit
        await draining


async def traced_chat(base: str, **body: Any) -> list[dict]:
    """The events of one chat request to the service at ``base``, as the editor user alice."""
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "alice"}
    async with aiohttp.ClientSession() as session, \
            session.post(f"{base}/ai-sidebar/stream-chat", json=body, headers=headers) as response:
        assert response.status == 200, await response.text()
        return await read_events(response)
