"""The service runs get_settings / get_diagnostics through its own MCP server, and any tool through execute-tool:
each test on both transports, the server in the service's process over memory streams (the default) and as a stdio
child (``MCP_TRANSPORT=stdio``, or ``MCP_SERVER_PATH``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr, ValidationError

from service.nodered.settings import NodeRedSettings
from service.settings import Settings
from service.tools.mcp_client import McpTools
from service.tools.mcp_memory import IN_PROCESS, InProcessServer, build_bundled
from service.web.app import create_app
from service.web.keys import TOOLS
from tests.conftest import ADMIN_PASSWORD, ADMIN_USER, SERVICE_TOKEN, TEST_API_KEY
from tests.support.health import START_TIMEOUT, wait_healthy
from tests.support.model_server import Reply
from tests.support.nodered import NODERED_HOME, REPO, free_port
from tests.support.sse import read_events

NODERED_VERSION = json.loads((NODERED_HOME / "package.json").read_text())["version"]


def types(events):
    return [e["type"] for e in events]


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


@pytest.fixture(params=["memory", "stdio"])
def transport(request) -> str:
    """How the service reaches its MCP server in this test (``MCP_TRANSPORT``)."""
    return request.param


def with_mcp(settings, transport: str, **update):
    """``settings`` with MCP tools on over ``transport``, and ``update`` on top."""
    return settings.model_copy(update={"mcp_tools_enabled": True, "mcp_transport": transport, **update})


@pytest.fixture
async def mcp_client(aiohttp_client, settings, transport):
    """The service with MCP tools on: its MCP server is the real bundled one reading the fixture Node-RED, in the
    service's process or as a stdio child."""
    return await aiohttp_client(create_app(with_mcp(settings, transport)))


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
                                                                                       model, transport,
                                                                                       nodered_without_diagnostics):
    app = create_app(with_mcp(settings, transport, nodered=NodeRedSettings(url=nodered_without_diagnostics.url)))
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
                                                                                      transport,
                                                                                      nodered_without_diagnostics):
    app = create_app(with_mcp(settings, transport, nodered=NodeRedSettings(url=nodered_without_diagnostics.url)))
    client = await aiohttp_client(app)
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_diagnostics"})
    assert response.status == 403
    error = (await response.json())["error"]
    assert error["code"] == "diagnostics_disabled" and "settings.js" in error["message"]
    # The same through @tools: in a stream.
    events = await chat(client, message="@tools:get_diagnostics")
    assert [e["code"] for e in events if e["type"] == "error"] == ["diagnostics_disabled"]


@pytest.mark.parametrize("transport", ["stdio"])
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
    assert not broken.mcp_in_process
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
    assert not broken.mcp_in_process
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
                                                                                transport, nodered_with_auth):
    app = create_app(with_mcp(settings, transport, nodered=NodeRedSettings(
        url=nodered_with_auth.url, username=ADMIN_USER, password=SecretStr(ADMIN_PASSWORD))))
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


async def test_by_default_the_mcp_server_runs_in_the_services_process(aiohttp_client, settings, model):
    default = settings.model_copy(update={"mcp_tools_enabled": True})
    assert default.mcp_transport is None and default.mcp_server_path is None
    client = await aiohttp_client(create_app(default))
    events = await chat(client, message="@tools:get_settings")
    assert events[1]["ok"] is True and NODERED_VERSION in events[1]["result"]
    mcp = client.server.app[TOOLS].mcp
    assert mcp.command == [IN_PROCESS] and mcp.starts == 1
    assert mcp_children() == []  # the test process is the service: no second Python process under it
    assert "mcp_server.server" in sys.modules


async def test_mcp_server_path_still_runs_the_server_as_a_stdio_child(aiohttp_client, settings, model):
    path = settings.model_copy(update={"mcp_tools_enabled": True,
                                       "mcp_server_path": f"{sys.executable} -m mcp_server"})
    assert not path.mcp_in_process
    client = await aiohttp_client(create_app(path))
    events = await chat(client, message="@tools:get_settings")
    assert events[1]["ok"] is True and NODERED_VERSION in events[1]["result"]
    assert len(mcp_children()) == 1


def test_mcp_transport_memory_with_a_server_path_is_refused_at_start():
    with pytest.raises(ValidationError, match="MCP_SERVER_PATH"):
        Settings(mcp_transport="memory", mcp_server_path="nodered-mcp")
    assert Settings(mcp_transport="stdio").mcp_in_process is False
    assert Settings().mcp_in_process is True


