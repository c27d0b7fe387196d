"""Writes only after the user approves (issue 18): the scripted model calls write tools against a real Node-RED;
the stream pauses with ``approval_required``; ``POST /ai-sidebar/resume`` continues the same run."""

from __future__ import annotations

import json
import sqlite3
import urllib.request

import pytest

from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from tests.conftest import TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, example_flows, free_port
from tests.support.sse import read_events

EXAMPLES = ("common/inject/02 - Trigger a flow at regular intervals.json",
            "function/function/02 - Send multiple messages.json")


@pytest.fixture(scope="module")
def writable(tmp_path_factory):
    """A Node-RED of this module's own: these tests change its flows."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-writes"), port=free_port(),
                       flows=example_flows(EXAMPLES), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def deployed(nodered) -> dict:
    request = urllib.request.Request(f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.fixture
def write_settings(writable, model, tmp_path) -> Settings:
    return Settings(nodered=NodeRedSettings(url=writable.url), openai_base_url=model.base_url,
                    openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False,
                    knowledge_refresh=0)


@pytest.fixture
async def service(aiohttp_client, write_settings):
    return await aiohttp_client(create_app(write_settings))


async def events_of(response):
    assert response.status == 200, await response.text()
    return await read_events(response)


def first_tab(nodered) -> dict:
    return next(n for n in deployed(nodered)["flows"] if n["type"] == "tab")


NEW_NODES = [{"id": "a", "type": "inject", "name": "tick", "x": 100, "y": 40, "wires": [["b"]]},
             {"id": "b", "type": "debug", "name": "show", "x": 300, "y": 40, "wires": []}]


async def test_an_agent_write_waits_for_approval_then_deploys(service, writable, model):
    tab = first_tab(writable)
    before = deployed(writable)
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NEW_NODES}}]),
                 Reply(text="Added an inject and a debug node."))
    events = await events_of(await service.post("/ai-sidebar/stream-chat", json={
        "message": "add a ticking inject wired to a debug", "sessionId": "w1"}))
    print(json.dumps(events, indent=1)[:3000])
    assert [e["type"] for e in events][-2:] == ["approval_required", "done"]
    assert events[-1]["status"] == "awaiting_approval"
    assert deployed(writable) == before
    approval = events[-2]
    response = await service.post("/ai-sidebar/resume", json={"resumeToken": approval["resumeToken"],
                                                              "decisions": [{"type": "approve"}]})
    resumed = await events_of(response)
    print(json.dumps(resumed, indent=1)[:3000])
    after = deployed(writable)
    assert after["rev"] != before["rev"]
