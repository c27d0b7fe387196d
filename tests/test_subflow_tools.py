"""``add_subflow_instance`` and ``create_subflow`` (issue 36) on a real Node-RED: on the generated 500-node
workspace the deployed flows equal the plan node for node, untouched nodes are byte-identical and in order, a locked
tab is refused with nothing written; and a selection turned into a subflow keeps the behaviour: the messages two
injects send through it reach the same debug nodes with the same payloads before and after (read from the comms
websocket, as the editor's Debug sidebar gets them)."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest

from service.nodered.comms import comms_url
from service.nodered.placement import overlaps
from service.nodered.tooling import ToolFailure
from tests import test_canvas_tools
from tests.support.nodered import NodeRed, free_port
from tests.test_canvas_tools import assert_deployed_as_planned, by_id, deployed, write
from tests.test_large_writes import node_bytes

# The generated 500-node workspace on its own Node-RED (a fixture of this module's too).
canvas_nodered = test_canvas_tools.canvas_nodered

TAB = "5f0b000000000001"
DEBUG_HIGH, DEBUG_LOW = "5f0b0000000000d1", "5f0b0000000000d2"
INJECT_HIGH, INJECT_LOW = "5f0b0000000000a1", "5f0b0000000000a2"
SELECTED = ["5f0b0000000000c1", "5f0b0000000000f1", "5f0b0000000000s1"]


def _inject(node_id: str, value: int, y: int) -> dict:
    return {"id": node_id, "type": "inject", "z": TAB, "name": "", "props": [{"p": "payload"}], "repeat": "",
            "crontab": "", "once": False, "topic": "", "payload": json.dumps({"v": value}), "payloadType": "json",
            "x": 100, "y": y, "wires": [[SELECTED[0]]]}


def _debug(node_id: str, y: int) -> dict:
    return {"id": node_id, "type": "debug", "z": TAB, "name": node_id[-2:], "active": True, "tosidebar": True,
            "console": False, "complete": "payload", "targetType": "msg", "x": 700, "y": y, "wires": []}


# Two injects → change → function → switch (high / low) → two debug nodes; the middle three become the subflow.
BEHAVIOUR_FLOWS = [
    {"id": TAB, "type": "tab", "label": "Behaviour", "disabled": False, "info": ""},
    _inject(INJECT_HIGH, 7, 80), _inject(INJECT_LOW, 2, 140),
    {"id": SELECTED[0], "type": "change", "z": TAB, "name": "tag", "x": 260, "y": 100, "wires": [[SELECTED[1]]],
     "rules": [{"t": "set", "p": "payload.tag", "pt": "msg", "to": "scaled", "tot": "str"}]},
    {"id": SELECTED[1], "type": "function", "z": TAB, "name": "triple", "outputs": 1, "x": 400, "y": 100,
     "func": "msg.payload.v = msg.payload.v * 3;\nreturn msg;", "wires": [[SELECTED[2]]]},
    {"id": SELECTED[2], "type": "switch", "z": TAB, "name": "high?", "property": "payload.v", "propertyType": "msg",
     "rules": [{"t": "gt", "v": "10", "vt": "num"}, {"t": "else"}], "checkall": "true", "repair": False,
     "outputs": 2, "x": 540, "y": 100, "wires": [[DEBUG_HIGH], [DEBUG_LOW]]},
    _debug(DEBUG_HIGH, 80), _debug(DEBUG_LOW, 140),
]


@pytest.fixture(scope="module")
def behaviour_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-subflow"), port=free_port(), flows=BEHAVIOUR_FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


async def debug_output(nodered: NodeRed) -> list[tuple[str, object]]:
    """Press both injects and return what the debug nodes showed: ``[(debug node id, payload)]`` sorted, read from
    the comms websocket's ``debug`` topic. Waits (up to 30 s: a busy machine) for one message per inject."""
    seen: list[tuple[str, object]] = []
    async with aiohttp.ClientSession() as http, http.ws_connect(comms_url(nodered.url)) as ws:
        await ws.send_str(json.dumps({"subscribe": "debug"}))
        for inject in (INJECT_HIGH, INJECT_LOW):
            async with http.post(f"{nodered.url}/inject/{inject}") as answer:
                assert answer.status == 200
        deadline = time.monotonic() + 30
        while len(seen) < 2:
            left = deadline - time.monotonic()
            assert left > 0, f"only {seen} reached the debug nodes"
            message = await ws.receive(timeout=left)
            items = json.loads(message.data) if message.type == aiohttp.WSMsgType.TEXT else []
            for item in items if isinstance(items, list) else [items]:
                if item.get("topic") == "debug":
                    seen.append((item["data"]["id"], json.loads(item["data"]["msg"])))
    return sorted(seen, key=lambda pair: pair[0])


