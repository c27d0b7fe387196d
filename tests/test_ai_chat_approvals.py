"""The ai-chat node may change flows, only after approval (issue 18, node path), on a real Node-RED with the palette,
the service as a process pointed at that Node-RED, and the scripted model.

The flows under test: ``GET /ask?q=&session=`` asks an ai-chat node with Tools and "Allow flow changes" on; its
answer output ends the request with the text, its approval output with ``msg.approval`` as JSON (202).
``POST /decide`` with ``{resume, sessionId}`` sends ``msg.resume`` into the same node; ``GET /ask-readonly`` asks a
node with Tools on and the switch off. A catch node ends a failed request with 502 and ``msg.error``. The model
adds nodes to the empty tab "Scratch"; the Admin API tells whether they were deployed. An inject node ("tick", not
wired, never firing by itself) is there for trigger_inject.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from service.nodered.tools import WRITE_TOOLS
from service.nodered.write_tools import WRITE_TOOL_NAMES
from tests.conftest import SERVICE_TOKEN, TEST_API_KEY
from tests.support.health import START_TIMEOUT, stop_process
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.writable import deployed

REPO = Path(__file__).resolve().parent.parent
TAB, SCRATCH = "a18c0de0f19c00aa", "a18c0de0f19c00bb"
WRITER, READER = "a18c0de0f19c0001", "a18c0de0f19c0002"
NEW_NODES = [{"id": "a", "type": "inject", "name": "tick", "x": 100, "y": 40, "wires": [["b"]]},
             {"id": "b", "type": "debug", "name": "show", "x": 300, "y": 40, "wires": []}]


def _node(node_id: str, node_type: str, wires: list[list[str]] | None = None, **properties) -> dict:
    return {"id": node_id, "type": node_type, "z": TAB, "x": 100, "y": 100, "wires": wires or [], **properties}


def _function(node_id: str, code: str, target: str) -> dict:
    return _node(node_id, "function", [[target]], func=code, outputs=1)


def _chat(node_id: str, flows: bool, wires: list[list[str]]) -> dict:
    return _node(node_id, "ai-chat", wires, name="", config="", scenario="", language="", tools=True, memory=False,
                 flows=flows, concurrency=2, queueLimit=10, outputs=len(wires))


def approval_flows() -> list[dict]:
    question = (f"msg.payload = msg.req.query.q; msg.flowId = '{SCRATCH}';"
                " if (msg.req.query.session) { msg.sessionId = msg.req.query.session; } return msg;")
    return [
        {"id": TAB, "type": "tab", "label": "Approvals"},
        {"id": SCRATCH, "type": "tab", "label": "Scratch"},
        _node("in-ask", "http in", [["question"]], url="/ask", method="get"),
        _function("question", question, WRITER),
        _chat(WRITER, True, [["answer"], ["as-json"]]),
        _node("answer", "http response"),
        _function("as-json", "msg.payload = msg.approval; msg.statusCode = 202; return msg;", "answer"),
        _node("in-decide", "http in", [["decide"]], url="/decide", method="post"),
        _function("decide", "msg.resume = msg.payload.resume; if (msg.payload.sessionId) {"
                            " msg.sessionId = msg.payload.sessionId; } return msg;", WRITER),
        _node("in-read", "http in", [["question-read"]], url="/ask-readonly", method="get"),
        _function("question-read", question, READER),
        _chat(READER, False, [["answer"]]),
        _node("catch", "catch", [["failed"]], scope=[WRITER, READER], uncaught=False),
        _node("tick", "inject", props=[{"p": "payload"}], repeat="", once=False, topic="", payload="",
              payloadType="date"),
        _function("failed", "msg.payload = {code: msg.error.code, message: msg.error.message};"
                            " msg.statusCode = 502; return msg;", "answer"),
    ]


def _start_service(port: int, nodered_url: str, model_url: str, directory: Path) -> subprocess.Popen:
    log_path = directory / "service.log"
    env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "NODE_RED_URL": nodered_url,
           "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": TEST_API_KEY,
           "MEMORY_DB_PATH": str(directory / "memory.db"), "MCP_TOOLS_ENABLED": "false"}
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=REPO)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(log_path.read_text()) from None
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"service did not start:\n{log_path.read_text()}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, model_server):
    """A Node-RED of this module's own (its flows change) with the flows above, and a service writing to it."""
    service_port = free_port()
    node_red = NodeRed(userdir=tmp_path_factory.mktemp("nodered-ai-chat-approvals"), port=free_port(),
                       flows=approval_flows(),
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}",
                            "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    node_red.start()
    directory = tmp_path_factory.mktemp("service-ai-chat-approvals")
    service = _start_service(service_port, node_red.url, model_server.base_url, directory)
    service.url = f"http://127.0.0.1:{service_port}"
    service.memory_db = directory / "memory.db"
    yield node_red, service
    stop_process(service)
    node_red.stop()


