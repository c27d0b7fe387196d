"""AI_PROVIDER=anthropic: the real ChatAnthropic client (langchain-anthropic over the anthropic SDK) against the
scripted Anthropic Messages API server (tests/support/anthropic_server.py), through the service's chat stream, with
a real Node-RED for the agent's tools."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from pydantic import SecretStr

from service.chat.prompts import UNTRUSTED_NOTE
from service.chat.summary import counter_name, token_counter
from service.identity import Identity
from service.llm.providers import ChatModelFactory, ProviderConfig
from service.settings import PROVIDERS, Settings
from service.web.app import MEMORY, create_app
from tests.support.anthropic_server import AnthropicReply, ScriptedAnthropicServer, cacheable_tokens, usage_of
from tests.support.model_server import Reply
from tests.support.nodered import free_port
from tests.support.otlp import OtlpReceiver, traced_chat, traced_service
from tests.support.sse import event_types, read_events, stream_chat

CLAUDE_KEY = "sk-ant-api03-scripted-claude-key-0001"
ANSWER = "A function node runs your JavaScript on each message it receives."
QUICK_RETRY = {"retry-after-ms": "50"}
# USD per million tokens of claude-sonnet-4-5 (service/llm/prices.yaml).
INPUT_PRICE, OUTPUT_PRICE, CACHE_READ_PRICE, CACHE_WRITE_PRICE = 3.00, 15.00, 0.30, 3.75


@pytest.fixture(scope="module")
def claude_server():
    with ScriptedAnthropicServer(accepted_keys={CLAUDE_KEY}) as server:
        yield server


@pytest.fixture
def claude(claude_server):
    """The scripted Anthropic API, emptied for this test."""
    yield from claude_server.emptied()


@pytest.fixture
def claude_settings(settings, claude):
    """The service answering with Anthropic (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL at the scripted API), one token
    event per model chunk."""
    return settings.model_copy(update={"provider": "anthropic", "anthropic_api_key": SecretStr(CLAUDE_KEY),
                                       "anthropic_base_url": claude.base_url, "token_coalesce_ms": 0})


def text_of(content) -> str:
    """The text of an Anthropic message's or tool result's ``content``: a string or a list of blocks."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def cost(usage: dict[str, int], read: int = 0, written: int = 0) -> float:
    """USD of ``usage`` (all input tokens), ``read`` of them from the prompt cache and ``written`` to it."""
    plain = usage["input_tokens"] - read - written
    return (plain * INPUT_PRICE + read * CACHE_READ_PRICE + written * CACHE_WRITE_PRICE
            + usage["output_tokens"] * OUTPUT_PRICE) / 1_000_000


async def test_a_question_is_streamed_from_claude_token_by_token_and_done_carries_its_usage_and_cost(
        aiohttp_client, claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings))
    claude.script(Reply(text=ANSWER))
    events = await stream_chat(client, message="hello", sessionId="claude-plain")

    assert event_types(events) == ["token"] * len(Reply(text=ANSWER).pieces()) + ["done"]
    assert [e["content"] for e in events[:-1]] == Reply(text=ANSWER).pieces()
    [request] = claude.requests
    usage = usage_of(request, Reply(text=ANSWER))
    # The first question with this system prompt wrote it to the prompt cache.
    assert events[-1]["usage"] == {"inputTokens": usage["input_tokens"], "outputTokens": usage["output_tokens"],
                                   "cost": pytest.approx(cost(usage, written=cacheable_tokens(request)))}
    # A streamed Messages API request with the key, the default model, and the system prompt as `system`.
    assert request["stream"] is True and request["model"] == "claude-sonnet-4-5"
    assert claude.headers[0]["Authorization"] == f"Bearer {CLAUDE_KEY}"
    assert UNTRUSTED_NOTE in text_of(request["system"])
    assert [m["role"] for m in request["messages"]] == ["user"]
    assert text_of(request["messages"][0]["content"]) == "hello"
    assert UNTRUSTED_NOTE not in json.dumps(request["messages"])


