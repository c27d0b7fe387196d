"""Issue 31 in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the service as a process
and the scripted model: the sidebar's Ask / Agent mode (a change asked in Ask mode gets the notice and its switch
button, in Agent mode an approval card), and the setup card (no model configured: from the empty state to a first
answer without leaving the sidebar, Retry using the configuration chosen since)."""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

import pytest

from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    pytestmark,
    run_browser,
    running_stack,
    tab_named,
)

TAB = "01 - Catch error"
NODE_KEY = "sk-ai-config-key-for-the-setup-test-01"


def run_setup(nodered: NodeRed, mode: str, tab_id: str, **env: str) -> dict[str, Any]:
    result = run_browser("sidebar_setup.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab_id, "MODE": mode,
                                              "USERNAME": USERNAME, "PASSWORD": PASSWORD, **env})
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == [], result["pageErrors"]
    for screenshot in result.get("screenshots", []) + result.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot
    return result


def test_a_change_asked_in_ask_mode_says_how_to_get_it_and_one_click_gets_an_approval_card(auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    tab = tab_named(nodered, TAB)
    node = {"id": "a", "type": "debug", "name": "ai-alarms", "x": 500, "y": 300, "wires": []}
    model.script(Reply(text="A debug node would show the alarms in the debug sidebar."),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": [node]}}]))

    seen = run_setup(nodered, "ask", tab["id"])

    assert seen["initialMode"] == "agent"  # a user who may write starts in Agent mode
    assert seen["afterArrow"] == "ask" and "ai-sidebar-mode-ask" in seen["focusedMode"]
    assert "Switch to Agent mode" in seen["noticeText"] and seen["switchButtons"] == 1
    # Ask mode offered the model no write tool; the resend in Agent mode did.
    ask_tools = {t["function"]["name"] for t in model.requests[0].get("tools") or []}
    agent_tools = {t["function"]["name"] for t in model.requests[1].get("tools") or []}
    assert "add_nodes" not in ask_tools and "add_nodes" in agent_tools
    assert seen["modeAfterSwitch"] == "agent" and seen["approvalCards"] == 1 and seen["questions"] == 2
    assert seen["modeAfterReload"] == "agent"


@pytest.fixture(scope="module")
def keyless_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth under /admin and the palette, and a service with no model key or URL at all."""
    with running_stack(tmp_path_factory.mktemp("browser-setup"), model_server.base_url,
                       without_env=("OPENAI_API_KEY", "OPENAI_BASE_URL", "AI_PROVIDER", "AI_MODEL")) as stack:
        yield stack


def test_setup_from_the_empty_state_to_a_first_answer_and_retry_uses_the_new_configuration(keyless_stack, model):
    nodered, service = keyless_stack
    model.script(Reply(text="OK"), Reply(text="This flow catches errors and shows them in the debug sidebar."))

    seen = run_setup(nodered, "setup", tab_named(nodered, TAB)["id"], MODEL_URL=model.base_url, API_KEY=NODE_KEY)

    assert "OPENAI_API_KEY" in seen["why"] and seen["modeLine"] == "No model set up"
    assert "OPENAI_API_KEY" in seen["errorBeforeFix"] and seen["cardAfterError"] == 1
    # Cancel in the dialog opened from the card adds nothing and offers no Deploy.
    assert seen["configNodesAfterCancel"] == seen["configNodesBefore"] == 0
    assert seen["deployOfferedAfterCancel"] == 0
    assert "deploy" in seen["deployText"].lower()
    assert seen["chosenConfig"].startswith("Scripted model") and "Scripted model" in seen["cardText"]
    # The node the card made is the sidebar's: Node-RED does not call it unused (ai-config's hasUsers: false).
    assert seen["deployNotices"] == ["Successfully deployed"], seen["deployNotices"]
    # The card's Edit opens the chosen node's own dialog; Cancel leaves nothing to deploy.
    assert seen["editDialog"]["name"] == seen["editDialog"]["editing"] and seen["editDialog"]["name"]
    assert seen["dirtyAfterEditCancel"] is False
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(model.base_url))
    assert seen["testOk"] and origin in seen["testResult"] and "scripted-model" in seen["testResult"]
    assert "catches errors" in seen["answerAfterRetry"]
    assert seen["modelLineAfter"] == "openai-compatible/scripted-model" and seen["cardAfterAnswer"] == 0
    # Both requests went with the node's own key and model: the test, then the retried question.
    assert [r["model"] for r in model.requests] == ["scripted-model", "scripted-model"]
    assert all(h.get("Authorization") == f"Bearer {NODE_KEY}" for h in model.headers)
    # The service warned at start that no model could answer.
    assert "no model can answer questions without an ai-config node" in service.log_path.read_text()
