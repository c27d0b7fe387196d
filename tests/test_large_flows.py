"""Large and structured flows reach the model whole in structure: a real Node-RED with a generated workspace, the
scripted model recording what it received, and an independent reader of the compact text."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.server import NodeRedConfig, build_server
from service.nodered.compact import MODEL_TOOL_LIMIT, TEXT_BUDGET
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.conftest import SERVICE_SECRET, TEST_API_KEY
from tests.support.compact_reader import Reading, property_json, read
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import read_events
from tests.support.workspaces import CRED_VALUE, SUBFLOW_CRED_VALUE, big_code_tab, change_rules, switch_rules, workspace

FLOW_BLOCK = re.compile(r'<tool_result tool="(?P<tool>[^"]+)">\n(?P<text>.*?)\n</tool_result>', re.DOTALL)


@pytest.fixture(scope="module")
def large_nodered(tmp_path_factory):
    """Node-RED 4.1 running the generated workspace and the big-code tab."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-large"), port=free_port(),
                       flows=workspace() + big_code_tab(), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def deployed(large_nodered) -> list[dict]:
    """The flow configuration as Node-RED holds it (GET /flows), the reference for every check."""
    request = urllib.request.Request(f"{large_nodered.url}/flows", headers={"Node-RED-API-Version": "v1"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.fixture
async def large_client(aiohttp_client, large_nodered, model, tmp_path):
    settings = Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=large_nodered.url),
                        openai_base_url=model.base_url,
                        openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False,
                        knowledge_refresh=0)
    return await aiohttp_client(create_app(settings))


async def chat(client, **body) -> list[dict]:
    response = await client.post("/ai-sidebar/stream-chat", json={"silent": True, **body})
    assert response.status == 200, await response.text()
    events = await read_events(response)
    assert events[-1]["type"] == "done"
    return events


def received(model, tool: str = "get_flow") -> str:
    """The text of ``tool``'s result in the last request the model received (user turn or tool message)."""
    for message in reversed(model.requests[-1]["messages"]):
        content = message.get("content")
        if isinstance(content, str):
            block = FLOW_BLOCK.search(content)
            if block and block["tool"] == tool:
                return block["text"]
    raise AssertionError(f"no {tool} result reached the model")


def by_id(flows: list[dict]) -> dict[str, dict]:
    return {node["id"]: node for node in flows}


def subflows_used(flows: list[dict], owner: str) -> list[str]:
    """Subflow definitions instantiated on ``owner``, directly or inside other subflows."""
    found: list[str] = []
    queue = [owner]
    while queue:
        current = queue.pop()
        for node in flows:
            if node.get("z") == current and str(node.get("type", "")).startswith("subflow:"):
                sub = node["type"].split(":", 1)[1]
                if sub not in found:
                    found.append(sub)
                    queue.append(sub)
    return found


def assert_structure_recovered(reading: Reading, flows: list[dict], owner: str) -> None:
    """Every node on ``owner`` and in the subflows it uses: id, type, wires, link targets with their tab; every
    env name of the tab and of those subflows; the locked flags."""
    nodes = by_id(flows)
    for container in [owner, *subflows_used(flows, owner)]:
        definition = nodes[container]
        section = reading.sections[container]
        assert section.kind == ("Subflow" if definition["type"] == "subflow" else "Tab")
        assert ("locked" in section.flags) == bool(definition.get("locked"))
        assert section.env == [entry["name"] for entry in definition.get("env", [])]
        members = [node for node in flows if node.get("z") == container]
        assert members
        for node in members:
            found = section.nodes.get(node["id"])
            assert found is not None, f"{node['id']} of {container} is missing"
            assert found.type == node["type"]
            expected = [list(port) for port in node.get("wires") or []]
            assert found.wires == expected or (not any(expected) and not any(found.wires)), node["id"]
            for target in node.get("links") or []:
                assert found.links[target] == nodes[target].get("z"), (node["id"], target)