async def test_claudes_system_prompt_is_cached_and_a_cache_read_costs_a_tenth_of_the_input_price(
        aiohttp_client, claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings))
    claude.script(Reply(text=ANSWER), Reply(text=ANSWER))
    first = await stream_chat(client, message="hello", sessionId="claude-cache-1")
    second = await stream_chat(client, message="hello", sessionId="claude-cache-2")

    # The system prompt's last block asks for the prompt cache; both questions sent the same tools and system.
    assert [r["system"][-1]["cache_control"] for r in claude.requests] == [{"type": "ephemeral"}] * 2
    assert claude.requests[0]["system"] == claude.requests[1]["system"]
    cached = cacheable_tokens(claude.requests[0])
    assert cached > 0
    usage = usage_of(claude.requests[0], Reply(text=ANSWER))
    # All input is counted (the API's input_tokens plus its cached tokens), the cached part at its own price:
    # the first question wrote the cache (3.75 USD/M), the second read it (0.30 USD/M).
    assert first[-1]["usage"]["inputTokens"] == second[-1]["usage"]["inputTokens"] == usage["input_tokens"]
    assert first[-1]["usage"]["cost"] == pytest.approx(cost(usage, written=cached))
    assert second[-1]["usage"]["cost"] == pytest.approx(cost(usage, read=cached))
    assert second[-1]["usage"]["cost"] < first[-1]["usage"]["cost"]


async def test_claudes_extended_thinking_streams_as_thinking_events_and_is_counted_once(aiohttp_client,
                                                                                         claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings))
    thought = "The user wants to know what a function node does. Keep it short."
    claude.script(Reply(text=ANSWER, reasoning=thought))
    events = await stream_chat(client, message="What does a function node do?", sessionId="claude-thinking")

    assert "".join(e["text"] for e in events if e["type"] == "thinking") == thought
    assert "".join(e["content"] for e in events if e["type"] == "token") == ANSWER
    kinds = event_types(events)
    assert max(i for i, k in enumerate(kinds) if k == "thinking") < kinds.index("token")
    # Output tokens as the API counted them (the thinking included), once.
    assert events[-1]["usage"]["outputTokens"] == usage_of(claude.requests[0], Reply(text=ANSWER,
                                                                                     reasoning=thought))["output_tokens"]
    history = await (await client.get("/ai-sidebar/history/claude-thinking")).text()
    assert ANSWER in history and "Keep it short" not in history


async def test_the_agent_reads_the_open_flow_through_claude_and_sends_the_result_back_as_a_tool_result_block(
        aiohttp_client, claude_settings, claude, nodered):
    client = await aiohttp_client(create_app(claude_settings))
    tab = max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))
    claude.script(Reply(text="Let me read the flow.", tool_calls=[{"name": "get_flow", "arguments": {}}]),
                  Reply(text="The flow starts with an inject node."))
    events = await stream_chat(client, message="What could go wrong in what I have open?",
                               selectedFlow={"id": tab["id"]}, sessionId="claude-agent")

    tool_events = [e for e in events if e["type"] in ("tool_call", "tool_result")]
    assert [e["type"] for e in tool_events] == ["tool_call", "tool_result"]
    assert tool_events[0]["tool"] == "get_flow" and tool_events[1]["ok"] is True
    assert event_types(events)[-1] == "done" and "error" not in event_types(events)
    answer = "".join(e["content"] for e in events[events.index(tool_events[1]):] if e["type"] == "token")
    assert answer == "The flow starts with an inject node."
    # The tools were offered in the Messages API's shape.
    offered = {tool["name"]: tool for tool in claude.requests[0]["tools"]}
    assert offered["get_flow"]["input_schema"]["type"] == "object" and offered["get_flow"]["description"]
    # The second request carries Claude's tool_use turn, then the user turn answering it with a tool_result block.
    assert len(claude.requests) == 2
    *_, assistant, user = claude.requests[1]["messages"]
    [tool_use] = [block for block in assistant["content"] if block["type"] == "tool_use"]
    assert assistant["role"] == "assistant" and tool_use["name"] == "get_flow" and tool_use["id"] == "toolu_00get_flow"
    [tool_result] = [block for block in user["content"] if block["type"] == "tool_result"]
    assert user["role"] == "user" and tool_result["tool_use_id"] == tool_use["id"]
    assert all(node["id"] in text_of(tool_result["content"]) for node in nodered.nodes_of(tab["id"]))
    usage = [usage_of(claude.requests[0], Reply(text="Let me read the flow.", tool_calls=[{"name": "get_flow"}])),
             usage_of(claude.requests[1], Reply(text="The flow starts with an inject node."))]
    assert events[-1]["usage"]["inputTokens"] == sum(u["input_tokens"] for u in usage)
    assert events[-1]["usage"]["outputTokens"] == sum(u["output_tokens"] for u in usage)

    # The next turn of the session replays that history: the API takes it (tool_use answered by tool_result).
    claude.requests.clear()
    claude.script(Reply(text="Add a catch node."))
    events = await stream_chat(client, message="And how do I handle its errors?", sessionId="claude-agent")
    assert "error" not in event_types(events), events
    assert "Add a catch node." in "".join(e["content"] for e in events if e["type"] == "token")


