"""Issue 31, finding 6: "the model server cannot be reached" says which server (its origin: no path, no
credentials) and where its address is set (the ai-config node in use, or the service's environment variable),
in the stream of a question and in the sidebar's "Test connection", never with a key."""

from __future__ import annotations

from service.web.app import create_app
from tests.conftest import TEST_API_KEY
from tests.support.nodered import free_port
from tests.support.sse import read_events

NODE_KEY = "sk-node-key-for-the-unreachable-test-0001"
URL_PASSWORD = "urlpass-9f8e7d6c5b4a"


async def error_of_chat(client, **body) -> dict:
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hello", **body})
    assert response.status == 200, await response.text()
    [error] = [e for e in await read_events(response) if e["type"] == "error"]
    return error


async def test_a_base_url_from_the_environment_that_refuses_is_named_with_its_variable(aiohttp_client, settings):
    port = free_port()
    closed = f"http://127.0.0.1:{port}/v1"
    client = await aiohttp_client(create_app(settings.model_copy(update={"openai_base_url": closed})))

    error = await error_of_chat(client)

    assert error["code"] == "llm_unreachable"
    assert f"http://127.0.0.1:{port} " in error["message"] and "OPENAI_BASE_URL" in error["message"]
    assert "/v1" not in error["message"] and TEST_API_KEY not in error["message"]


async def test_a_base_url_of_an_ai_config_node_is_named_without_its_path_or_query_in_chat_and_test_connection(
        client):
    port = free_port()
    provider = {"provider": "openai-compatible", "model": "local", "apiKey": NODE_KEY,
                "baseUrl": f"http://127.0.0.1:{port}/v1?key={URL_PASSWORD}"}

    error = await error_of_chat(client, provider=provider)
    response = await client.post("/ai-sidebar/test-provider", json={"provider": provider, "language": "de"})
    tested = await response.json()

    assert error["code"] == "llm_unreachable" and tested["error"]["code"] == "llm_unreachable"
    assert f"The model server at http://127.0.0.1:{port} cannot be reached" in error["message"]
    assert "ai-config node" in error["message"] and "OPENAI_BASE_URL" not in error["message"]
    # The test's answer, in the language asked for, names the same server and the node.
    assert f"http://127.0.0.1:{port}" in tested["error"]["message"] and "ai-config-Node" in tested["error"]["message"]
    for message in (error["message"], tested["error"]["message"]):
        assert URL_PASSWORD not in message and NODE_KEY not in message and "/v1" not in message
