"""The canvas write tools (issue 36: disable/enable, rename, groups, link nodes) on a real Node-RED running the
generated 500-node workspace (tabs, groups, subflows, link out/in/call, locked tabs): each change is planned on the
live flows, deployed with its ``rev`` and then ``GET /flows`` equals the planned configuration node for node;
every node the change did not touch is byte-identical and in order; link ends are consistent; a change to a
locked tab is refused before anything is written. Also through the MCP server's write tools (approved by
elicitation) and handed to the editor (``apply: editor``, nothing deployed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from service.nodered import write_tools
from service.nodered.client import NodeRedClient, admin_session
from service.nodered.tooling import ToolContext, ToolFailure
from service.nodered.tools import WRITE_TOOLS
from tests.support.nodered import NodeRed, free_port
from tests.support.workspaces import CREDENTIALS, workspace
from tests.test_large_writes import assert_untouched, mcp_writer, node_bytes


@pytest.fixture(scope="module")
def canvas_nodered(tmp_path_factory):
    """Node-RED running the generated workspace (w2, w4, Storage and subflow sfA locked)."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-canvas"), port=free_port(), flows=workspace(),
                       with_palette=False)
    instance.start()
    instance.deploy_credentials(CREDENTIALS)
    yield instance
    instance.stop()


def deployed(nodered: NodeRed) -> dict:
    return nodered.admin("/flows")


def by_id(flows: list[dict]) -> dict[str, dict]:
    return {node["id"]: node for node in flows}


async def write(nodered: NodeRed, tool: str, args: dict[str, Any], apply: str = "deploy") -> tuple[dict, dict, Any]:
    """Plan ``tool`` on the live flows, then apply it as an approved call does; returns the flows before, the
    planned change's preview and the tool's output (the plan's configuration is ``preview["flows"]``)."""
    parsed = next(t for t in WRITE_TOOLS if t.name == tool).parse(args)
    before = deployed(nodered)
    # The service's own session (idle connections dropped after 3 s, below Node.js's 5 s keep-alive): planning on a
    # loaded machine took longer than 5 s once, and the deploy went out on a connection Node-RED had closed.
    async with admin_session() as http:
        ctx = ToolContext(nodered=NodeRedClient(nodered.url, http), apply=apply)  # type: ignore[arg-type]
        change, rev = await write_tools.plan(ctx, tool, parsed)
        assert rev == before["rev"]
        output = await write_tools.commit(ctx, change, rev)
    return before, {**change.preview(), "flows": change.flows}, output


def assert_deployed_as_planned(nodered: NodeRed, preview: dict, before: dict, changed: set[str],
                               removed: set[str] = frozenset()) -> list[dict]:
    """``GET /flows`` is the planned configuration (node for node, in order); the untouched nodes are
    byte-identical; the diff's ``changed`` entries are exactly ``changed``; returns the nodes added."""
    after = deployed(nodered)
    assert [n["id"] for n in after["flows"]] == [n["id"] for n in preview["flows"]]
    assert after["flows"] == json.loads(json.dumps(preview["flows"]))
    assert {entry["id"] for entry in preview["diff"]["changed"]} == changed
    assert set(preview["diff"]["removed"]) == set(removed)
    return assert_untouched(before["flows"], after["flows"], changed=changed, removed=removed)


async def test_set_disabled_disables_nodes_and_a_tab_and_enables_them_again(canvas_nodered):
    before, preview, output = await write(canvas_nodered, "set_disabled",
                                          {"ids": ["w3-n003", "w5", "w3-n005"], "disabled": True})
    assert output.data["status"] == "deployed"
    assert preview["summary"] == 'Disable function "function 3", tab "Area 5", json "json 5".'
    assert assert_deployed_as_planned(canvas_nodered, preview, before, {"w3-n003", "w3-n005", "w5"}) == []
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert nodes["w3-n003"]["d"] is True and nodes["w5"]["disabled"] is True
    assert nodes["w3-n003"]["wires"] == by_id(before["flows"])["w3-n003"]["wires"]  # its wires stay

    before, preview, _ = await write(canvas_nodered, "set_disabled", {"ids": ["w3-n003", "w5"], "disabled": False})
    assert preview["summary"] == 'Enable function "function 3", tab "Area 5".'
    assert preview["diff"]["changed"][0]["properties"] == {"d": {"before": True, "after": None}}
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w3-n003", "w5"})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert "d" not in nodes["w3-n003"] and nodes["w5"]["disabled"] is False


