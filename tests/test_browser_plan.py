"""The build loop's cards in the sidebar (issue 34) in a real headless Chromium, the sidebar 240 px wide, in English
and German, against a real Node-RED (adminAuth, under /admin), the service as a process and the scripted model: a
plan card approved with its changes lets the run build, deploy, check and close with a verdict; a question card
answered with a quick reply lets the run go on."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed, free_port
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    PASSWORD,
    USERNAME,
    ServiceProcess,
    auth_nodered,
    browser_installed,
    pytestmark,
    run_browser,
    tab_named,
)

TAB = "01 - Catch error"
CONVERT = "msg.payload = Math.round((msg.payload - 32) * 5 / 9 * 100) / 100;\nreturn msg;"  # 100 °F → 37.78 °C
# What the German sidebar says (plugins/locales/de/ai-sidebar.json), beside the English.
WORDS = {
    "en-US": {"approveAll": "Approve the plan's changes", "decided": "Plan and its changes approved",
              "passed": "Check 1 passed", "done": "Done", "answered": "Your answer: localhost:1883",
              "other": "Or in your own words", "plan": "Plan", "asks": "The assistant asks"},
    "de": {"approveAll": "Änderungen des Plans freigeben", "decided": "Plan und seine Änderungen freigegeben",
           "passed": "Prüfung 1 bestanden", "done": "Erledigt", "answered": "Ihre Antwort: localhost:1883",
           "other": "Oder in eigenen Worten", "plan": "Plan", "asks": "Der Assistent fragt"},
}


@pytest.fixture(scope="module")
def build_stack(tmp_path_factory, model_server: ScriptedModelServer) -> Iterator[tuple[NodeRed, Any]]:
    """Node-RED with adminAuth and the service behind it, which reads Node-RED's comms (the debug messages a check
    compares) as the admin user."""
    workdir = tmp_path_factory.mktemp("browser-plan")
    service_port = free_port()
    nodered = auth_nodered(workdir, service_port)
    service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                             workdir / "service.log")
    service.env.update({"NODE_RED_USERNAME": USERNAME, "NODE_RED_PASSWORD": PASSWORD})
    with contextlib.ExitStack() as stack:
        stack.callback(nodered.stop)
        stack.callback(service.stop)
        service.start()
        yield nodered, service


def run_plan(nodered: NodeRed, mode: str, language: str, question: str) -> dict[str, Any]:
    seen = run_browser("sidebar_plan.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab_named(nodered, TAB)["id"],
                                           "MODE": mode, "USERNAME": USERNAME, "PASSWORD": PASSWORD,
                                           "QUESTION": question, "LOCALE": language,
                                           "SHOT": f"sidebar-build-{language}"})
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [] and seen["lang"] == language
    assert seen["width"] <= 260, seen["width"]  # the editor's narrowest sidebar
    for screenshot in seen.get("screenshots", []) + seen.get("detailScreenshots", []):
        assert os.path.getsize(screenshot) > 3_000, screenshot
    return seen


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


@pytest.mark.parametrize("language", ["en-US", "de"])
def test_a_plan_approved_with_its_changes_builds_checks_and_shows_the_verdict(build_stack, model, language):
    nodered, _ = build_stack
    tab = tab_named(nodered, TAB)
    names = (f"ai-fahrenheit-{language}", f"ai-celsius-{language}")
    row = 460 + 60 * list(WORDS).index(language)
    nodes = [
        {"id": "f", "type": "inject", "name": names[0], "props": [{"p": "payload"}], "payload": "100",
         "payloadType": "num", "repeat": "", "once": False, "x": 120, "y": row, "wires": [["c"]]},
        {"id": "c", "type": "function", "name": "to celsius", "func": CONVERT, "outputs": 1, "x": 300, "y": row,
         "wires": [["d"]]},
        {"id": "d", "type": "debug", "name": names[1], "active": True, "tosidebar": True, "console": False,
         "complete": "payload", "targetType": "msg", "x": 480, "y": row, "wires": []}]
    model.script(
        Reply(tool_calls=[{"name": "propose_plan", "arguments": {
            "steps": [{"title": "Convert Fahrenheit to Celsius",
                       "changes": [{"tool": "add_nodes", "target": tab["id"],
                                    "summary": "inject 100 °F → function → debug"}],
                       "test": "trigger the inject; the debug node shows 37.78",
                       "check": {"inject": names[0], "debug": names[1], "expect": 37.78}}],
            "assumptions": ["Fahrenheit arrives in msg.payload"]}}]),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": nodes}}]),
        Reply(text="100 °F is 37.78 °C."))

    seen = run_plan(nodered, "plan", language, "build a flow that converts Fahrenheit to Celsius")

    words = WORDS[language]
    assert seen["sentMode"] == "plan" and seen["modeChecked"] == "true" and words["plan"] in seen["modeLabels"]
    card = seen["card"]
    assert card["fitsWidth"] and seen["steps"] == 1
    for text in ("Convert Fahrenheit to Celsius", "inject 100 °F → function → debug",
                 "trigger the inject; the debug node shows 37.78", "Fahrenheit arrives in msg.payload"):
        assert text in card["text"], (text, card["text"])
    assert words["approveAll"] in card["buttons"] and len(card["buttons"]) == 4
    # Planning offered no write tool; the approved plan's build did, and its listed change needed no other card.
    assert "propose_plan" in offered(model.requests[0]) and "add_nodes" not in offered(model.requests[0])
    assert "add_nodes" in offered(model.requests[1])
    assert seen["decided"] == words["decided"] and seen["enabledButtons"] == 0 and seen["errors"] == []
    assert seen["checks"] and words["passed"] in seen["checks"][0]
    verdict = seen["verdict"]
    assert verdict["status"] == "done" and verdict["fitsWidth"]
    assert verdict["text"].startswith(words["done"]) and f"{names[1]}" in verdict["text"] and "37.78" in verdict["text"]
    assert "100 °F is 37.78 °C." in seen["answer"]
    assert words["done"] in seen["reader"]  # said to screen readers too


@pytest.mark.parametrize("language", ["en-US", "de"])
def test_a_question_answered_with_a_quick_reply_lets_the_run_go_on(build_stack, model, language):
    nodered, _ = build_stack
    brokers = ["localhost:1883", "mqtt.local:1883"]
    model.script(Reply(tool_calls=[{"name": "ask_user", "arguments": {"question": "Which MQTT broker?",
                                                                      "choices": brokers, "free": True}}]),
                 Reply(text="I will use localhost:1883."))

    seen = run_plan(nodered, "question", language, "read temperatures from MQTT")

    words = WORDS[language]
    assert seen["choices"] == brokers and seen["freeLabel"] == words["other"]
    assert seen["described"] == {"role": "group", "question": "Which MQTT broker?", "title": words["asks"]}
    assert seen["card"]["fitsWidth"]
    assert seen["decided"] == words["answered"] and seen["enabledButtons"] == 0 and seen["errors"] == []
    assert "I will use localhost:1883." in seen["answer"]
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "localhost:1883" in json.dumps(told[-1]["content"])


def test_a_build_applied_in_the_editor_is_deployed_and_tested_from_its_card(build_stack, model):
    nodered, _ = build_stack
    tab = tab_named(nodered, TAB)
    names = ("ai-fahrenheit-editor", "ai-celsius-editor")
    nodes = [
        {"id": "fe", "type": "inject", "name": names[0], "props": [{"p": "payload"}], "payload": "100",
         "payloadType": "num", "repeat": "", "once": False, "x": 120, "y": 600, "wires": [["ce"]]},
        {"id": "ce", "type": "function", "name": "to celsius", "func": CONVERT, "outputs": 1, "x": 300, "y": 600,
         "wires": [["de"]]},
        {"id": "de", "type": "debug", "name": names[1], "active": True, "tosidebar": True, "console": False,
         "complete": "payload", "targetType": "msg", "x": 480, "y": 600, "wires": []}]
    model.script(
        Reply(tool_calls=[{"name": "propose_plan", "arguments": {
            "steps": [{"title": "Convert Fahrenheit to Celsius",
                       "changes": [{"tool": "add_nodes", "target": tab["id"], "summary": "inject → function → debug"}],
                       "test": "trigger the inject; the debug node shows 37.78",
                       "check": {"inject": names[0], "debug": names[1], "expect": 37.78}}]}}]),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": nodes}}]),
        Reply(tool_calls=[{"name": "deploy_and_test", "arguments": {"note": "the Fahrenheit converter"}}]),
        Reply(text="100 °F is 37.78 °C."))

    seen = run_plan(nodered, "editor", "en-US", "build a flow that converts Fahrenheit to Celsius")

    assert seen["sentMode"] == "plan" and seen["sentApply"] == "editor"
    # The change waited in the editor, undeployed, until the card deployed it the editor's way.
    assert seen["dirtyBeforeDeploy"] is True and seen["dirtyAfterDeploy"] is False
    assert "deploy_and_test" in offered(model.requests[1])
    card = seen["deployCard"]
    assert card["fitsWidth"] and "the Fahrenheit converter" in card["text"]
    assert card["buttons"] == ["Deploy and test", "Not now"]
    assert seen["decided"] == "Deployed; testing" and seen["errors"] == []
    assert seen["checks"] and "Check 1 passed" in seen["checks"][0]
    assert seen["verdict"]["status"] == "done" and "37.78" in seen["verdict"]["text"]
    assert seen["verdict"]["fitsWidth"]
    assert "100 °F is 37.78 °C." in seen["answer"]
