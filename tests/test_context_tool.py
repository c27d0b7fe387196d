"""``set_context`` (issue 36) on a real Node-RED with adminAuth, two context stores and the palette plugin (whose
``POST /ai-sidebar/context`` sets the value): the card names the key, scope, tab, store and shows the value; after
approval the value is what Node-RED's own ``GET /context/...`` reads; a declined card sets nothing; a read-only
user's token is refused by Node-RED (401) and sets nothing; a bad key, value, tab or store is refused before any
card, naming the argument."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import aiohttp
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ElicitResult
from pydantic import SecretStr

from mcp_server.server import NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from service.nodered import write_tools
from service.nodered.client import NodeRedClient, NodeRedCredentials, admin_session
from service.nodered.tooling import ToolContext, ToolFailure
from service.nodered.tools import WRITE_TOOLS
from service.nodered.write_plans import redacted_diff
from tests.support.nodered import NodeRed, free_port, hash_password

PASSWORD = "context-test-pw"
FLOWS = [{"id": "t1", "type": "tab", "label": "Sensors"},
         {"id": "t2", "type": "tab", "label": "Parked", "disabled": True},
         {"id": "sf", "type": "subflow", "name": "helper", "in": [], "out": []},
         {"id": "i1", "type": "inject", "z": "t1", "name": "tick", "repeat": "", "once": False, "x": 100, "y": 80,
          "wires": []}]
TOOL = next(tool for tool in WRITE_TOOLS if tool.name == "set_context")


@pytest.fixture(scope="module")
def context_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-context"), port=free_port(), flows=FLOWS,
                       admin_auth={"type": "credentials", "users": [
                           {"username": "admin", "password": hash_password(PASSWORD), "permissions": "*"},
                           {"username": "viewer", "password": hash_password(PASSWORD), "permissions": "read"}]},
                       context_storage={"default": {"module": "memory"}, "file": {"module": "memory"}},
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{free_port()}", "AI_SIDEBAR_TOKEN": "x"})
    instance.start()
    yield instance
    instance.stop()


def token(nodered: NodeRed, username: str, scope: str) -> str:
    body = (f"client_id=node-red-admin&grant_type=password&scope={scope}&username={username}"
            f"&password={PASSWORD}").encode()
    with urllib.request.urlopen(urllib.request.Request(f"{nodered.url}/auth/token", data=body), timeout=30) as r:
        return str(json.loads(r.read())["access_token"])


def read_context(nodered: NodeRed, path: str) -> Any:
    """A value as Node-RED's own Admin API reads it (``GET /context/<path>``: ``{"msg", "format"}``), or
    ``None`` when the key is not set: its ``msg`` is ``(undefined)``)."""
    request = urllib.request.Request(f"{nodered.url}/context/{path}",
                                     headers={"Authorization": f"Bearer {token(nodered, 'admin', '*')}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = json.loads(answer.read())
    return None if body.get("msg") in (None, "(undefined)") else json.loads(body["msg"])


def client(nodered: NodeRed, http: aiohttp.ClientSession, username: str, scope: str) -> NodeRedClient:
    return NodeRedClient(nodered.url, http, NodeRedCredentials(username=username, password=SecretStr(PASSWORD),
                                                              scope=scope))  # type: ignore[arg-type]


async def test_the_card_names_key_scope_tab_store_and_value_and_approval_sets_it(context_nodered, tmp_path):
    asked: list[str] = []

    async def approving(_context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    server = build_server(NodeRedConfig(url=context_nodered.url, username="admin", password=PASSWORD),
                          knowledge_db=None, writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "a.db")))
    value = {"limit": 30, "rooms": ["kitchen", "hall"]}
    async with create_connected_server_and_client_session(server._mcp_server,
                                                          elicitation_callback=approving) as session:
        result = await session.call_tool("set_context", {"scope": "flow", "flow_id": "t1", "key": "settings",
                                                         "value": value})
        assert not result.isError, result.content
        assert result.structuredContent["status"] == "set"
        result = await session.call_tool("set_context", {"scope": "global", "key": "threshold", "store": "file",
                                                         "value": 21.5})
        assert not result.isError, result.content
    assert 'Set flow context "settings" of tab "Sensors" (store default).' in asked[0]
    shown = json.loads(asked[0].split("removed):\n", 1)[1])
    assert shown["context"] == {"scope": "flow", "flow": "t1", "flowLabel": "Sensors", "store": "default",
                                "key": "settings", "value": value}
    assert 'Set global context "threshold" (store file).' in asked[1]
    assert read_context(context_nodered, "flow/t1/settings?store=default") == value
    assert read_context(context_nodered, "global/threshold?store=file") == 21.5
    assert read_context(context_nodered, "global/threshold?store=default") is None


async def test_a_declined_card_sets_nothing(context_nodered, tmp_path):
    server = build_server(NodeRedConfig(url=context_nodered.url, username="admin", password=PASSWORD),
                          knowledge_db=None, writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "a.db")))

    async def declining(_context, _params):
        return ElicitResult(action="decline")

    async with create_connected_server_and_client_session(server._mcp_server,
                                                          elicitation_callback=declining) as session:
        result = await session.call_tool("set_context", {"scope": "global", "key": "declined", "value": 1})
    assert result.isError and "declined" in result.content[0].text  # type: ignore[union-attr]
    assert read_context(context_nodered, "global/declined?store=default") is None


async def test_a_read_only_user_is_refused_by_node_red_and_nothing_is_set(context_nodered):
    async with admin_session() as http:
        ctx = ToolContext(nodered=client(context_nodered, http, "viewer", "read"))
        change, rev = await write_tools.plan(ctx, "set_context", TOOL.parse(
            {"scope": "flow", "flow_id": "t1", "key": "sneaky", "value": True}))
        with pytest.raises(ToolFailure) as refused:
            await write_tools.commit(ctx, change, rev)
    assert refused.value.code == "nodered_unauthorized"
    assert read_context(context_nodered, "flow/t1/sneaky?store=default") is None


@pytest.mark.parametrize(("args", "parameter"), [
    ({"scope": "flow", "flow_id": "t1", "key": "$parent.x", "value": 1}, "key"),
    ({"scope": "flow", "flow_id": "t1", "key": "#:(file)::x", "value": 1}, "key"),
    ({"scope": "flow", "flow_id": "t1", "key": "x", "value": "v" * 100_001}, "value"),
    ({"scope": "global", "key": "x", "store": "redis", "value": 1}, "store"),
    ({"scope": "global", "key": "x", "flow_id": "t1", "value": 1}, "flow_id"),
    ({"scope": "flow", "key": "x", "value": 1}, "flow_id"),
    ({"scope": "flow", "flow_id": "t2", "key": "x", "value": 1}, "flow_id"),
    ({"scope": "flow", "flow_id": "sf", "key": "x", "value": 1}, "flow_id"),
])
async def test_a_bad_key_value_tab_or_store_is_refused_before_any_card(context_nodered, args, parameter):
    async with admin_session() as http:
        ctx = ToolContext(nodered=client(context_nodered, http, "admin", "*"))
        with pytest.raises(ToolFailure) as refused:
            await write_tools.preview(ctx, "set_context", TOOL.parse(args))
    assert refused.value.code == "invalid_params"
    assert f"parameter '{parameter}'" in refused.value.message


async def test_an_unknown_tab_lists_the_tabs_and_a_missing_value_is_refused_by_the_arguments(context_nodered):
    async with admin_session() as http:
        ctx = ToolContext(nodered=client(context_nodered, http, "admin", "*"))
        with pytest.raises(ToolFailure) as refused:
            await write_tools.preview(ctx, "set_context", TOOL.parse(
                {"scope": "flow", "flow_id": "nope", "key": "x", "value": 1}))
    assert refused.value.code == "flow_not_found" and '"Sensors" (t1)' in refused.value.message
    with pytest.raises(ToolFailure) as missing:
        TOOL.parse({"scope": "global", "key": "x"})
    assert missing.value.code == "invalid_params" and "value" in missing.value.message


async def test_a_secret_looking_value_is_shown_in_full_with_a_warning_and_redacted_at_rest(context_nodered):
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    async with admin_session() as http:
        ctx = ToolContext(nodered=client(context_nodered, http, "admin", "*"), flow_id="t1")
        shown = await write_tools.preview(ctx, "set_context", TOOL.parse(
            {"scope": "flow", "key": "apiKey", "value": secret}))  # the tab open in the editor
    assert shown["diff"]["context"]["value"] == secret and shown["diff"]["context"]["flow"] == "t1"
    assert shown["warning"]["key"] == "change.secret_shown" and "apiKey" in shown["warning"]["params"]["values"]
    assert secret not in json.dumps(redacted_diff(shown["diff"]))
