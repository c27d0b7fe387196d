"""Review part by part (issue 36): a card lists the parts of its change; a resume that ticks some applies exactly
those on a real Node-RED, re-validated; an untick that changes anything else shows the card again instead."""

from __future__ import annotations

import json

from service.nodered.change_parts import part_ids, parts_of, select_parts
from service.nodered.subflow_plans import plan_create_subflow
from service.nodered.write_plans import plan_add_nodes, plan_delete_nodes, plan_update_node
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
# A chain of three with a config node the middle one uses, and a link out to an existing link in.
CHAIN = [{"id": "n1", "type": "inject", "name": "p-start", "x": 100, "y": 300, "wires": [["n2"]]},
         {"id": "n2", "type": "mqtt out", "name": "p-send", "broker": "cfg", "x": 300, "y": 300, "wires": []},
         {"id": "n3", "type": "debug", "name": "p-show", "x": 300, "y": 360, "wires": []},
         {"id": "n4", "type": "function", "name": "p-calc", "func": "return msg;", "outputs": 1, "x": 500,
          "y": 300, "wires": [["n3"]]},
         {"id": "cfg", "type": "mqtt-broker", "name": "p-broker", "broker": "localhost", "port": "1883"}]
TAB = {"id": "t1", "type": "tab", "label": "T"}
FLOWS = [TAB, {"id": "a", "type": "inject", "z": "t1", "x": 100, "y": 100, "wires": [["b"]]},
         {"id": "b", "type": "debug", "z": "t1", "x": 300, "y": 100, "wires": []},
         {"id": "lin", "type": "link in", "z": "t1", "links": [], "x": 500, "y": 100, "wires": [["b"]]}]


def ids_by_name(diff) -> dict[str, str]:
    return {node.get("name"): node["id"] for node in diff["added"]}


def by_name(value, nodes) -> str:
    """``value`` as JSON with the ids of the new ``nodes`` replaced by their names: planned again when it is
    applied, a change gets new random ids."""
    text = json.dumps(value)
    for node in nodes:
        text = text.replace(node["id"], f"new-{node['name']}")
    return text


def test_parts_are_derived_from_the_diff_with_stable_ids_for_every_planner():
    change = plan_add_nodes(FLOWS, [*CHAIN, {"id": "lo", "type": "link out", "name": "p-lo", "links": ["lin"],
                                             "x": 700, "y": 300, "wires": []}], "t1")
    new = ids_by_name(change.diff)
    assert part_ids(change.diff) == [
        *(f"add:{new[n]}" for n in ("p-start", "p-send", "p-show", "p-calc", "p-broker", "p-lo")),
        "prop:lin:links",
        *sorted([f"wire+:{new['p-start']}:0:{new['p-send']}", f"wire+:{new['p-calc']}:0:{new['p-show']}"])]
    kinds = {part["kind"] for part in parts_of(change.diff)}
    assert kinds == {"add", "prop", "wire+"}
    deletion = plan_delete_nodes(FLOWS, ["b"])
    assert part_ids(deletion.diff) == ["wire-:a:0:b", "wire-:lin:0:b", "remove:b"]
    update = plan_update_node(FLOWS, "a", {"name": "x", "wires": [[]]})
    assert part_ids(update.diff) == ["prop:a:name", "wire-:a:0:b"]  # wires are parts, not a property part
    # All parts ticked: the planner's own change, untouched nodes the same objects.
    whole = select_parts(FLOWS, change.diff, part_ids(change.diff))
    assert not whole.adjusted and whole.diff == change.diff and whole.flows[1] is FLOWS[1]


