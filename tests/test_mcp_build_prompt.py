"""The build loop from MCP (issue 34): the ``build`` prompt gives a run id and walks the client through plan →
approved writes → ``trigger_inject`` → debug evidence → fix → verdict; a real MCP client session (in memory) acts
as the client would, approving each write through elicitation, against a real Node-RED of this module's own, and
every write lands in the MCP audit with that run id."""

from __future__ import annotations

import re
import sqlite3
import time

import anyio
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ElicitResult, Implementation

from mcp_server.server import NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from tests.support.writable import deployed

CLIENT = Implementation(name="build-test-client", version="1.0")
APPROVE = ElicitResult(action="accept", content={"approve": True})
BUGGY = "msg.payload = msg.payload - 32 * 5 / 9;\nreturn msg;"  # 100 → 82.22
FIXED = "msg.payload = Math.round((msg.payload - 32) * 5 / 9 * 100) / 100;\nreturn msg;"  # 100 → 37.78


def text_of(result) -> str:
    assert not result.isError, result.content
    return "\n".join(block.text for block in result.content)


async def approving(_context, _params):
    return APPROVE


def audit(path) -> list[tuple]:
    with sqlite3.connect(path) as raw:
        return list(raw.execute("SELECT tool, decision, outcome, run_id FROM mcp_audit ORDER BY id"))


async def debug_value_after(session, tab_id: str, debug_id: str, value: str, seconds: float = 20.0) -> str:
    """The debug messages read once ``value`` shows among them (the runtime evidence arrives over Node-RED's comms)."""
    deadline = time.monotonic() + seconds
    while True:
        text = text_of(await session.call_tool("get_debug_messages", {"flow_id": tab_id, "node_id": debug_id}))
        if value in text:
            return text
        assert time.monotonic() < deadline, f"{value} not shown within {seconds} s: {text}"
        await anyio.sleep(0.1)


async def test_the_build_prompt_walks_plan_build_test_fix_and_every_write_carries_its_run_id(
        writable_nodered, tmp_path):
    tab = next(n for n in deployed(writable_nodered)["flows"] if n["type"] == "tab")
    server = build_server(NodeRedConfig(url=writable_nodered.url), knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "audit.db")))
    async with create_connected_server_and_client_session(server._mcp_server, client_info=CLIENT,
                                                          elicitation_callback=approving) as session:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert [(a.name, a.required) for a in prompts["build"].arguments] == [("task", True), ("flow_id", False)]
        prompt = (await session.get_prompt("build", {"task": "convert Fahrenheit from an inject to Celsius in "
                                                             "debug", "flow_id": tab["id"]})).messages[0].content.text
        run_id = re.search(r"as build run ([0-9a-f]{32})", prompt).group(1)
        for step in ("get_flow", "Plan:", f'run_id="{run_id}"', "trigger_inject", "get_debug_messages",
                     "at most 3 rounds", "Verdict: done", "BEGIN FLOW", tab["label"]):
            assert step in prompt, step
        again = (await session.get_prompt("build", {"task": "another"})).messages[0].content.text
        assert run_id not in again and "BEGIN FLOW" not in again  # a run id per build; no tab, no flow read
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "run_id" in tools["add_nodes"].inputSchema["properties"]
        assert "run_id" not in tools["get_flow"].inputSchema["properties"]

        # Build: the client makes the plan's change, with the run id.
        nodes = [{"id": "i", "type": "inject", "name": "mcp fahrenheit", "props": [{"p": "payload"}],
                  "payload": "100", "payloadType": "num", "repeat": "", "once": False, "x": 120, "y": 300,
                  "wires": [["f"]]},
                 {"id": "f", "type": "function", "name": "mcp to celsius", "func": BUGGY, "outputs": 1, "x": 300,
                  "y": 300, "wires": [["d"]]},
                 {"id": "d", "type": "debug", "name": "mcp celsius", "active": True, "tosidebar": True,
                  "console": False, "complete": "payload", "targetType": "msg", "x": 480, "y": 300, "wires": []}]
        text_of(await session.call_tool("add_nodes", {"flow_id": tab["id"], "nodes": nodes, "run_id": run_id}))
        flows = deployed(writable_nodered)["flows"]
        ids = {n["name"]: n["id"] for n in flows if n.get("name", "").startswith("mcp ")}

        # Test: trigger the inject, read the debug node: the first function is wrong.
        text_of(await session.call_tool("trigger_inject", {"node_id": ids["mcp fahrenheit"], "run_id": run_id}))
        assert "82.2" in await debug_value_after(session, tab["id"], ids["mcp celsius"], "82.2")
        # Fix (approved), test again: the expected value.
        text_of(await session.call_tool("update_node", {"node_id": ids["mcp to celsius"],
                                                        "properties": {"func": FIXED}, "run_id": run_id}))
        text_of(await session.call_tool("trigger_inject", {"node_id": ids["mcp fahrenheit"], "run_id": run_id}))
        assert "37.78" in await debug_value_after(session, tab["id"], ids["mcp celsius"], "37.78")
        # A write outside any build keeps no run id.
        text_of(await session.call_tool("create_tab", {"label": "Not part of the build"}))

    assert audit(tmp_path / "audit.db") == [
        ("add_nodes", "approve", "deployed", run_id), ("trigger_inject", "approve", "triggered", run_id),
        ("update_node", "approve", "deployed", run_id), ("trigger_inject", "approve", "triggered", run_id),
        ("create_tab", "approve", "deployed", None)]
