"""The service runs get_settings / get_diagnostics through its MCP child, and any tool through execute-tool."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from service.nodered.settings import NodeRedSettings
from service.web.app import create_app
from service.web.keys import TOOLS
from tests.conftest import ADMIN_PASSWORD, ADMIN_USER
from tests.support.model_server import Reply
from tests.support.nodered import NODERED_HOME
from tests.support.sse import read_events

NODERED_VERSION = json.loads((NODERED_HOME / "package.json").read_text())["version"]


def types(events):
    return [e["type"] for e in events]


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


@pytest.fixture
async def mcp_client(aiohttp_client, settings):
    """The service with MCP tools on: its MCP server is a real stdio child reading the fixture Node-RED."""
    return await aiohttp_client(create_app(settings.model_copy(update={"mcp_tools_enabled": True})))


def mcp_children() -> list[int]:
    """Pids of this process's children running ``-m mcp_server`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"mcp_server" in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z":
            pids.append(int(entry.name))
    return pids


async def test_direct_trigger_runs_get_settings_in_the_mcp_child(mcp_client, model):
    model.script(Reply(text="You run Node-RED " + NODERED_VERSION))
    events = await chat(mcp_client, message="@tools:get_settings")
    assert types(events)[:2] == ["tool_call", "tool_result"]
    assert events[0] == {"type": "tool_call", "tool": "get_settings", "params": {}, "origin": "direct"}
    assert events[1]["ok"] is True and f"Node-RED {NODERED_VERSION} runtime settings" in events[1]["result"]
    assert "error" not in types(events) and types(events)[-1] == "done"
    assert NODERED_VERSION in model.requests[-1]["messages"][-1]["content"]


async def test_current_config_keyword_streams_get_settings_from_the_mcp_child(mcp_client, model):
    events = await chat(mcp_client, message="show me the current config", language="en-US")
    assert events[0] == {"type": "tool_call", "tool": "get_settings", "params": {}, "origin": "keyword"}
    assert events[1]["ok"] is True and '"httpNodeRoot"' in events[1]["result"]
    assert "token" in types(events) and types(events)[-1] == "done"
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert "show me the current config" in prompt and NODERED_VERSION in prompt


async def test_disabled_diagnostics_gives_one_diagnostics_disabled_error_then_an_answer(aiohttp_client, settings,
                                                                                       model,
                                                                                       nodered_without_diagnostics):
    app = create_app(settings.model_copy(update={"mcp_tools_enabled": True,
                                                 "nodered": NodeRedSettings(url=nodered_without_diagnostics.url)}))
    client = await aiohttp_client(app)
    model.script(Reply(text="Diagnostics are off, but here is what I can say."))
    events = await chat(client, message="run the diagnostics please", language="en-US")
    assert types(events)[:3] == ["tool_call", "tool_result", "error"]
    assert events[0]["tool"] == "get_diagnostics" and events[1]["ok"] is False
    assert events[2]["code"] == "diagnostics_disabled"
    assert events[2]["message"].startswith("Diagnostics are turned off")
    assert types(events).count("error") == 1
    assert "token" in types(events) and types(events)[-1] == "done"
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert "Diagnostics are turned off" in prompt
    # The keyword's task speaks of a report that never came: after a failed read it is not sent.
    assert "diagnostics report above" not in prompt and "run the diagnostics please" in prompt


async def test_execute_tool_with_diagnostics_turned_off_is_a_403_diagnostics_disabled(aiohttp_client, settings,
                                                                                      nodered_without_diagnostics):
    app = create_app(settings.model_copy(update={"mcp_tools_enabled": True,
                                                 "nodered": NodeRedSettings(url=nodered_without_diagnostics.url)}))
    client = await aiohttp_client(app)
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_diagnostics"})
    assert response.status == 403
    error = (await response.json())["error"]
    assert error["code"] == "diagnostics_disabled" and "settings.js" in error["message"]
    # The same through @tools: in a stream.
    events = await chat(client, message="@tools:get_diagnostics")
    assert [e["code"] for e in events if e["type"] == "error"] == ["diagnostics_disabled"]


async def test_killing_the_mcp_child_between_two_chats_does_not_lose_the_second_answer(mcp_client, model):
    first = await chat(mcp_client, message="@tools:get_settings")
    assert first[1]["ok"] is True
    children = mcp_children()
    assert len(children) == 1
    os.kill(children[0], signal.SIGKILL)

    second = await chat(mcp_client, message="@tools:get_settings")
    assert second[1]["ok"] is True and NODERED_VERSION in second[1]["result"]
    assert "error" not in types(second)
    assert mcp_client.server.app[TOOLS].mcp.starts == 2
    assert mcp_children() != children


