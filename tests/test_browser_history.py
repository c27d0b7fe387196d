"""The sidebar's History panel (issue 35, editor side) in a real headless Chromium against a real Node-RED
(adminAuth under /admin) and the service as a process that keeps every deploy (its own Node-RED account): the user
deploys twice from the editor, sees both deploys in the panel, reads the newest one's changes, restores one tab
through the approval card and finds the old value in the editor, undeployed; the panel at 240 px; the panel when
the service keeps no history."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.support.model_server import ScriptedModelServer
from tests.support.nodered import NodeRed, free_port, hash_password
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    PASSWORD,
    SERVICE_TOKEN,
    USERNAME,
    ServiceProcess,
    admin_request,
    admin_token,
    browser_installed,
    pytestmark,
    run_browser,
)

KITCHEN, GARDEN = "h-tab-kitchen", "h-tab-garden"
TICK, SPRINKLER = "h-tick", "h-sprinkler"
FLOWS = [
    {"id": KITCHEN, "type": "tab", "label": "Kitchen", "disabled": False, "info": ""},
    {"id": GARDEN, "type": "tab", "label": "Garden", "disabled": False, "info": ""},
    {"id": TICK, "type": "inject", "z": KITCHEN, "name": "Morning tick", "topic": "first", "props": [],
     "repeat": "", "once": False, "x": 140, "y": 80, "wires": [["h-show"]]},
    {"id": "h-show", "type": "debug", "z": KITCHEN, "name": "Show tick", "active": True, "x": 340, "y": 80,
     "wires": []},
    {"id": SPRINKLER, "type": "change", "z": GARDEN, "name": "Sprinkler 1", "rules": [], "x": 160, "y": 80,
     "wires": [[]]},
]


@pytest.fixture(scope="module")
def history_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth and the two tabs above, and the service keeping its deploys (reading Node-RED as the
    admin, as the capture needs an account of its own)."""
    service_port = free_port()
    workdir = tmp_path_factory.mktemp("browser-history")
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials",
                    "users": [{"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"}]},
        flows=FLOWS,
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    nodered.start()
    service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                             workdir / "service.log")
    service.env.update({"NODE_RED_USERNAME": USERNAME, "NODE_RED_PASSWORD": PASSWORD})
    try:
        service.start()
        yield nodered, service
    finally:
        service.stop()
        nodered.stop()


def run_history(nodered: NodeRed, mode: str, script: str = "sidebar_history.js", **env: str) -> dict[str, Any]:
    result = run_browser(script, {"EDITOR_URL": nodered.url, "MODE": mode, "USERNAME": USERNAME,
                                  "PASSWORD": PASSWORD, **env})
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == [], result["pageErrors"]
    for screenshot in result.get("screenshots", []) + result.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot
    return result


def deployed(nodered: NodeRed, node_id: str) -> dict[str, Any]:
    return next(n for n in admin_request(nodered, admin_token(nodered), "GET", "/flows") if n["id"] == node_id)


