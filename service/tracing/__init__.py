"""OpenTelemetry tracing of the service: a span per request, per model call, per tool call and per knowledge search.

Off unless the standard ``OTEL_*`` variables ask for it (:mod:`service.tracing.setup`); while off, no SDK is
imported and the hot paths cost one check of OpenTelemetry's global tracer provider.
"""
