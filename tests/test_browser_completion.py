"""Inline completion (issue 39) in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the
service as a process (its real POST /ai-sidebar/complete, relayed by the plugin) and the scripted model. One editor
load (tests/browser/completion.js): typing in the function node's code shows the model's text as ghost text, Tab
inserts it, Escape dismisses it (the dialog stays), typing on while the model still answers closes the model's
request, and the expression editor of a change node completes JSONata. The model saw the shape of the message that
last reached the function node, never its values or a secret."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import REPO
from tests.test_browser_assist import editor_stack
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    ARTIFACTS,
    PASSWORD,
    SERVICE_TOKEN,
    USERNAME,
    ServiceProcess,
    browser_env,
    browser_installed,
    pytestmark,
)

TAB, INJECT, FUNCTION, CHANGE, SEEN = ("a55c000000000001", "a55c0000000000a1", "a55c0000000000f1",
                                       "a55c0000000000c1", "a55c0000000000d1")
SECRET = "hunter2-completion-secret"
FLOWS = [
    {"id": TAB, "type": "tab", "label": "Completion", "disabled": False, "info": ""},
    {"id": INJECT, "type": "inject", "z": TAB, "name": "reading", "props": [{"p": "payload"}], "repeat": "",
     "crontab": "", "once": False, "topic": "", "payloadType": "json",
     "payload": json.dumps({"temperature": 21.5, "password": SECRET}), "x": 120, "y": 80, "wires": [[FUNCTION, SEEN]]},
    {"id": FUNCTION, "type": "function", "z": TAB, "name": "convert", "func": "return msg;", "outputs": 1,
     "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 320, "y": 80, "wires": [[CHANGE]]},
    {"id": CHANGE, "type": "change", "z": TAB, "name": "total", "rules": [
        {"t": "set", "p": "payload", "pt": "msg", "to": "payload", "tot": "jsonata"}],
     "x": 500, "y": 80, "wires": [[]]},
    {"id": SEEN, "type": "debug", "z": TAB, "name": "seen", "active": True, "tosidebar": True, "console": False,
     "tostatus": False, "complete": "payload", "targetType": "msg", "x": 320, "y": 160, "wires": []},
]
# The code before the cursor → the model's answer. Any other request (Monaco may ask again when the text is set)
# gets nothing to show.
ANSWERS = {"const reading = ": Reply(text="msg.payload.temperature;"),
           "msg.topic = ": Reply(text="msg.payload.unit;"),
           "let level = ": Reply(text="msg.payload.level held back;", hold_after=1),
           "let level = 1": Reply(text="0;"),
           "$sum(payload.i": Reply(text="tems.price)")}


def answer(body: dict) -> Reply:
    prompt = str(body["messages"][-1]["content"])
    for before, reply in ANSWERS.items():
        if f"\nCode:\n{before}<CURSOR>" in prompt:
            return reply
    return Reply(text="")


def asked(model: ScriptedModelServer, before: str) -> list[dict]:
    return [r for r in model.requests if f"\nCode:\n{before}<CURSOR>" in str(r["messages"][-1]["content"])]


@pytest.fixture(scope="module")
def completion_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth under /admin, the palette, these flows, and the service (subscribed to the comms)."""
    with editor_stack(tmp_path_factory.mktemp("browser-completion"), model_server, FLOWS) as nodered:
        yield nodered


def wait_until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def seen(completion_stack, model_server: ScriptedModelServer) -> dict:
    nodered = completion_stack
    model_server.reset()
    model_server.responder = answer
    env = browser_env({"EDITOR_URL": nodered.url, "USERNAME": USERNAME, "PASSWORD": PASSWORD, "TAB_ID": TAB,
                       "INJECT_ID": INJECT, "FUNCTION_ID": FUNCTION, "CHANGE_ID": CHANGE,
                       "ANSWERS": json.dumps({before: reply.text for before, reply in ANSWERS.items()})})
    browser = subprocess.Popen(["node", str(REPO / "tests" / "browser" / "completion.js")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert browser.stdout is not None and browser.stdin is not None
        line = browser.stdout.readline()
        if json.loads(line or "{}").get("held"):
            # The model has the request and holds it open; now the user types on.
            wait_until(lambda: asked(model_server, "let level = "), "the held request reached the model")
            browser.stdin.write("go\n")
            browser.stdin.flush()
            line = browser.stdout.readline()
        result = json.loads(line)
        browser.wait(timeout=60)
    finally:
        if browser.poll() is None:
            browser.kill()
    result["requests"] = list(model_server.requests)
    (ARTIFACTS / "completion-seen.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    assert "failure" not in result, (result["failure"], browser.stderr.read() if browser.stderr else "")
    assert result["pageErrors"] == [], result["pageErrors"]
    wait_until(lambda: model_server.went_away, "the held model request closed")
    result["wentAway"] = list(model_server.went_away)
    model_server.reset()
    return result


def test_typing_in_a_function_node_shows_the_models_text_as_ghost_text_and_tab_inserts_it(seen):
    assert seen["ghost"] == "msg.payload.temperature;"
    assert seen["afterTab"] == "const reading = msg.payload.temperature;"


def test_escape_dismisses_the_ghost_text_and_leaves_the_dialog_open(seen):
    assert seen["ghostBeforeEscape"] == "msg.payload.unit;"
    assert seen["afterEscape"] == "msg.topic = "
    assert seen["dialogOpenAfterEscape"] is True


def test_typing_on_closes_the_model_request_in_flight(seen):
    assert seen["wentAway"] == [1]  # the model had sent one piece when its client went away
    assert seen["ghostAfterTypingOn"] == "0;"
    assert seen["afterTypingOn"] == "let level = 1"


def test_jsonata_in_a_change_nodes_expression_editor_completes(seen):
    assert seen["expressionGhost"] == "tems.price)"
    assert seen["expressionAfterTab"] == "$sum(payload.items.price)"
    system = asked_in(seen, "$sum(payload.i")[0]["messages"][0]["content"]
    assert "JSONata" in system


def test_the_model_saw_the_shape_of_the_recent_message_and_no_secret(seen):
    prompt = asked_in(seen, "const reading = ")[0]["messages"][-1]["content"]
    assert '{"payload":{"temperature":"number","password":"string"}}' in prompt
    assert 'Node: function "convert"' in prompt and f'inject "reading" (id {INJECT})' in prompt
    dumped = json.dumps(seen["requests"])
    assert SECRET not in dumped and SERVICE_TOKEN not in dumped and PASSWORD not in dumped


def test_the_user_settings_switch_and_the_toggle_action_agree(seen):
    assert seen["settingTab"] == "AI assistant" and seen["settingLabel"].startswith("Inline completion")
    assert seen["settingShownOn"] is True  # on unless the user turned it off
    assert seen["settingAfterUncheck"] is False and seen["providerAfterUncheck"] is False
    assert seen["settingAfterAction"] is True and seen["settingShownAfterAction"] is True
    assert seen["settingShownAfterSecondAction"] is False
    assert seen["settingAtEnd"] is True  # and the completions above were typed with it switched on there


def asked_in(seen: dict, before: str) -> list[dict]:
    return [r for r in seen["requests"] if f"\nCode:\n{before}<CURSOR>" in str(r["messages"][-1]["content"])]
