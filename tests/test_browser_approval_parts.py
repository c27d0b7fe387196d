"""Review part by part (issue 36) in a real headless Chromium against a real Node-RED (adminAuth, under /admin),
the service as a process and the scripted model: a card of 12 parts at 240 px, three unticked with the keyboard,
the rest applied in the editor as one undo step that one Ctrl-Z takes back, nothing deployed; the new nodes, which
the model put right over the tab's own, placed where none is (measured from the editor's node boxes)."""

from __future__ import annotations

import os

from tests.support.model_server import Reply
from tests.test_browser_approvals import TAB, deployed_flows
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    pytestmark,
    run_browser,
    tab_named,
)

# Six new nodes in a chain, p1 also wired to p6: 6 nodes + 6 wires = 12 parts; p6 and its two wires are unticked.
CHAIN = [
    {"id": "n1", "type": "inject", "name": "p1", "x": 140, "y": 500, "wires": [["n2", "n6"]]},
    {"id": "n2", "type": "change", "name": "p2", "x": 300, "y": 500, "rules": [], "wires": [["n3"]]},
    {"id": "n3", "type": "function", "name": "p3", "func": "return msg;", "outputs": 1, "x": 460, "y": 500,
     "wires": [["n4"]]},
    {"id": "n4", "type": "delay", "name": "p4", "x": 620, "y": 500, "wires": [["n5"]]},
    {"id": "n5", "type": "function", "name": "p5", "func": "return msg;", "outputs": 1, "x": 780, "y": 500,
     "wires": [["n6"]]},
    {"id": "n6", "type": "debug", "name": "p6", "x": 940, "y": 500, "wires": []},
]


def overlapping(a, b) -> bool:
    return abs(a["x"] - b["x"]) * 2 < a["w"] + b["w"] and abs(a["y"] - b["y"]) * 2 < a["h"] + b["h"]


def test_a_card_of_twelve_parts_with_three_unticked_applies_the_rest_as_one_undo_step(auth_stack, model):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    flows_before = deployed_flows(nodered)
    # The model puts the chain right over the tab's own nodes: the service places it where nothing is.
    existing = [n for n in flows_before if n.get("z") == tab["id"] and "x" in n]
    chain = [{**node, "x": existing[i % len(existing)]["x"], "y": existing[i % len(existing)]["y"]}
             for i, node in enumerate(CHAIN)]
    model.script(Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": chain}}]),
                 Reply(text="Added the chain you kept."))

    seen = run_browser("sidebar_approval_parts.js", {
        "EDITOR_URL": nodered.url, "TAB_ID": tab["id"], "USERNAME": USERNAME, "PASSWORD": PASSWORD,
        "QUESTION": "Add a chain of six nodes", "UNTICK": "\u201cp6\u201d"})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    for screenshot in seen.get("screenshots", []) + seen.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot

    assert len(seen["labels"]) == 12 and sum("\u201cp6\u201d" in label for label in seen["labels"]) == 3
    assert 'add debug \u201cp6\u201d' in seen["labels"]
    assert seen["ticked"] == 9 and seen["approveLabel"] == "Approve 9 of 12 parts"
    assert seen["narrowWidth"] <= 260 and seen["fitsWidth"]
    before, after = seen["before"], seen["after"]
    assert after["names"] == sorted(before["names"] + ["p1", "p2", "p3", "p4", "p5"])
    assert {"p1->p2", "p2->p3", "p3->p4", "p4->p5"} <= set(after["links"])
    assert not any("p6" in link for link in after["links"])
    assert after["historyDepth"] == before["historyDepth"] + 1 and after["dirty"]
    assert seen["applied"] == ["Applied in the editor, not deployed: new nodes: 5. Ctrl-Z undoes it."]
    # Placed over no existing node, measured from the editor's own boxes, on the 20 px grid.
    old = {box["id"] for box in before["boxes"]}
    new = [box for box in after["boxes"] if box["id"] not in old]
    assert len(new) == 5
    for box in new:
        assert box["x"] % 20 == 0 and box["y"] % 20 == 0, box
        for other in before["boxes"]:
            assert not overlapping(box, other), (box, other)
    # One Ctrl-Z takes the whole change back.
    assert seen["undone"]["names"] == before["names"] and seen["undone"]["links"] == before["links"]
    assert deployed_flows(nodered) == flows_before
    tool_message = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool")
    assert "only some parts" in tool_message["content"]
