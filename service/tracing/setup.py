"""Install OpenTelemetry's SDK from the standard ``OTEL_*`` variables, once per process, at start.

The variables are OpenTelemetry's own (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
and https://opentelemetry.io/docs/specs/otel/protocol/exporter/): ``OTEL_SDK_DISABLED``, ``OTEL_TRACES_EXPORTER``
(``otlp``, ``console``, ``none``; a comma-separated list), ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_PROTOCOL`` / ``..._TRACES_PROTOCOL`` (only
``http/protobuf`` here: the gRPC exporter is not installed), ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``; the SDK and the OTLP exporter read them
themselves. Unlike the specification's default exporter (``otlp``), tracing is off while none of the exporter or
endpoint variables is set: an assistant that nobody configured sends nothing anywhere.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

log = logging.getLogger(__name__)

EXPORTERS = frozenset({"otlp", "console"})
SUPPORTED_PROTOCOL = "http/protobuf"


def wanted_exporters(env: Mapping[str, str]) -> list[str]:
    """The span exporters ``env`` asks for (``[]``: tracing off).

    ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off; ``OTEL_TRACES_EXPORTER`` names the
    exporters; unset, an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``) means ``otlp``.

    Raises:
        ValueError: an exporter other than ``otlp``, ``console``, ``none``, or an OTLP protocol other than
            ``http/protobuf`` (the message names the variable).
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if not named:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        named = ["otlp"] if endpoint else []
    if "none" in named:
        return []
    unknown = sorted(set(named) - EXPORTERS)
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER={','.join(unknown)} is not supported; use otlp, console or none")
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or SUPPORTED_PROTOCOL).strip()
    if "otlp" in named and protocol != SUPPORTED_PROTOCOL:
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported; use {SUPPORTED_PROTOCOL}")
    return named


def install_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Install a tracer provider with a batch span processor per exporter ``env`` asks for (see
    :func:`wanted_exporters`) as OpenTelemetry's global one; ``False`` (nothing imported, nothing installed) when
    tracing is off. The provider flushes and shuts down at process exit (the SDK's own ``atexit`` hook).

    Raises:
        ValueError: see :func:`wanted_exporters`.
    """
    env = os.environ if env is None else env
    exporters = wanted_exporters(env)
    if not exporters:
        return False
    # Imported here: a service without tracing never loads the SDK or the exporter.
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    # Resource.create() reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the default name is ours.
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "ai-sidebar-service"})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            exporter = OTLPSpanExporter()  # endpoint, headers, timeout, compression: from OTEL_EXPORTER_OTLP_*
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log.info("tracing on: %s", ", ".join(exporters))
    return True
