"""AI_PROVIDER=azure-openai: the real AzureChatOpenAI client (langchain-openai over the openai SDK) against the
scripted Azure OpenAI server (tests/support/azure_server.py: one resource, its deployments and keys), through the
service's chat stream, with a real Node-RED for the agent's tools."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from service.llm.azure import DEFAULT_API_VERSION
from service.llm.providers import ProviderConfig, unready
from service.settings import Settings
from service.web.app import create_app
from tests.support.azure_server import ScriptedAzureServer
from tests.support.model_server import Reply
from tests.support.sse import event_types, stream_chat

AZURE_KEY = "3f9a1c7e5b2d4a6c8e0f1a3b5c7d9e1f"
OTHER_KEY = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"
DEPLOYMENT = "assistant-4o-mini"
ANSWER = "A change node sets, moves or deletes message properties."
QUICK_RETRY = {"retry-after-ms": "50"}
# USD per million tokens of gpt-4o-mini on Azure (service/llm/prices.yaml).
INPUT_PRICE, OUTPUT_PRICE = 0.15, 0.60


@pytest.fixture(scope="module")
def azure_server():
    with ScriptedAzureServer(deployments={DEPLOYMENT, "reasoner"}, accepted_keys={AZURE_KEY, OTHER_KEY}) as server:
        yield server


@pytest.fixture
def azure(azure_server):
    """The scripted Azure OpenAI resource, emptied for this test."""
    yield from azure_server.emptied()


@pytest.fixture
def azure_settings(settings, azure):
    """The service answering with Azure OpenAI (key, endpoint at the scripted resource, deployment, the model it
    deploys for prices), one token event per model chunk."""
    return settings.model_copy(update={
        "provider": "azure-openai", "azure_openai_api_key": SecretStr(AZURE_KEY),
        "azure_openai_endpoint": azure.base_url, "azure_openai_deployment": DEPLOYMENT, "model": "gpt-4o-mini",
        "token_coalesce_ms": 0})


def tokens(events) -> str:
    return "".join(e["content"] for e in events if e["type"] == "token")


async def test_a_question_is_streamed_from_the_azure_deployment_with_its_usage_and_cost(
        aiohttp_client, azure_settings, azure):
    client = await aiohttp_client(create_app(azure_settings))
    azure.script(Reply(text=ANSWER))
    events = await stream_chat(client, message="What does a change node do?", sessionId="azure-plain")

    assert event_types(events) == ["token"] * len(Reply(text=ANSWER).pieces()) + ["done"]
    assert tokens(events) == ANSWER
    # The deployment's path, the default GA API version, the key in api-key (never as a bearer token).
    assert azure.calls == [(DEPLOYMENT, DEFAULT_API_VERSION)]
    [request], [headers] = azure.requests, azure.headers
    assert headers["api-key"] == AZURE_KEY and "Authorization" not in headers
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    prompt = sum(len(str(m.get("content", ""))) // 4 for m in request["messages"])
    completion = len(ANSWER) // 4
    assert events[-1]["usage"] == {"inputTokens": prompt, "outputTokens": completion,
                                   "cost": pytest.approx((prompt * INPUT_PRICE + completion * OUTPUT_PRICE) / 1e6)}


async def test_the_agent_reads_the_open_flow_through_azure_and_answers_with_what_it_read(
        aiohttp_client, azure_settings, azure, nodered):
    client = await aiohttp_client(create_app(azure_settings))
    tab = max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))
    azure.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {}}]),
                 Reply(text="The flow starts with an inject node."))
    events = await stream_chat(client, message="What could go wrong in what I have open?",
                               selectedFlow={"id": tab["id"]}, sessionId="azure-agent")

    tool_events = [e for e in events if e["type"] in ("tool_call", "tool_result")]
    assert [(e["type"], e["tool"]) for e in tool_events] == [("tool_call", "get_flow"), ("tool_result", "get_flow")]
    assert tool_events[1]["ok"] is True and event_types(events)[-1] == "done" and "error" not in event_types(events)
    assert tokens(events) == "The flow starts with an inject node."
    assert "get_flow" in {tool["function"]["name"] for tool in azure.requests[0]["tools"]}
    # The second request answers the tool call with the flow Node-RED returned.
    [result] = [m for m in azure.requests[1]["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "call_0_get_flow"
    assert all(node["id"] in str(result["content"]) for node in nodered.nodes_of(tab["id"]))
    assert azure.calls == [(DEPLOYMENT, DEFAULT_API_VERSION)] * 2
    assert events[-1]["usage"]["inputTokens"] > 0 and events[-1]["usage"]["outputTokens"] > 0


@pytest.mark.parametrize("reply,code,said,attempts", [
    (Reply(status=429, error_message="Requests to the ChatCompletions_Create Operation have exceeded the rate limit",
           headers=QUICK_RETRY), "rate_limited", "rate limiting", 3),
    (Reply(status=400, error_message="This model's maximum context length is 128000 tokens."), "llm_error",
     "maximum context length", 1),
    (Reply(status=500, error_message="The server had an error", headers=QUICK_RETRY), "llm_error",
     "The server had an error", 3),
], ids=["rate-limit", "context-length", "server-error"])
async def test_an_azure_fault_is_one_mapped_error_then_done(aiohttp_client, azure_settings, azure, reply, code, said,
                                                            attempts):
    client = await aiohttp_client(create_app(azure_settings))
    azure.default = reply
    events = await stream_chat(client, message="hello")
    [error] = [e for e in events if e["type"] == "error"]
    assert event_types(events)[-2:] == ["error", "done"]
    assert error["code"] == code and said in error["message"], error
    assert len(azure.requests) == attempts


async def test_a_key_azure_refuses_is_invalid_api_key_and_a_missing_deployment_says_so(
        aiohttp_client, azure_settings, azure, caplog):
    caplog.set_level(logging.DEBUG)
    refused = "0000111122223333444455556666777f"
    client = await aiohttp_client(create_app(azure_settings.model_copy(
        update={"azure_openai_api_key": SecretStr(refused)})))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hello", "sessionId": "azure-key"})
    body = await response.text()
    assert '"code": "invalid_api_key"' in body or '"code":"invalid_api_key"' in body
    assert azure.headers[-1]["api-key"] == refused and refused not in body and refused not in caplog.text

    client = await aiohttp_client(create_app(azure_settings.model_copy(
        update={"azure_openai_deployment": "gone"})))
    events = await stream_chat(client, message="hello")
    [error] = [e for e in events if e["type"] == "error"]
    assert error["code"] == "llm_error" and "deployment for this resource does not exist" in error["message"]
    assert azure.calls[-1][0] == "gone"


async def test_an_ai_config_node_names_its_own_deployment_and_api_version_and_brings_its_key_elsewhere(
        aiohttp_client, azure_settings, azure, monkeypatch):
    # Credentials in the process environment, where AzureChatOpenAI would look for ones it was not given.
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "ad-token-from-the-environment")
    monkeypatch.setenv("OPENAI_API_VERSION", "2023-05-15")
    client = await aiohttp_client(create_app(azure_settings))
    azure.default = Reply(text="Answered by the reasoner deployment.")
    node = {"provider": "azure-openai", "baseUrl": azure.base_url, "deployment": "reasoner",
            "apiVersion": "2025-01-01-preview", "model": "o3-mini"}
    events = await stream_chat(client, message="hello", provider=node)
    assert tokens(events) == "Answered by the reasoner deployment."
    assert azure.calls == [("reasoner", "2025-01-01-preview")]
    assert azure.headers[-1]["api-key"] == AZURE_KEY and "Authorization" not in azure.headers[-1]
    assert events[-1]["usage"]["cost"] is None  # o3-mini on Azure has no price here: no guess

    # The same resource under another name is another endpoint: the environment's key does not go there.
    azure.reset()
    other = {**node, "baseUrl": azure.base_url.replace("127.0.0.1", "localhost")}
    events = await stream_chat(client, message="hello", provider=other)
    assert event_types(events) == ["error", "done"]
    assert events[0]["code"] == "provider_not_configured" and "AZURE_OPENAI_API_KEY" in events[0]["message"]
    assert azure.requests == [] and azure.calls == []
    events = await stream_chat(client, message="hello", provider={**other, "apiKey": OTHER_KEY})
    assert "error" not in event_types(events) and azure.headers[-1]["api-key"] == OTHER_KEY


async def test_a_deployment_or_api_version_that_is_no_name_is_a_400_before_any_model_request(
        aiohttp_client, azure_settings, azure):
    client = await aiohttp_client(create_app(azure_settings))
    for bad in ({"deployment": "../../admin"}, {"apiVersion": "latest"}):
        response = await client.post("/ai-sidebar/stream-chat", json={
            "message": "hello", "provider": {"provider": "azure-openai", **bad}})
        assert response.status == 400 and (await response.json())["error"]["code"] == "invalid_request"
    assert azure.calls == []


@pytest.mark.parametrize("missing,setting", [
    ({"azure_openai_endpoint": None}, "AZURE_OPENAI_ENDPOINT"),
    ({"azure_openai_deployment": None}, "AZURE_OPENAI_DEPLOYMENT"),
    ({"azure_openai_api_key": None}, "AZURE_OPENAI_API_KEY"),
])
def test_settings_without_what_azure_needs_are_refused_naming_the_setting(missing, setting):
    env = {"AI_PROVIDER": "azure-openai", "AZURE_OPENAI_API_KEY": AZURE_KEY,
           "AZURE_OPENAI_ENDPOINT": "https://contoso.openai.azure.com", "AZURE_OPENAI_DEPLOYMENT": DEPLOYMENT}
    settings = Settings.from_env(env).model_copy(update=missing)
    problem = unready(ProviderConfig.from_settings(settings))
    assert problem is not None and problem.code == "provider_not_configured"
    assert setting in problem.message
    assert unready(ProviderConfig.from_settings(Settings.from_env(env))) is None


def test_a_deployment_without_a_model_profile_gets_the_gpt_4o_window_and_every_provider_has_one():
    """Without AI_SIDEBAR_CONTEXT_TOKENS and a model profile, the window comes from the provider's table; Azure's
    used to fall through to 8,192 and summarized long conversations far too early."""
    from service.chat.summary import PROVIDER_CONTEXT_TOKENS, context_budget
    from service.llm.azure import azure_chat_model
    from service.settings import PROVIDERS

    model = azure_chat_model(endpoint="https://example.openai.azure.com", deployment="our-deployment",
                             api_version=None, api_key=SecretStr(AZURE_KEY), model=None, timeout=5, client=None,
                             common={})
    assert not (getattr(model, "profile", None) or {}).get("max_input_tokens")
    assert context_budget(model, "azure-openai", None) == 128_000
    assert context_budget(model, "azure-openai", 4_000) == 4_000
    assert set(PROVIDERS) <= set(PROVIDER_CONTEXT_TOKENS)