def test_two_deploys_from_the_editor_are_listed_their_diff_names_the_node_and_a_tab_restores_undeployed(
        history_stack, model):
    nodered, _ = history_stack

    seen = run_history(nodered, "restore", TAB_ID=KITCHEN, NODE_ID=TICK, OTHER_NODE_ID=SPRINKLER,
                       TOPICS="second,third", OTHER_NAMES="Sprinkler 2,Sprinkler 3")

    panel = seen["panel"]
    assert panel["open"] and panel["buttonInHeader"], panel
    rows = panel["rows"]
    # Both deploys, newest first, made in the editor, with what they changed.
    assert [row["rev"] for row in rows[:2]] == seen["revs"][::-1]
    for row in rows[:2]:
        assert row["origin"] == "editor" and row["who"] == "Editor"
        assert row["counts"] == "0 added · 0 removed · 2 changed"
        assert re.search(r"\d", row["when"]) and row["datetime"].endswith("Z")
        assert row["buttons"][:2] == ["Changes", "Compare with now"]
    # The deploys the service found when it started are listed after them; the oldest is where history starts.
    assert len(rows) >= 3
    assert rows[-1]["counts"] == "History starts here: the first state kept.", rows[-1]
    assert all(row["counts"] != rows[-1]["counts"] for row in rows[:-1])
    # Pinned from the panel: the service keeps it whatever the retention.
    assert seen["pinLabel"] == "Unpin"
    listing = admin_request(nodered, admin_token(nodered), "GET", "/ai-sidebar/flow-history?limit=5")["deploys"]
    assert [d["pinned"] for d in listing if d["rev"] in seen["revs"]] == [True, False]

    diff = seen["diff"]
    assert diff["against"] == "Changes from the deploy before to this one:"
    tabs = {tab["id"]: tab for tab in diff["tabs"]}
    assert set(tabs) == {KITCHEN, GARDEN}
    assert tabs[KITCHEN]["title"] == "Flow “Kitchen”" and tabs[KITCHEN]["restore"] == ["Restore this tab"]
    assert tabs[KITCHEN]["lines"] == [{"kind": "changed", "node": TICK, "label": "changed", "name": "Morning tick",
                                       "properties": ['topic: "second" → "third"'],
                                       "restore": "Restore “Morning tick”"}]
    assert tabs[GARDEN]["lines"][0]["kind"] == "renamed"
    assert tabs[GARDEN]["lines"][0]["name"] == '"Sprinkler 2" → "Sprinkler 3"'
    assert diff["restoreWhole"]

    assert seen["narrowWidth"] <= 240
    narrow = seen["narrowPanel"]
    assert narrow["open"] and narrow["fits"] and narrow["buttonInHeader"] and narrow["newChatInside"], narrow
    assert abs(seen["restoredWidth"] - seen["width"]) <= 5

    # Restore this tab: the panel gives way to the chat, the approval card, Approve.
    assert seen["closedOnRestore"]
    assert seen["before"]["topic"] == "third" and not seen["before"]["dirty"]
    assert 'tab "Kitchen"' in seen["card"]["text"], seen["card"]
    assert seen["card"]["buttons"][0] == "Approve"
    after = seen["after"]
    assert after["topic"] == "second", after
    # Only that tab: the other tab keeps its newest name.
    assert after["otherName"] == "Sprinkler 3"
    assert after["dirty"] and after["historyDepth"] == seen["before"]["historyDepth"] + 1
    assert seen["errors"] == [] and seen["applied"] and "not deployed" in seen["applied"][-1]
    # Undeployed: Node-RED still runs the newest deploy.
    assert deployed(nodered, TICK)["topic"] == "third"
    # The button's question reads as words, live, after a reload and as the conversation's name; never the trigger.
    assert re.fullmatch(r"Restore flow “Kitchen” to .*\d.*", seen["question"]), seen["question"]
    assert seen["reloadedQuestion"] == seen["question"] and seen["reloadedName"] == seen["question"], seen


def test_a_deploy_made_while_the_panel_is_open_appears_in_it(history_stack, model):
    nodered, _ = history_stack

    seen = run_history(nodered, "live", SHOT_SUFFIX="-live", TAB_ID=KITCHEN, NODE_ID=TICK, TOPIC="live")

    rows = [row["rev"] for row in seen["panel"]["rows"]]
    assert seen["rev"] not in seen["before"]
    assert rows[0] == seen["rev"] and rows[1:] == seen["before"], (rows, seen["before"])
    assert seen["panel"]["rows"][0]["counts"] == "0 added · 0 removed · 1 changed"


def test_the_panel_says_in_the_users_language_when_the_service_keeps_no_flow_history(history_stack, model):
    nodered, service = history_stack
    service.stop()
    service.env["AI_SIDEBAR_FLOW_HISTORY"] = "false"
    try:
        service.start()
        seen = run_history(nodered, "off", SHOT_SUFFIX="-off", LANGUAGE="de")
    finally:
        service.stop()
        del service.env["AI_SIDEBAR_FLOW_HISTORY"]
        service.start()

    panel = seen["panel"]
    assert panel["open"] and panel["rows"] == []
    assert panel["statusKind"] == "error"
    assert panel["status"] == ("Der Flow-Verlauf ist aus oder nicht lesbar: Der Dienst bewahrt keine Deploys auf "
                               "(AI_SIDEBAR_FLOW_HISTORY, Speicherdatenbank).")
