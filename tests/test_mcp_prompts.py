"""The MCP server's prompts against a real Node-RED, through the SDK's own client: list with arguments, get with the
facts read now (flow, security facts, runtime evidence), completions for tab and node ids."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import PromptReference

from mcp_server.server import NodeRedConfig, build_server
from tests.support.nodered import NodeRed, free_port

SECRET = "sk-live-0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a"
FLOWS = [
    {"id": "web", "type": "tab", "label": "Web hooks"},
    {"id": "hook", "type": "http in", "z": "web", "name": "run", "url": "/run", "method": "post", "x": 100,
     "y": 60, "wires": [["shell"]]},
    {"id": "shell", "type": "exec", "z": "web", "name": "runner", "command": "ls", "addpay": "payload",
     "append": "", "useSpawn": "false", "timer": "", "oldrc": False, "x": 300, "y": 60, "wires": [["res"], [], []]},
    {"id": "res", "type": "http response", "z": "web", "name": "", "x": 500, "y": 60, "wires": []},
    {"id": "keyfn", "type": "function", "z": "web", "name": "call api", "x": 300, "y": 140, "wires": [[]],
     "func": f'const key = "{SECRET}";\nreturn msg;', "outputs": 1},
    {"id": "jobs", "type": "tab", "label": "Jobs"},
    {"id": "tick", "type": "inject", "z": "jobs", "name": "every second", "repeat": "1", "once": True,
     "onceDelay": "0.1", "topic": "", "payload": "", "payloadType": "date", "props": [{"p": "payload"}],
     "x": 100, "y": 60, "wires": [["failing"]]},
    {"id": "failing", "type": "function", "z": "jobs", "name": "parse reading", "outputs": 1, "x": 300, "y": 60,
     "func": 'node.error("reading out of range: 9000", msg);\nreturn null;', "wires": [[]]},
]


@pytest.fixture(scope="module")
def prompt_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-prompts"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def _text(result) -> str:
    return "\n".join(message.content.text for message in result.messages)


async def test_prompts_list_get_and_complete(prompt_nodered):
    server = build_server(NodeRedConfig(url=prompt_nodered.url), knowledge_db=None)
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert set(prompts) == {"explain_flow", "debug_node", "review_security", "document_tab", "build"}
        assert [a.name for a in prompts["explain_flow"].arguments] == ["flow_id"]
        assert prompts["debug_node"].arguments[0].name == "node_id" and prompts["debug_node"].arguments[0].required

        explained = _text(await session.get_prompt("explain_flow", {"flow_id": "web"}))
        assert "[hook] http in" in explained and "[shell] exec" in explained and "never instructions" in explained
        assert SECRET not in explained
        documented = _text(await session.get_prompt("document_tab", {"flow_id": "jobs"}))
        assert "Markdown" in documented and "parse reading" in documented and "[hook]" not in documented

        review = _text(await session.get_prompt("review_security", {"flow_id": "web"}))
        assert "http in [hook]: POST /run" in review
        assert "exec [shell] command 'ls' (msg.payload appended to the command): fed by http in [hook]" in review
        assert SECRET not in review

        # The error the running flow raises every second reaches the debug prompt through the comms subscription.
        with anyio.fail_after(30):
            while True:
                debug = _text(await session.get_prompt("debug_node", {"node_id": "failing"}))
                if "reading out of range: 9000" in debug:
                    break
                await anyio.sleep(0.2)
        assert "parse reading" in debug and "BEGIN GET_DEBUG_MESSAGES" in debug

        tabs = await session.complete(PromptReference(type="ref/prompt", name="explain_flow"),
                                      {"name": "flow_id", "value": "Jo"})
        assert tabs.completion.values == ["jobs"]
        nodes = await session.complete(PromptReference(type="ref/prompt", name="debug_node"),
                                       {"name": "node_id", "value": ""}, context_arguments={"flow_id": "jobs"})
        assert sorted(nodes.completion.values) == ["failing", "tick"]

        with pytest.raises(McpError, match="no-such-tab"):
            await session.get_prompt("explain_flow", {"flow_id": "no-such-tab"})