async def test_add_a_subflow_instance_wired_to_a_node_of_the_tab(canvas_nodered):
    before, preview, output = await write(canvas_nodered, "add_subflow_instance", {
        "subflow_id": "sfB", "flow_id": "w5", "name": "route", "env": [{"name": "MODE", "value": "slow"}],
        "wires": [["w5-n007"]]})
    assert output.data["status"] == "deployed"
    assert preview["summary"] == 'Add an instance of subflow "Route reading" to tab "Area 5".'
    [instance] = assert_deployed_as_planned(canvas_nodered, preview, before, set())
    assert (instance["type"], instance["z"], instance["name"], instance["wires"]) == (
        "subflow:sfB", "w5", "route", [["w5-n007"], []])  # sfB has two outputs
    assert instance["env"] == [{"name": "MODE", "type": "str", "value": "slow"}]
    assert instance["x"] % 20 == 0 and instance["y"] % 20 == 0
    placed = [n for n in before["flows"] if n.get("z") == "w5" and "x" in n and n["type"] not in ("group", "junction")]
    assert not any(overlaps(instance, node) for node in placed)  # over no node of the tab (estimated sizes)
    assert preview["diff"]["wires"]["added"] == [[instance["id"], 0, "w5-n007"]]


@pytest.mark.parametrize(("tool", "args"), [
    ("add_subflow_instance", {"subflow_id": "sfA", "flow_id": "w2"}),
    ("create_subflow", {"node_ids": ["w4-n001", "w4-n002"], "name": "no"}),
])
async def test_a_subflow_change_to_a_locked_tab_is_refused_and_writes_nothing(canvas_nodered, tool, args):
    before = deployed(canvas_nodered)
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, tool, args)
    assert refused.value.code == "flow_locked" and "is locked" in refused.value.message
    assert node_bytes(deployed(canvas_nodered)["flows"]) == node_bytes(before["flows"])


async def test_create_a_subflow_in_the_large_workspace_deploys_as_planned(canvas_nodered):
    selected = ["w5-n041", "w5-n042", "w5-n043"]  # change → switch → function; the switch's port 1 → junction
    before, preview, _ = await write(canvas_nodered, "create_subflow", {"node_ids": selected, "name": "Middle"})
    assert preview["summary"] == ('Turn 3 nodes of tab "Area 5" into the subflow "Middle" (1 inputs, 2 outputs), '
                                  'with an instance in their place.')
    subflow, instance = assert_deployed_as_planned(canvas_nodered, preview, before, {"w5-n040",
                                                                                     *selected})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert all(nodes[i]["z"] == subflow["id"] for i in selected)
    assert subflow["in"][0]["wires"] == [{"id": "w5-n041"}]
    assert [o["wires"] for o in subflow["out"]] == [[{"id": "w5-n042", "port": 1}], [{"id": "w5-n043", "port": 0}]]
    assert (instance["type"], instance["z"]) == (f"subflow:{subflow['id']}", "w5")
    assert instance["wires"] == [["w5-j"], ["w5-n044"]]
    assert nodes["w5-n040"]["wires"] == [[instance["id"]]]
    assert nodes["w5-n043"]["wires"] == [[]] and nodes["w5-n042"]["wires"] == [["w5-n043"], []]


async def test_a_selection_reached_at_two_nodes_is_refused(canvas_nodered):
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, "create_subflow", {"node_ids": ["w3-n041", "w3-n044"], "name": "x"})
    assert refused.value.code == "invalid_params" and "one input" in refused.value.message


async def test_converting_a_selection_into_a_subflow_keeps_what_the_debug_nodes_show(behaviour_nodered):
    shown = await debug_output(behaviour_nodered)
    assert shown == [(DEBUG_HIGH, {"v": 21, "tag": "scaled"}), (DEBUG_LOW, {"v": 6, "tag": "scaled"})]

    before, preview, _ = await write(behaviour_nodered, "create_subflow", {"node_ids": SELECTED, "name": "Scale"})
    subflow, instance = assert_deployed_as_planned(behaviour_nodered, preview, before,
                                                   {INJECT_HIGH, INJECT_LOW, *SELECTED})
    nodes = by_id(deployed(behaviour_nodered)["flows"])
    assert [nodes[i]["wires"] for i in (INJECT_HIGH, INJECT_LOW)] == [[[instance["id"]]]] * 2
    assert instance["wires"] == [[DEBUG_HIGH], [DEBUG_LOW]] and len(subflow["out"]) == 2
    assert not any(n.get("z") == TAB for n in nodes.values() if n["id"] in SELECTED)

    assert await debug_output(behaviour_nodered) == shown
