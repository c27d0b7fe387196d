"""Every admin route the palette plugin registers is gated: without a token 401, with a read-only token 401 on
the routes that change state; read routes work for a read-only user (Node-RED adminAuth, httpAdminRoot /admin)."""

from __future__ import annotations

import re

import aiohttp
import pytest

from tests.conftest import SERVICE_TOKEN
from tests.support.nodered import PALETTE, admin_auth_nodered

ROUTE = re.compile(r'RED\.httpAdmin\.(get|post|patch|put|delete)\("([^"]+)",\s*RED\.auth\.needsPermission\('
                   r'"([^"]+)"\)')
SOURCE = (PALETTE / "plugins" / "ai-sidebar.js").read_text()
ROUTES = [(verb.upper(), path, permission) for verb, path, permission in ROUTE.findall(SOURCE)]


def test_every_admin_route_in_the_plugin_source_is_permission_gated():
    registered = re.findall(r"RED\.httpAdmin\.(get|post|patch|put|delete)\(", SOURCE)
    assert len(ROUTES) == len(registered) >= 10
    # every registration, the JSON 404 catch-all (.all) included, names its permission on the same line
    calls = [line for line in SOURCE.splitlines() if re.search(r"RED\.httpAdmin\.\w+\(", line)]
    assert calls and all("RED.auth.needsPermission(" in line for line in calls)
    # Asking, searching and checking code read; running code in the runtime is what deploying a function allows.
    # Testing a model connection is a tiny chat: it asks, it changes nothing; so is an inline completion.
    reading = ("/ai-sidebar/stream-chat", "/ai-sidebar/search", "/ai-sidebar/assist", "/ai-sidebar/function-check",
               "/ai-sidebar/test-provider", "/ai-sidebar/complete")
    # The flow history is the flows' own history: Node-RED's flows permissions, as reading and deploying flows.
    for verb, path, permission in ROUTES:
        if path.startswith("/ai-sidebar/flow-history"):
            expected = "flows.read" if verb == "GET" else "flows.write"
        elif path == "/ai-sidebar/context":  # setting context: Node-RED's own context.write, as its DELETE
            expected = "context.write"
        elif path.startswith("/ai-sidebar/knowledge/documents"):
            # a reader keeps private documents; the service asks for write on a shared one (403 forbidden), as the
            # README's route table says, so the plugin lets every document route through with read
            expected = "ai-sidebar.read"
        elif path.startswith("/ai-sidebar/mcp-grants"):  # every user sees and revokes only their own MCP sign-ins
            expected = "ai-sidebar.read"
        else:
            expected = "ai-sidebar.read" if verb == "GET" or path in reading else \
                "flows.write" if path == "/ai-sidebar/function-sandbox" else "ai-sidebar.write"
        assert permission == expected, (verb, path)


@pytest.fixture(scope="module")
def guarded_nodered(tmp_path_factory, service_process):
    instance = admin_auth_nodered(tmp_path_factory.mktemp("nodered-guarded"),
                                  {"admin": ("admin-pass", "*"), "reader": ("reader-pass", "read")},
                                  service_process.service_port, SERVICE_TOKEN)
    instance.start()
    yield instance
    instance.stop()


async def login(http, nodered, user, password, scope="*"):
    form = {"client_id": "node-red-admin", "grant_type": "password", "scope": scope, "username": user,
            "password": password}
    async with http.post(f"{nodered.url}/auth/token", data=form) as response:
        assert response.status == 200
        return (await response.json())["access_token"]


def concrete(path: str) -> str:
    return path.replace(":sessionId", "s-auth").replace(":id", "s-auth")


BODIES = {"/ai-sidebar/stream-chat": {"message": "hi"}, "/ai-sidebar/search": {"query": "flow"},
          "/ai-sidebar/templates": {"name": "t", "flow": [{"id": "a", "type": "inject"}]},
          "/ai-sidebar/sessions": {"name": "s"}, "/ai-sidebar/sessions/:id": {"name": "s"},
          "/ai-sidebar/execute-tool": {"tool": "get_flows"},
          "/ai-sidebar/assist": {"kind": "json", "description": "an empty list"},
          "/ai-sidebar/function-check": {"code": {"onMessage": "return msg;"}, "libs": [], "outputs": 1},
          "/ai-sidebar/context": {"scope": "global", "key": "unauthorized", "value": 1}}


async def test_no_token_is_401_everywhere_and_read_only_is_401_on_writes(guarded_nodered):
    async with aiohttp.ClientSession() as http:
        reader = await login(http, guarded_nodered, "reader", "reader-pass", "read")
        for verb, path, permission in ROUTES:
            url = guarded_nodered.url + concrete(path)
            body = BODIES.get(path)
            async with http.request(verb, url, json=body) as response:
                assert response.status == 401, (verb, path)
            async with http.request(verb, url, json=body,
                                    headers={"Authorization": f"Bearer {reader}"}) as response:
                if not permission.endswith(".read"):  # the reader's scope "read" holds every *.read permission
                    assert response.status == 401, (verb, path)
                else:
                    assert response.status != 401, (verb, path, await response.text())
                    await response.read()


async def test_an_admin_reaches_write_routes_and_the_service_sees_who_asked(guarded_nodered):
    async with aiohttp.ClientSession() as http:
        admin = await login(http, guarded_nodered, "admin", "admin-pass")
        headers = {"Authorization": f"Bearer {admin}"}
        async with http.post(f"{guarded_nodered.url}/ai-sidebar/sessions", json={"id": "s-admin", "name": "mine"},
                             headers=headers) as response:
            assert response.status == 201
        async with http.get(f"{guarded_nodered.url}/ai-sidebar/sessions", headers=headers) as response:
            assert "s-admin" in {s["id"] for s in (await response.json())["sessions"]}
        reader = await login(http, guarded_nodered, "reader", "reader-pass", "read")
        async with http.get(f"{guarded_nodered.url}/ai-sidebar/sessions",
                            headers={"Authorization": f"Bearer {reader}"}) as response:
            assert "s-admin" not in {s["id"] for s in (await response.json())["sessions"]}
