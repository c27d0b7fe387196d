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
    knowledge_indexed,
    pytestmark,
    run_browser,
    tab_named,
)

TAB = "01 - Catch error"
OTHER_TAB = "02 - Trigger a flow at regular intervals"
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
    assert result["pageErrors"] == [], result["pageErrors"]
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


def test_a_change_approved_after_its_tab_was_locked_in_the_editor_is_not_applied_and_its_card_says_why(
        auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    script_add_nodes(model, tab["id"], then="Done.")
    flows_before = deployed_flows(nodered)

    seen = run_approvals(nodered, "locked", tab["id"])

    assert seen["locked"] is True
    assert seen["applied"] == [f'Not applied: the tab "{TAB}" is locked.']
    assert seen["toolCard"] == {"failed": True, "label": "add_nodes failed"}
    assert seen["after"]["names"] == seen["before"]["names"] and not seen["errors"]
    assert deployed_flows(nodered) == flows_before


def test_a_change_to_a_tab_locked_in_the_editor_but_not_open_is_refused_before_any_card(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab, other = tab_named(nodered, TAB), tab_named(nodered, OTHER_TAB)
    script_add_nodes(model, other["id"], then="That tab is locked.")
    flows_before = deployed_flows(nodered)

    seen = run_approvals(nodered, "locked-elsewhere", tab["id"], OTHER_TAB_ID=other["id"])

    assert seen["otherLocked"] is True and seen["cards"] == 0
    assert seen["toolCard"]["failed"] and seen["toolCard"]["label"] == "add_nodes failed"
    assert f'"{OTHER_TAB}" [{other["id"]}] is locked' in seen["toolCard"]["text"]
    assert "That tab is locked." in seen["answer"]
    assert deployed_flows(nodered) == flows_before  # the lock itself is not deployed either


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


def test_a_reopened_conversation_shows_its_cards_decisions_sources_and_links_and_a_waiting_change_can_be_approved(
        nodered, service_process, model):
    # The stack without adminAuth: there the service indexes the node help, so the docs question has sources.
    knowledge_indexed(nodered)
    tab = tab_named(nodered, TAB)
    celsius = "3b66265b19190dfa"
    later = [{**NEW_NODES[0], "name": "ai-later-tick"}, {**NEW_NODES[1], "name": "ai-later-show"}]
    model.script(
        Reply(text=f"Use the **csv** node; `to Celsius + validate` ({celsius}) converts readings."),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NEW_NODES}}]),
        Reply(text="I added an inject node wired to a debug node."),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NEW_NODES}}]),
        Reply(text="Understood, I left them out."),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": later}}]),
        Reply(text="Added them after your reload."))
    questions = ["which node can I use to parse CSV?", QUESTION, "Add the same pair again", "Add a later pair"]

    seen = run_browser("sidebar_approvals.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "MODE": "restore",
                                                "USERNAME": "", "PASSWORD": "", "QUESTIONS": json.dumps(questions),
                                                "REASON": "not on this tab, please"})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot

    live = seen["live"]
    docs, approved, rejected, waiting = live
    assert docs["sources"][0] == "Help: csv" and ["to Celsius + validate", celsius] in docs["links"]
    assert [card["pressed"] for card in approved["cards"]] == [["Approve"]]
    assert approved["cards"][0]["decided"] == ["Approved"] and approved["cards"][0]["status"] == "Decision sent."
    assert approved["applied"] == ["Applied in the editor, not deployed: new nodes: 2. Ctrl-Z undoes it."]
    assert approved["tools"] == [{"label": "add_nodes finished", "failed": False}]
    assert "I added an inject node" in approved["text"]
    assert rejected["cards"][0]["decided"] == ["Rejected: not on this tab, please"]
    assert not rejected["cards"][0]["answerable"] and "Understood, I left them out." in rejected["text"]
    assert waiting["cards"][0]["answerable"] and waiting["cards"][0]["decided"] == []
    # Reloaded and opened from the session list, the conversation shows what it showed, but for the applied line:
    # after a reload "not deployed, Ctrl-Z undoes it" may no longer hold, so it says only what was applied.
    shown_again = [{**answer, "applied": [line.replace(", not deployed", "").replace(" Ctrl-Z undoes it.", "")
                                          for line in answer["applied"]]} for answer in live]
    assert seen["restored"][1]["applied"] == ["Applied in the editor: new nodes: 2."]
    assert seen["restored"] == shown_again
    # Also as the editor loads, before it has its flows: the node names still become links once it has them.
    assert seen["restoredOnLoad"] == shown_again
    assert seen["waitingNote"].startswith("Waiting for your approval since ")
    # The change that waited is approved after the reload, and lands in the editor.
    assert seen["after"]["names"] == sorted(seen["before"]["names"] + ["ai-later-show", "ai-later-tick"])
    assert seen["afterApprove"][-1]["cards"][0]["decided"] == ["Approved"]
    assert seen["waitingAfterApprove"] == 0  # the "waiting since" note went with the decision
    assert "Added them after your reload." in seen["afterApprove"][-1]["text"]


