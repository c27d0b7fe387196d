"""The palette plugin's /ai-sidebar/* admin routes on a real Node-RED, relaying to the service as a process."""

from __future__ import annotations

import aiohttp
import pytest

from tests.conftest import SERVICE_TOKEN, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import iter_events, read_events


async def test_stream_chat_through_the_plugin_streams_tool_call_result_tokens_done(nodered, service_process, model):
    tab = next(t for t in nodered.tabs() if len(nodered.nodes_of(t["id"])) >= 3)
    model.script(Reply(text="It reads a value, transforms it and shows it in the debug sidebar."))
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{nodered.url}/ai-sidebar/stream-chat",
                             json={"message": "explain the current flow", "selectedFlow": {"id": tab["id"]},
                                   "sessionId": "s1", "language": "en-US"}) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            events = await read_events(response)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["tool_call", "tool_result"] and events[0]["tool"] == "get_flow"
    assert all(node["id"] in events[1]["result"] for node in nodered.nodes_of(tab["id"]))
    # The first piece goes out at once, the rest may be joined (AI_SIDEBAR_TOKEN_COALESCE_MS): the relay keeps them.
    assert kinds.count("token") >= 2 and kinds[-1] == "done"
    assert "".join(e["content"] for e in events if e["type"] == "token") == \
        "It reads a value, transforms it and shows it in the debug sidebar."
    assert events[-1]["sessionId"] == "s1"


async def test_plugin_relays_events_as_they_come_without_buffering(nodered, service_process, model):
    model.script(Reply(text="first second", chunks=["first ", "second"], token_delay=1.5))
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{nodered.url}/ai-sidebar/stream-chat", json={"message": "hello"}) as response:
            events = iter_events(response)
            first = await anext(events)
            while first["type"] != "token":
                first = await anext(events)
            # The model is still sleeping before its second chunk: the stream must be open.
            assert first["content"] == "first "
            assert not response.content.at_eof()
            rest = [event async for event in events]
    assert [e["type"] for e in rest] == ["token", "done"]


async def test_scenarios_through_the_plugin_in_the_editor_language(nodered, service_process):
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{nodered.url}/ai-sidebar/scenarios?lang=zh-CN") as response:
            assert response.status == 200
            body = await response.json()
    assert body["language"] == "zh-CN"
    assert "general" in body["scenarios"]
    assert all("systemPrompt" not in s for s in body["scenarios"].values())


async def test_service_refuses_requests_without_its_token(service_process):
    async with aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{service_process.service_port}"
        async with http.get(f"{base}/healthz") as response:
            assert response.status == 200
        async with http.get(f"{base}/ai-sidebar/scenarios") as response:
            assert response.status == 401
            assert (await response.json())["error"]["code"] == "unauthorized"
        async with http.get(f"{base}/ai-sidebar/scenarios",
                            headers={"Authorization": f"Bearer {SERVICE_TOKEN}"}) as response:
            assert response.status == 200


def test_secrets_stay_out_of_the_logs(nodered, service_process):
    for path in (service_process.log_path, nodered.log_path):
        text = path.read_text(errors="replace")
        assert TEST_API_KEY not in text and SERVICE_TOKEN not in text


@pytest.fixture(scope="module")
def nodered_without_service(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-alone"), port=free_port(),
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{free_port()}"})
    instance.start()
    yield instance
    instance.stop()


async def test_service_down_gives_a_json_502_service_unreachable(nodered_without_service):
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{nodered_without_service.url}/ai-sidebar/stream-chat",
                             json={"message": "hello"}) as response:
            assert response.status == 502
            body = await response.json()
    assert body["error"]["code"] == "service_unreachable"
    assert "not reachable" in body["error"]["message"]
