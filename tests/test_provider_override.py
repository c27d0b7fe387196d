"""Per-request provider settings from an ai-config node (sent by the plugin runtime) win over the environment."""

from __future__ import annotations

import logging

import pytest

from service.chat.scenarios import ScenarioCatalog
from service.settings import REPO_ROOT
from service.web.app import create_app
from tests.support.sse import read_events

CONFIG_KEY = "sk-from-the-ai-config-node-0042"


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers={"X-Node-RED-User": "dave"})
    assert response.status == 200, await response.text()
    return await read_events(response)


def config_node(model, **extra):
    return {"provider": "openai-compatible", "baseUrl": model.base_url, "model": "local-llama",
            "apiKey": CONFIG_KEY, "temperature": 0.2, "maxTokens": 256, **extra}


async def test_config_node_settings_are_used_for_the_model_request(aiohttp_client, settings, model, caplog):
    bare = settings.model_copy(update={"openai_api_key": None, "openai_base_url": None})
    client = await aiohttp_client(create_app(bare))
    caplog.set_level(logging.DEBUG)
    events = await chat(client, message="hello", provider=config_node(model), sessionId="cfg1")
    assert [e["type"] for e in events][-1] == "done" and "error" not in [e["type"] for e in events]
    sent = model.requests[-1]
    assert sent["model"] == "local-llama" and sent["temperature"] == 0.2
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 256
    assert model.headers[-1]["Authorization"] == f"Bearer {CONFIG_KEY}"
    assert CONFIG_KEY not in caplog.text
    history = await (await client.get("/ai-sidebar/history/cfg1", headers={"X-Node-RED-User": "dave"})).text()
    assert CONFIG_KEY not in history


async def test_memory_off_stores_nothing_and_sends_no_history(client, model):
    await chat(client, message="first", provider=config_node(model, memory=False), sessionId="cfg2")
    await chat(client, message="second", provider=config_node(model, memory=False), sessionId="cfg2")
    assert [m["role"] for m in model.requests[-1]["messages"]] == ["system", "user"]
    assert (await client.get("/ai-sidebar/history/cfg2", headers={"X-Node-RED-User": "dave"})).status == 404


async def test_tools_off_means_no_forced_tool_no_agent_and_no_direct_trigger(client, nodered, model):
    tab = nodered.tabs()[0]
    events = await chat(client, message="explain the current flow", selectedFlow={"id": tab["id"]},
                        provider=config_node(model, tools=False))
    assert "tool_call" not in [e["type"] for e in events]
    assert "tools" not in model.requests[-1]
    events = await chat(client, message="@tools:get_flow", provider=config_node(model, tools=False))
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "tools_disabled"


async def test_scenarios_outside_the_allowed_list_are_not_used(client, model):
    events = await chat(client, message="hello", scenario="development",
                        provider=config_node(model, scenarios=["learning"]))
    assert events[-1]["type"] == "done"
    system = model.requests[-1]["messages"][0]["content"]
    catalog = ScenarioCatalog(REPO_ROOT / "locales").get("en-US")
    assert catalog.scenario("learning")[1].systemPrompt[:60] in system
    assert catalog.scenario("development")[1].systemPrompt[:60] not in system

async def test_a_bad_config_is_a_clear_400_without_echoing_the_key(client):
    response = await client.post("/ai-sidebar/stream-chat", json={
        "message": "hi", "provider": {"provider": "skynet", "apiKey": CONFIG_KEY}})
    assert response.status == 400
    text = await response.text()
    assert "provider" in text and CONFIG_KEY not in text


@pytest.mark.parametrize("base_url", ["https://\x0c\x90", "https://\u00bfI\u00f4", "https://", "http://exa mple"])
async def test_a_base_url_the_model_client_cannot_use_is_a_400_before_any_model_call(client, model, base_url):
    for path, body in (("/ai-sidebar/stream-chat", {"message": "hi"}),
                       ("/ai-sidebar/complete", {"before": "msg.", "after": "", "kind": "function"})):
        response = await client.post(path, json={**body, "provider": {"provider": "openai", "baseUrl": base_url}})
        assert response.status == 400, await response.text()
        error = (await response.json())["error"]
        assert error["code"] == "invalid_request" and "baseUrl" in error["message"]
    assert model.requests == []


async def test_the_services_key_never_goes_to_a_base_url_the_request_chose(aiohttp_client, settings, model):
    from tests.conftest import TEST_API_KEY
    from tests.support.model_server import ScriptedModelServer

    other = ScriptedModelServer()
    other.start()
    try:
        client = await aiohttp_client(create_app(settings))
        events = await chat(client, message="hello", provider={"provider": "openai", "baseUrl": other.base_url})
        assert events[-1]["type"] == "done"
        assert other.headers and all(TEST_API_KEY not in h.get("Authorization", "") for h in other.headers)
        # the environment's own endpoint still gets the environment's key
        await chat(client, message="hello", provider={"provider": "openai", "baseUrl": model.base_url})
        assert model.headers[-1]["Authorization"] == f"Bearer {TEST_API_KEY}"
    finally:
        other.stop()