def test_the_card_follows_undo_redo_and_edits_and_the_total_counts_the_continued_run_at_once(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NEW_NODES}}]),
                 Reply(text="I added an inject node wired to a debug node."),
                 Reply(text="Regenerated: the inject node ticks into the debug node."))

    seen = run_approvals(nodered, "follow", tab["id"])

    # The header's total counts the continued run as soon as it ended: it is what the service counted in all.
    with_card, after = seen["totalWithCard"], seen["totalAfterApproval"]
    assert with_card and after and after["text"] != with_card["text"]
    row = next(r for r in seen["serviceTotals"]["totals"] if r["sessionId"] == after["sessionId"])
    assert row["turns"] == 2
    assert f"{row['inputTokens']:,} tokens in" in after["text"] and f"{row['outputTokens']:,} out" in after["text"]
    # Ctrl-Z: the line says undone, and the service was told; Ctrl-Y: applied again.
    assert seen["applied"]["state"] == "applied" and seen["applied"]["text"].startswith("Applied in the editor")
    assert seen["undone"] == {"state": "undone", "count": 1, "text":
                              "Applied, then undone in the editor (Ctrl-Z): new nodes: 2. Redo (Ctrl-Y) applies it "
                              "again."}
    assert seen["undoneReport"] == 200
    assert "ai-tick" not in seen["undoneCanvas"]["names"] and "ai-tick" in seen["redoneCanvas"]["names"]
    assert seen["redone"]["state"] == "applied"
    # The user renamed an applied node: the card no longer presents its values as current; undoing the rename
    # makes it what was applied again.
    assert seen["changed"]["state"] == "changed"
    assert seen["changed"]["text"].startswith("Applied, then changed in the editor: new nodes: 2.")
    assert seen["renameUndone"]["state"] == "applied" and seen["undoneAgain"]["state"] == "undone"
    assert seen["lastReport"] == 200
    # Opened again: the same answers, tool cards, usage lines and the line as it was left.
    assert seen["reopenedLine"]["state"] == "undone" and seen["reopenedLine"]["text"] == seen["undoneAgain"]["text"]
    assert [m["tools"] for m in seen["reopened"]] == [m["tools"] for m in seen["live"]]
    assert [m["text"] for m in seen["reopened"]] == [m["text"] for m in seen["live"]]
    def pressed(view):
        return [c["pressed"] for m in view for c in m["cards"]]
    assert pressed(seen["reopened"]) == pressed(seen["live"]) == [["Approve"]]
    assert seen["reopenedUsage"] == seen["liveUsage"] >= 1
    assert seen["reopenedTotal"]["text"] == after["text"]
    # Regenerate works under the restored last answer: the same question goes to the model again.
    assert seen["reopenedRegenerate"] == 1
    assert [m["role"] for m in seen["regenerated"]][-2:] == ["user", "assistant"]
    assert seen["regenerated"][-2]["text"] == QUESTION and "Regenerated:" in seen["regenerated"][-1]["text"]
    asked = [[m for m in r["messages"] if m["role"] == "user"][-1]["content"] for r in model.requests]
    assert QUESTION in str(asked[-1])
