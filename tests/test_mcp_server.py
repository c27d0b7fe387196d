"""The MCP server against real Node-RED instances, through the SDK's own clients (stdio and streamable HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import SecretStr

from mcp_server.server import ERROR_META, USER_TOKEN_META, NodeRedConfig, build_server
from service.nodered.client import NodeRedClient, NodeRedCredentials, admin_session
from tests.conftest import ADMIN_PASSWORD, ADMIN_USER
from tests.support.health import START_TIMEOUT, stop_process
from tests.support.nodered import NODERED_HOME, REPO, free_port

ALL_TOOLS = {"get_settings", "get_diagnostics", "get_flows", "get_flow", "get_node_info", "list_node_types",
             "search_node_docs", "search_workspace", "get_debug_messages", "get_node_status", "flow_diagram"}
NODERED_VERSION = json.loads((NODERED_HOME / "package.json").read_text())["version"]
HTTP_TOKEN = "mcp-http-token-for-tests-0123"


@asynccontextmanager
async def stdio_session(**env: str):
    """A real MCP client session with ``python -m mcp_server`` as a stdio child."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server"], env=env, cwd=REPO)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str | None = HTTP_TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http, \
            streamable_http_client(url, http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


async def assert_every_tool_answers_from(session: ClientSession, nodered) -> None:
    """List the tools and call the ones that read the Admin API; the answers must carry the real version, tab ids
    and node types."""
    listed = await session.list_tools()
    assert {tool.name for tool in listed.tools} == ALL_TOOLS
    for tool in listed.tools:
        assert tool.annotations.readOnlyHint is True and tool.annotations.destructiveHint is False
        assert tool.outputSchema and len(tool.description) > 80

    settings = await session.call_tool("get_settings", {})
    assert not settings.isError, text_of(settings)
    assert settings.structuredContent["nodeRedVersion"] == NODERED_VERSION
    assert NODERED_VERSION in text_of(settings)

    diagnostics = await session.call_tool("get_diagnostics", {})
    assert not diagnostics.isError, text_of(diagnostics)
    assert diagnostics.structuredContent["report"]["runtime"]["version"] == NODERED_VERSION

    flows = await session.call_tool("get_flows", {})
    summaries = {f["id"]: f for f in flows.structuredContent["flows"]}
    assert {t["id"] for t in nodered.tabs()} <= set(summaries)
    tab = max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))
    assert summaries[tab["id"]]["nodeCount"] == len(nodered.nodes_of(tab["id"]))
    assert summaries[tab["id"]]["nodeTypes"] == sorted({n["type"] for n in nodered.nodes_of(tab["id"])})

    flow = await session.call_tool("get_flow", {"flow_id": tab["id"]})
    assert [n["id"] for n in flow.structuredContent["nodes"]] == [n["id"] for n in nodered.nodes_of(tab["id"])]
    node = nodered.nodes_of(tab["id"])[0]
    assert f"[{node['id']}] {node['type']}" in text_of(flow)

    info = await session.call_tool("get_node_info", {"node_ids": [node["id"], "no-such-node"]})
    described = info.structuredContent["nodes"][0]
    assert (described["id"], described["type"], described["module"]) == (node["id"], node["type"], "node-red")
    assert info.structuredContent["missing"] == ["no-such-node"]

    types = await session.call_tool("list_node_types", {"module": "node-red"})
    entries = {e["type"]: e for e in types.structuredContent["nodeTypes"]}
    assert {"inject", "debug", "function", "mqtt in"} <= set(entries)
    assert entries["inject"]["version"] == NODERED_VERSION
    assert text_of(types).startswith(f"{len(entries)} node types from 1 module:")

    docs = await session.call_tool("search_node_docs", {"query": "parse CSV", "limit": 3})
    assert not docs.isError, text_of(docs)
    first = docs.structuredContent["results"][0]
    assert first["metadata"]["type"] == "csv" and first["citation"].startswith(f"csv (node-red@{NODERED_VERSION})")
    assert f"[source: csv (node-red@{NODERED_VERSION})" in text_of(docs)
    functions = sum(1 for n in nodered.flows if n.get("type") == "function")
    counts = await session.call_tool("search_workspace", {"query": "how many nodes of each type"})
    assert not counts.isError, text_of(counts)
    assert counts.structuredContent["results"][0]["key"] == "summary#counts"
    assert not functions or f"function: {functions} nodes" in text_of(counts)


async def test_stdio_session_lists_all_tools_and_each_answers_from_real_node_red(nodered):
    async with stdio_session(NODE_RED_URL=nodered.url) as session:
        await assert_every_tool_answers_from(session, nodered)


async def test_unknown_flow_and_node_ids_are_tool_errors_naming_the_tabs(nodered):
    async with stdio_session(NODE_RED_URL=nodered.url) as session:
        flow = await session.call_tool("get_flow", {"flow_id": "no-such-tab"})
        assert flow.isError and "no tab or subflow with id no-such-tab" in text_of(flow)
        assert nodered.tabs()[0]["id"] in text_of(flow)
        nodes = await session.call_tool("get_node_info", {"node_ids": ["nope"]})
        assert nodes.isError and "No node has the id nope" in text_of(nodes)
        module = await session.call_tool("list_node_types", {"module": "node-red-contrib-nothing"})
        assert module.isError and "not installed" in text_of(module)