def test_an_untick_that_leaves_something_dangling_is_adjusted_and_one_that_does_not_is_exact():
    change = plan_add_nodes(FLOWS, [*CHAIN, {"id": "lo", "type": "link out", "name": "p-lo", "links": ["lin"],
                                             "x": 700, "y": 300, "wires": []}], "t1")
    new = ids_by_name(change.diff)
    every = part_ids(change.diff)
    calc_wire = f"wire+:{new['p-calc']}:0:{new['p-show']}"
    # The show node unticked with its wire: exactly the rest.
    exact = select_parts(FLOWS, change.diff, [p for p in every if p not in (f"add:{new['p-show']}", calc_wire)])
    assert not exact.adjusted and new["p-show"] not in {n["id"] for n in exact.flows}
    # Unticked without its wire: the wire cannot stay, so the card must be shown again.
    dangling = select_parts(FLOWS, change.diff, [p for p in every if p != f"add:{new['p-show']}"])
    assert dangling.adjusted and calc_wire not in dangling.parts
    # The broker's only user unticked: the broker would be left unused, so it goes too (adjusted).
    start_wire = f"wire+:{new['p-start']}:0:{new['p-send']}"
    unused = select_parts(FLOWS, change.diff, [p for p in every if p not in (f"add:{new['p-send']}", start_wire)])
    assert unused.adjusted and f"add:{new['p-broker']}" not in unused.parts
    # The broker unticked while its user stays: it is needed (adjusted back in).
    needed = select_parts(FLOWS, change.diff, [p for p in every if p != f"add:{new['p-broker']}"])
    assert needed.adjusted and f"add:{new['p-broker']}" in needed.parts
    # A link keeps both ends: the link in's links change comes back with the link out.
    link = select_parts(FLOWS, change.diff, [p for p in every if p != "prop:lin:links"])
    assert link.adjusted and "prop:lin:links" in link.parts
    # A removed node takes its wires: unticking one of them is adjusted.
    deletion = plan_delete_nodes(FLOWS, ["b"])
    assert select_parts(FLOWS, deletion.diff, ["remove:b", "wire-:a:0:b"]).adjusted
    only_wire = select_parts(FLOWS, deletion.diff, ["wire-:a:0:b"])
    assert not only_wire.adjusted and only_wire.flows[1]["wires"] == [[]] and only_wire.flows[2] is FLOWS[2]


def test_a_new_subflow_is_approved_whole_or_not_at_all():
    change = plan_create_subflow(FLOWS, ["b"], "sub")
    subflow, instance = change.diff["added"]
    every = part_ids(change.diff)
    assert set(every) >= {f"add:{subflow['id']}", f"add:{instance['id']}", "prop:b:z", f"wire+:a:0:{instance['id']}",
                          "wire-:a:0:b"}
    assert not select_parts(FLOWS, change.diff, every).adjusted
    # Only the instance ticked: its definition, the moved node and the rewired wire come back with it.
    alone = select_parts(FLOWS, change.diff, [f"add:{instance['id']}"])
    assert alone.adjusted and set(alone.parts) == set(every)
    assert {n["id"]: n.get("z") for n in alone.flows}["b"] == subflow["id"]


async def pause(service, model, tab_id, nodes, apply="deploy"):
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab_id, "nodes": nodes}}]),
                 Reply(text="Done."))
    response = await service.post("/ai-sidebar/stream-chat", headers=ALICE,
                                  json={"message": "add the chain", "apply": apply, "selectedFlow": {"id": tab_id}})
    assert response.status == 200, await response.text()
    events = await read_events(response)
    assert [e["type"] for e in events] == ["approval_required", "done"], events
    return events[0]


async def resume(service, approval, decision):
    return await service.post("/ai-sidebar/resume", headers=ALICE,
                              json={"resumeToken": approval["resumeToken"], "decisions": [decision]})


def first_tab(nodered) -> dict:
    return next(n for n in deployed(nodered)["flows"] if n["type"] == "tab")