@pytest.mark.parametrize("enabled", [False, True])
def test_the_mcp_server_package_is_imported_only_when_the_service_starts_it(enabled):
    # A fresh interpreter: this one has imported mcp_server already.
    code = ("import sys; from service.settings import Settings; from service.web.app import create_app; "
            f"create_app(Settings(mcp_tools_enabled={enabled})); print(sorted(m for m in sys.modules "
            "if m.split('.')[0] == 'mcp_server'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout


class _Crash(BaseException):
    """Escapes the MCP SDK's handlers (which answer an ``Exception`` as an error result): the run dies."""


async def test_an_in_process_server_that_crashes_during_a_call_is_started_again_and_the_call_retried(settings):
    crashes = []

    def build():
        server = build_bundled(settings)

        @server.tool(name="crash_once")
        async def crash_once() -> str:
            if not crashes:
                crashes.append(1)
                raise _Crash("the server task died")
            return "second run answered"

        return server

    server = InProcessServer(build)
    tools = McpTools([IN_PROCESS], {}, start_timeout=60, transport=server.connect)
    try:
        output = await tools.call("crash_once", {})
        assert output.text == "second run answered"
        assert crashes == [1] and server.runs == 2 and tools.starts == 2
        # The new run serves the real tools too.
        settings_read = await tools.call("get_settings", {})
        assert settings_read.data["nodeRedVersion"] == NODERED_VERSION
    finally:
        await tools.close()
    assert server.runs == 2


async def test_an_in_process_server_stopped_between_calls_is_started_again(settings):
    server = InProcessServer.from_settings(settings)
    tools = McpTools([IN_PROCESS], {}, start_timeout=60, transport=server.connect)
    try:
        assert (await tools.call("get_settings", {})).data["nodeRedVersion"] == NODERED_VERSION
        child = tools._child
        assert child is not None and child.task is not None
        child.task.cancel()  # the run's supervisor goes away, as a child that exited
        with contextlib.suppress(asyncio.CancelledError):
            await child.task
        assert (await tools.call("get_settings", {})).data["nodeRedVersion"] == NODERED_VERSION
        assert tools.starts == 2 and server.runs == 2
    finally:
        await tools.close()


async def test_two_users_calls_interleaved_each_read_with_their_own_token(aiohttp_client, settings, transport,
                                                                          nodered_with_auth):
    app = create_app(with_mcp(settings, transport, nodered=NodeRedSettings(
        url=nodered_with_auth.url, username=ADMIN_USER, password=SecretStr(ADMIN_PASSWORD))))
    client = await aiohttp_client(app)
    async with aiohttp.ClientSession() as http:
        form = {"client_id": "node-red-admin", "grant_type": "password", "scope": "*", "username": ADMIN_USER,
                "password": ADMIN_PASSWORD}
        async with http.post(f"{nodered_with_auth.url}/auth/token", data=form) as response:
            assert response.status == 200
            admin_token = (await response.json())["access_token"]
    assert (await client.post("/ai-sidebar/execute-tool", json={"tool": "get_flows"})).status == 200  # started

    async def call(token: str) -> int:
        response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get_settings"},
                                     headers={"X-Node-RED-Token": token})
        return response.status

    tokens = [admin_token if number % 2 == 0 else f"revoked-token-{number}" for number in range(24)]
    statuses = await asyncio.gather(*(call(token) for token in tokens))
    assert statuses == [200 if token == admin_token else 403 for token in tokens]


def process_children(pid: int) -> list[list[str]]:
    """Command lines of the live descendants of ``pid`` (``/proc/<pid>/task/*/children``, proc(5))."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    queue.append(int(child))
                    with contextlib.suppress(OSError):
                        found.append([part.decode() for part in
                                      Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0") if part])
    return found


@pytest.mark.parametrize("extra, children", [
    ({}, 0),
    ({"MCP_SERVER_PATH": f"{sys.executable} -m mcp_server"}, 1),
])
def test_the_service_process_has_an_mcp_child_only_with_mcp_server_path(nodered, tmp_path, extra, children):
    port = free_port()
    env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "NODE_RED_URL": nodered.url,
           "OPENAI_API_KEY": TEST_API_KEY, "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "AI_SIDEBAR_WORKERS": "1",
           "MCP_TOOLS_ENABLED": "true", **extra}
    env.pop("MCP_TRANSPORT", None)
    log = (tmp_path / "service.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=log, stderr=subprocess.STDOUT,
                               cwd=REPO)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", process, START_TIMEOUT)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/ai-sidebar/execute-tool",
                                         data=json.dumps({"tool": "get_settings"}).encode(),
                                         headers={"Authorization": f"Bearer {SERVICE_TOKEN}",
                                                  "Content-Type": "application/json"})
        # The tool call waits for the MCP server's start: after it, a child would be running.
        with urllib.request.urlopen(request, timeout=START_TIMEOUT) as answer:
            assert json.loads(answer.read())["result"]["nodeRedVersion"] == NODERED_VERSION
        mcp = [command for command in process_children(process.pid) if "mcp_server" in command]
        assert len(mcp) == children, (mcp, (tmp_path / "service.log").read_text())
    finally:
        process.terminate()
        process.wait(30)
        log.close()
