"""The canvas write tools (issue 36) approved in the sidebar of a real headless Chromium against a real Node-RED
(adminAuth, under /admin), the service as a process and the scripted model: each change (a new group around two
nodes, the open tab and a node disabled, a node renamed) lands in the editor undeployed as one undo step, and one
Ctrl-Z puts the editor back as it was."""

from __future__ import annotations

import json
import os

from tests.support.model_server import Reply
from tests.test_browser_approvals import deployed_flows
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    knowledge_indexed,
    pytestmark,
    run_browser,
    tab_named,
)

TAB = "01 - Catch error"
OTHER_TAB = "02 - Trigger a flow at regular intervals"


def test_group_disable_and_rename_land_in_the_editor_as_one_undo_step_each(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    nodes = [n for n in nodered.nodes_of(tab["id"]) if n["type"] not in ("group", "junction") and "x" in n]
    first, second, third = (n["id"] for n in nodes[:3])
    other = tab_named(nodered, OTHER_TAB)
    # Questions that ask for a change (the router's "acts" phrases), so the agent answers with its tools.
    calls = [("create_group", {"node_ids": [first, second], "name": "AI group"},
              "Create a group around the first two nodes"),
             ("set_disabled", {"ids": [tab["id"], third], "disabled": True}, "Disable this tab and its third node"),
             ("rename", {"id": third, "name": "renamed by AI"}, "Rename the third node"),
             ("move_nodes", {"node_ids": [second], "flow_id": other["id"], "link_cut_wires": True},
              "Move the second node to the other tab")]
    model.script(*(reply for tool, args, _ in calls for reply in (
        Reply(tool_calls=[{"name": tool, "arguments": args}]), Reply(text=f"{tool} is in the editor."))))
    flows_before = deployed_flows(nodered)

    seen = run_browser("sidebar_canvas.js", {
        "EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "SCENARIO": "solution", "USERNAME": USERNAME,
        "PASSWORD": PASSWORD, "WATCH": json.dumps([first, second, third]),
        "QUESTIONS": json.dumps([question for _, _, question in calls])})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot

    grouped, disabled, renamed, moved = seen["rounds"]
    for round_ in seen["rounds"]:
        assert round_["after"]["historyDepth"] == round_["before"]["historyDepth"] + 1  # one undo step
        assert round_["after"]["dirty"] and round_["applied"].startswith("Applied in the editor, not deployed")
        # made in the editor: the approve button says so (set_context and trigger_inject say Ctrl-Z does not undo)
        assert round_["approveTitle"] == "Make this change in the editor, not deployed (Ctrl-Z undoes it)"
        # Ctrl-Z restores (where the editor draws a node is read below)
        assert round_["undone"] == {**round_["before"], "dirty": round_["undone"]["dirty"],
                                    "drawn": round_["undone"]["drawn"]}

    assert 'Group 2 nodes as "AI group" on tab "01 - Catch error"' in grouped["card"]
    [new_group] = [g for g in grouped["after"]["groups"] if g not in grouped["before"]["groups"]]
    assert (new_group["name"], new_group["nodes"]) == ("AI group", [first, second])
    assert grouped["after"]["nodes"][first]["g"] == grouped["after"]["nodes"][second]["g"] == new_group["id"]
    # The card names the members' new group, never by its id (issue 36).
    assert "g: \u2205 \u2192 \u201cAI group\u201d" in grouped["card"], grouped["card"]
    assert new_group["id"] not in grouped["card"]

    assert 'Disable tab "01 - Catch error"' in disabled["card"]
    assert disabled["after"]["tab"] == {**disabled["before"]["tab"], "disabled": True, "headerDisabled": True}
    assert disabled["after"]["nodes"][third]["d"] is True and disabled["before"]["nodes"][third]["d"] is False

    assert renamed["after"]["nodes"][third]["name"] == "renamed by AI"
    # Drawn at its place on the new tab (the editor reused the old drawing, at NaN, until the node was resized).
    assert moved["after"]["drawn"][second] == moved["before"]["drawn"][second]
    assert all("NaN" not in (place["at"] or "") for round_ in seen["rounds"] for side in ("after", "undone")
               for place in round_[side]["drawn"].values())
    assert 'to tab "02 - Trigger a flow at regular intervals"' in moved["card"]
    assert moved["before"]["nodes"][second]["z"] == tab["id"] and moved["after"]["nodes"][second]["z"] == other["id"]
    # Nothing was deployed.
    assert deployed_flows(nodered) == flows_before


def test_a_selection_turned_into_a_subflow_lands_in_the_editor_as_one_undo_step(auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    nodes = nodered.nodes_of(tab["id"])
    [function] = [n["id"] for n in nodes if n["type"] == "function"]
    [inject] = [n["id"] for n in nodes if n["type"] == "inject" and function in (n.get("wires") or [[]])[0]]
    # The subflow tools are in no scenario (solution is at the tool-search threshold): asked through @tools:.
    args = {"node_ids": [function], "name": "Thrower"}
    flows_before = deployed_flows(nodered)

    seen = run_browser("sidebar_canvas.js", {
        "EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "SCENARIO": "solution", "USERNAME": USERNAME,
        "PASSWORD": PASSWORD, "WATCH": json.dumps([function, inject]),
        "QUESTIONS": json.dumps([f"@tools:create_subflow|{json.dumps(args)}"])})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    [converted] = seen["rounds"]
    assert 'into the subflow "Thrower" (1 inputs, 0 outputs)' in converted["card"]
    before, after = converted["before"], converted["after"]
    assert after["historyDepth"] == before["historyDepth"] + 1 and after["dirty"]  # one undo step, undeployed
    [subflow] = [s for s in after["subflows"] if s not in before["subflows"]]
    assert (subflow["name"], subflow["inputs"], subflow["outputs"]) == ("Thrower", 1, 0)
    assert after["nodes"][function]["z"] == subflow["id"]
    [instance] = [i for i in after["instances"] if i not in before["instances"]]
    assert instance["type"] == f"subflow:{subflow['id']}"
    # One Ctrl-Z: the subflow, its instance and the moved node are gone and back as they were.
    undone = converted["undone"]
    assert undone == {**before, "dirty": undone["dirty"], "drawn": undone["drawn"]}
    assert deployed_flows(nodered) == flows_before