async def test_rename_a_node_a_group_and_a_tab(canvas_nodered):
    for node_id, name, key in (("w3-n006", "render reading", "name"), ("w3-g", "Sensor inputs", "name"),
                               ("w3", "Greenhouse", "label")):
        before, preview, _ = await write(canvas_nodered, "rename", {"id": node_id, "name": name})
        assert_deployed_as_planned(canvas_nodered, preview, before, {node_id})
        assert by_id(deployed(canvas_nodered)["flows"])[node_id][key] == name
    assert preview["summary"] == 'Rename tab "Area 3" to "Greenhouse".'


async def test_create_a_group_change_its_members_and_ungroup_it(canvas_nodered):
    members = ["w1-n009", "w1-n010", "w1-n011"]
    before, preview, _ = await write(canvas_nodered, "create_group",
                                     {"node_ids": members, "name": "Scaling", "style": {"fill": "#e3f3d3"}})
    assert preview["summary"] == 'Group 3 nodes as "Scaling" on tab "Area 1".'
    [group] = assert_deployed_as_planned(canvas_nodered, preview, before, set(members))
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert (group["type"], group["z"], group["nodes"], group["style"]) == (
        "group", "w1", members, {"label": True, "fill": "#e3f3d3"})
    assert all(nodes[m]["g"] == group["id"] for m in members)
    for member in members:  # the group's box holds each member's centre
        assert group["x"] < nodes[member]["x"] < group["x"] + group["w"]
        assert group["y"] < nodes[member]["y"] < group["y"] + group["h"]

    # A member of the workspace's own group moves into the new one; one of the new group leaves it.
    before, preview, _ = await write(canvas_nodered, "change_group_members",
                                     {"group_id": group["id"], "add": ["w1-n000"], "remove": ["w1-n011"]})
    assert_deployed_as_planned(canvas_nodered, preview, before, {group["id"], "w1-g", "w1-n000", "w1-n011"})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert nodes[group["id"]]["nodes"] == ["w1-n009", "w1-n010", "w1-n000"]
    assert nodes["w1-g"]["nodes"] == [] and nodes["w1-n000"]["g"] == group["id"] and "g" not in nodes["w1-n011"]

    before, preview, _ = await write(canvas_nodered, "ungroup", {"group_id": group["id"]})
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w1-n009", "w1-n010", "w1-n000"},
                               removed={group["id"]})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert group["id"] not in nodes and not any("g" in nodes[m] for m in ("w1-n009", "w1-n010", "w1-n000"))


async def test_a_group_inside_a_group_keeps_both_ends(canvas_nodered):
    before, preview, _ = await write(canvas_nodered, "create_group", {"node_ids": ["w5-n000"], "name": "inner"})
    [inner] = assert_deployed_as_planned(canvas_nodered, preview, before, {"w5-n000", "w5-g"})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert inner["g"] == "w5-g" and nodes["w5-g"]["nodes"] == [inner["id"]] and nodes["w5-n000"]["g"] == inner["id"]
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, "change_group_members", {"group_id": inner["id"], "add": ["w5-g"]})
    assert refused.value.code == "invalid_params"


def assert_links_consistent(flows: list[dict]) -> None:
    """Every link out (mode link) lists only link in nodes that list it back, and the other way round."""
    nodes = by_id(flows)
    for node in flows:
        if node["type"] == "link out" and node.get("mode") != "return":
            assert all(node["id"] in nodes[t]["links"] for t in node["links"]), node
        if node["type"] == "link in":
            assert all(node["id"] in nodes[s]["links"] for s in node["links"] if nodes[s]["type"] == "link out")


async def test_link_nodes_across_tabs_keeps_both_ends_and_replaces_when_asked(canvas_nodered):
    assert_links_consistent(deployed(canvas_nodered)["flows"])
    before, preview, _ = await write(canvas_nodered, "link_nodes", {"source_id": "w1-lo", "target_id": "w5-li"})
    assert preview["summary"] == ('Link link out "to area 2" on tab "Area 1" to link in "into area 5" on tab '
                                  '"Area 5".')
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w1-lo", "w5-li"})
    flows = deployed(canvas_nodered)["flows"]
    assert by_id(flows)["w1-lo"]["links"] == ["w2-li", "w5-li"]
    assert_links_consistent(flows)

    # Replacing drops the old link at both ends (w5-lo sent to w1-li); one whose old end is on a locked tab (w1-lo
    # sends to w2-li, on Area 2) is refused.
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, "link_nodes", {"source_id": "w1-lo", "target_id": "w3-li", "replace": True})
    assert refused.value.code == "flow_locked" and '"Area 2" [w2]' in refused.value.message
    before, preview, _ = await write(canvas_nodered, "link_nodes",
                                     {"source_id": "w5-lo", "target_id": "w3-li", "replace": True})
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w5-lo", "w3-li", "w1-li"})
    flows = by_id(deployed(canvas_nodered)["flows"])
    assert flows["w5-lo"]["links"] == ["w3-li"] and "w5-lo" not in flows["w1-li"]["links"]
    assert flows["w3-li"]["links"] == ["w2-lo", "w5-lo"]
    assert_links_consistent(list(flows.values()))


