"""The sidebar's list of MCP grants (issue 40): a real Node-RED with adminAuth and the palette, the service as a
process reading the MCP server's sign-in database (``AI_SIDEBAR_MCP_AUTH_DB``), and ``nodered-mcp`` with sign-in
that the MCP SDK's own client signs in to. Each user sees and revokes only their own grants, through the plugin's
routes; a revoked grant's token is refused at once. The panel at 240 px, with the keyboard alone, in Chromium."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.model_server import ScriptedModelServer
from tests.support.nodered import NodeRed, free_port, hash_password
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    PASSWORD,
    SERVICE_TOKEN,
    USERNAME,
    ServiceProcess,
    admin_request,
    admin_token,
    browser_installed,
    run_browser,
)
from tests.test_browser_sidebar import pytestmark as browser_tests
from tests.test_mcp_signin import INITIALIZE, MCP_HEADERS, Browser, oauth_client, running_mcp_server

READER = ("bob", "bob-password-for-grant-tests")


@pytest.fixture(scope="module")
def grants_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED (admin may do everything, bob only read), the MCP server with sign-in in front of it, and the
    service reading the MCP server's sign-in database."""
    workdir = tmp_path_factory.mktemp("mcp-grant-list")
    service_port = free_port()
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials", "users": [
            {"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"},
            {"username": READER[0], "password": hash_password(READER[1]), "permissions": "read"}]},
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    nodered.start()
    try:
        with running_mcp_server({"NODE_RED_URL": nodered.url, "AI_SIDEBAR_EVIDENCE": "false"}, workdir) as mcp:
            service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                                     workdir / "service.log")
            service.env["AI_SIDEBAR_MCP_AUTH_DB"] = str(mcp.db)
            service.start()
            try:
                yield nodered, mcp
            finally:
                service.stop()
    finally:
        nodered.stop()


def user_token(nodered: NodeRed, username: str, password: str) -> str:
    form = urllib.parse.urlencode({"client_id": "node-red-admin", "grant_type": "password", "scope": "read",
                                   "username": username, "password": password}).encode()
    with urllib.request.urlopen(f"{nodered.url}/auth/token", data=form, timeout=10) as response:
        return json.loads(response.read())["access_token"]


async def sign_in(mcp, user: tuple[str, str], client_name: str) -> str:
    """Sign ``user`` in with the SDK's client registered as ``client_name``, call one tool; the access token."""
    provider, storage = oauth_client(mcp, Browser(*user, consent=()), client_name=client_name)
    async with httpx.AsyncClient(auth=provider, timeout=30) as http, \
            streamable_http_client(mcp.url, http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        assert not (await session.call_tool("get_flows", {})).isError
    return storage.tokens.access_token


def mcp_status(mcp, access_token: str) -> int:
    return httpx.post(mcp.url, json=INITIALIZE, timeout=30,
                      headers={**MCP_HEADERS, "Authorization": f"Bearer {access_token}"}).status_code


def refused(nodered: NodeRed, token: str, method: str, path: str, body=None) -> tuple[int, dict]:
    with pytest.raises(urllib.error.HTTPError) as failed:
        admin_request(nodered, token, method, path, body)
    return failed.value.code, json.loads(failed.value.read())


async def test_each_user_lists_and_revokes_only_their_own_grants_and_a_revoked_token_is_refused(grants_stack):
    nodered, mcp = grants_stack
    admin_access = await sign_in(mcp, (USERNAME, PASSWORD), "admin-agent")
    bob_access = await sign_in(mcp, READER, "bobs-agent")
    admin, bob = admin_token(nodered), user_token(nodered, *READER)

    listed = admin_request(nodered, admin, "GET", "/ai-sidebar/mcp-grants")
    assert listed["enabled"] and [grant["client"] for grant in listed["grants"]] == ["admin-agent"]
    grant = listed["grants"][0]
    assert grant["scopes"] == ["read"] and grant["createdAt"] <= grant["lastUsedAt"] < grant["expiresAt"]
    bobs = admin_request(nodered, bob, "GET", "/ai-sidebar/mcp-grants")["grants"]
    assert [g["client"] for g in bobs] == ["bobs-agent"]

    # Not even the admin revokes bob's grant from the sidebar: it is not theirs.
    status, body = refused(nodered, admin, "POST", f"/ai-sidebar/mcp-grants/{bobs[0]['id']}/revoke", {})
    assert status == 404 and body["error"]["code"] == "mcp_grant_not_found"
    assert mcp_status(mcp, bob_access) == 200

    assert mcp_status(mcp, admin_access) == 200
    assert admin_request(nodered, admin, "POST", f"/ai-sidebar/mcp-grants/{grant['id']}/revoke", {}) == \
        {"revoked": grant["id"]}
    assert mcp_status(mcp, admin_access) == 401
    assert admin_request(nodered, admin, "GET", "/ai-sidebar/mcp-grants")["grants"] == []
    status, body = refused(nodered, admin, "POST", f"/ai-sidebar/mcp-grants/{grant['id']}/revoke", {})
    assert status == 404 and body["error"]["code"] == "mcp_grant_not_found"
    status, _ = refused(nodered, admin, "POST", "/ai-sidebar/mcp-grants/not-a-number/revoke", {})
    assert status == 404
    assert mcp_status(mcp, bob_access) == 200


@browser_tests
@pytest.mark.usefixtures("browser_installed")
async def test_the_panel_at_240_px_lists_the_grants_and_revokes_one_with_the_keyboard(grants_stack):
    nodered, mcp = grants_stack
    kept = await sign_in(mcp, (USERNAME, PASSWORD), "kept-agent")
    gone = await sign_in(mcp, (USERNAME, PASSWORD), "Claude Desktop")

    seen = run_browser("sidebar_mcp_grants.js", {"EDITOR_URL": nodered.url, "USERNAME": USERNAME,
                                                 "PASSWORD": PASSWORD, "CLIENT": "Claude Desktop"})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen.get("screenshots", []) + seen.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot

    assert seen["width"] <= 240
    assert seen["buttonLabel"] == "MCP access: the clients you signed in with"
    assert seen["afterOpen"] == "Close MCP access"
    panel = seen["panel"]
    assert panel["open"] and panel["fits"] and panel["buttonInHeader"], panel
    assert panel["title"] == "MCP access" and panel["status"] == "2 client(s) have access as you."
    assert [grant["client"] for grant in panel["grants"]] == ["Claude Desktop", "kept-agent"]
    assert panel["grants"][0]["detail"].startswith("read · granted ")
    assert "last used " in panel["grants"][0]["detail"] and "never" not in panel["grants"][0]["detail"]
    assert seen["tabbedThrough"][-1] == "Revoke the access of Claude Desktop"

    after = seen["afterRevoke"]
    assert after["status"] == "Claude Desktop no longer has access."
    assert [grant["client"] for grant in after["grants"]] == ["kept-agent"]
    assert "ai-sidebar-mcp-grants-status" in seen["focusAfterRevoke"]
    assert seen["closed"] and seen["focusAfterEscape"] == "MCP access: the clients you signed in with"
    assert mcp_status(mcp, gone) == 401 and mcp_status(mcp, kept) == 200
