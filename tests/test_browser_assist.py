"""Assist in the node edit dialogs (issue 20) in a real headless Chromium against a real Node-RED (adminAuth, under
/admin), the service as a process (its real POST /ai-sidebar/assist) and the scripted model. One editor load
drives every dialog (tests/browser/assist.js); the tests below read what it saw.

The function dialog's button streams code into a per-part diff with the problems the runtime's check names and,
for a recent input message of the node, the sandbox's output once the user presses "Try on the last message" (never
on the proposal's arrival); Cancel leaves the code; Accept puts it into the code
editors and Ctrl-Z there undoes it. The expression editor refuses an invalid JSONata proposal with the parser's
message and shows a valid one's result for its Test tab's message; the JSON editor takes a JSON proposal.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed, free_port, hash_password
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    ARTIFACTS,
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

TAB, INJECT, FUNCTION, CHANGE, SEEN = ("a55b000000000001", "a55b0000000000a1", "a55b0000000000f1",
                                       "a55b0000000000c1", "a55b0000000000d1")
CURRENT_CODE = "// the reading as it comes\nreturn msg;"
FLOWS = [
    {"id": TAB, "type": "tab", "label": "Assist", "disabled": False, "info": ""},
    {"id": INJECT, "type": "inject", "z": TAB, "name": "reading", "props": [{"p": "payload"}], "repeat": "",
     "crontab": "", "once": False, "topic": "", "payloadType": "json", "payload": json.dumps({"temperature": 21.5}),
     "x": 120, "y": 80, "wires": [[FUNCTION, SEEN]]},
    {"id": FUNCTION, "type": "function", "z": TAB, "name": "convert", "func": CURRENT_CODE, "outputs": 1,
     "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 320, "y": 80, "wires": [[CHANGE]]},
    {"id": CHANGE, "type": "change", "z": TAB, "name": "total", "rules": [
        {"t": "set", "p": "payload", "pt": "msg", "to": "payload", "tot": "jsonata"}],
     "x": 500, "y": 80, "wires": [[]]},
    {"id": SEEN, "type": "debug", "z": TAB, "name": "seen", "active": True, "tosidebar": True, "console": False,
     "tostatus": False, "complete": "payload", "targetType": "msg", "x": 320, "y": 160, "wires": []},
]
FUNCTION_ASK = "convert the temperature to Fahrenheit"
# First answer: code that requires a module the Setup tab does not list (and would be refused by the sandbox).
WITH_REQUIRE = ("This reads the file first.\n\n```javascript\nconst fs = require('fs');\n"
                "msg.payload = msg.payload.temperature * 9 / 5 + 32;\nreturn msg;\n```\n")
NEW_CODE = "msg.payload = msg.payload.temperature * 9 / 5 + 32;\nreturn msg;"
CLEAN = ("Converts the reading to Fahrenheit.\n\n```javascript on-message\n" + NEW_CODE + "\n```\n\n"
         "```javascript on-start\nflow.set('count', 0);\n```\n")
JSONATA_ASK = "the total price of the items"
INVALID_EXPRESSION = "$sum(payload.items.price"
VALID_EXPRESSION = "$sum(payload.items.price)"
TEST_MESSAGE = json.dumps({"payload": {"items": [{"price": 2}, {"price": 3.5}]}})
JSON_ASK = "a test reading with temperature and humidity"
JSON_VALUE = {"temperature": 19.5, "humidity": 40, "sensor": "hall"}
STOPPED_ANSWER = "A reading could look like this, with the temperature in degrees and the humidity in percent: " * 4


def wait_for_log(path: Path, line: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while line not in path.read_text(encoding="utf-8", errors="replace"):
        if time.monotonic() > deadline:
            pytest.fail(f"the service did not log {line!r} within {timeout} s")
        time.sleep(0.1)


@contextlib.contextmanager
def editor_stack(workdir: Path, model_server: ScriptedModelServer, flows: list[dict]) -> Iterator[NodeRed]:
    """Node-RED with adminAuth under /admin, the palette and ``flows``, and the service (running) behind it,
    subscribed to Node-RED's comms; stopped when the block ends."""
    service_port = free_port()
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials",
                    "users": [{"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"}]},
        flows=flows,
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    nodered.start()
    service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                             workdir / "service.log")
    # The service's own account (README "adminAuth"): with it the runtime evidence buffer subscribes to Node-RED's
    # comms, where the function node's recent input messages (the sandbox's samples) come from.
    service.env.update({"NODE_RED_USERNAME": USERNAME, "NODE_RED_PASSWORD": PASSWORD})
    try:
        service.start()
        wait_for_log(service.log_path, "subscribed to Node-RED's comms websocket")
        yield nodered
    finally:
        service.stop()
        nodered.stop()