def on_scratch(flows: dict) -> list[dict]:
    return [node for node in flows["flows"] if node.get("z") == SCRATCH]


async def ask(node_red: NodeRed, path: str, question: str, session: str | None = None) -> tuple[int, str]:
    params = {"q": question, **({"session": session} if session else {})}
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{node_red.url}{path}", params=params) as response:
            return response.status, await response.text()


async def decide(node_red: NodeRed, approval: dict, decision: dict, session: str | None) -> tuple[int, str]:
    body = {"resume": {"resumeToken": approval["resumeToken"], "decisions": [decision] * len(approval["actions"])},
            "sessionId": session}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{node_red.url}/decide", json=body) as response:
            return response.status, await response.text()


async def wait_for_approval(node_red: NodeRed, model, session: str) -> dict:
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": SCRATCH, "nodes": NEW_NODES}}]))
    status, text = await ask(node_red, "/ask", "add a ticking inject wired to a debug", session)
    assert status == 202, text
    return json.loads(text)


def offered_tools(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


async def test_an_approved_change_is_deployed_only_after_the_resume_message(stack, model):
    node_red, _ = stack
    before = deployed(node_red)
    approval = await wait_for_approval(node_red, model, "s-approve")
    assert set(GENERAL_WRITE_TOOLS) <= offered_tools(model.requests[0])  # the node's scenario: "general"
    assert set(approval) == {"runId", "resumeToken", "actions"} and len(approval["resumeToken"]) >= 43
    action = approval["actions"][0]
    assert action["tool"] == "add_nodes" and action["summary"].startswith("Add 2 nodes (debug, inject) to tab")
    assert [node["type"] for node in action["diff"]["added"]] == ["inject", "debug"]
    assert deployed(node_red) == before  # nothing written while it waits

    model.script(Reply(text="Added a ticking inject wired to a debug node."))
    status, text = await decide(node_red, approval, {"type": "approve"}, "s-approve")
    assert (status, text) == (200, "Added a ticking inject wired to a debug node.")
    after = deployed(node_red)
    assert after["rev"] != before["rev"]
    added = on_scratch(after)
    tick = next(node for node in added if node["type"] == "inject")
    show = next(node for node in added if node["type"] == "debug")
    assert (tick["name"], show["name"], tick["wires"]) == ("tick", "show", [[show["id"]]])
    # The tool's result reached the model: deployed through the Admin API (apply "deploy", not the editor's path).
    tool_messages = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages and "Deployed: Add 2 nodes" in tool_messages[-1]["content"]

    # A token works once.
    status, text = await decide(node_red, approval, {"type": "approve"}, "s-approve")
    assert status == 502 and json.loads(text)["code"] == "approval_used"


async def test_a_rejected_change_leaves_the_flows_unchanged_and_the_model_hears_the_reason(stack, model):
    node_red, _ = stack
    approval = await wait_for_approval(node_red, model, "s-reject")
    before = deployed(node_red)
    model.script(Reply(text="Understood, nothing changed."))
    status, text = await decide(node_red, approval, {"type": "reject", "message": "not on a Friday"}, "s-reject")
    assert (status, text) == (200, "Understood, nothing changed.")
    assert deployed(node_red) == before
    assert "not on a Friday" in json.dumps(model.requests[-1]["messages"])


async def test_with_the_switch_off_no_write_tool_is_offered(stack, model):
    node_red, _ = stack
    model.script(Reply(text="I can only read your flows."))
    status, text = await ask(node_red, "/ask-readonly", "add a ticking inject wired to a debug")
    assert (status, text) == (200, "I can only read your flows.")
    offered = offered_tools(model.requests[-1])
    assert "get_flow" in offered
    assert offered.isdisjoint(tool.name for tool in WRITE_TOOLS)


async def test_a_token_of_the_node_is_refused_for_any_other_identity_and_still_works_for_the_node(stack, model):
    node_red, service = stack
    approval = await wait_for_approval(node_red, model, "s-owner")
    before = deployed(node_red)
    body = {"resumeToken": approval["resumeToken"], "decisions": [{"type": "approve"}]}
    others = [
        {"X-Node-RED-User": "admin"},  # an editor user (the sidebar)
        {},  # a direct client holding the service token
        {"X-AI-Sidebar-Flow-Node": READER, "X-AI-Sidebar-Flow-Grants": "tools,flows",
         "X-AI-Sidebar-Permission": "write", "X-AI-Sidebar-Conversation": "s-owner"},  # another node
        {"X-AI-Sidebar-Flow-Node": WRITER, "X-AI-Sidebar-Flow-Grants": "tools,flows",
         "X-AI-Sidebar-Permission": "write", "X-AI-Sidebar-Conversation": "s-other"},  # this node, another talk
    ]
    async with aiohttp.ClientSession() as http:
        for headers in others:
            async with http.post(f"{service.url}/ai-sidebar/resume", json=body,
                                 headers={"Authorization": f"Bearer {SERVICE_TOKEN}", **headers}) as response:
                assert response.status == 404, headers
                assert (await response.json())["error"]["code"] == "approval_not_found"
        # The node itself has write permission only with the flows grant and the relay's explicit write header.
        for grants, permission in (("tools", "write"), ("tools,flows", "read"), ("tools,flows", None)):
            headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-AI-Sidebar-Flow-Node": WRITER,
                       "X-AI-Sidebar-Flow-Grants": grants, "X-AI-Sidebar-Conversation": "s-owner",
                       **({"X-AI-Sidebar-Permission": permission} if permission else {})}
            async with http.post(f"{service.url}/ai-sidebar/resume", json=body, headers=headers) as response:
                assert response.status == 403, headers
    assert deployed(node_red) == before
    model.script(Reply(text="Done."))
    assert await decide(node_red, approval, {"type": "approve"}, "s-owner") == (200, "Done.")
    assert deployed(node_red)["rev"] != before["rev"]


