"""Runtime evidence end to end, against a real Node-RED and the scripted model: a function node's ``node.error``
and a debug node's value reach the model, secrets in a debug payload never do, node status is read, the MCP server
answers the same tools from its own subscription, and evidence flows again after Node-RED restarts.

Nodes are triggered as the editor's inject button does it (``POST /inject/:id``, the inject node's admin route).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

import aiohttp
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import SecretStr

from mcp_server.server import NodeRedConfig, build_server
from service.nodered.client import NodeRedClient, admin_session
from service.nodered.comms import CommsSubscriber
from service.nodered.evidence import EvidenceBuffer
from service.nodered.settings import NodeRedSettings
from service.settings import Settings
from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.conftest import ADMIN_PASSWORD, ADMIN_USER, SERVICE_SECRET, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import read_events
from tests.support.writable import settings_for

TAB, OTHER_TAB = "e19a000000000001", "e19a000000000002"
INJECT_BOOM, THROWER = "e19a0000000000a1", "e19a0000000000f1"
INJECT_VALUE, READING = "e19a0000000000a2", "e19a0000000000d1"
INJECT_STATUS, SENSOR = "e19a0000000000a3", "e19a0000000000f2"
INJECT_OTHER, OTHER_THROWER = "e19a0000000000a4", "e19a0000000000f4"
SECRET_KEY = "sk-proj-Zq3xW9vL2mN8kP4rT6yB1cD5fG7hJ0aSxx"
PAYLOAD = {"temperature": 21.5, "unit": "C", "password": "hunter2", "apiKey": SECRET_KEY}


def inject(node_id: str, tab: str, wires: list[str], payload: str = "", payload_type: str = "date") -> dict:
    return {"id": node_id, "type": "inject", "z": tab, "name": "", "props": [{"p": "payload"}], "repeat": "",
            "crontab": "", "once": False, "topic": "", "payload": payload, "payloadType": payload_type,
            "x": 120, "y": 80, "wires": [wires]}


def function(node_id: str, tab: str, name: str, code: str) -> dict:
    return {"id": node_id, "type": "function", "z": tab, "name": name, "func": code, "outputs": 1, "timeout": 0,
            "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 300, "y": 80, "wires": [[]]}


FLOWS = [
    {"id": TAB, "type": "tab", "label": "Evidence", "disabled": False, "info": ""},
    {"id": OTHER_TAB, "type": "tab", "label": "Elsewhere", "disabled": False, "info": ""},
    inject(INJECT_BOOM, TAB, [THROWER]),
    function(THROWER, TAB, "thrower", 'node.error("boom 42", msg);\nreturn null;'),
    inject(INJECT_VALUE, TAB, [READING], json.dumps(PAYLOAD), "json"),
    {"id": READING, "type": "debug", "z": TAB, "name": "reading", "active": True, "tosidebar": True,
     "console": False, "tostatus": False, "complete": "payload", "targetType": "msg", "statusVal": "",
     "statusType": "auto", "x": 300, "y": 160, "wires": []},
    inject(INJECT_STATUS, TAB, [SENSOR]),
    function(SENSOR, TAB, "sensor", 'node.status({fill: "red", shape: "ring", text: "sensor offline"});\n'
                                    'return msg;'),
    inject(INJECT_OTHER, OTHER_TAB, [OTHER_THROWER]),
    function(OTHER_THROWER, OTHER_TAB, "elsewhere", 'node.error("other tab error", msg);\nreturn null;'),
]


@pytest.fixture(scope="module")
def evidence_nodered(tmp_path_factory):
    """Node-RED with the evidence tabs (its own: the restart test stops and starts it)."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-evidence"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
