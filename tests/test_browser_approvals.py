"""The sidebar's approval card (issue 18) in a real headless Chromium against a real Node-RED (adminAuth, under
/admin), the service as a process and the scripted model: the model asks to add nodes, the card shows the change,
and the user's decision lands in the editor (undeployed, one undo step) or reaches the model."""

from __future__ import annotations

import json
import os
from typing import Any

from tests.support.model_server import Reply
from tests.support.nodered import NodeRed
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    admin_request,
    admin_token,
    auth_stack,
    browser_installed,
    pytestmark,
    run_browser,
    tab_named,
)

TAB = "01 - Catch error"
QUESTION = "Add an inject node that ticks, wired to a debug node"
NEW_NODES = [
    {"id": "a", "type": "inject", "name": "ai-tick", "x": 500, "y": 300, "wires": [["b"]]},
    {"id": "b", "type": "debug", "name": "ai-show", "x": 700, "y": 300, "wires": []},
]


def run_approvals(nodered: NodeRed, mode: str, tab_id: str, **env: str) -> dict[str, Any]:
    result = run_browser("sidebar_approvals.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab_id, "MODE": mode,
                                                  "USERNAME": USERNAME, "PASSWORD": PASSWORD, "QUESTION": QUESTION,
                                                  **env})
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == []
    for screenshot in result.get("screenshots", []) + result.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot
    return result


def deployed_flows(nodered: NodeRed) -> list[dict[str, Any]]:
    return admin_request(nodered, admin_token(nodered), "GET", "/flows")


def script_add_nodes(model, tab_id: str, then: str = "I added an inject node wired to a debug node.") -> None:
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab_id, "nodes": NEW_NODES}}]),
                 Reply(text=then))


def test_approve_puts_the_nodes_on_the_tab_undeployed_and_one_undo_removes_them(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"])
    flows_before = deployed_flows(nodered)

    seen = run_approvals(nodered, "approve", tab["id"])

    card = seen["card"]
    assert 'Add 2 nodes (debug, inject) to tab "01 - Catch error"' in card["text"]
    assert "ai-tick" in card["text"] and "ai-show" in card["text"] and "New wires" in card["text"]
    assert card["buttons"] == ["Approve", "Edit", "Reject"] and card["fitsWidth"]
    assert seen["narrowWidth"] <= seen["width"] - 50 and seen["narrowCard"]["fitsWidth"]
    assert abs(seen["restoredWidth"] - seen["width"]) <= 5
    before, after = seen["before"], seen["after"]
    assert after["names"] == sorted(before["names"] + ["ai-show", "ai-tick"])
    assert after["historyDepth"] == before["historyDepth"] + 1
    assert after["dirty"] and after["deployEnabled"]
    assert seen["applied"] == ["Applied in the editor, not deployed: new nodes: 2. Ctrl-Z undoes it."]
    assert "I added an inject node" in seen["answer"] and seen["errors"] == []
    assert seen["undone"]["names"] == before["names"] and seen["undone"]["historyDepth"] == before["historyDepth"]
    # Nothing was deployed: Node-RED's flows are what they were.
    assert deployed_flows(nodered) == flows_before
    # The model was told the change waits in the editor.
    tool_message = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool")
    assert "not deployed" in tool_message["content"]


def test_reject_shows_its_reason_and_buttons_changes_nothing_and_the_model_reads_the_reason(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"], then="Understood, I will not add them.")
    flows_before = deployed_flows(nodered)

    seen = run_approvals(nodered, "reject", tab["id"], REASON="not on this tab, please")

    # The card was the last thing in the list: after Reject, the reason field and its Reject / Cancel were scrolled
    # into view and the field has the focus.
    assert seen["rejectOpen"] == {"reasonInView": True, "confirmInView": True, "cancelInView": True,
                                  "reasonFocused": True}

    assert seen["after"]["names"] == seen["before"]["names"]
    assert seen["after"]["historyDepth"] == seen["before"]["historyDepth"]
    assert "Understood, I will not add them." in seen["answer"] and seen["applied"] == []
    assert deployed_flows(nodered) == flows_before
    asked = json.dumps(model.requests[-1]["messages"])
    assert "not on this tab, please" in asked


def test_edit_sends_the_edited_arguments_after_refusing_text_that_is_not_json(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"])
    edited = {"flow_id": tab["id"], "nodes": [{**NEW_NODES[0], "name": "ai-edited-tick", "wires": []}]}

    seen = run_approvals(nodered, "edit", tab["id"], EDITED_ARGS=json.dumps(edited))

    assert seen["shownArgs"] == {"flow_id": tab["id"], "nodes": NEW_NODES}
    assert seen["invalidMessage"].startswith("Not valid JSON") and seen["sentWhileInvalid"] == 0
    assert seen["after"]["names"] == sorted(seen["before"]["names"] + ["ai-edited-tick"])
    assert seen["applied"] == ["Applied in the editor, not deployed: new nodes: 1. Ctrl-Z undoes it."]


def test_the_card_comes_back_after_a_reload_and_approve_works(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"])

    seen = run_approvals(nodered, "reload", tab["id"])

    assert seen["reloadedCard"]["runId"] == seen["card"]["runId"]
    assert 'Add 2 nodes (debug, inject) to tab "01 - Catch error"' in seen["reloadedCard"]["text"]
    assert seen["restoredNote"].startswith("Waiting for your approval since ")
    assert seen["after"]["names"] == sorted(seen["before"]["names"] + ["ai-show", "ai-tick"])
    assert seen["after"]["deployEnabled"] and seen["errors"] == []


def test_another_browser_of_the_same_user_can_approve(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"])

    seen = run_approvals(nodered, "second", tab["id"])

    assert seen["secondCard"]["runId"] == seen["card"]["runId"] and seen["secondStoredTokens"] == 0
    assert seen["after"]["names"] == sorted(seen["before"]["names"] + ["ai-show", "ai-tick"])
    assert seen["errors"] == [] and "I added an inject node" in seen["answer"]
    # The first browser's token stopped working when the second got its own; the run is answered already.
    assert seen["firstAfterSecond"]["errors"] == ["This approval was already answered: a resume token works only once."]
