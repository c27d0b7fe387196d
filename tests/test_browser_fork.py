"""Edit and resend, and checkpoints (issues 31 and 35), in a real headless Chromium against a real Node-RED (adminAuth
under /admin), the service as a process keeping every deploy, and the scripted model: two questions, the second's
change approved and deployed; "Restore flows to before this" under that answer opens the restore's approval card;
the first question edited with the keyboard and "Conversation and flows" chosen is answered in a new conversation
that then shows the restore's approval card (to the first question's time), and the old one, still listed, keeps
both turns. The restore question's editor offers no flows choice (no answer after it changed flows)."""

from __future__ import annotations

import os

from tests.support.model_server import Reply
from tests.test_browser_history import KITCHEN, history_stack  # noqa: F401  (a fixture)
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    PASSWORD,
    USERNAME,
    browser_installed,
    pytestmark,
    run_browser,
)

FIRST = "what does the kitchen flow do?"
SECOND = "add a debug node that shows the morning tick"
EDITED = "what does the kitchen flow do in the morning?"
NEW_NODE = {"id": "f-debug", "type": "debug", "name": "ai-morning", "x": 340, "y": 200, "wires": []}


def test_a_checkpoint_opens_the_restore_card_and_an_edited_question_forks_the_conversation(history_stack, model):  # noqa: F811
    nodered, _ = history_stack
    model.script(Reply(text="It sends a tick to a debug node."),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": KITCHEN, "nodes": [NEW_NODE]}}]),
                 Reply(text="I added a debug node."),
                 Reply(text="In the morning it ticks once."))

    seen = run_browser("sidebar_fork.js", {"EDITOR_URL": nodered.url, "TAB_ID": KITCHEN, "USERNAME": USERNAME,
                                           "PASSWORD": PASSWORD, "FIRST": FIRST, "SECOND": SECOND, "EDITED": EDITED})

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot

    # The checkpoint is under the answer that changed the flows only, and restores to when its question was asked.
    assert seen["checkpoints"] == [0, 1], seen["checkpoints"]
    assert seen["checkpointText"] == "Restore flows to before this"
    assert seen["checkpointLabel"].startswith("Restore all flows to how they were when this question was asked")
    assert seen["checkpointTo"] == seen["askedAt"][1]
    assert seen["restoreQuestion"].startswith("@tools:restore_flows|")
    assert f'"to":"{seen["checkpointTo"]}"' in seen["restoreQuestion"] and '"scope":"whole"' in seen["restoreQuestion"]
    # The restore is a write like any other: its card shows the change back, and nothing is written without Approve.
    assert "ai-morning" in seen["restoreCard"]["text"], seen["restoreCard"]
    assert seen["restoreCard"]["buttons"][0] == "Approve"

    # Edit: keyboard reachable and named; Escape gives the question back unchanged, Enter sends the edit.
    assert seen["editButtons"] == 3 and seen["editLabel"].startswith("Edit this question")
    assert seen["editorFocused"] and seen["editorValue"] == FIRST and seen["editorLabel"] == "Edited question"
    assert seen["afterEscape"] == {"editors": 0, "focusOnEdit": True, "text": FIRST}
    # The flows choice: offered where a later answer changed flows (the first question), not after the last change.
    assert seen["lastQuestionChoices"] == 0
    assert seen["choice"]["count"] == 1 and seen["choice"]["label"] == "What to take back to this question"
    assert seen["choice"]["options"] == ["Conversation only", "Conversation and flows"]
    assert seen["choice"]["checked"] == "conversation" and seen["choice"]["chosen"] == "both"
    assert [(m["role"], m["text"]) for m in seen["after"][:2]] == [("user", EDITED),
                                                                   ("assistant", "In the morning it ticks once.")]
    # "Conversation and flows": the restore to the first question's time, through an approval card.
    assert seen["forkRestore"]["question"].startswith("@tools:restore_flows|")
    assert f'"to":"{seen["askedAt"][0]}"' in seen["forkRestore"]["question"]
    assert '"scope":"whole"' in seen["forkRestore"]["question"]
    assert "ai-morning" in seen["forkRestore"]["text"] and seen["forkRestore"]["buttons"][0] == "Approve"
    # The model got the edited question with nothing of the old conversation (it was the first question).
    assert [m["role"] for m in model.requests[-1]["messages"]] == ["system", "user"]
    assert EDITED in str(model.requests[-1]["messages"][-1]["content"])

    # Both conversations are listed, the new one named after the edited question; the old one keeps its turns.
    assert seen["newSession"] != seen["oldSession"]
    listed = {row["id"]: row["label"] for row in seen["listed"]}
    assert listed[seen["newSession"]] == EDITED and seen["oldSession"] in listed
    reopened = [(m["role"], m["text"]) for m in seen["reopened"]]
    assert reopened[:2] == [("user", FIRST), ("assistant", "It sends a tick to a debug node.")]
    assert reopened[2][0] == "user" and reopened[2][1] == SECOND and "I added a debug node." in reopened[3][1]
    assert [m["role"] for m in seen["reopened"]] == [m["role"] for m in seen["before"]]
    # A reopened conversation offers the checkpoint again under the answer that changed the flows.
    assert seen["reopenedCheckpoints"][:2] == [0, 1]