async def test_a_flow_node_allowed_flow_changes_still_runs_no_tool_by_name(stack, model):
    node_red, _ = stack
    before = deployed(node_red)
    status, text = await ask(node_red, "/ask", "@tools:create_tab|['From a message']")
    assert status == 502 and json.loads(text)["code"] == "forbidden"
    assert deployed(node_red) == before and model.requests == []


def write_calls() -> dict[str, dict]:
    return {"add_nodes": {"flow_id": SCRATCH, "nodes": NEW_NODES},
            "update_node": {"node_id": "decide", "properties": {"func": "return null;"}},
            "delete_nodes": {"node_ids": ["in-read", "question-read"]},
            "create_tab": {"label": "Unapproved"},
            "trigger_inject": {"node_id": "tick"},
            "tidy_layout": {"flow_id": SCRATCH}}


# The write tools the node's scenario (the default, "general") offers; the canvas tools are offered in "solution"
# (their path without an approval: tests/test_approvals.py).
GENERAL_WRITE_TOOLS = [name for name in WRITE_TOOL_NAMES if name in
                       json.loads((REPO / "locales" / "scenarios.json").read_text())["scenarios"]["general"]["tools"]]


@pytest.mark.parametrize("tool", GENERAL_WRITE_TOOLS)
async def test_no_write_tool_reaches_node_red_from_the_node_without_an_approval(stack, model, tool):
    node_red, service = stack
    before = deployed(node_red)
    model.script(Reply(tool_calls=[{"name": tool, "arguments": write_calls()[tool]}]))
    status, text = await ask(node_red, "/ask", f"please {tool}", f"s-every-{tool}")
    assert status == 202, text
    approval = json.loads(text)
    assert [action["tool"] for action in approval["actions"]] == [tool]
    assert deployed(node_red) == before  # rev and content
    with sqlite3.connect(service.memory_db) as raw:
        decisions = raw.execute("SELECT COUNT(*) FROM approval_audit WHERE run_id = ?",
                                (approval["runId"],)).fetchone()[0]
        waiting = raw.execute("SELECT status FROM approval_runs WHERE run_id = ?", (approval["runId"],)).fetchall()
    assert decisions == 0 and waiting == [("pending",)]