async def test_a_tab_of_62_functions_with_300_kb_of_code_reaches_the_model_whole_in_structure(
        large_client, model, deployed):
    code = sum(len(n.get("func", "")) for n in deployed if n.get("z") == "bigtab")
    members = [n for n in deployed if n.get("z") == "bigtab"]
    assert len(members) >= 60 and code >= 200_000
    await chat(large_client, message="explain the current flow", selectedFlow={"id": "bigtab"})

    text = received(model)
    assert len(text) <= TEXT_BUDGET
    reading = read(text)
    assert_structure_recovered(reading, deployed, "bigtab")
    # Each node whose code is not whole in the text is named, for get_node_info.
    cut = {node_id for node_id, node in reading.sections["bigtab"].nodes.items()
           if any(line.startswith("…[+") for line in node.code)}
    assert cut and set(reading.shortened) == cut
    assert "get_node_info" in text


async def test_the_editors_flow_data_of_the_big_tab_reaches_the_model_whole_in_structure(large_client, model,
                                                                                          deployed):
    editor = [n for n in deployed if n["id"] == "bigtab" or n.get("z") == "bigtab"]
    editor.append({"id": "bigtab-new", "type": "debug", "z": "bigtab", "x": 1, "y": 1})  # not deployed yet
    await chat(large_client, message="explain the current flow", selectedFlow={"id": "bigtab"}, flowData=editor)

    text = received(model)
    assert len(text) <= TEXT_BUDGET
    assert "changes not deployed yet: 1 added (bigtab-new)" in text
    reading = read(text)
    assert_structure_recovered(reading, editor, "bigtab")
    assert reading.sections["bigtab"].nodes["bigtab-new"].type == "debug" and reading.shortened


async def test_agent_mode_gets_the_same_whole_structure_of_the_big_tab(large_client, model, deployed):
    # The knowledge index built first, as a running service has it: a question the router sends to the node help
    # or the workspace would be answered from what they retrieved, without the agent (the index's build beside the
    # chat made this test depend on which finished first). This one names no tab and asks no docs phrase.
    await large_client.server.app[KNOWLEDGE].refresher.refresh()
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": "bigtab"}}]),
                 Reply(text="It scales readings step by step."))
    events = await chat(large_client, message="Walk me through the big tab, step by step.")
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["get_flow"]

    text = received(model)
    assert len(text) <= TEXT_BUDGET
    reading = read(text)
    assert_structure_recovered(reading, deployed, "bigtab")
    assert reading.shortened


async def test_mcp_get_flow_gives_the_same_bounded_text_and_get_node_info_the_code_in_full(large_nodered, deployed):
    server = build_server(NodeRedConfig(url=large_nodered.url))
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        flow = await session.call_tool("get_flow", {"flow_id": "bigtab"})
        assert not flow.isError
        text = flow.content[0].text
        assert len(text) <= TEXT_BUDGET
        reading = read(text)
        assert_structure_recovered(reading, deployed, "bigtab")
        assert reading.shortened
        normal = next(i for i in reading.shortened if i != "bigtab-f007")

        info = await session.call_tool("get_node_info", {"node_ids": [normal, "bigtab-f007"]})
    assert not info.isError
    nodes = by_id(deployed)
    shown = read(f'Tab "x" [x]: 0 nodes\n{info.content[0].text}')
    # The node asked for is given in full; the one too long for the bound is shortened, and says so.
    assert shown.node(normal).code == nodes[normal]["func"].split("\n")
    assert shown.node("bigtab-f007").code[-1].startswith("…[+")
    assert shown.shortened == ["bigtab-f007"]
    assert len(info.content[0].text) <= MODEL_TOOL_LIMIT
    assert f'  {normal}: on tab "Big code" [bigtab]' in info.content[0].text


async def test_every_id_type_wire_env_name_and_link_target_of_a_500_node_workspace_reaches_the_model(
        large_client, model, deployed):
    assert len([n for n in deployed if n.get("type") not in ("tab", "subflow")]) >= 500
    tabs = [n["id"] for n in deployed if n["type"] == "tab" and n["id"] != "bigtab"]
    assert len(tabs) == 6
    for tab in tabs:
        await chat(large_client, message="explain the current flow", selectedFlow={"id": tab})
        text = received(model)
        reading = read(text)
        assert_structure_recovered(reading, deployed, tab)
        assert not reading.shortened
        for secret in (CRED_VALUE, SUBFLOW_CRED_VALUE):
            assert secret not in text
    # The last tab read (Area 5) uses both subflows; its env values are shown, its cred value is not.
    section = reading.sections["w5"]
    assert 'SITE="site 5" (str)' in section.env_line and "LIMIT=50 (num)" in section.env_line
    assert "DB_PASSWORD (cred, value hidden)" in section.env_line
    assert "THRESHOLD=5 (num)" in reading.sections["sfA"].env_line
    # A link call names its target and the tab it is on; a link in names its sources.
    call = reading.sections["w5"].nodes["w5-lc"]
    assert call.links == {"store-in": "store"} and '("store request", tab "Storage" [store])' in call.line