async def test_a_child_that_cannot_start_leaves_the_service_up_and_gives_tool_failed(aiohttp_client, settings,
                                                                                   model):
    broken = settings.model_copy(update={"mcp_tools_enabled": True,
                                         "mcp_server_path": f"{sys.executable} -c 'raise SystemExit(3)'"})
    client = await aiohttp_client(create_app(broken))
    assert (await client.get("/healthz")).status == 200
    events = await chat(client, message="@tools:get_settings")
    assert types(events)[:3] == ["tool_call", "tool_result", "error"]
    assert events[2]["code"] == "tool_failed" and "MCP server is not available" in events[2]["message"]
    assert "token" in types(events) and types(events)[-1] == "done"


async def test_an_agent_question_while_the_mcp_child_is_down_is_answered_with_the_services_own_tools(
        aiohttp_client, settings, model):
    broken = settings.model_copy(update={"mcp_tools_enabled": True,
                                         "mcp_server_path": f"{sys.executable} -c 'raise SystemExit(3)'"})
    client = await aiohttp_client(create_app(broken))
    model.script(Reply(text="Hello there."))
    events = await chat(client, message="Hello!")
    assert set(types(events)) == {"token", "done"}, events
    assert "".join(e["content"] for e in events if e["type"] == "token") == "Hello there."
    offered = {tool["function"]["name"] for tool in model.requests[-1]["tools"]}
    assert "get_flow" in offered and "get_flows" not in offered  # get_flows is the MCP child's


async def test_the_first_agent_question_waits_for_the_mcp_childs_tools(mcp_client, model):
    model.script(Reply(text="Hello there."))
    events = await chat(mcp_client, message="Hello!")
    assert set(types(events)) == {"token", "done"}, events
    assert "get_flows" in {tool["function"]["name"] for tool in model.requests[-1]["tools"]}


async def test_execute_tool_runs_mcp_and_built_in_tools_by_name(mcp_client, nodered):
    response = await mcp_client.post("/ai-sidebar/execute-tool", json={"tool": "get_settings", "params": {}})
    assert response.status == 200
    body = await response.json()
    assert body["tool"] == "get_settings" and body["result"]["nodeRedVersion"] == NODERED_VERSION

    response = await mcp_client.post("/ai-sidebar/execute-tool", json={"tool": "get_flows"})
    assert {t["id"] for t in nodered.tabs()} <= {f["id"] for f in (await response.json())["result"]["flows"]}

    tab = nodered.tabs()[0]
    response = await mcp_client.post("/ai-sidebar/execute-tool",
                                     json={"tool": "get_flow", "params": {"flow_id": tab["id"]}})
    assert response.status == 200 and (await response.json())["result"]["id"] == tab["id"]

    response = await mcp_client.post("/ai-sidebar/execute-tool",
                                     json={"tool": "list_node_types", "params": ["node-red"]})
    assert response.status == 200
    assert {e["module"] for e in (await response.json())["result"]["nodeTypes"]} == {"node-red"}


@pytest.mark.parametrize("body, status, code, names", [
    ({"tool": "no-such-tool"}, 404, "unknown_tool", "no-such-tool"),
    ({"tool": "get_flow", "params": {"flow_id": 5}}, 400, "invalid_params", "flow_id"),
    ({"tool": "list_node_types", "params": {"modul": "node-red"}}, 400, "invalid_params", "modul"),
    ({"tool": "list_node_types", "params": {"module": 7}}, 400, "invalid_params", "module"),
    ({"tool": "get_flow", "params": {"flow_id": "no-such-tab"}}, 404, "flow_not_found", "no-such-tab"),
    ({"params": {}}, 400, "invalid_request", "tool"),
])
async def test_execute_tool_errors_name_the_tool_or_field(mcp_client, body, status, code, names):
    response = await mcp_client.post("/ai-sidebar/execute-tool", json=body)
    assert response.status == status
    error = (await response.json())["error"]
    assert error["code"] == code and names in error["message"]


async def test_a_forwarded_user_token_is_not_widened_to_the_service_credentials(aiohttp_client, settings,
                                                                                nodered_with_auth):
    app = create_app(settings.model_copy(update={
        "mcp_tools_enabled": True,
        "nodered": NodeRedSettings(url=nodered_with_auth.url, username=ADMIN_USER,
                                   password=SecretStr(ADMIN_PASSWORD))}))
    client = await aiohttp_client(app)
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_settings"})
    assert response.status == 200

    headers = {"X-Node-RED-Token": "token-of-a-logged-out-user"}
    # MCP tools keep Node-RED's code through the MCP child, like the in-process get_flow below.
    for tool in ("get_settings", "get_flows"):
        response = await client.post("/ai-sidebar/execute-tool", json={"tool": tool}, headers=headers)
        assert response.status == 403
        error = (await response.json())["error"]
        assert error["code"] == "nodered_unauthorized" and "refused" in error["message"]
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_flow", "params": ["x"]},
                                 headers=headers)
    assert response.status == 403 and (await response.json())["error"]["code"] == "nodered_unauthorized"