async def test_a_link_call_calls_one_link_in_and_changes_it_only_when_asked(canvas_nodered):
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, "link_nodes", {"source_id": "w5-lc", "target_id": "w3-li"})
    assert refused.value.code == "invalid_params" and "set replace" in refused.value.message
    before, preview, _ = await write(canvas_nodered, "link_nodes",
                                     {"source_id": "w5-lc", "target_id": "w3-li", "replace": True})
    assert preview["summary"].endswith('instead of link in "store request".')
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w5-lc"})  # a link in does not list link calls
    assert by_id(deployed(canvas_nodered)["flows"])["w5-lc"]["links"] == ["w3-li"]


@pytest.mark.parametrize(("tool", "args"), [
    ("set_disabled", {"ids": ["w2-n001"], "disabled": True}),
    ("set_disabled", {"ids": ["store"], "disabled": True}),
    ("rename", {"id": "w4", "name": "mine now"}),
    ("create_group", {"node_ids": ["w2-n001", "w2-n002"], "name": "no"}),
    ("change_group_members", {"group_id": "w4-g", "remove": ["w4-n000"]}),
    ("ungroup", {"group_id": "w2-g"}),
])
async def test_a_change_to_a_locked_tab_is_refused_and_writes_nothing(canvas_nodered, tool, args):
    before = deployed(canvas_nodered)
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, tool, args)
    assert refused.value.code == "flow_locked" and "is locked" in refused.value.message
    assert node_bytes(deployed(canvas_nodered)["flows"]) == node_bytes(before["flows"])


async def test_a_link_call_may_call_a_link_in_on_a_locked_tab_which_it_leaves_unchanged(canvas_nodered):
    before, preview, _ = await write(canvas_nodered, "link_nodes",
                                     {"source_id": "w1-lc", "target_id": "w4-li", "replace": True})
    assert assert_deployed_as_planned(canvas_nodered, preview, before, {"w1-lc"}) == []


async def test_handed_to_the_editor_nothing_is_deployed(canvas_nodered):
    before, preview, output = await write(canvas_nodered, "create_group", {"node_ids": ["w3-n020"], "name": "ed"},
                                          apply="editor")
    assert output.data["status"] == "editor"
    assert output.data["changes"]["added"][0]["type"] == "group" and output.data["changes"]["changed"][0]["id"] == \
        "w3-n020"
    assert deployed(canvas_nodered) == before


async def test_the_canvas_tools_are_offered_and_applied_over_mcp(canvas_nodered, tmp_path):
    before = deployed(canvas_nodered)
    async with mcp_writer(canvas_nodered, tmp_path) as (session, state):
        offered = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"set_disabled", "rename", "create_group", "change_group_members", "ungroup",
                "link_nodes"} <= set(offered)
        assert offered["create_group"].annotations.destructiveHint is False
        result = await session.call_tool("rename", {"id": "w5-n011", "name": "via mcp"})
        assert not result.isError, result.content
    assert 'Rename function "function 11" to "via mcp".' in state["asked"][0]
    after = deployed(canvas_nodered)
    assert assert_untouched(before["flows"], after["flows"], changed={"w5-n011"}) == []
    assert by_id(after["flows"])["w5-n011"]["name"] == "via mcp"