async def test_disabled_diagnostics_is_a_tool_error_saying_so(nodered_without_diagnostics):
    async with stdio_session(NODE_RED_URL=nodered_without_diagnostics.url) as session:
        result = await session.call_tool("get_diagnostics", {})
        assert result.isError
        assert "Diagnostics are turned off" in text_of(result) and "get_settings" in text_of(result)
        # The code travels with the failure (the service keeps it: a 403 diagnostics_disabled, not tool_failed).
        assert result.meta[ERROR_META] == {"code": "diagnostics_disabled", "key": "diagnostics_disabled",
                                           "params": {}}
        assert text_of(result).startswith("Diagnostics are turned off")
        assert not (await session.call_tool("get_settings", {})).isError


async def test_admin_auth_with_password_grant_under_admin_root(nodered_with_auth):
    async with stdio_session(NODE_RED_URL=nodered_with_auth.url, NODE_RED_USERNAME=ADMIN_USER,
                             NODE_RED_PASSWORD=ADMIN_PASSWORD) as session:
        await assert_every_tool_answers_from(session, nodered_with_auth)


async def test_wrong_password_and_missing_credentials_are_clear_tool_errors(nodered_with_auth):
    async with stdio_session(NODE_RED_URL=nodered_with_auth.url, NODE_RED_USERNAME=ADMIN_USER,
                             NODE_RED_PASSWORD="not-the-password-7731") as session:
        result = await session.call_tool("get_settings", {})
        assert result.isError
        assert "refused the login of user 'admin'" in text_of(result) and "NODE_RED_PASSWORD" in text_of(result)
        assert "not-the-password-7731" not in text_of(result)
    async with stdio_session(NODE_RED_URL=nodered_with_auth.url, NODE_RED_TOKEN="not-a-token") as session:
        result = await session.call_tool("get_flows", {})
        assert result.isError and "token" in text_of(result) and "permission" in text_of(result)


async def test_unreachable_node_red_is_a_tool_error_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}"
    server = build_server(NodeRedConfig(url=url))
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        result = await session.call_tool("get_settings", {})
    assert result.isError and f"Node-RED at {url} is not reachable" in text_of(result)


async def test_a_user_token_in_meta_replaces_the_server_credentials(nodered_with_auth):
    async with admin_session() as http:
        login = NodeRedClient(nodered_with_auth.url, http,
                              NodeRedCredentials(username=ADMIN_USER, password=SecretStr(ADMIN_PASSWORD)))
        user_token = await login.login()
    async with stdio_session(NODE_RED_URL=nodered_with_auth.url) as session:
        anonymous = await session.call_tool("get_flows", {})
        assert anonymous.isError
        as_user = await session.call_tool("get_flows", {}, meta={USER_TOKEN_META: user_token})
        assert not as_user.isError, text_of(as_user)
    # A bad user token is not widened to the server's own (valid) credentials.
    async with stdio_session(NODE_RED_URL=nodered_with_auth.url, NODE_RED_USERNAME=ADMIN_USER,
                             NODE_RED_PASSWORD=ADMIN_PASSWORD) as session:
        refused = await session.call_tool("get_flows", {}, meta={USER_TOKEN_META: "revoked-token"})
        assert refused.isError and "refused" in text_of(refused)


@pytest.fixture(scope="module")
def http_server(nodered_with_auth, tmp_path_factory):
    """``nodered-mcp --transport http`` behind ``MCP_HTTP_TOKEN``, reading the adminAuth Node-RED."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("mcp-http") / "mcp.log"
    env = {**os.environ, "NODE_RED_URL": nodered_with_auth.url, "NODE_RED_USERNAME": ADMIN_USER,
           "NODE_RED_PASSWORD": ADMIN_PASSWORD, "MCP_HTTP_TOKEN": HTTP_TOKEN}
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", str(port)],
                                   env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(Path(log_path).read_text()) from None
            time.sleep(0.1)
    yield url
    stop_process(process)


async def test_streamable_http_session_lists_all_tools_and_each_answers(http_server, nodered_with_auth):
    async with http_session(http_server) as session:
        await assert_every_tool_answers_from(session, nodered_with_auth)


async def test_streamable_http_refuses_a_missing_or_wrong_bearer_token(http_server):
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "test", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": HTTP_TOKEN}):
            response = await http.post(http_server, json=request, headers={**headers, **auth})
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "unauthorized"
            assert HTTP_TOKEN not in response.text
        response = await http.post(http_server, json=request,
                                   headers={**headers, "Authorization": f"Bearer {HTTP_TOKEN}"})
        assert response.status_code == 200


def test_http_transport_refuses_a_non_loopback_bind_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "MCP_HTTP_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "mcp_server", "--transport", "http", "--host", "0.0.0.0",
                           "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "MCP_HTTP_TOKEN" in done.stderr and done.stdout == ""


async def test_server_info_reports_this_packages_version_not_the_sdks(nodered):
    from service import __version__

    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server"],
                                   env={**os.environ, "NODE_RED_URL": nodered.url})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
    assert info.serverInfo.version == __version__


async def test_streamable_http_serves_resources_and_prompts_with_the_server_credentials(http_server,
                                                                                      nodered_with_auth):
    from pydantic import AnyUrl

    tab = nodered_with_auth.tabs()[0]
    async with http_session(http_server) as session:
        uris = {str(resource.uri) for resource in (await session.list_resources()).resources}
        assert f"nodered://flows/{tab['id']}" in uris and "nodered://workspace/summary" in uris
        read = await session.read_resource(AnyUrl(f"nodered://flows/{tab['id']}"))
        assert read.contents[0].text.startswith(f'Tab "{tab["label"]}" [{tab["id"]}]')
        prompt = await session.get_prompt("explain_flow", {"flow_id": tab["id"]})
        assert f"[{tab['id']}]" in prompt.messages[0].content.text
