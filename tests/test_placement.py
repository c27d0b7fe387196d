"""New nodes placed where a person would put them (issue 36): beside the nodes they are wired to, on the 20 px
grid, over no existing node; on a real Node-RED, through the service's approval, and in the planner."""

from __future__ import annotations

from service.nodered.placement import overlaps, size
from service.nodered.write_plans import plan_add_nodes
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
TAB = {"id": "t1", "type": "tab", "label": "T"}
FLOWS = [TAB, {"id": "a", "type": "inject", "z": "t1", "x": 120, "y": 100, "wires": [["b"]]},
         {"id": "b", "type": "debug", "z": "t1", "x": 320, "y": 100, "wires": []}]


def test_a_node_is_as_wide_as_its_label_needs_on_the_grid():
    assert size({"type": "debug"}) == (100, 30)
    assert size({"type": "function", "name": "x" * 30}) == (260, 30)  # 30 × 7 + 50 = 260
    assert size({"type": "switch", "wires": [[], [], [], []]}) == (100, 60)
    assert size({"type": "debug", "w": 140, "h": 30}) == (140, 30)


def test_nodes_wired_to_an_existing_one_go_beside_it_and_over_none():
    change = plan_add_nodes(FLOWS, [{"id": "f", "type": "function", "name": "calc", "x": 120, "y": 100,
                                     "wires": [["b"]]}], "t1")
    node = change.diff["added"][0]
    assert node["x"] < FLOWS[2]["x"] and node["x"] % 20 == 0 and node["y"] % 20 == 0
    assert not any(overlaps(node, old) for old in FLOWS[1:])


def test_nodes_without_positions_get_a_layered_layout_below_the_tab_and_free_ones_stay():
    change = plan_add_nodes(FLOWS, [{"id": "s", "type": "inject", "wires": [["m"]]},
                                    {"id": "m", "type": "change", "wires": [["e"]]},
                                    {"id": "e", "type": "debug", "wires": []}], "t1")
    placed = change.diff["added"]
    assert [n["x"] for n in placed] == sorted(n["x"] for n in placed) and len({n["y"] for n in placed}) == 1
    assert all(n["y"] > 100 for n in placed)
    assert not any(overlaps(n, old) for n in placed for old in FLOWS[1:])
    assert not any(overlaps(a, b) for i, a in enumerate(placed) for b in placed[i + 1:])
    free = plan_add_nodes(FLOWS, [{"id": "z", "type": "debug", "x": 600, "y": 400, "wires": []}], "t1")
    assert (free.diff["added"][0]["x"], free.diff["added"][0]["y"]) == (600, 400)


async def test_nodes_the_model_puts_over_existing_ones_are_deployed_where_none_is(service, writable_nodered, model):
    flows = deployed(writable_nodered)["flows"]
    tab = next(n for n in flows if n["type"] == "tab")
    existing = [n for n in flows if n.get("z") == tab["id"] and "x" in n and "wires" in n]
    nodes = [{"id": f"n{i}", "type": "debug", "name": f"placed-{i}", "x": old["x"], "y": old["y"], "wires": []}
             for i, old in enumerate(existing)]
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": nodes}}]),
                 Reply(text="Done."))
    response = await service.post("/ai-sidebar/stream-chat", headers=ALICE,
                                   json={"message": "add debug nodes", "selectedFlow": {"id": tab["id"]}})
    approval = (await read_events(response))[0]
    assert approval["type"] == "approval_required"
    resumed = await service.post("/ai-sidebar/resume", headers=ALICE, json={
        "resumeToken": approval["resumeToken"], "decisions": [{"type": "approve"}]})
    assert next(e for e in await read_events(resumed) if e["type"] == "tool_result")["ok"] is True
    after = deployed(writable_nodered)["flows"]
    new = [n for n in after if str(n.get("name", "")).startswith("placed-")]
    assert len(new) == len(existing) > 1
    for node in new:
        assert node["x"] % 20 == 0 and node["y"] % 20 == 0
        assert not any(overlaps(node, old) for old in existing), node
    assert not any(overlaps(a, b) for i, a in enumerate(new) for b in new[i + 1:])
