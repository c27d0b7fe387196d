"""tidy_layout (issue 36): a tab's nodes laid out in layers along their wires (grandalf's Sugiyama layout), groups
respected, no overlap, behind an approval card; on a real Node-RED through the service."""

from __future__ import annotations

from service.nodered.placement import overlaps
from service.nodered.write_plans import plan_tidy_layout
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}


def messy() -> list[dict]:
    """A chain of five piled up in one corner, a node in a group, and the group."""
    chain = [{"id": f"c{i}", "type": "function", "name": f"step {i}", "z": "t", "x": 100 + 3 * i, "y": 100 + 2 * i,
              "wires": [[f"c{i + 1}"]] if i < 4 else []} for i in range(5)]
    return [{"id": "t", "type": "tab", "label": "Messy"}, *chain,
            {"id": "g", "type": "group", "z": "t", "nodes": ["k"], "x": 94, "y": 179, "w": 152, "h": 82},
            {"id": "k", "type": "debug", "z": "t", "g": "g", "x": 170, "y": 220, "wires": []}]


def test_a_tab_is_laid_out_left_to_right_on_the_grid_with_grouped_nodes_left_and_nothing_overlapping():
    flows = messy()
    change = plan_tidy_layout(flows, "t")
    moved = {entry["id"] for entry in change.diff["changed"]}
    assert moved <= {f"c{i}" for i in range(5)} and len(moved) >= 4
    assert set(change.diff) == {"added", "removed", "changed", "wires"} and not change.diff["wires"]["added"]
    assert all(set(entry["properties"]) <= {"x", "y"} for entry in change.diff["changed"])
    after = {n["id"]: n for n in change.flows}
    xs = [after[f"c{i}"]["x"] for i in range(5)]
    assert xs == sorted(xs) and len(set(xs)) == 5  # one layer per step along the wires
    assert all(after[f"c{i}"]["x"] % 20 == 0 and after[f"c{i}"]["y"] % 20 == 0 for i in range(5))
    assert after["k"] == flows[-1] and after["g"] == flows[-2]  # the group and its node stay
    chain = [after[f"c{i}"] for i in range(5)]
    assert not any(overlaps(a, b) for i, a in enumerate(chain) for b in chain[i + 1:])
    group_box = {"x": 94 + 76, "y": 179 + 41, "w": 152, "h": 82}
    assert not any(overlaps(node, group_box) for node in chain)
    assert change.summary == f'Tidy the layout of {len(moved)} nodes on tab \u201cMessy\u201d (positions only).'


def test_only_the_given_nodes_move():
    change = plan_tidy_layout(messy(), "t", ["c3", "c4"])
    assert {entry["id"] for entry in change.diff["changed"]} <= {"c3", "c4"}


async def test_tidy_layout_waits_for_approval_and_deploys_only_positions(service, writable_nodered, model):
    before = deployed(writable_nodered)
    tab = next(n for n in before["flows"] if n["type"] == "tab")
    model.script(Reply(tool_calls=[{"name": "tidy_layout", "arguments": {"flow_id": tab["id"]}}]),
                 Reply(text="Tidied."))
    response = await service.post("/ai-sidebar/stream-chat", headers=ALICE, json={"message": "tidy this tab"})
    approval = (await read_events(response))[0]
    assert approval["type"] == "approval_required" and approval["actions"][0]["tool"] == "tidy_layout"
    assert deployed(writable_nodered) == before
    resumed = await service.post("/ai-sidebar/resume", headers=ALICE, json={
        "resumeToken": approval["resumeToken"], "decisions": [{"type": "approve"}]})
    assert next(e for e in await read_events(resumed) if e["type"] == "tool_result")["ok"] is True
    after = {n["id"]: n for n in deployed(writable_nodered)["flows"]}
    for node in before["flows"]:  # only x and y changed, and only on that tab
        mine = {k: v for k, v in after[node["id"]].items() if k not in ("x", "y")}
        assert mine == {k: v for k, v in node.items() if k not in ("x", "y")}
        if node.get("z") != tab["id"]:
            assert after[node["id"]] == node
    placed = [n for n in after.values() if n.get("z") == tab["id"] and "wires" in n and not n.get("g")]
    assert not any(overlaps(a, b) for i, a in enumerate(placed) for b in placed[i + 1:])
