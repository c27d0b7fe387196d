"""Issue 31, the items the first polish left, in a real headless Chromium against a real Node-RED (adminAuth, under
/admin), the service as a process and the scripted model: one chip per selected node, each removable with the
keyboard (the removed node is not sent); a flow in an answer collapsed to a summary line with Import / Copy / Show; a
retried question shown once; an approval card's summary without raw ids."""

from __future__ import annotations

import json
import os

from tests.support.model_server import Reply
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    IMPORTED_FLOW,
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    fenced,
    pytestmark,
    run_browser,
    tab_named,
)

TAB = "02 - Send multiple messages"
QUESTION = "explain the current flow"
FLOW = IMPORTED_FLOW + [{"id": "ai-function-1", "type": "function", "z": "ai-tab", "name": "", "func": "return msg;",
                         "outputs": 1, "x": 250, "y": 140, "wires": [["ai-debug-1"]]},
                        {"id": "ai-function-2", "type": "function", "z": "ai-tab", "name": "", "func": "return msg;",
                         "outputs": 1, "x": 250, "y": 200, "wires": [["ai-debug-1"]]}]


def chip_name(node: dict) -> str:
    return node.get("name") or f"{node['type']} · {node['id'][:6]}"


def test_node_chips_a_collapsed_flow_a_retry_shown_once_and_a_card_summary_without_ids(auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    selected = [n for n in nodered.nodes_of(tab["id"]) if n["type"] not in ("comment", "group")][:2]
    assert len(selected) == 2
    kept, removed = selected
    node = {"id": "polish2-debug", "type": "debug", "name": "ai-alarms", "x": 500, "y": 300, "wires": []}
    model.script(Reply(text="These nodes send **several messages**."),
                 Reply(text="Here is the flow:\n\n" + fenced(FLOW) + "\n\nImport it into your tab."),
                 Reply(status=400, error_message="scripted bad request"),
                 Reply(text="The function node returns an array, one message per output."),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": [node]}}]))

    seen = run_browser("sidebar_polish2.js", {
        "EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "USERNAME": USERNAME, "PASSWORD": PASSWORD,
        "NODE_IDS": json.dumps([n["id"] for n in selected]),
        "QUESTION": QUESTION, "FLOW_QUESTION": "what does this flow do?",
        "RETRY_QUESTION": "How many outputs are used?", "CHANGE": "Please add a debug node named ai-alarms"})

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 3_000, screenshot

    # 1. One chip per selected node, named as the user knows it, in a named list; Shift+Tab from the input reaches
    # the last chip's button, Enter removes that node, and the focus moves to the other chip.
    chips = seen["chips"]
    assert chips["role"] == "list" and chips["name"] == "Selected nodes sent with your question" and chips["visible"]
    assert chips["names"] == [chip_name(kept), chip_name(removed)], chips
    assert chips["buttons"] == [f"Don't send {chip_name(n)} with the question" for n in selected]
    assert seen["focusedBefore"]["name"] == f"Don't send {chip_name(removed)} with the question"
    assert seen["focusedAfter"]["name"] == f"Don't send {chip_name(kept)} with the question"
    assert seen["chipsAfter"]["names"] == [chip_name(kept)]
    # The chips name the nodes: the context chip beside them no longer counts them; the sent question says it.
    assert "node selected" not in seen["contextAfter"] and "nodes selected" not in seen["contextAfter"], \
        seen["contextAfter"]
    assert seen["sentContext"].endswith("· 1 node selected"), seen["sentContext"]
    # The removed node did not go out as a selected node: the prompt lists only the kept one.
    asked = next(r for r in model.requests if QUESTION in json.dumps(r["messages"][-1]))
    system = next(m["content"] for m in asked["messages"] if m["role"] == "system")
    assert f"(id {kept['id']})" in system and f"(id {removed['id']})" not in system

    # 2. The flow is collapsed to a summary line (count and types) with Import / Copy / Show; Show opens it.
    collapsed, shown = seen["flowCollapsed"], seen["flowShown"]
    assert collapsed["label"] == "Node-RED flow · 4 nodes · inject, debug, function ×2", collapsed
    assert collapsed["buttons"] == ["Import", "Copy", "Show"] and collapsed["controls"], collapsed
    assert not collapsed["jsonShown"] and collapsed["expanded"] == "false"
    assert shown["jsonShown"] and shown["expanded"] == "true" and shown["buttons"][-1] == "Hide", shown
    assert shown["answerHeight"] > collapsed["answerHeight"] + 200, (collapsed, shown)

    # 3. The retried question shows once, with the answer of its Retry.
    retried = [entry for entry in seen["afterRetry"] if entry["role"] == "user"
               and entry["text"] == "How many outputs are used?"]
    assert len(retried) == 1, seen["afterRetry"]
    assert seen["afterRetry"][-1]["text"] == "The function node returns an array, one message per output."
    # ... and the approval card names the tab by its label, never by its id.
    assert seen["cardSummary"] == f'Add 1 node (debug) to tab "{TAB}".', seen["cardSummary"]
    assert tab["id"] not in seen["cardSummary"]
