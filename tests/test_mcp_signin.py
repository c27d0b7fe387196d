"""MCP sign-in (``MCP_AUTH=oauth``): the full OAuth flow of the MCP SDK's own client (``OAuthClientProvider``:
discovery, dynamic registration, PKCE, token) against ``nodered-mcp --transport http`` in front of a real Node-RED
with adminAuth; the login page is filled in as a browser would, by an HTTP client posting its form."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.types import ElicitResult

from mcp_server.audit import Caller, McpAudit
from mcp_server.auth import provider as provider_module
from mcp_server.auth.provider import Endpoint, NodeRedAuthProvider
from mcp_server.server import ERROR_META
from tests.support.health import START_TIMEOUT, stop_process
from tests.support.nodered import REPO, NodeRed, example_flows, free_port, hash_password

WRITER, READER = ("alice", "alice-password-4-tests"), ("bob", "bob-password-4-tests")
SHARED_TOKEN = "shared-script-token-for-tests-0123"
REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: the test reads the code from the Location header
APPROVE = ElicitResult(action="accept", content={"approve": True})


@pytest.fixture(scope="module")
def users_nodered(tmp_path_factory):
    """Node-RED with adminAuth: alice may do everything (``*``), bob may only read."""
    instance = NodeRed(
        userdir=tmp_path_factory.mktemp("nodered-signin"), port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials", "users": [
            {"username": WRITER[0], "password": hash_password(WRITER[1]), "permissions": "*"},
            {"username": READER[0], "password": hash_password(READER[1]), "permissions": "read"}]},
        flows=example_flows(("common/catch/01 - Catch error.json",)), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def flows_as(nodered: NodeRed, username: str, password: str) -> list[dict]:
    """The deployed flows, read by ``username`` through Node-RED's own password grant."""
    token = httpx.post(f"{nodered.url}/auth/token", data={
        "client_id": "node-red-admin", "grant_type": "password", "scope": "read", "username": username,
        "password": password}, timeout=30).json()["access_token"]
    return httpx.get(f"{nodered.url}/flows", headers={"Authorization": f"Bearer {token}"}, timeout=30).json()


class McpServer:
    def __init__(self, base: str, db: Path, log: Path, path: str = "/mcp"):
        self.base, self.url, self.db, self.log = base, f"{base}{path}", db, log

    def grants(self) -> list[dict]:
        if not self.db.exists():  # opened at the first sign-in step
            return []
        with sqlite3.connect(self.db) as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute("SELECT * FROM mcp_auth_grants ORDER BY id")]


@contextmanager
def running_mcp_server(settings: dict[str, str], tmp: Path, path: str = "/mcp") -> Iterator[McpServer]:
    """``nodered-mcp --transport http`` on a free port with sign-in (``MCP_AUTH_DB`` ``tmp/auth.db``, the audit
    ``tmp/audit.db``) and the environment ``settings``, none of the caller's own ``NODE_RED_*`` credentials;
    ``path``: its MCP endpoint's path. Started when its authorization server metadata answers."""
    port = free_port()
    env = {**os.environ, "MCP_AUTH": "oauth", "MCP_AUTH_DB": str(tmp / "auth.db"),
           "MCP_AUDIT_DB": str(tmp / "audit.db"), **settings}
    for name in ("NODE_RED_USERNAME", "NODE_RED_PASSWORD", "NODE_RED_TOKEN", "MCP_PUBLIC_URL"):
        if name not in settings:
            env.pop(name, None)
    log_path = tmp / "mcp.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", str(port),
                                    "--log-level", "DEBUG"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    server = McpServer(f"http://127.0.0.1:{port}", tmp / "auth.db", log_path, path)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            httpx.get(f"{server.base}/.well-known/oauth-authorization-server", timeout=1)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(log_path.read_text()) from None
            time.sleep(0.1)
    try:
        yield server
    finally:
        stop_process(process)


@pytest.fixture(scope="module")
def signin_server(users_nodered, tmp_path_factory):
    """``nodered-mcp --transport http`` with ``MCP_AUTH=oauth``, the write tools on, no Node-RED credentials of its
    own (so whatever it reads, it reads as the signed-in user), and the shared token for scripts."""
    with running_mcp_server({"NODE_RED_URL": users_nodered.url, "MCP_WRITE_TOOLS": "true",
                             "MCP_HTTP_TOKEN": SHARED_TOKEN, "AI_SIDEBAR_EVIDENCE": "false"},
                            tmp_path_factory.mktemp("mcp-signin")) as server:
        yield server


