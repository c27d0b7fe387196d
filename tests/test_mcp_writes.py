"""The MCP server's write tools (issue 18, MCP entry point): offered only with ``MCP_WRITE_TOOLS=true``; each call
shows the user the service's own preview through MCP elicitation and writes only after an explicit approval, with
the flows revision checked; every decision lands in the audit file ``MCP_AUDIT_DB``. Real MCP client sessions
(in-memory and stdio) against a real Node-RED of this module's own."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import asynccontextmanager

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ElicitResult, Implementation

from mcp_server.server import ERROR_META, NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from service.nodered import write_tools
from service.nodered.client import NodeRedClient, admin_session
from service.nodered.settings import SettingsError
from tests.support.nodered import REPO
from tests.support.writable import deployed

CLIENT = Implementation(name="approval-test-client", version="3.1.4")
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
NEW_NODES = [{"id": "a", "type": "inject", "name": "tick", "x": 100, "y": 40, "wires": [["b"]]},
             {"id": "b", "type": "debug", "name": "show", "x": 300, "y": 40, "wires": []}]


def node_of(flows, node_type) -> dict:
    return next(n for n in flows if n.get("type") == node_type)


def write_calls(flows) -> dict[str, dict]:
    inject, function = node_of(flows, "inject"), node_of(flows, "function")
    return {"add_nodes": {"flow_id": inject["z"], "nodes": NEW_NODES},
            "update_node": {"node_id": function["id"], "properties": {"func": "return null;"}},
            "delete_nodes": {"node_ids": [function["id"]]},
            "create_tab": {"label": "Unapproved"},
            "trigger_inject": {"node_id": inject["id"]}}


def audit(path) -> list[dict]:
    with sqlite3.connect(path) as raw:
        raw.row_factory = sqlite3.Row
        return [dict(r) for r in raw.execute("SELECT * FROM mcp_audit ORDER BY id")]


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content)


def answering(*answers: ElicitResult, seen: list | None = None, before=None):
    """An elicitation callback giving ``answers`` in turn; it keeps each request in ``seen`` and runs ``before``
    (a coroutine function) first, as a person would act while deciding."""
    queue = list(answers)

    async def callback(_context, params):
        if seen is not None:
            seen.append(params)
        if before is not None:
            await before()
        return queue.pop(0)

    return callback


@asynccontextmanager
async def session_of(nodered, audit_path, callback=None):
    server = build_server(NodeRedConfig(url=nodered.url), knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(audit_path)))
    async with create_connected_server_and_client_session(server._mcp_server, client_info=CLIENT,
                                                          elicitation_callback=callback) as session:
        yield session


APPROVE = ElicitResult(action="accept", content={"approve": True})


def test_write_tools_need_the_switch_and_an_audit_file():
    assert McpWriteSettings.load(env={}).enabled is False
    with pytest.raises(SettingsError) as missing:
        McpWriteSettings.load(env={"MCP_WRITE_TOOLS": "true"})
    assert "MCP_AUDIT_DB" in str(missing.value)
    on = McpWriteSettings.load(env={"MCP_WRITE_TOOLS": "true", "MCP_AUDIT_DB": "/tmp/audit.db"})
    assert (on.enabled, on.audit_db) == (True, "/tmp/audit.db")


async def test_write_tools_are_listed_only_when_enabled_with_honest_annotations(writable_nodered, tmp_path):
    server = build_server(NodeRedConfig(url=writable_nodered.url), knowledge_db=None)
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        default = {t.name for t in (await session.list_tools()).tools}
    assert default.isdisjoint(write_tools.WRITE_TOOL_NAMES) and "get_flow" in default
    async with session_of(writable_nodered, tmp_path / "audit.db") as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        instructions = (await session.initialize()).instructions
    assert set(write_tools.WRITE_TOOL_NAMES) <= set(listed)
    hints = {name: (listed[name].annotations.readOnlyHint, listed[name].annotations.destructiveHint,
                    listed[name].annotations.idempotentHint) for name in write_tools.WRITE_TOOL_NAMES}
    assert hints == {"add_nodes": (False, False, False), "create_tab": (False, False, False),
                     "update_node": (False, True, False), "delete_nodes": (False, True, False),
                     "trigger_inject": (False, True, False),
                     "tidy_layout": (False, False, False),
                     "set_disabled": (False, True, False),
                     "rename": (False, True, False), "create_group": (False, False, False),
                     "change_group_members": (False, True, False), "ungroup": (False, True, False),
                     "link_nodes": (False, True, False), "move_nodes": (False, True, False),
                     "add_subflow_instance": (False, False, False), "create_subflow": (False, True, False),
                     "set_context": (False, True, False)}
    assert listed["get_flow"].annotations.readOnlyHint is True
    assert all(listed[name].outputSchema for name in write_tools.WRITE_TOOL_NAMES)
    assert "only when they approve" in instructions


async def test_an_approved_change_is_deployed_as_previewed_and_audited(writable_nodered, tmp_path):
    before = deployed(writable_nodered)
    function = node_of(before["flows"], "function")
    code = f'const key = "{SECRET}";\nreturn msg;'
    seen: list = []
    async with session_of(writable_nodered, tmp_path / "audit.db", answering(APPROVE, seen=seen)) as session:
        result = await session.call_tool("update_node", {"node_id": function["id"], "properties": {"func": code}})
    assert not result.isError, text_of(result)
    after = deployed(writable_nodered)
    assert result.structuredContent["status"] == "deployed" and result.structuredContent["rev"] == after["rev"]
    assert after["rev"] != before["rev"] and node_of(after["flows"], "function")["func"] == code
    # The user saw the service's preview: the summary and the property before → after, the new value in full
    # (what is approved is what is written) with a warning that it looks like a secret.
    [request] = seen
    assert f'Change func of function "{function["name"]}"' in request.message
    assert '"before"' in request.message and "return msg;" in request.message and SECRET in request.message
    assert f'WARNING: This change writes values that look like secrets, shown here in full: function ' \
           f'"{function["name"]}": func.' in request.message
    assert set(request.requestedSchema["properties"]) == {"approve"}
    [row] = audit(tmp_path / "audit.db")
    assert (row["client_name"], row["client_version"], row["tool"], row["decision"], row["outcome"]) == \
        ("approval-test-client", "3.1.4", "update_node", "approve", "deployed")
    assert row["summary"].startswith("Change func of function") and SECRET not in row["args"]
    assert json.loads(row["args"])["node_id"] == function["id"] and row["created_at"] > 0


@pytest.mark.parametrize(("answer", "code", "decision"), [
    (ElicitResult(action="decline"), "approval_declined", "decline"),
    (ElicitResult(action="cancel"), "approval_cancelled", "cancel"),
    (ElicitResult(action="accept", content={"approve": False}), "approval_declined", "decline"),
    (ElicitResult(action="accept", content={"approve": "maybe"}), "approval_unsupported", "refused"),
])
async def test_anything_but_an_approval_writes_nothing_and_says_so(writable_nodered, tmp_path, answer, code, decision):
    before = deployed(writable_nodered)
    calls = write_calls(before["flows"])
    async with session_of(writable_nodered, tmp_path / "audit.db", answering(*[answer] * len(calls))) as session:
        results = {tool: await session.call_tool(tool, args) for tool, args in calls.items()}
    for tool, result in results.items():
        assert result.isError and result.meta[ERROR_META]["code"] == code, (tool, text_of(result))
        assert "nothing was changed" in text_of(result)
    assert deployed(writable_nodered) == before
    assert [(r["tool"], r["decision"], r["outcome"]) for r in audit(tmp_path / "audit.db")] == \
        [(tool, decision, None) for tool in calls]


async def test_a_client_without_elicitation_is_refused_for_every_write_tool(writable_nodered, tmp_path):
    before = deployed(writable_nodered)
    calls = write_calls(before["flows"])
    async with session_of(writable_nodered, tmp_path / "audit.db") as session:
        for tool, args in calls.items():
            result = await session.call_tool(tool, args)
            assert result.isError and result.meta[ERROR_META]["code"] == "approval_unsupported", tool
            assert "does not support MCP elicitation" in text_of(result) and "Nothing was changed" in text_of(result)
    assert deployed(writable_nodered) == before
    assert {(r["decision"], r["client_name"]) for r in audit(tmp_path / "audit.db")} == \
        {("refused", "approval-test-client")}


async def test_a_deploy_while_the_user_decides_is_a_conflict_and_overwrites_nothing(writable_nodered, tmp_path):
    async def someone_deploys():
        async with admin_session() as http:
            client = NodeRedClient(writable_nodered.url, http)
            current = await client.get_flows()
            await client.post_flows(write_tools.plan_create_tab(current["flows"], "Theirs").flows, current["rev"])

    audit_path = tmp_path / "audit.db"
    async with session_of(writable_nodered, audit_path, answering(APPROVE, before=someone_deploys)) as session:
        result = await session.call_tool("create_tab", {"label": "Mine"})
    assert result.isError and result.meta[ERROR_META]["code"] == "flows_conflict"
    assert "nothing was overwritten" in text_of(result)
    labels = [n.get("label") for n in deployed(writable_nodered)["flows"] if n["type"] == "tab"]
    assert "Theirs" in labels and "Mine" not in labels
    [row] = audit(tmp_path / "audit.db")
    assert (row["decision"], row["outcome"]) == ("approve", "flows_conflict")


async def test_an_approved_inject_is_triggered(writable_nodered, tmp_path):
    inject = node_of(deployed(writable_nodered)["flows"], "inject")
    before = deployed(writable_nodered)
    async with session_of(writable_nodered, tmp_path / "audit.db", answering(APPROVE)) as session:
        result = await session.call_tool("trigger_inject", {"node_id": inject["id"]})
    assert not result.isError, text_of(result)
    assert result.structuredContent["status"] == "triggered" and deployed(writable_nodered) == before
    assert [(r["decision"], r["outcome"]) for r in audit(tmp_path / "audit.db")] == [("approve", "triggered")]


async def test_the_stdio_server_asks_through_elicitation_when_switched_on(writable_nodered, tmp_path):
    audit_path = tmp_path / "audit.db"
    env = {"NODE_RED_URL": writable_nodered.url, "MCP_WRITE_TOOLS": "true", "MCP_AUDIT_DB": str(audit_path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server"], env=env, cwd=REPO)
    seen: list = []
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, client_info=CLIENT, elicitation_callback=answering(APPROVE, seen=seen)) \
            as session:
        await session.initialize()
        result = await session.call_tool("create_tab", {"label": "Over stdio"})
    assert not result.isError, text_of(result)
    assert 'Create a new tab "Over stdio".' in seen[0].message
    assert [n["label"] for n in deployed(writable_nodered)["flows"] if n.get("label") == "Over stdio"] == ["Over stdio"]
    assert [(r["client_name"], r["tool"], r["decision"]) for r in audit(audit_path)] == \
        [("approval-test-client", "create_tab", "approve")]


def test_the_write_switch_without_an_audit_file_stops_the_server():
    env = {k: v for k, v in os.environ.items() if k != "MCP_AUDIT_DB"}
    done = subprocess.run([sys.executable, "-m", "mcp_server"], env={**env, "MCP_WRITE_TOOLS": "true"},
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2 and "MCP_AUDIT_DB" in done.stderr and done.stdout == ""