async def test_a_key_claude_refuses_is_invalid_api_key_then_done_and_the_key_is_nowhere(
        aiohttp_client, claude_settings, claude, caplog):
    caplog.set_level(logging.DEBUG)  # the SDKs' own debug logs too
    refused_key = "sk-ant-api03-refused-claude-key-9999"
    client = await aiohttp_client(create_app(claude_settings.model_copy(
        update={"anthropic_api_key": SecretStr(refused_key)})))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hello", "sessionId": "claude-key"})
    body = await response.text()
    events = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]

    assert event_types(events) == ["error", "done"]
    assert events[0]["code"] == "invalid_api_key" and "API key" in events[0]["message"]
    assert claude.headers[-1]["Authorization"] == f"Bearer {refused_key}"  # it did reach the API
    assert len(claude.requests) == 1  # a 401 is not retried
    assert refused_key not in body and refused_key not in caplog.text
    history = await (await client.get("/ai-sidebar/history/claude-key")).text()
    assert refused_key not in history


@pytest.mark.parametrize("reply,code,said,attempts", [
    (Reply(status=429, error_message="Number of request tokens has exceeded your rate limit", headers=QUICK_RETRY),
     "rate_limited", "rate limiting", 3),
    (Reply(status=529, error_message="Overloaded", headers=QUICK_RETRY), "llm_error", "Overloaded", 3),
    (Reply(status=500, error_message="Internal server error", headers=QUICK_RETRY), "llm_error",
     "Internal server error", 3),
    (Reply(status=400, error_message="max_tokens: 1000000 > 64000, which is the maximum"), "llm_error",
     "max_tokens: 1000000 > 64000", 1),
    (Reply(text="the start of an answer that never ends", drop_after=3), "llm_unreachable", "was lost", 1),
], ids=["rate-limit", "overloaded", "server-error", "bad-request", "dropped"])
async def test_a_claude_fault_is_one_mapped_error_then_done(aiohttp_client, claude_settings, claude, reply, code,
                                                            said, attempts):
    client = await aiohttp_client(create_app(claude_settings))
    claude.default = reply
    events = await stream_chat(client, message="hello")
    [error] = [e for e in events if e["type"] == "error"]
    assert event_types(events)[-2:] == ["error", "done"]
    assert error["code"] == code and said in error["message"], error
    assert len(claude.requests) == attempts


async def test_an_overload_in_the_middle_of_claudes_stream_keeps_the_text_and_says_so(aiohttp_client,
                                                                                     claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings))
    claude.script(AnthropicReply(text="The first words", stream_error=529, error_message="Overloaded"))
    events = await stream_chat(client, message="hello")
    assert event_types(events) == ["token", "token", "token", "error", "done"]
    assert events[3]["code"] == "llm_error" and "Overloaded" in events[3]["message"]


async def test_an_anthropic_endpoint_that_refuses_connections_cannot_be_reached(aiohttp_client, claude_settings):
    closed = f"http://127.0.0.1:{free_port()}"
    client = await aiohttp_client(create_app(claude_settings.model_copy(update={"anthropic_base_url": closed})))
    [error] = [e for e in await stream_chat(client, message="hello") if e["type"] == "error"]
    assert error["code"] == "llm_unreachable" and "cannot be reached" in error["message"]


async def test_claude_not_answering_within_the_llm_timeout_is_llm_timeout(aiohttp_client, claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings.model_copy(update={"llm_timeout": 2.0})))
    claude.default = Reply(text="far too late", delay=30)
    events = await stream_chat(client, message="hello")
    assert event_types(events) == ["error", "done"]
    assert events[0]["code"] == "llm_timeout" and "AI_LLM_TIMEOUT" in events[0]["message"]
    assert len(claude.requests) == 1