class MemoryStorage:
    """The SDK client's token storage, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Browser:
    """What the person does in their browser: open the authorization URL, fill in the login page (a wrong password
    first, when given), consent to ``consent`` scopes, and hand the code the server redirects with to the client."""

    def __init__(self, username: str, password: str, consent: tuple[str, ...], wrong_password: str | None = None,
                 language: str = "en-US"):
        self.username, self.password, self.consent, self.wrong_password = username, password, consent, wrong_password
        self.language = language
        self.pages: list[httpx.Response] = []
        self.callback: tuple[str, str | None] | None = None

    async def redirect(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30, headers={"Accept-Language": self.language}) as http:
            page = await http.get(authorization_url, follow_redirects=True)
            self.pages.append(page)
            assert page.status_code == 200 and "<form" in page.text, page.text
            for password in ([self.wrong_password] if self.wrong_password else []) + [self.password]:
                request_id = re.search(r'name="request" value="([^"]+)"', page.text).group(1)
                form = {"request": request_id, "username": self.username, "password": password,
                        "scope": list(self.consent)}
                page = await http.post(urljoin(str(page.url), "login"), data=form)
                self.pages.append(page)
        assert page.status_code == 302, page.text
        query = parse_qs(urlparse(page.headers["location"]).query)
        self.callback = (query["code"][0], query.get("state", [None])[0])

    async def callback_handler(self) -> tuple[str, str | None]:
        assert self.callback is not None
        return self.callback


def oauth_client(server: McpServer, browser: Browser, scope: str = "read write",
                 client_name: str = "signin-test-agent") -> tuple[OAuthClientProvider, MemoryStorage]:
    storage = MemoryStorage()
    metadata = OAuthClientMetadata(client_name=client_name, redirect_uris=[REDIRECT], scope=scope,
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    provider = OAuthClientProvider(server.url, metadata, storage, redirect_handler=browser.redirect,
                                   callback_handler=browser.callback_handler)
    return provider, storage


@asynccontextmanager
async def signed_in_session(server: McpServer, browser: Browser, elicitation_callback=None):
    provider, storage = oauth_client(server, browser)
    async with httpx.AsyncClient(auth=provider, timeout=30) as http, \
            streamable_http_client(server.url, http_client=http) as (read, write, _), \
            ClientSession(read, write, elicitation_callback=elicitation_callback) as session:
        await session.initialize()
        yield session, storage


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_an_unauthenticated_request_is_401_with_the_protected_resource_metadata(signin_server):
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await http.post(signin_server.url, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        metadata_url = f"{signin_server.base}/.well-known/oauth-protected-resource/mcp"
        assert challenge.startswith("Bearer") and f'resource_metadata="{metadata_url}"' in challenge
        metadata = (await http.get(metadata_url)).json()
        assert metadata["resource"] == signin_server.url
        assert metadata["authorization_servers"] == [f"{signin_server.base}/"]
        server = (await http.get(f"{signin_server.base}/.well-known/oauth-authorization-server")).json()
        assert server["code_challenge_methods_supported"] == ["S256"] and server["registration_endpoint"]
        assert set(server["scopes_supported"]) == {"read", "write"}
        # The shared token keeps working for scripts, as before sign-in existed.
        script = await http.post(signin_server.url, json=INITIALIZE,
                                 headers={**MCP_HEADERS, "Authorization": f"Bearer {SHARED_TOKEN}"})
        assert script.status_code == 200


async def test_a_reader_signs_in_reads_with_their_own_rights_and_cannot_write(signin_server, users_nodered):
    browser = Browser(*READER, consent=("write",), wrong_password="not-bobs-password")
    before = len(signin_server.grants())
    async with signed_in_session(signin_server, browser) as (session, storage):
        # The wrong password showed the page again with the error, and stored no grant.
        wrong = browser.pages[1]
        assert wrong.status_code == 401 and "refused this user name and password" in wrong.text
        assert 'value="bob"' in wrong.text and "not-bobs-password" not in wrong.text
        tab = next(n for n in users_nodered.flows if n["type"] == "tab")
        flow = await session.call_tool("get_flow", {"flow_id": tab["id"]})
        assert not flow.isError, text_of(flow)
        assert tab["label"] in text_of(flow)
        # The search index is read with bob's token too: the server has no Node-RED credentials of its own.
        found = await session.call_tool("search_workspace", {"query": "catch"})
        assert not found.isError, text_of(found)
        assert tab["label"] in text_of(found)
        # bob asked for write, but Node-RED lets him only read: the grant says read, and a write tool is refused.
        assert storage.tokens.scope == "read"
        refused = await session.call_tool("create_tab", {"label": "bob was here"})
        assert refused.isError and refused.meta[ERROR_META]["code"] == "mcp_scope_missing"
        assert "'write'" in text_of(refused) and "create_tab" in text_of(refused)
    grants = signin_server.grants()
    assert len(grants) == before + 1
    assert (grants[-1]["user"], grants[-1]["scopes"], grants[-1]["revoked_at"]) == ("bob", "read", None)
    assert "bob was here" not in str(flows_as(users_nodered, *WRITER))


async def test_a_writer_who_consents_deploys_as_themselves(signin_server, users_nodered):
    browser = Browser(*WRITER, consent=("write",), language="de-AT")
    async with signed_in_session(signin_server, browser, elicitation_callback=approving) as (session, storage):
        assert storage.tokens.scope == "read write"
        page = browser.pages[0].text
        assert "Bei Node-RED anmelden" in page and "signin-test-agent" in page
        assert "Danach kehrt Ihr Browser zu http://127.0.0.1:9 zurück." in page
        created = await session.call_tool("create_tab", {"label": "alice was here"})
        assert not created.isError, text_of(created)
    assert "alice was here" in str(flows_as(users_nodered, *WRITER))
    # The audit names the signed-in user and the OAuth client beside the client's own name.
    with sqlite3.connect(signin_server.db.parent / "audit.db") as db:
        row = db.execute("SELECT client_name, tool, decision, outcome, user, oauth_client FROM mcp_audit "
                         "ORDER BY id DESC LIMIT 1").fetchone()
    assert row[0] and row[1:] == ("create_tab", "approve", "deployed", "alice", storage.client_info.client_id)


async def test_an_audit_file_of_the_first_version_gains_the_user_columns(tmp_path):
    path = tmp_path / "audit.db"
    with sqlite3.connect(path) as db:
        db.executescript(V1_AUDIT)
        db.execute("INSERT INTO mcp_audit(created_at, client_name, tool, decision) VALUES (1, 'old', 'add_nodes', "
                   "'decline')")
    audit = await McpAudit.open(str(path))
    try:
        await audit.record(Caller("new", "1", user="alice", oauth_client="c-1"), "create_tab", {}, "s", "cancel")
    finally:
        await audit.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT client_name, user, oauth_client FROM mcp_audit ORDER BY id").fetchall()
    assert rows == [("old", None, None), ("new", "alice", "c-1")]


V1_AUDIT = """CREATE TABLE mcp_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, client_name TEXT NOT NULL,
    client_version TEXT NOT NULL DEFAULT '', tool TEXT NOT NULL, args TEXT NOT NULL DEFAULT '{}',
    summary TEXT NOT NULL DEFAULT '', decision TEXT NOT NULL, reason TEXT, outcome TEXT);"""


async def approving(_context, _params):
    return APPROVE


async def test_an_unknown_sign_in_request_is_a_json_error_in_the_browsers_language(signin_server):
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.get(f"{signin_server.base}/login", params={"request": "made-up"},
                                headers={"Accept-Language": "fr-CA,fr;q=0.9"})
        posted = await http.post(f"{signin_server.base}/login", data={"request": "made-up", "username": "bob",
                                                                         "password": READER[1]})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "mcp_signin_expired"
    assert "demande de connexion" in answer.json()["error"]["message"]
    assert posted.status_code == 400 and posted.json()["error"]["code"] == "mcp_signin_expired"


async def test_a_refresh_token_is_used_once_for_a_new_pair(signin_server):
    browser = Browser(*READER, consent=())
    async with signed_in_session(signin_server, browser) as (session, storage):
        assert not (await session.call_tool("get_flows", {})).isError
    client, old = storage.client_info, storage.tokens
    form = {"grant_type": "refresh_token", "refresh_token": old.refresh_token, "client_id": client.client_id,
            "client_secret": client.client_secret}
    async with httpx.AsyncClient(timeout=30) as http:
        fresh = await http.post(f"{signin_server.base}/token", data=form)
        assert fresh.status_code == 200, fresh.text
        tokens = fresh.json()
        assert tokens["scope"] == "read" and tokens["access_token"] != old.access_token
        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {tokens['access_token']}"}
        assert (await http.post(signin_server.url, json=INITIALIZE, headers=bearer)).status_code == 200
        again = await http.post(f"{signin_server.base}/token", data=form)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_sign_in_without_its_database_stops_the_server(users_nodered):
    env = {**os.environ, "NODE_RED_URL": users_nodered.url, "MCP_AUTH": "oauth"}
    env.pop("MCP_AUTH_DB", None)
    done = subprocess.run([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", str(free_port())],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=START_TIMEOUT)
    assert done.returncode == 2 and "MCP_AUTH_DB" in done.stderr


async def test_revocation_ends_access_at_once(signin_server):
    browser = Browser(*WRITER, consent=())
    async with signed_in_session(signin_server, browser) as (session, storage):
        assert not (await session.call_tool("get_flows", {})).isError
        assert storage.tokens.scope == "read"
    access = storage.tokens.access_token
    client = storage.client_info
    async with httpx.AsyncClient(timeout=30) as http:
        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {access}"}
        assert (await http.post(signin_server.url, json=INITIALIZE, headers=bearer)).status_code == 200
        revoked = await http.post(f"{signin_server.base}/revoke", data={
            "token": access, "client_id": client.client_id, "client_secret": client.client_secret})
        assert revoked.status_code == 200
        assert (await http.post(signin_server.url, json=INITIALIZE, headers=bearer)).status_code == 401
        refresh = await http.post(f"{signin_server.base}/token", data={
            "grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token,
            "client_id": client.client_id, "client_secret": client.client_secret})
        assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"
    assert signin_server.grants()[-1]["revoked_at"] is not None


async def test_no_password_or_token_is_kept_in_clear(signin_server):
    browser = Browser(*READER, consent=())
    async with signed_in_session(signin_server, browser) as (session, storage):
        assert not (await session.call_tool("get_flows", {})).isError
    secrets = [READER[1], storage.tokens.access_token, storage.tokens.refresh_token]
    database = b"".join(path.read_bytes() for path in signin_server.db.parent.glob("auth.db*"))
    log = signin_server.log.read_bytes()
    assert b"MCP sign-in: Node-RED user bob granted read" in log  # the log does say who signed in
    for secret in secrets:
        assert secret.encode() not in database and secret.encode() not in log


async def test_waiting_sign_ins_are_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(provider_module, "MAX_PENDING", 3)
    provider = NodeRedAuthProvider(str(tmp_path / "auth.db"), "http://127.0.0.1:1",
                                   [Endpoint("http://127.0.0.1:1/mcp", "http://127.0.0.1:2")], 3600)
    client = OAuthClientInformationFull(client_id="c-1", redirect_uris=[REDIRECT], scope="read write")
    params = AuthorizationParams(state="s", scopes=["read"], code_challenge="x" * 43, redirect_uri=REDIRECT,
                                 redirect_uri_provided_explicitly=True)
    try:
        urls = [await provider.authorize(client, params) for _ in range(3)]
        assert len(set(urls)) == 3 and all(url.startswith("http://127.0.0.1:1/login?request=") for url in urls)
        with pytest.raises(AuthorizeError) as refused:
            await provider.authorize(client, params)
        assert refused.value.error == "temporarily_unavailable"
    finally:
        await provider.close()


@pytest.fixture(scope="module")
def evidence_server(users_nodered, tmp_path_factory):
    """Sign-in with the runtime evidence on: the server's own comms subscription logs in as the read-only bob
    (Node-RED's comms websocket needs a token of its own; README, "Sign-in with Node-RED users"), and every call
    still reads the flows with the signed-in user's token."""
    with running_mcp_server({"NODE_RED_URL": users_nodered.url, "MCP_WRITE_TOOLS": "true",
                             "NODE_RED_USERNAME": READER[0], "NODE_RED_PASSWORD": READER[1]},
                            tmp_path_factory.mktemp("mcp-signin-evidence")) as server:
        yield server


async def test_a_signed_in_reader_reads_the_runtime_evidence_a_writer_caused_and_may_not_trigger(
        evidence_server, users_nodered):
    tab = next(n for n in users_nodered.flows if n["type"] == "tab")
    inject = next(n for n in users_nodered.flows if n["type"] == "inject")
    thrower = next(n for n in users_nodered.flows if n["type"] == "function")
    shown = next(n for n in users_nodered.flows if n["type"] == "debug")
    async with signed_in_session(evidence_server, Browser(*READER, consent=("write",))) as (reader, storage):
        assert storage.tokens.scope == "read"
        refused = await reader.call_tool("trigger_inject", {"node_id": inject["id"]})
        assert refused.isError and refused.meta[ERROR_META]["code"] == "mcp_scope_missing"
        assert "'write'" in text_of(refused) and "trigger_inject" in text_of(refused)
        async with signed_in_session(evidence_server, Browser(*WRITER, consent=("write",)),
                                     elicitation_callback=approving) as (writer, _):
            triggered = await writer.call_tool("trigger_inject", {"node_id": inject["id"]})
            assert not triggered.isError, text_of(triggered)
        # The function node's error, caught by the catch node, reaches the debug node, whose output reaches the
        # server's comms subscription; the reader sees it once it arrived (the deadline is generous for a busy
        # machine: it is one websocket message away).
        deadline = time.monotonic() + 60
        while True:
            evidence = await reader.call_tool("get_debug_messages", {"flow_id": tab["id"]})
            assert not evidence.isError, text_of(evidence)
            if evidence.structuredContent["messages"] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert evidence.structuredContent["connected"], text_of(evidence)
        assert [message["nodeId"] for message in evidence.structuredContent["messages"]] == [shown["id"]]
        prompt = await reader.get_prompt("debug_node", {"node_id": shown["id"]})
        assert shown["id"] in str(prompt.messages) and thrower["id"] in str(prompt.messages)