async def test_move_nodes_to_another_tab_replaces_the_cut_wires_by_link_pairs_when_asked(canvas_nodered):
    moved = ["w1-n017", "w1-n018"]  # change → switch; the inject before, the function after and the junction stay
    before, preview, _ = await write(canvas_nodered, "move_nodes",
                                     {"node_ids": moved, "flow_id": "w3", "link_cut_wires": True})
    assert preview["summary"] == 'Move 2 nodes to tab "Greenhouse", replacing 3 cut wires with link nodes.'
    added = assert_deployed_as_planned(canvas_nodered, preview, before, {"w1-n016", *moved})
    flows = deployed(canvas_nodered)["flows"]
    nodes = by_id(flows)
    assert [nodes[i]["z"] for i in moved] == ["w3", "w3"]
    assert nodes["w1-n017"]["wires"] == [["w1-n018"]]  # the wire between two moved nodes stays
    assert sorted(n["type"] for n in added) == ["link in"] * 3 + ["link out"] * 3
    assert_links_consistent(flows)
    # Each cut wire now runs source → link out ⇢ link in → target, the link out on the source's tab.
    def through_links(source: str, port: int, target: str) -> bool:
        return any(nodes[out]["type"] == "link out" and nodes[out]["z"] == nodes[source]["z"] and any(
            target in nodes[end]["wires"][0] and nodes[end]["z"] == nodes[target]["z"] for end in nodes[out]["links"])
            for out in nodes[source]["wires"][port])
    assert through_links("w1-n016", 0, "w1-n017") and through_links("w1-n018", 0, "w1-n019")
    assert through_links("w1-n018", 1, "w1-j")
    # No wire crosses tabs.
    assert all(nodes[t]["z"] == n["z"] for n in flows for port in n.get("wires") or [] for t in port)


async def test_move_nodes_without_links_removes_the_cut_wires_and_a_group_moves_with_its_members(canvas_nodered):
    before, preview, _ = await write(canvas_nodered, "move_nodes", {"node_ids": ["w3-n026"], "flow_id": "w5"})
    assert preview["summary"] == 'Move 1 node to tab "Area 5"; 3 wires to nodes left behind are removed.'
    assert assert_deployed_as_planned(canvas_nodered, preview, before, {"w3-n025", "w3-n026"}) == []
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert nodes["w3-n026"]["z"] == "w5" and nodes["w3-n026"]["wires"] == [[], []]
    assert "w3-n026" not in nodes["w3-n025"]["wires"][0]

    group = by_id(before["flows"])["w3-g"]
    before, preview, _ = await write(canvas_nodered, "move_nodes", {"node_ids": ["w3-g"], "flow_id": "w1"})
    assert_deployed_as_planned(canvas_nodered, preview, before, {"w3-g", *group["nodes"]})
    nodes = by_id(deployed(canvas_nodered)["flows"])
    assert group["nodes"] == ["w3-n000"] and nodes["w3-n000"]["wires"] == [[]]  # its wire to w3-n001 was cut
    assert nodes["w3-g"]["z"] == "w1" and all(nodes[m]["z"] == "w1" and nodes[m]["g"] == "w3-g"
                                              for m in group["nodes"])


@pytest.mark.parametrize("args", [{"node_ids": ["w1-n030"], "flow_id": "w2"}, {"node_ids": ["w4-n030"],
                                                                             "flow_id": "w1"}])
async def test_moving_nodes_to_or_from_a_locked_tab_is_refused(canvas_nodered, args):
    before = deployed(canvas_nodered)
    with pytest.raises(ToolFailure) as refused:
        await write(canvas_nodered, "move_nodes", args)
    assert refused.value.code == "flow_locked"
    assert node_bytes(deployed(canvas_nodered)["flows"]) == node_bytes(before["flows"])


def mqtt_out(broker_id: str, x: int) -> dict:
    return {"id": f"out-{x}", "type": "mqtt out", "name": f"publish {x}", "topic": "t", "broker": broker_id,
            "x": x, "y": 700, "wires": []}


async def test_a_config_node_that_matches_an_existing_one_is_reused_and_never_duplicated(canvas_nodered):
    # The same broker as the workspace's "local broker" (port given as a number, the deployed one holds text).
    same = {"id": "b1", "type": "mqtt-broker", "name": "my broker", "broker": "127.0.0.1", "port": 1883,
            "autoConnect": False}
    before, preview, _ = await write(canvas_nodered, "add_nodes",
                                     {"flow_id": "w1", "nodes": [same, mqtt_out("b1", 300)]})
    [out] = assert_deployed_as_planned(canvas_nodered, preview, before, set())
    assert out["type"] == "mqtt out" and out["broker"] == "store-broker"

    # Another port: one new broker, though the model gave it twice.
    other = {"type": "mqtt-broker", "broker": "127.0.0.1", "port": "1884", "autoConnect": False}
    before, preview, _ = await write(canvas_nodered, "add_nodes", {"flow_id": "w1", "nodes": [
        {**other, "id": "b2"}, {**other, "id": "b3"}, mqtt_out("b2", 500), mqtt_out("b3", 700)]})
    added = assert_deployed_as_planned(canvas_nodered, preview, before, set())
    [broker] = [n for n in added if n["type"] == "mqtt-broker"]
    assert [n["broker"] for n in added if n["type"] == "mqtt out"] == [broker["id"], broker["id"]]
    assert broker["port"] == "1884"