async def test_switch_rules_change_rules_config_references_and_defaults_reach_the_model(
        large_client, model, deployed):
    await chat(large_client, message="explain the current flow", selectedFlow={"id": "store"})
    text = received(model)
    reading = read(text)
    store = reading.sections["store"]
    # Rules are structure: all 28, in order, so that output n is matched to rule n.
    assert property_json(store.nodes["store-route"].line, "rules") == switch_rules()
    assert len(store.nodes["store-route"].wires) == 28
    assert property_json(store.nodes["store-set"].line, "rules") == change_rules()
    # A property named like a secret that holds a config node's id is a reference, and the config node is listed.
    assert " auth=@store-proxy" in store.nodes["store-http"].line
    assert store.nodes["store-proxy"].type == "http proxy"
    # A property at its default is knowable: on the broker's line (one broker: a "Defaults" entry would cost more)
    # or in the "Defaults" section.
    assert reading.value("store-broker", "port") == "1883"
    assert reading.value("store-broker", "keepalive") == "60"


async def test_get_node_info_says_which_tab_or_subflow_each_node_is_on(large_client, model):
    await chat(large_client, message="@tools:get_node_info|['sfA-f','w3-lc','store-broker']")
    text = received(model, "get_node_info")
    assert '  sfA-f: on subflow "Scale reading" [sfA]' in text
    assert '  w3-lc: on tab "Area 3" [w3]' in text
    assert "  store-broker: a global config node" in text
    response = await large_client.post("/ai-sidebar/execute-tool",
                                       json={"tool": "get_node_info", "params": {"node_ids": ["sfA-f"]}})
    assert (await response.json())["result"]["nodes"][0]["flow"] == {"id": "sfA", "type": "subflow",
                                                                     "label": "Scale reading"}


async def test_get_node_info_names_what_is_wired_into_a_node_across_link_nodes_and_subflow_inputs(large_client,
                                                                                                    model):
    """Issue 30, fault 4: the upstream node decides what a node receives, so node info names it (wires, link out
    → link in, link call → link in, a subflow's input port)."""
    await chat(large_client, message="@tools:get_node_info|['w3-sfB','store-route','sfA-c','w3-li']")
    text = received(model, "get_node_info")
    assert ('  w3-sfB: on tab "Area 3" [w3]; wired in from link in "into area 3" [w3-li] output 1, '
            'link out "to area 3" [w2-lo] output 1 via link in [w3-li]') in text
    # Every area's link call reaches the store's link in, and through it the switch.
    route_line = next(line for line in text.splitlines() if line.startswith("  store-route:"))
    assert 'link in "store request" [store-in] output 1' in route_line
    assert all(f'link call "ask storage" [w{n}-lc] output 1 via link in [store-in]' in route_line
               for n in range(1, 6))
    inner = next(line for line in text.splitlines() if line.startswith("  sfA-c:"))
    assert inner.startswith('  sfA-c: on subflow "Scale reading" [sfA]; type change from node-red ')
    assert inner.endswith('; wired in from the input of subflow "Scale reading" [sfA]')
    link_in = next(line for line in text.splitlines() if line.startswith("  w3-li:"))
    assert link_in.endswith('; wired in from link out "to area 3" [w2-lo] output 1')
    response = await large_client.post("/ai-sidebar/execute-tool",
                                       json={"tool": "get_node_info", "params": {"node_ids": ["w3-sfB"]}})
    assert (await response.json())["result"]["nodes"][0]["incoming"] == [
        {"id": "w3-li", "type": "link in", "name": "into area 3", "port": 0},
        {"id": "w2-lo", "type": "link out", "name": "to area 3", "port": 0, "via": "w3-li"}]