async def test_the_service_started_with_ai_provider_anthropic_traces_claudes_call_with_its_usage(nodered, claude,
                                                                                               tmp_path):
    receiver = OtlpReceiver()
    await receiver.start()
    claude.script(Reply(text=ANSWER))
    try:
        async with traced_service(nodered, claude, tmp_path, AI_PROVIDER="anthropic", ANTHROPIC_API_KEY=CLAUDE_KEY,
                                  ANTHROPIC_BASE_URL=claude.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                                  OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", OTEL_BSP_SCHEDULE_DELAY="50") as (base,
                                                                                                              log):
            events = await traced_chat(base, message="hello", sessionId="claude-traced")
            await receiver.wait_for(lambda spans: any(s.name == "POST /ai-sidebar/stream-chat" for s in spans))
    finally:
        await receiver.stop()

    assert "".join(e["content"] for e in events if e["type"] == "token") == ANSWER
    # One span per model call, the service's own (the anthropic SDK's would count the call again).
    [call] = [s for s in receiver.spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert call.name == "chat claude-sonnet-4-5" and "traceparent" not in claude.headers[-1]
    assert call.attributes["gen_ai.provider.name"] == "anthropic"
    assert call.attributes["gen_ai.request.model"] == call.attributes["gen_ai.response.model"] == "claude-sonnet-4-5"
    assert call.attributes["gen_ai.usage.input_tokens"] == events[-1]["usage"]["inputTokens"]
    assert call.attributes["gen_ai.usage.output_tokens"] == events[-1]["usage"]["outputTokens"] > 0
    assert CLAUDE_KEY not in "".join(log) and claude.headers[-1]["Authorization"] == f"Bearer {CLAUDE_KEY}"


async def test_the_ai_config_dialog_is_offered_anthropic_and_the_header_names_claude(aiohttp_client, claude_settings):
    client = await aiohttp_client(create_app(claude_settings))
    body = await (await client.get("/ai-sidebar/scenarios", params={"lang": "en-US"})).json()
    assert body["providers"] == list(PROVIDERS) and "anthropic" in body["providers"]
    assert body["model"] == {"provider": "anthropic", "model": "claude-sonnet-4-5"}


async def test_an_ai_config_node_for_anthropic_gets_the_environments_key_only_at_the_environments_endpoint(
        aiohttp_client, settings, claude, monkeypatch):
    # The key is in the process environment as well, where ChatAnthropic would look for one it was not given.
    monkeypatch.setenv("ANTHROPIC_API_KEY", CLAUDE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.base_url)
    client = await aiohttp_client(create_app(settings.model_copy(update={
        "anthropic_api_key": SecretStr(CLAUDE_KEY), "anthropic_base_url": claude.base_url})))
    claude.default = Reply(text="Answered by Claude.")

    same = {"provider": "anthropic", "model": "claude-haiku-4-5", "baseUrl": claude.base_url + "/"}
    events = await stream_chat(client, message="hello", provider=same)
    assert "Answered by Claude." in "".join(e["content"] for e in events if e["type"] == "token")
    assert claude.requests[-1]["model"] == "claude-haiku-4-5"
    assert claude.headers[-1]["Authorization"] == f"Bearer {CLAUDE_KEY}"

    # The same server under another name is another endpoint: no key goes there unless the node brings one.
    claude.requests.clear()
    other = {**same, "baseUrl": claude.base_url.replace("127.0.0.1", "localhost")}
    events = await stream_chat(client, message="hello", provider=other)
    assert event_types(events) == ["error", "done"]
    assert events[0]["code"] == "provider_not_configured" and "ANTHROPIC_API_KEY" in events[0]["message"]
    assert claude.requests == []
    events = await stream_chat(client, message="hello", provider={**other, "apiKey": CLAUDE_KEY})
    assert "error" not in event_types(events) and len(claude.requests) == 1


async def test_a_temperature_claude_would_refuse_is_a_clear_400_before_any_model_request(
        aiohttp_client, claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings))
    answer = await client.post("/ai-sidebar/stream-chat", json={
        "message": "hello", "provider": {"provider": "anthropic", "temperature": 1.5}})
    error = (await answer.json())["error"]
    assert answer.status == 400 and error["code"] == "invalid_request"
    assert "temperature must be between 0 and 1 for anthropic" in error["message"]
    assert claude.requests == []
    # Up to 1 for Claude; the other providers keep 0 to 2.
    claude.default = Reply(text="Warm enough.")
    events = await stream_chat(client, message="hello", provider={"provider": "anthropic", "temperature": 1})
    assert "error" not in event_types(events) and claude.requests[-1]["temperature"] == 1


