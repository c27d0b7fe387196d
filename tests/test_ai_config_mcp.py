"""External MCP servers of an ai-config node (issue 22): they travel with the node's provider settings, the service
connects to a streamable HTTP one with the node's secret headers and keeps that connection for the next request,
refuses a stdio one unless its operator allows it, and names an unavailable server in the user's language.

The MCP server is real: ``tests.support.many_tools_server --few --http PORT`` (the SDK's FastMCP over streamable
HTTP), whose ``whoami`` tool answers with the ``Authorization`` header and MCP session id it was called with.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from service.settings import McpServerConfig
from service.web.app import create_app
from tests.conftest import SERVICE_TOKEN
from tests.support.health import START_TIMEOUT, stop_process
from tests.support.model_server import Reply
from tests.support.nodered import REPO, NodeRed, free_port
from tests.support.sse import read_events
from tests.test_ai_chat_node import CONFIG_ID, ask, ask_over_http_flow, wait_for_log

HEADER = "Bearer mcp-header-secret-4e7d1a90c2"
ENV_VALUE = "mcp-env-secret-91b3c5d7e2"


@pytest.fixture
def settings(settings):
    """The in-process service's settings, its operator allowing MCP servers of requests on 127.0.0.1, where this
    module's servers run (a non-public address is refused otherwise: tests/test_mcp_url_guard.py)."""
    return settings.model_copy(update={"mcp_allowed_hosts": "127.0.0.1"})


