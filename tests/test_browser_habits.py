"""Issue 31, finding 3, in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the service as a
process and the scripted model: the chat habits users bring from Copilot Chat. Up in the empty input recalls the last
question (Down empties it again), Copy puts an answer's Markdown on the clipboard, Regenerate under the last answer
sends the same question again and the new answer follows the first; follow-up suggestions under the newest answer
ask their question with one press."""

from __future__ import annotations

import os

from tests.support.model_server import Reply
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    pytestmark,
    run_browser,
    tab_named,
)

QUESTION = "what does this flow do?"
FIRST = "This flow **catches errors** with a `catch` node.\n\n- it logs them\n- it shows them in the debug sidebar"
SECOND = "It catches the errors of the flow and shows them in the debug sidebar."
THIRD = "Nothing in it is likely to fail."


def test_up_recalls_the_question_copy_copies_the_markdown_and_regenerate_answers_again(auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    model.script(Reply(text=FIRST), Reply(text=SECOND), Reply(text=THIRD))

    tab = tab_named(nodered, "01 - Catch error")
    seen = run_browser("sidebar_habits.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "QUESTION": QUESTION,
                                             "USERNAME": USERNAME, "PASSWORD": PASSWORD})

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot
    assert "catches errors" in seen["firstAnswer"]
    assert seen["inputBefore"] == "" and seen["afterUp"] == QUESTION and seen["afterDown"] == ""
    # Copy gives the Markdown the model wrote, not the rendered text.
    assert seen["copyButtons"] == 1 and seen["copyLabel"] == "Copy the whole answer as Markdown"
    assert seen["copied"] == FIRST
    assert seen["regenerateButtons"] == 1 and seen["regenerateLabel"].startswith("Regenerate")
    # The same question went to the model twice; the second answer follows the first, which stays as it was.
    asked = [[m for m in r["messages"] if m["role"] == "user"][-1]["content"] for r in model.requests]
    assert all(QUESTION in str(content) for content in asked[:2])
    assert [m["role"] for m in seen["transcript"]] == ["user", "assistant", "user", "assistant"]
    assert seen["transcript"][2]["text"] == QUESTION
    assert "catches errors" in seen["transcript"][1]["text"] and SECOND in seen["transcript"][3]["text"]
    assert seen["regenerateAfter"] == [0, 1] and seen["copyAfter"] == 2
    # Follow-ups: only under the newest answer, three at most; pressing one asks it, and then only the new answer
    # has them.
    assert seen["followupsPerAnswer"][0] == 0 and 1 <= seen["followupsPerAnswer"][1] <= 3
    assert seen["followupGroupLabel"] == "Suggested follow-up questions"
    assert seen["followupText"] and seen["followupText"] != QUESTION
    asked_by_followup = seen["transcriptAfterFollowup"][4]
    assert asked_by_followup["role"] == "user" and asked_by_followup["text"] == seen["followupText"]
    assert THIRD in seen["transcriptAfterFollowup"][5]["text"]
    assert len(model.requests) == 3 and seen["followupText"] in str(asked[2])
    assert seen["followupsAfter"][:2] == [0, 0]
