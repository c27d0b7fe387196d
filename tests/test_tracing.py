"""Tracing: the service started with the standard OTEL_* variables exports its spans over OTLP/HTTP to a receiver
the test runs; without them it installs nothing."""

from __future__ import annotations

import pytest

from service.tracing.setup import install_from_env, wanted_exporters
from tests.support.model_server import Reply
from tests.support.otlp import OtlpReceiver, traced_chat, traced_service

SECRET_QUESTION = "What does my open tab do, zebra-marker-4711?"


@pytest.fixture
async def receiver():
    server = OtlpReceiver()
    await server.start()
    yield server
    await server.stop()


async def test_a_chat_with_a_tool_call_exports_request_model_and_tool_spans(nodered, model, tmp_path, receiver):
    tab = max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {}}]),
                 Reply(text="It injects a timestamp and shows it."))
    async with traced_service(nodered, model, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                              OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", OTEL_SERVICE_NAME="sidebar-under-test",
                              OTEL_BSP_SCHEDULE_DELAY="50") as (base, _log):
        events = await traced_chat(base, message=SECRET_QUESTION, selectedFlow={"id": tab["id"]}, sessionId="s-trace-1")
        assert [e["type"] for e in events][:2] == ["tool_call", "tool_result"] and events[-1]["type"] == "done"
        await receiver.wait_for(lambda spans: any(s.name == "POST /ai-sidebar/stream-chat" for s in spans))

    spans = receiver.spans
    request = next(s for s in spans if s.name == "POST /ai-sidebar/stream-chat")
    models = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    tools = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert request.parent_span_id == "" and request.attributes["http.response.status_code"] == 200
    assert request.attributes["session.id"] == "s-trace-1" and request.attributes["user.id"] == "alice"
    assert request.resource["service.name"] == "sidebar-under-test"
    assert receiver.content_types and set(receiver.content_types) == {"application/x-protobuf"}

    # Two model calls (the tool call, then the answer) and one tool call, all children of the request.
    assert len(models) == 2 and [t.name for t in tools] == ["execute_tool get_flow"]
    for child in [*models, *tools]:
        assert child.trace_id == request.trace_id and child.parent_span_id == request.span_id
    usage = events[-1]["usage"]
    assert sum(m.attributes["gen_ai.usage.input_tokens"] for m in models) == usage["inputTokens"]
    assert sum(m.attributes["gen_ai.usage.output_tokens"] for m in models) == usage["outputTokens"] > 0
    for call in models:
        assert call.attributes["gen_ai.provider.name"] == "openai" and call.attributes["gen_ai.request.model"]
        assert 0 < call.attributes["ai_sidebar.time_to_first_token"] * 1e9 <= call.duration_ns
    assert tools[0].attributes["gen_ai.tool.name"] == "get_flow" and tools[0].status != 2

    # No message text in any span by default.
    exported = repr([(s.name, s.attributes) for s in spans])
    assert "zebra-marker-4711" not in exported and "timestamp and shows" not in exported


async def test_content_capture_records_message_text_and_a_knowledge_search_gets_its_span(nodered, model, tmp_path,
                                                                                        receiver):
    model.script(Reply(text="Plain answer about gamma-marker-99."))
    async with traced_service(nodered, model, tmp_path, OTEL_TRACES_EXPORTER="otlp",
                              OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY="50",
                              OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true") as (base, _log):
        await traced_chat(base, message="How do I use the inject node? beta-marker-42")
        await receiver.wait_for(lambda spans: any(s.name == "POST /ai-sidebar/stream-chat" for s in spans))
    request = next(s for s in receiver.spans if s.name == "POST /ai-sidebar/stream-chat")
    search = next(s for s in receiver.spans if s.attributes.get("gen_ai.operation.name") == "retrieval")
    assert search.name == "retrieval docs" and search.parent_span_id == request.span_id
    assert search.attributes["ai_sidebar.knowledge.hits"] >= 0
    call = next(s for s in receiver.spans if s.attributes.get("gen_ai.operation.name") == "chat")
    assert "beta-marker-42" in call.attributes["gen_ai.input.messages"]
    assert "gamma-marker-99" in call.attributes["gen_ai.output.messages"]


def test_tracing_is_off_unless_an_exporter_or_endpoint_is_named():
    assert wanted_exporters({}) == []
    assert install_from_env({}) is False
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == ["otlp"]
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}) == []
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == []
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "console"}) == ["console"]
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_PROTOCOL=grpc"):
        wanted_exporters({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER=zipkin"):
        wanted_exporters({"OTEL_TRACES_EXPORTER": "zipkin"})


async def test_a_service_without_otel_variables_installs_no_tracing(nodered, model, tmp_path):
    model.script(Reply(text="Hello."))
    async with traced_service(nodered, model, tmp_path) as (base, log):
        events = await traced_chat(base, message="hello", scenario="general")
    assert events[-1]["type"] == "done" and not any("tracing on" in line for line in log)
