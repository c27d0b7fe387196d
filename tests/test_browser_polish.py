"""Issue 31, finding 6 ("Smaller"), in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the
service as a process and the scripted model: axe-core finds nothing critical or serious of ours on the AI tab in the
states a user meets (a chat with an answer, the conversation list open, the Knowledge panel, an approval card); the
header shows the model and the usage whole at the default width."""

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

TAB = "01 - Catch error"


def test_axe_finds_nothing_critical_or_serious_in_chat_conversation_list_knowledge_panel_and_approval_card(
        auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    node = {"id": "polish-debug", "type": "debug", "name": "ai-alarms", "x": 500, "y": 300, "wires": []}
    model.script(Reply(text="This flow **catches errors** and shows them in the debug sidebar."),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": [node]}}]))

    seen = run_browser("sidebar_polish.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"],
                                             "USERNAME": USERNAME, "PASSWORD": PASSWORD,
                                             "QUESTION": "what does this flow do?",
                                             "CHANGE": "Please add a debug node named ai-alarms"})

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot
    assert set(seen["scans"]) == {"chat", "conversations", "knowledge", "approval"}
    for state, scan in seen["scans"].items():
        assert scan["version"] == "4.14.1", state
        assert scan["findings"] == [], state
    # "New chat" once: the conversation list's button names the list until the conversation has a name.
    assert [text.strip() for text in seen["newChatHeader"]].count("New chat") == 1, seen["newChatHeader"]
    assert "Conversations" in [text.strip() for text in seen["newChatHeader"]], seen["newChatHeader"]
    # At the default width the header shows the model and the conversation's usage whole, and the scenario's
    # select keeps the width of its choice (Node-RED 5's sidebar squeezed it to "Gene…").
    header = seen["header"]
    assert header["model"] == "openai/gpt-4o-mini" and not header["modelCut"], header
    assert header["usage"].startswith("This conversation: ") and not header["usageCut"], header
    assert header["scenario"] == "General" and not header["scenarioSqueezed"] and header["sendInside"], header
    # The answers arrive in a log the screen reader can name.
    assert seen["messageList"] == {"role": "log", "name": "Conversation with the AI assistant"}