@pytest.fixture(scope="module")
def http_mcp():
    """A streamable HTTP MCP server on a free port: ``(url, process)``."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.support.many_tools_server", "--few", "--http",
                                str(port)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if process.poll() is not None:
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "the MCP server exited")
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", process
    stop_process(process)


def provider(model, *servers: dict) -> dict:
    return {"provider": "openai-compatible", "baseUrl": model.base_url, "model": "scripted", "apiKey": "sk-node-1",
            "mcpServers": list(servers)}


async def chat(client, message: str, **body) -> tuple[int, list[dict] | dict]:
    response = await client.post("/ai-sidebar/stream-chat", json={"message": message, **body})
    if response.status != 200:
        return response.status, await response.json()
    return 200, await read_events(response)


def whoami_result(events: list[dict]) -> str:
    results = [e for e in events if e["type"] == "tool_result" and e["tool"] == "docs__whoami"]
    assert results and results[0]["ok"], events
    return results[0]["result"]


async def test_a_requests_http_server_is_called_with_its_headers_and_its_connection_is_reused(
        aiohttp_client, settings, model, http_mcp, caplog):
    url, _ = http_mcp
    client = await aiohttp_client(create_app(settings))
    caplog.set_level(logging.DEBUG)
    docs = {"name": "docs", "url": url, "headers": {"Authorization": HEADER}}
    sessions = []
    for question in ("who calls the docs server?", "and again?"):
        model.script(Reply(tool_calls=[{"name": "docs__whoami", "arguments": {}}]), Reply(text="Answered."))
        status, events = await chat(client, question, provider=provider(model, docs))
        assert status == 200 and events[-1]["type"] == "done"
        assert not [e for e in events if e["type"] in ("error", "notice")], events
        offered = [tool["function"]["name"] for tool in model.requests[-2]["tools"]]
        assert {"docs__echo", "docs__whoami"} <= set(offered)
        result = whoami_result(events)
        assert f"authorization={HEADER}" in result
        sessions.append(result.split("session=")[1])
    # One MCP session for both requests: the pooled connection of that definition, not a new one per request.
    assert sessions[0] == sessions[1] and sessions[0] != "None"

    # The header's value is logged by no one (whoami above echoes it on purpose, so the log is checked after it).
    caplog.clear()
    model.script(Reply(tool_calls=[{"name": "docs__echo", "arguments": {"text": "hi"}}]), Reply(text="Echoed."))
    status, events = await chat(client, "echo hi", provider=provider(model, docs))
    assert [e["result"] for e in events if e["type"] == "tool_result"] == ["echo: hi"]
    assert caplog.text and HEADER.split()[1] not in caplog.text

    # A request without the node's servers does not get their tools.
    model.script(Reply(text="No docs tools."))
    status, events = await chat(client, "anything else?", provider=provider(model))
    assert not [tool for tool in model.requests[-1].get("tools", []) if tool["function"]["name"].startswith("docs__")]


async def test_another_header_value_is_another_connection(aiohttp_client, settings, model, http_mcp):
    url, _ = http_mcp
    client = await aiohttp_client(create_app(settings))
    sessions = []
    for header in ("Bearer first-value-0001", "Bearer second-value-0002"):
        model.script(Reply(tool_calls=[{"name": "docs__whoami", "arguments": {}}]), Reply(text="Answered."))
        docs = {"name": "docs", "url": url, "headers": {"Authorization": header}}
        _, events = await chat(client, "who?", provider=provider(model, docs))
        result = whoami_result(events)
        assert f"authorization={header}" in result
        sessions.append(result.split("session=")[1])
    assert sessions[0] != sessions[1]


async def test_a_stdio_server_from_a_request_is_refused_unless_the_operator_allows_it(aiohttp_client, settings,
                                                                                      model):
    tracker = {"name": "tracker", "command": sys.executable,
               "args": ["-m", "tests.support.many_tools_server", "--few"],
               "env": {"PYTHONPATH": str(REPO), "TRACKER_TOKEN": ENV_VALUE}}
    client = await aiohttp_client(create_app(settings))
    status, body = await chat(client, "hello", provider=provider(model, tracker))
    assert status == 403 and body["error"]["code"] == "mcp_stdio_not_allowed"
    assert "tracker" in body["error"]["message"] and "AI_SIDEBAR_MCP_REQUEST_STDIO" in body["error"]["message"]
    assert ENV_VALUE not in json.dumps(body) and model.requests == []
    status, body = await chat(client, "hallo", provider=provider(model, tracker), language="de")
    assert status == 403 and "nur aus seiner eigenen Konfiguration" in body["error"]["message"]

    allowed = await aiohttp_client(create_app(settings.model_copy(update={"mcp_request_stdio": True})))
    model.script(Reply(tool_calls=[{"name": "tracker__echo", "arguments": {"text": "hi"}}]), Reply(text="Done."))
    status, events = await chat(allowed, "echo hi", provider=provider(model, tracker))
    assert status == 200
    results = [e for e in events if e["type"] == "tool_result" and e["tool"] == "tracker__echo"]
    assert results and results[0] == {**results[0], "ok": True, "result": "echo: hi"}, events


async def test_a_request_server_named_like_one_of_the_services_own_is_a_400(aiohttp_client, settings, model,
                                                                            http_mcp):
    url, _ = http_mcp
    own = McpServerConfig(name="docs", url=url)
    client = await aiohttp_client(create_app(settings.model_copy(update={"mcp_servers": [own]})))
    status, body = await chat(client, "hello", provider=provider(model, {"name": "docs", "url": url}))
    assert status == 400 and body["error"]["code"] == "invalid_request" and "docs" in body["error"]["message"]


@pytest.mark.parametrize(("language", "sentence"), [
    ("de", "Der MCP-Server offline ist nicht verfügbar"),
    ("ja", "MCP サーバー offline は利用できません"),
])
async def test_an_unavailable_server_is_named_in_the_users_language(aiohttp_client, settings, model, language,
                                                                    sentence):
    closed = {"name": "offline", "url": f"http://127.0.0.1:{free_port()}/mcp", "startTimeout": 5}
    client = await aiohttp_client(create_app(settings))
    model.script(Reply(text="Answered without it."))
    status, events = await chat(client, "hello", provider=provider(model, closed), language=language)
    assert status == 200
    notices = [e for e in events if e["type"] == "notice"]
    assert len(notices) == 1 and notices[0]["code"] == "mcp_server_unavailable", events
    assert notices[0]["server"] == "offline" and notices[0]["reason"]
    assert notices[0]["message"].startswith(sentence), notices[0]["message"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == "Answered without it."


@pytest.fixture(scope="module")
def node_red_with_mcp(tmp_path_factory, service_process, model_server, http_mcp):
    """Node-RED running the "Ask over HTTP" example whose ai-config node names the HTTP MCP server, its header
    value deployed as the node's ``mcpSecrets`` credential (as the editor deploys it)."""
    url, _ = http_mcp
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-ai-config-mcp"), port=free_port(),
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_process.service_port}",
                            "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    instance.start()
    flows = ask_over_http_flow(model_server.base_url)
    config = next(node for node in flows if node["id"] == CONFIG_ID)
    next(node for node in flows if node["type"] == "ai-chat")["tools"] = True  # the example ships without tools
    config["mcpServers"] = [{"id": "srv1", "name": "docs", "transport": "http", "url": url,
                             "secrets": ["Authorization"], "unset": []}]
    config["credentials"]["mcpSecrets"] = json.dumps({"srv1": {"Authorization": HEADER}})
    request = urllib.request.Request(f"{instance.url}/flows", data=json.dumps(flows).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Node-RED-Deployment-Type": "full"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    wait_for_log(instance, "Started flows", 2)
    yield instance
    instance.stop()


async def test_an_ai_chat_node_reaches_its_config_nodes_mcp_server_and_the_header_stays_a_secret(
        node_red_with_mcp, service_process, model):
    model.script(Reply(tool_calls=[{"name": "docs__whoami", "arguments": {}}]), Reply(text="The docs server knows."))
    status, text = await ask(node_red_with_mcp.url, "Who calls the docs server?")
    assert (status, text) == (200, "The docs server knows.")
    tool_message = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool")
    assert f"authorization={HEADER}" in str(tool_message["content"])
    # flows.json holds the server without the header's value; the credentials file holds it encrypted.
    userdir = node_red_with_mcp.userdir
    flows_file = next(path for path in userdir.glob("flows*.json") if "_cred" not in path.name)
    saved = next(node for node in json.loads(flows_file.read_text()) if node["id"] == CONFIG_ID)
    assert saved["mcpServers"][0]["secrets"] == ["Authorization"] and "credentials" not in saved
    secret = HEADER.split()[1]
    for path in userdir.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert secret not in path.read_text(errors="replace"), path
    assert secret not in service_process.log_path.read_text(errors="replace")
