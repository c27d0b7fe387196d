"""The Admin API client's login (least privilege, a refused password is not retried into a lockout) and its
connections (none reused after Node.js closed it)."""

from __future__ import annotations

import time

import aiohttp
import pytest
from aiohttp import web
from pydantic import SecretStr

from service.nodered.client import NodeRedClient, NodeRedCredentials, NodeRedError, admin_session


@pytest.fixture
async def refusing_nodered(aiohttp_server):
    """Node-RED-shaped endpoints: the credentials scheme, and a token endpoint that refuses every password."""
    seen: list[dict] = []

    async def login_scheme(request):
        return web.json_response({"type": "credentials", "prompts": []})

    async def token(request):
        seen.append(dict(await request.post()))
        return web.json_response({"error": "invalid_grant", "error_description": "Invalid credentials"}, status=403)

    app = web.Application()
    app.router.add_get("/auth/login", login_scheme)
    app.router.add_post("/auth/token", token)
    server = await aiohttp_server(app)
    server.seen = seen
    return server


async def test_a_refused_password_is_not_retried_on_every_call(refusing_nodered):
    async with aiohttp.ClientSession() as session:
        client = NodeRedClient(str(refusing_nodered.make_url("")), session,
                               NodeRedCredentials(username="ops", password=SecretStr("wrong")))
        raised = []
        for _ in range(3):
            with pytest.raises(NodeRedError) as info:
                await client.get_flows()
            assert info.value.code == "nodered_login_failed" and "NODE_RED_PASSWORD" in info.value.message
            raised.append(info.value)
    assert len(refusing_nodered.seen) == 1
    # Each call gets an error of its own: the kept refusal raised again would gain each raise's frames (and the
    # bodies they hold) for the five minutes it is kept.
    assert len({id(error) for error in raised}) == 3
    assert refusing_nodered.seen[0]["scope"] == "read" and refusing_nodered.seen[0]["client_id"] == "node-red-admin"
    assert "wrong" not in repr(client)


async def test_missing_admin_root_says_how_to_fix_node_red_url(nodered):
    async with aiohttp.ClientSession() as session:
        client = NodeRedClient(nodered.url + "/not-the-admin-root", session)
        with pytest.raises(NodeRedError) as info:
            await client.get_flows()
    assert info.value.code == "not_found" and "httpAdminRoot" in info.value.message


async def test_a_deploy_after_an_idle_busy_moment_does_not_reuse_a_connection_node_red_closed(nodered):
    """Node.js closes a kept-alive connection after 5 s idle (``keepAliveTimeout``); a deploy that reuses it while
    the event loop was too busy to see the close fails with "Server disconnected", and aiohttp retries only
    idempotent requests. The blocking sleep *is* the condition under test: a loop busy past Node's 5 s."""
    async with admin_session() as session:
        client = NodeRedClient(nodered.url, session)
        current = await client.get_flows()
        time.sleep(7)  # Node's 5 s, and its timer's lateness on a busy machine
        answer = await client.post_flows(current["flows"], current["rev"])
    assert answer