@pytest.fixture(scope="module")
def assist_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth under /admin, the palette, these flows, and the service (running) behind it."""
    with editor_stack(tmp_path_factory.mktemp("browser-assist"), model_server, FLOWS) as nodered:
        yield nodered


@pytest.fixture(scope="module")
def seen(assist_stack: NodeRed, model_server: ScriptedModelServer) -> dict[str, Any]:
    """One editor load through every dialog; the model answers each Send in this order."""
    model_server.reset()
    model_server.script(Reply(text=WITH_REQUIRE, token_delay=0.05), Reply(text=CLEAN),
                        Reply(text="```jsonata\n" + INVALID_EXPRESSION + "\n```"),
                        Reply(text="```jsonata\n" + VALID_EXPRESSION + "\n```"),
                        Reply(text=STOPPED_ANSWER, token_delay=0.3),
                        Reply(text="```json\n" + json.dumps(JSON_VALUE) + "\n```"))
    flows_before = admin_request(assist_stack, admin_token(assist_stack), "GET", "/flows")
    result = run_browser("assist.js", {
        "EDITOR_URL": assist_stack.url, "USERNAME": USERNAME, "PASSWORD": PASSWORD, "TAB_ID": TAB,
        "INJECT_ID": INJECT, "FUNCTION_ID": FUNCTION, "CHANGE_ID": CHANGE, "FUNCTION_ASK": FUNCTION_ASK,
        "JSONATA_ASK": JSONATA_ASK, "JSON_ASK": JSON_ASK, "TEST_MESSAGE": TEST_MESSAGE})
    result["requests"] = list(model_server.requests)
    result["flowsChanged"] = admin_request(assist_stack, admin_token(assist_stack), "GET", "/flows") != flows_before
    model_server.reset()
    # What the browser saw, beside the screenshots, for whoever reads a failure.
    (ARTIFACTS / "assist-seen.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == [], result["pageErrors"]
    for screenshot in result.get("screenshots", []) + result.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot
    return result


def test_the_function_dialogs_button_streams_code_into_a_diff_with_the_problems_named(seen):
    assert seen["button"] == {"label": "Ask the assistant", "inTabsRow": True}
    first = seen["first"]
    # The text grew while the model streamed, and all of it arrived.
    assert any(0 < len(text) < len(WITH_REQUIRE.strip()) for text in seen["partials"])
    # Above the proposal the answer's words stay; its code shows in the diff only, not again as a raw block.
    assert first["stream"].strip() == "This reads the file first."
    assert [part["part"] for part in first["parts"]] == ["onMessage"]
    assert first["parts"][0]["label"].startswith("On Message")
    assert first["parts"][0]["added"] == ["+ const fs = require('fs');",
                                          "+ msg.payload = msg.payload.temperature * 9 / 5 + 32;"]
    assert first["parts"][0]["removed"] == ["- // the reading as it comes"]
    assert "require_not_in_setup" in [problem["code"] for problem in first["problems"]]
    assert all(problem["text"].startswith("On Message") for problem in first["problems"])
    # The sandbox does not run code that reaches for require.
    assert first["sandboxError"] == [{"code": "sandbox_refused",
                                      "text": "Not run: the code reaches outside what a function node offers."}]
    assert first["acceptEnabled"] and first["fitsWidth"] and first["fitsViewport"]


def test_cancel_leaves_the_code_as_it_was(seen):
    assert seen["before"]["onMessage"] == CURRENT_CODE
    assert seen["afterCancel"] == seen["before"]


def test_the_shortcut_opens_the_panel_and_the_sandbox_shows_the_output_for_the_recent_message(seen):
    assert seen["shortcut"]["ours"]["key"] == "alt-shift-g"
    assert seen["shortcut"]["sameKey"] == ["node-red-contrib-ai-sidebar:assist-function"]
    second = seen["second"]
    assert [part["part"] for part in second["parts"]] == ["onStart", "onMessage"]
    assert second["parts"][0]["added"] == ["+ flow.set('count', 0);"]
    assert second["problems"] == [] and second["noProblems"] == "Checked: no problems found."
    assert second["sandboxError"] == []
    assert [json.loads(text) for text in second["sandboxOutputs"]] == [{"payload": 70.7}]


def test_the_editor_sends_no_sandbox_request_until_the_user_presses_try(seen):
    # Before each press the page had sent no more sandbox requests than the presses before it.
    assert seen["sandboxRequestsBeforeTry"] == [0, 1]
    assert seen["sandboxRequests"] == 2
    assert seen["tryLabels"] == ["Try on the last message"] * 2


def test_accept_puts_the_code_in_the_editors_and_ctrl_z_undoes_it_without_deploying(seen):
    assert seen["afterAccept"] == {"onMessage": NEW_CODE, "onStart": "flow.set('count', 0);"}
    assert seen["afterUndo"]["onMessage"] == CURRENT_CODE
    # The dialog was cancelled afterwards: the node and the deployed flows are unchanged.
    assert seen["nodeAfter"] == {"func": CURRENT_CODE, "dirty": False}
    assert not seen["flowsChanged"]


def test_the_model_was_asked_with_the_current_code_and_the_wired_neighbours(seen):
    prompt = json.dumps(seen["requests"][0]["messages"])
    assert FUNCTION_ASK in prompt and "// the reading as it comes" in prompt
    assert INJECT in prompt and CHANGE in prompt


def test_an_invalid_jsonata_proposal_is_refused_with_the_parsers_message(seen):
    invalid = seen["invalid"]
    assert invalid["expression"] == INVALID_EXPRESSION
    assert invalid["status"].startswith("Refused: the expression does not parse: ")
    # The editor's own JSONata parser's words, not ours.
    assert "before end of expression" in invalid["status"]
    assert not invalid["acceptEnabled"] and invalid["testResult"] == ""


def test_a_valid_jsonata_proposal_shows_its_result_for_the_test_message_and_accept_puts_it_in(seen):
    valid = seen["valid"]
    assert valid["expression"] == VALID_EXPRESSION and valid["acceptEnabled"]
    assert json.loads(valid["testResult"]) == 5.5
    assert seen["expressionBefore"] == "payload" and seen["expressionAfter"] == VALID_EXPRESSION


def test_stop_ends_the_stream_and_offers_nothing(seen):
    stopped = seen["stopped"]
    assert stopped["status"] == "Stopped."
    assert 0 < len(stopped["stream"]) < len(STOPPED_ANSWER.strip()) and STOPPED_ANSWER.startswith(stopped["stream"])
    assert not stopped["acceptEnabled"] and stopped["json"] == ""


def test_the_json_editor_takes_a_json_proposal(seen):
    assert json.loads(seen["json"]["json"]) == JSON_VALUE and seen["json"]["acceptEnabled"]
    assert json.loads(seen["jsonBefore"]) == {"temperature": 21.5}
    assert json.loads(seen["jsonAfter"]) == JSON_VALUE