FACT = "FACT: the production broker is mqtt-7.example.net on port 8883"


def summarising_claude(body: dict) -> Reply:
    """Claude answering LangChain's summary prompt with the facts it was given, anything else briefly."""
    text = json.dumps(body["messages"])
    if "Messages to summarize" in text:
        return Reply(text=FACT if FACT in text else "Nothing to keep.")
    return Reply(text="Noted.")


async def test_a_long_conversation_with_claude_is_summarised_by_claude_and_keeps_its_early_fact(
        aiohttp_client, claude_settings, claude):
    client = await aiohttp_client(create_app(claude_settings.model_copy(update={"context_tokens": 6000})))
    alice = Identity("user", "alice")
    store = client.app[MEMORY].store
    for turn in range(1, 151):
        question = FACT if turn == 2 else f"Turn {turn}: how should function node {turn} handle msg.payload?"
        await store.save_turn("claude-long", alice, question, f"Answer {turn}: set msg.payload and return msg.", {})
    claude.responder = summarising_claude

    response = await client.post("/ai-sidebar/stream-chat", headers={"X-Node-RED-User": "alice"},
                                 json={"message": "Which broker do we use in production?", "sessionId": "claude-long"})
    events = await read_events(response)
    assert "error" not in event_types(events) and event_types(events)[-1] == "done"
    summary_requests = [r for r in claude.requests if "Messages to summarize" in json.dumps(r["messages"])]
    assert summary_requests and len(claude.requests) > len(summary_requests)
    answer_request = claude.requests[-1]
    assert FACT in json.dumps(answer_request["messages"]) and UNTRUSTED_NOTE in text_of(answer_request["system"])
    assert len(answer_request["messages"]) < 300  # folded: 150 stored turns are 300 messages
    summary = await store.summary(alice, "claude-long")
    assert summary is not None and FACT in summary.text


def test_claudes_endpoint_and_key_come_from_the_settings_never_from_the_process_environment(monkeypatch):
    # ChatAnthropic itself would take these when given no base URL or key (ANTHROPIC_BASE_URL, a LangSmith gateway).
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/elsewhere")
    monkeypatch.setenv("LANGSMITH_GATEWAY", "true")
    monkeypatch.setenv("LANGSMITH_GATEWAY_API_KEY", "lsv2-gateway-key-0001")
    settings = Settings.from_env({"AI_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": CLAUDE_KEY})
    model = ChatModelFactory().get(ProviderConfig.from_settings(settings))
    assert model.anthropic_api_url == "https://api.anthropic.com"
    assert model.anthropic_api_key.get_secret_value() == CLAUDE_KEY
    proxied = Settings.from_env({"AI_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": CLAUDE_KEY,
                                 "ANTHROPIC_BASE_URL": "https://llm-proxy.example.net"})
    assert ChatModelFactory().get(ProviderConfig.from_settings(proxied)).anthropic_api_url == \
        "https://llm-proxy.example.net"


def test_claude_answers_in_each_new_event_loop(claude):
    """Stock ChatAnthropic shares one HTTP client per base URL across the process (an lru_cache): in a later event
    loop its pooled connection fails (``Connection error.``) and only the SDK's retry answers. Each factory's client
    belongs to its own loop and is closed with it: every answer is a first attempt."""
    async def ask() -> str:
        factory = ChatModelFactory()
        try:
            model = factory.get(ProviderConfig("anthropic", "claude-sonnet-4-5", api_key=SecretStr(CLAUDE_KEY),
                                               base_url=claude.base_url))
            return (await model.ainvoke("hi")).text
        finally:
            await factory.aclose()

    claude.default = Reply(text="Hello again.")
    assert [asyncio.run(ask()) for _ in range(3)] == ["Hello again."] * 3
    assert [headers["x-stainless-retry-count"] for headers in claude.headers] == ["0", "0", "0"]


async def test_claudes_tokens_are_counted_at_anthropics_characters_per_token_and_its_client_closes():
    factory = ChatModelFactory()
    model = factory.get(ProviderConfig("anthropic", "claude-sonnet-4-5", api_key=SecretStr(CLAUDE_KEY),
                                       base_url="http://127.0.0.1:1"))
    assert counter_name(model) == "approximate"
    assert token_counter(model).keywords == {"chars_per_token": 3.3}
    http_client = model._async_client._client
    assert not http_client.is_closed
    await factory.aclose()
    assert http_client.is_closed