async def test_a_partly_approved_card_deploys_exactly_the_ticked_parts_and_leaves_the_rest_byte_identical(
        service, writable_nodered, model):
    tab = first_tab(writable_nodered)
    before = deployed(writable_nodered)
    approval = await pause(service, model, tab["id"], CHAIN)
    action = approval["actions"][0]
    assert [p["id"] for p in action["parts"]] == part_ids(action["diff"]) and "ticked" not in action
    new = ids_by_name(action["diff"])
    ticked = [p["id"] for p in action["parts"]
              if p["id"] not in (f"add:{new['p-show']}", f"wire+:{new['p-calc']}:0:{new['p-show']}")]

    bad = await resume(service, approval, {"type": "approve", "parts": [*ticked, "add:nothing"]})
    assert bad.status == 400 and (await bad.json())["error"]["code"] == "invalid_request"
    assert deployed(writable_nodered) == before  # nothing applied, and the token still answers

    response = await resume(service, approval, {"type": "approve", "parts": ticked})
    events = await read_events(response)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is True and "only some parts" in result["result"], result
    after = deployed(writable_nodered)
    expected = select_parts(before["flows"], action["diff"], ticked)
    assert not expected.adjusted
    applied = [n for n in after["flows"] if n["id"] not in {m["id"] for m in before["flows"]}]
    # exactly the ticked parts, in order
    assert by_name(after["flows"], applied) == by_name(expected.flows, action["diff"]["added"])
    assert "p-show" not in {n.get("name") for n in after["flows"]}
    calc = next(n for n in after["flows"] if n.get("name") == "p-calc")
    assert calc["wires"] == [[]]
    kept = {n["id"]: n for n in before["flows"]}
    for node in after["flows"]:  # untouched nodes byte-identical, in their order
        if node["id"] in kept:
            assert json.dumps(node) == json.dumps(kept[node["id"]])
    assert [n["id"] for n in after["flows"] if n["id"] in kept] == [n["id"] for n in before["flows"]]


async def test_an_untick_that_changes_something_else_shows_the_card_again_and_applies_nothing(
        service, writable_nodered, model):
    tab = first_tab(writable_nodered)
    before = deployed(writable_nodered)
    approval = await pause(service, model, tab["id"], CHAIN)
    action = approval["actions"][0]
    new = ids_by_name(action["diff"])
    ticked = [p["id"] for p in action["parts"] if p["id"] != f"add:{new['p-show']}"]  # its wire stays ticked
    events = await read_events(await resume(service, approval, {"type": "approve", "parts": ticked}))
    assert [e["type"] for e in events] == ["approval_required", "done"], events
    again = events[0]["actions"][0]
    assert events[1]["status"] == "awaiting_approval" and again["adjusted"] is True
    assert again["diff"] == action["diff"]  # the whole card, with the adjusted parts ticked
    assert set(again["ticked"]) == set(ticked) - {f"wire+:{new['p-calc']}:0:{new['p-show']}"}
    assert deployed(writable_nodered) == before
    old = await resume(service, approval, {"type": "approve"})
    assert old.status == 409  # the first card's token is used

    events = await read_events(await resume(service, events[0], {"type": "approve", "parts": again["ticked"]}))
    assert next(e for e in events if e["type"] == "tool_result")["ok"] is True
    names = {n.get("name") for n in deployed(writable_nodered)["flows"]}
    assert {"p-start", "p-send", "p-calc", "p-broker"} <= names and "p-show" not in names


async def test_a_partly_approved_card_for_the_editor_hands_over_only_the_ticked_parts(
        service, writable_nodered, model):
    tab = first_tab(writable_nodered)
    before = deployed(writable_nodered)
    # A broker of its own: one the same as a deployed broker (the test before may have deployed CHAIN's) is reused,
    # not added again (service/nodered/config_nodes.py).
    chain = [{**node, "port": "18830"} if node["type"] == "mqtt-broker" else node for node in CHAIN]
    approval = await pause(service, model, tab["id"], chain, apply="editor")
    action = approval["actions"][0]
    new = ids_by_name(action["diff"])
    dropped = {f"add:{new['p-start']}", f"wire+:{new['p-start']}:0:{new['p-send']}"}
    ticked = [p["id"] for p in action["parts"] if p["id"] not in dropped]
    events = await read_events(await resume(service, approval, {"type": "approve", "parts": ticked}))
    change = next(e for e in events if e["type"] == "flow_change")["changes"]
    assert [n["name"] for n in change["nodes"]] == ["p-send", "p-show", "p-calc", "p-broker"]
    assert sorted(json.loads(by_name(change["parts"], change["nodes"]))) == \
        sorted(json.loads(by_name(ticked, action["diff"]["added"])))
    assert by_name(change["wires"]["added"], change["nodes"]) == json.dumps([["new-p-calc", 0, "new-p-show"]])
    assert deployed(writable_nodered) == before
