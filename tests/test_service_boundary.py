"""Who may call the service and the MCP server (issue 29, items 2, 3 and 7): a service started without
``AI_SIDEBAR_TOKEN`` believes no identity or permission header; both servers answer only requests naming an allowed
host (DNS rebinding); the MCP server's streamable HTTP transport refuses write tools without a token; a password
login asks for the scope that deploys. Real processes, a real Node-RED, real HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ElicitResult

from mcp_server.server import NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from service.nodered.client import NodeRedClient, NodeRedCredentials, admin_session
from service.nodered.hosts import HostAllowList, parse_hosts
from tests.conftest import TEST_API_KEY
from tests.support.health import START_TIMEOUT, stop_process, wait_healthy
from tests.support.model_server import Reply
from tests.support.nodered import REPO, NodeRed, free_port, hash_password
from tests.support.sse import read_events

ADMIN = {"X-Node-RED-User": "admin", "X-AI-Sidebar-Permission": "write"}
FOREIGN_HOSTS = ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.evil.example:80"]


@contextlib.contextmanager
def running(args: list[str], env: dict[str, str], log_path: Path, health_url: str):
    """A server process started with ``args``, waited for until ``health_url`` answers 200, ended after."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        try:
            wait_healthy(health_url, process, START_TIMEOUT, 0.1)
        except RuntimeError as err:
            raise RuntimeError(f"did not start ({err}):\n{log_path.read_text()}") from None
        yield process
    finally:
        stop_process(process)


# -- the host allow-list ---------------------------------------------------------------------------------------------

def test_the_allow_list_names_hosts_with_any_port_and_refuses_look_alikes():
    allowed = HostAllowList.of(parse_hosts("Service-1, 10.0.0.5:8765, fd00::1"))
    for host in ("localhost", "localhost:1880", "127.0.0.1:8765", "[::1]:8765", "[::1]", "service-1:8765",
                 "10.0.0.5", "[fd00::1]:80"):
        assert allowed.allows_host(host), host
    for host in (None, "", *FOREIGN_HOSTS, "127.0.0.2", "10.0.0.6", "service-10"):
        assert not allowed.allows_host(host), host
    assert allowed.allows_origin(None) and allowed.allows_origin("http://localhost:1880")
    for origin in ("null", "http://evil.example", "file://", "http://127.0.0.1.evil.example:8765"):
        assert not allowed.allows_origin(origin), origin
    assert HostAllowList.of(parse_hosts("*")).allows_host("anything.example")
    with pytest.raises(ValueError, match="host name"):
        parse_hosts("http://example.org")


# -- item 2: a service without a token -------------------------------------------------------------------------------

async def test_a_service_without_a_token_believes_no_identity_header_and_answers_only_loopback_hosts(
        client, nodered, model, model_server, tmp_path):
    # admin's conversation, made through a service that had the token (the plugin's), in the same database
    model.script(Reply(text="Noted."))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "remember zeppelin"}, headers=ADMIN)
    assert response.status == 200, await response.text()
    session_id = next(e for e in await read_events(response) if e["type"] == "done")["sessionId"]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {key: value for key, value in os.environ.items() if key != "AI_SIDEBAR_TOKEN"}
    env.update({"AI_SIDEBAR_PORT": str(port), "NODE_RED_URL": nodered.url, "OPENAI_BASE_URL": model_server.base_url,
                "OPENAI_API_KEY": TEST_API_KEY, "MEMORY_DB_PATH": str(tmp_path / "memory.db"),
                "MCP_TOOLS_ENABLED": "false", "AI_SIDEBAR_WORKERS": "1"})
    log_path = tmp_path / "tokenless.log"
    with running([sys.executable, "-m", "service"], env, log_path, f"{base}/healthz"):
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/ai-sidebar/sessions", headers=ADMIN) as answer:
                assert answer.status == 200
                assert session_id not in {s["id"] for s in (await answer.json())["sessions"]}
            async with http.get(f"{base}/ai-sidebar/history/{session_id}", headers=ADMIN) as answer:
                text = await answer.text()
                assert "zeppelin" not in text and (answer.status == 404 or json.loads(text)["messages"] == [])
            async with http.post(f"{base}/ai-sidebar/resume", headers=ADMIN,
                                 json={"resumeToken": "t" * 43, "decisions": [{"type": "approve"}]}) as answer:
                assert answer.status == 403
                error = (await answer.json())["error"]
                assert error["code"] == "forbidden" and "AI_SIDEBAR_TOKEN" in error["message"]
            async with http.post(f"{base}/ai-sidebar/execute-tool", headers=ADMIN,
                                 json={"tool": "create_tab", "params": {"label": "Planted"}}) as answer:
                assert answer.status == 403
            # questions still work, as the anonymous editor
            model.script(Reply(text="Hello."))
            async with http.post(f"{base}/ai-sidebar/stream-chat", json={"message": "hi"}, headers=ADMIN) as answer:
                assert answer.status == 200
                events = await read_events(answer)
                assert [e["type"] for e in events][-1] == "done" and "error" not in [e["type"] for e in events]

            for host in FOREIGN_HOSTS:
                async with http.get(f"{base}/healthz", headers={"Host": host}) as answer:
                    assert answer.status == 421, host
                    assert (await answer.json())["error"]["code"] == "misdirected_request"
            async with http.get(f"{base}/ai-sidebar/sessions",
                                headers={"Origin": "http://evil.example"}) as answer:
                assert answer.status == 421
            for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
                async with http.get(f"{base}/healthz", headers={"Host": host}) as answer:
                    assert answer.status == 200, host
        assert "AI_SIDEBAR_TOKEN is not set" in log_path.read_text()