async def evidence_client(aiohttp_client, evidence_nodered, model, tmp_path):
    return await aiohttp_client(create_app(settings_for(evidence_nodered, model, tmp_path)))


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "") -> float:
    """Poll ``condition`` until true; returns the seconds it took. Fails the test after ``timeout``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def press(nodered: NodeRed, inject_id: str) -> int:
    """Press an inject node's button; returns Node-RED's HTTP status (200 once flows run)."""
    async with aiohttp.ClientSession() as http, http.post(f"{nodered.url}/inject/{inject_id}") as answer:
        return answer.status


async def chat(client, **body) -> list[dict]:
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


def errors_of(buffer, node_id: str) -> list[str]:
    return [e.preview() for e in buffer.select(node_ids=[node_id]) if e.kind == "error"]


async def test_why_does_this_flow_fail_gives_the_model_the_error_and_the_node_that_raised_it(
        evidence_client, evidence_nodered, model):
    buffer = evidence_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(evidence_nodered, INJECT_BOOM) == 200
    assert await press(evidence_nodered, INJECT_OTHER) == 200
    await wait_for(lambda: errors_of(buffer, THROWER) and errors_of(buffer, OTHER_THROWER), what="both errors")

    events = await chat(evidence_client, message="Why does this flow fail?", language="en-US",
                        selectedFlow={"id": TAB, "label": "Evidence"})
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["tool"], c["origin"]) for c in calls] == [("get_debug_messages", "keyword")]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and "boom 42" in result["result"]
    sent = json.dumps(model.requests[-1]["messages"], ensure_ascii=False)
    assert "boom 42" in sent and THROWER in sent and '"thrower"' in sent.replace('\\"', '"')
    assert "other tab error" not in sent  # only the selected tab's evidence
    assert events[-1]["type"] == "done"


async def test_the_value_a_debug_node_showed_reaches_the_model_and_its_secrets_never_do(
        evidence_client, evidence_nodered, model):
    buffer = evidence_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(evidence_nodered, INJECT_VALUE) == 200
    await wait_for(lambda: buffer.select(node_ids=[READING]), what="the debug node's message")

    model.script(Reply(tool_calls=[{"name": "get_debug_messages", "arguments": {"node_id": READING}}]),
                 Reply(text="The reading debug node showed 21.5 °C."))
    events = await chat(evidence_client, message="What value did the reading node show last?", language="en-US",
                        selectedFlow={"id": TAB, "label": "Evidence"})
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["get_debug_messages"]
    sent = json.dumps(model.requests[-1]["messages"], ensure_ascii=False)
    assert "21.5" in sent and READING in sent and "msg.payload" in sent
    everything = json.dumps([model.requests, events], ensure_ascii=False)
    assert "hunter2" not in everything and SECRET_KEY[:12] not in everything
    assert "[redacted]" in sent


async def test_node_status_is_read_for_the_selected_tab(evidence_client, evidence_nodered):
    buffer = evidence_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(evidence_nodered, INJECT_STATUS) == 200
    await wait_for(lambda: buffer.statuses([SENSOR]), what="the sensor node's status")
    response = await evidence_client.post("/ai-sidebar/execute-tool",
                                          json={"tool": "get_node_status", "params": {"flow_id": TAB}})
    assert response.status == 200, await response.text()
    statuses = (await response.json())["result"]["statuses"]
    assert [(s["nodeId"], s["nodeName"], s["fill"], s["shape"], s["text"]) for s in statuses] == [
        (SENSOR, "sensor", "red", "ring", "sensor offline")]


async def test_an_unknown_tab_fails_naming_the_tabs(evidence_client):
    response = await evidence_client.post("/ai-sidebar/execute-tool",
                                          json={"tool": "get_debug_messages", "params": {"flow_id": "no-such-tab"}})
    assert response.status == 404
    error = (await response.json())["error"]
    assert error["code"] == "flow_not_found" and '"Evidence" (e19a000000000001)' in error["message"]


async def test_the_mcp_server_answers_the_evidence_tools_from_its_own_subscription(evidence_nodered):
    server = build_server(NodeRedConfig(url=evidence_nodered.url))
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        for name in ("get_debug_messages", "get_node_status"):
            assert listed[name].annotations.readOnlyHint is True and listed[name].outputSchema

        async def connected() -> bool:
            answer = await session.call_tool("get_debug_messages", {"flow_id": TAB})
            return bool(answer.structuredContent and answer.structuredContent["connected"])

        deadline = time.monotonic() + 10
        while not await connected():
            assert time.monotonic() < deadline, "the MCP server did not subscribe within 10 s"
            await asyncio.sleep(0.05)
        assert await press(evidence_nodered, INJECT_BOOM) == 200
        while True:
            answer = await session.call_tool("get_debug_messages", {"flow_id": TAB, "since": 60})
            errors = answer.structuredContent["errors"]
            if errors:
                break
            assert time.monotonic() < deadline + 10, "no error reached the MCP server"
            await asyncio.sleep(0.05)
        assert errors[0]["nodeId"] == THROWER and errors[0]["value"] == "boom 42"
        assert errors[0]["nodeType"] == "function" and errors[0]["nodeName"] == "thrower"
        assert f"[{THROWER}] function \"thrower\"" in answer.content[0].text


async def test_the_mcp_server_offers_no_evidence_tool_when_evidence_is_off(evidence_nodered):
    from service.nodered.settings import EvidenceSettings

    server = build_server(NodeRedConfig(url=evidence_nodered.url), evidence=EvidenceSettings(enabled=False))
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
    assert "get_flow" in names and not names & {"get_debug_messages", "get_node_status"}


# "01 - Catch error.json": inject → function that throws; a catch node sends the whole msg to a debug node (a caught
# error is not logged by Node-RED, the debug node shows it in msg.error).
CATCH_EXAMPLE_INJECT, CATCH_EXAMPLE_DEBUG = "d1073c30.cb321", "f96f0ba7.cfe008"


async def admin_token(nodered: NodeRed) -> str:
    form = {"client_id": "node-red-admin", "grant_type": "password", "scope": "*", "username": ADMIN_USER,
            "password": ADMIN_PASSWORD}
    async with aiohttp.ClientSession() as http, http.post(f"{nodered.url}/auth/token", data=form) as answer:
        return (await answer.json())["access_token"]


async def test_with_admin_auth_the_subscriber_logs_in_like_the_editor(aiohttp_client, nodered_with_auth, model,
                                                                     tmp_path):
    settings = Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=nodered_with_auth.url, username=ADMIN_USER,
                                                password=SecretStr(ADMIN_PASSWORD)),
                        openai_base_url=model.base_url, openai_api_key=TEST_API_KEY,
                        memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False, knowledge_refresh=0)
    client = await aiohttp_client(create_app(settings))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms with the password grant's token")
    token = await admin_token(nodered_with_auth)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http, \
            http.post(f"{nodered_with_auth.url}/inject/{CATCH_EXAMPLE_INJECT}") as answer:
        assert answer.status == 200
    await wait_for(lambda: buffer.select(node_ids=[CATCH_EXAMPLE_DEBUG]), what="the caught error's debug message")
    caught = buffer.select(node_ids=[CATCH_EXAMPLE_DEBUG])[0].preview()
    assert '"payload": "Hello, World!"' in caught and "Error Occured!" in caught


async def test_with_admin_auth_and_no_credentials_the_refusal_is_reported_not_raised(aiohttp_client,
                                                                                    nodered_with_auth, model,
                                                                                    tmp_path, caplog):
    settings = Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=nodered_with_auth.url),
                        openai_base_url=model.base_url,
                        openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db",
                        mcp_tools_enabled=False, knowledge_refresh=0)
    client = await aiohttp_client(create_app(settings))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: "refused" in (buffer.last_error or ""), what="the refusal")
    assert not buffer.connected and "NODE_RED_USERNAME" in buffer.state()
    assert (await client.get("/healthz")).status == 200
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_debug_messages", "params": {}})
    assert response.status == 403  # reading the flows is refused too: Node-RED's own answer, with its code
    assert (await response.json())["error"]["code"] == "nodered_unauthorized"


async def test_evidence_flows_again_within_ten_seconds_after_node_red_restarts(evidence_client, evidence_nodered):
    """Runs last in this module: it stops and starts the module's Node-RED (same port, same user dir)."""
    buffer = evidence_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    await asyncio.to_thread(evidence_nodered.stop)
    await wait_for(lambda: not buffer.connected, what="the subscriber noticing Node-RED stopped")
    before = max((e.seq for e in buffer.select(node_ids=[THROWER])), default=0)
    await asyncio.to_thread(evidence_nodered.start)
    up = time.monotonic()
    # The promise of comms.BACKOFF (retries at most 3 s apart, the flows started before `up`): about 3.5 s expected,
    # so the 10 s it promises is a bound 3× above what a loaded machine takes.
    while not any(e.seq > before for e in buffer.select(node_ids=[THROWER])):
        assert time.monotonic() - up < 10, f"no evidence within 10 s of the restart ({buffer.state()})"
        if buffer.connected:
            await press(evidence_nodered, INJECT_BOOM)  # 404 until the flows have started: pressed again
        await asyncio.sleep(0.2)
    assert buffer.connected and errors_of(buffer, THROWER)[0] == "boom 42"


async def test_a_node_red_that_starts_after_the_service_is_waited_for_without_a_warning(tmp_path, caplog):
    """``make run`` starts the service before Node-RED: until the subscriber has connected once, a Node-RED that
    is not reachable is told once at info level; it connects when Node-RED comes."""
    caplog.set_level(logging.INFO, logger="service.nodered.comms")
    late = NodeRed(userdir=tmp_path / "late", port=free_port(), with_palette=False)
    buffer = EvidenceBuffer()
    async with admin_session() as session:
        subscriber = CommsSubscriber(NodeRedClient(late.url, session), session, buffer, backoff=(0.2, 0.5))
        subscriber.start()
        try:
            for _ in range(600):
                if buffer.last_error is not None:
                    break
                await asyncio.sleep(0.05)
            assert buffer.last_error is not None and not buffer.connected
            await asyncio.to_thread(late.start)
            for _ in range(1200):
                if buffer.connected:
                    break
                await asyncio.sleep(0.1)
            assert buffer.connected
        finally:
            await subscriber.stop()
            late.stop()
    waiting = [r for r in caplog.records if "not reachable yet" in r.getMessage()]
    assert waiting and all(r.levelno == logging.INFO for r in waiting)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