async def test_a_service_with_a_token_still_believes_the_plugins_identity_headers(client, model):
    model.script(Reply(text="Noted."))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "remember zeppelin"}, headers=ADMIN)
    session_id = next(e for e in await read_events(response) if e["type"] == "done")["sessionId"]
    listed = await (await client.get("/ai-sidebar/sessions", headers=ADMIN)).json()
    assert session_id in {s["id"] for s in listed["sessions"]}
    other = await (await client.get("/ai-sidebar/sessions", headers={"X-Node-RED-User": "mallory"})).json()
    assert session_id not in {s["id"] for s in other["sessions"]}


# -- items 2 and 3: the MCP server's streamable HTTP transport ------------------------------------------------------

def mcp_env(nodered_url: str, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_")}
    return {**env, "NODE_RED_URL": nodered_url, **extra}


@pytest.mark.parametrize("token", [None, " "], ids=["unset", "blank"])
def test_the_mcp_http_server_refuses_to_start_with_write_tools_and_no_token(tmp_path, token):
    """A token of spaces is none (an outside try started the write tools with ``MCP_HTTP_TOKEN=" "``)."""
    extra = {} if token is None else {"MCP_HTTP_TOKEN": token}
    done = subprocess.run([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", str(free_port())],
                          env=mcp_env("http://127.0.0.1:9", MCP_WRITE_TOOLS="true",
                                      MCP_AUDIT_DB=str(tmp_path / "audit.db"), **extra),
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2
    assert "MCP_WRITE_TOOLS=true over streamable HTTP needs MCP_HTTP_TOKEN" in done.stderr


async def test_the_mcp_http_server_without_a_token_warns_and_answers_only_loopback_hosts(nodered, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "mcp.log"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "host-check", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with _mcp_running(port, mcp_env(nodered.url), log_path):
        assert "every local user" in log_path.read_text()
        async with aiohttp.ClientSession() as http:
            for host in FOREIGN_HOSTS:
                async with http.post(f"{base}/mcp", json=initialize, headers={**headers, "Host": host}) as answer:
                    assert answer.status == 421, host
                    assert (await answer.json())["error"]["code"] == "misdirected_request"
            async with http.post(f"{base}/mcp", json=initialize,
                                 headers={**headers, "Origin": "http://evil.example"}) as answer:
                assert answer.status == 421
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                async with http.post(f"{base}/mcp", json=initialize, headers={**headers, "Host": host}) as answer:
                    assert answer.status == 200, (host, await answer.text())


@contextlib.contextmanager
def _mcp_running(port: int, env: dict[str, str], log_path: Path):
    """The MCP server on streamable HTTP at ``port``, waited for until it accepts connections."""
    import socket
    import time

    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", str(port),
                                    "--log-level", "INFO"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "the MCP server did not listen within 60 s:\n" + log_path.read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)  # polling a port until it listens: a state, not a fixed wait for a duration
        yield process
    finally:
        stop_process(process)


# -- item 7: password logins ask for the scope the tools need --------------------------------------------------------

DEPLOYER, READER = ("deployer", "deployer-password-0001"), ("reader", "reader-password-0001")


@pytest.fixture(scope="module")
def password_nodered(tmp_path_factory):
    """Node-RED with adminAuth: one user who may deploy (``*``), one who may only read."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-passwords"), port=free_port(), admin_root="/admin",
                       admin_auth={"type": "credentials", "users": [
                           {"username": DEPLOYER[0], "password": hash_password(DEPLOYER[1]), "permissions": "*"},
                           {"username": READER[0], "password": hash_password(READER[1]), "permissions": "read"}]},
                       flows=[{"id": "t1", "type": "tab", "label": "Main"}], with_palette=False)
    instance.start()
    yield instance
    instance.stop()


async def tab_labels(nodered) -> list[str]:
    async with admin_session() as http:
        client = NodeRedClient(nodered.url, http, NodeRedCredentials(username=DEPLOYER[0],
                                                                     password=_secret(DEPLOYER[1])))
        return [n["label"] for n in (await client.get_flows())["flows"] if n["type"] == "tab"]


def _secret(value: str):
    from pydantic import SecretStr
    return SecretStr(value)


async def test_mcp_write_tools_deploy_with_a_password_account_that_may_deploy(password_nodered, tmp_path):
    config = NodeRedConfig(url=password_nodered.url, username=DEPLOYER[0], password=_secret(DEPLOYER[1]))
    server = build_server(config, knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "audit.db")))

    async def approve(_context, _params):
        return ElicitResult(action="accept", content={"approve": True})

    async with create_connected_server_and_client_session(server._mcp_server, elicitation_callback=approve) as mcp:
        result = await mcp.call_tool("create_tab", {"label": "Deployed by password"})
    assert not result.isError, json.dumps(result.model_dump(), default=str)[:2000]
    assert "Deployed by password" in await tab_labels(password_nodered)


async def test_a_read_only_password_account_still_reads_and_the_log_says_it_cannot_deploy(password_nodered,
                                                                                           caplog):
    async with admin_session() as http:
        credentials = NodeRedCredentials(username=READER[0], password=_secret(READER[1]), scope="*")
        client = NodeRedClient(password_nodered.url, http, credentials)
        await client.check_login()
        assert "refused the write scope (*) to NODE_RED_USERNAME=reader" in caplog.text
        assert (await client.get_flows())["flows"]
