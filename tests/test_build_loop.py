"""Check and fix (issue 34), end to end on a real Node-RED with the scripted model: "build a flow that converts
Fahrenheit from an inject to Celsius and shows it in debug" → plan → approved with its changes → the nodes deployed →
the service triggers the plan's inject and reads the debug value → the first function is wrong, the check fails →
the model's fix waits for its card → approved, deployed, checked again → verdict done with the debug value; and a
build whose fixes keep failing until AI_SIDEBAR_BUILD_MAX_ROUNDS, whose verdict is not_done with what was seen."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import urllib.request
from collections.abc import Callable

import pytest

from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
BUGGY = "msg.payload = msg.payload - 32 * 5 / 9;\nreturn msg;"  # operator precedence: 100 → 82.2
FIXED = "msg.payload = Math.round((msg.payload - 32) * 5 / 9 * 100) / 100;\nreturn msg;"  # 100 → 37.78
STILL_WRONG = "msg.payload = msg.payload / 2;\nreturn msg;"  # 100 → 50


def nodes(code: str, names: tuple[str, str]) -> list[dict]:
    return [{"id": "f", "type": "inject", "name": names[0], "props": [{"p": "payload"}], "payload": "100",
             "payloadType": "num", "repeat": "", "once": False, "x": 120, "y": 60, "wires": [["c"]]},
            {"id": "c", "type": "function", "name": "to celsius", "func": code, "outputs": 1, "x": 300, "y": 60,
             "wires": [["d"]]},
            {"id": "d", "type": "debug", "name": names[1], "active": True, "tosidebar": True, "console": False,
             "complete": "payload", "targetType": "msg", "x": 480, "y": 60, "wires": []}]


def plan_reply(tab_id: str, names: tuple[str, str]) -> Reply:
    return Reply(tool_calls=[{"name": "propose_plan", "arguments": {"steps": [{
        "title": "Convert Fahrenheit to Celsius", "changes": [{"tool": "add_nodes", "target": tab_id}],
        "test": "trigger the inject with 100 °F; the debug node shows 37.78",
        "check": {"inject": names[0], "debug": names[1], "expect": 37.78}}]}}])


def fix_with(nodered, code: str, debug_name: str) -> Callable[[dict], Reply]:
    """A reply built when the model is asked: the deployed function's id is only known then (the function wired
    to the debug node ``debug_name``)."""
    def reply(_: dict) -> Reply:
        flows = deployed(nodered)["flows"]
        debug = next(n for n in flows if n.get("name") == debug_name)
        function = next(n for n in flows if n.get("type") == "function" and debug["id"] in n["wires"][0])
        return Reply(tool_calls=[{"name": "update_node", "arguments": {"node_id": function["id"],
                                                                        "properties": {"func": code}}}])
    return reply


def offered(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def answering(*steps: Callable[[dict], Reply]) -> Callable[[dict], Reply]:
    queue = list(steps)
    return lambda body: queue.pop(0)(body) if queue else Reply(text="That is all.")


async def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def events_of(response):
    assert response.status == 200, await response.text()
    return await read_events(response)


async def approve(client, paused, language=None, **decision):
    return await events_of(await client.post("/ai-sidebar/resume", json={
        "resumeToken": paused["resumeToken"], "decisions": [{"type": "approve", **decision}],
        **({"language": language} if language else {})}, headers=ALICE))


def of_type(events, kind) -> list[dict]:
    return [e for e in events if e["type"] == kind]


async def build_and_fix(aiohttp_client, settings, nodered, model, names, fix: str, last_words: str,
                        language: str | None = None):
    """The build up to its first failed check and the fix's card, then the fix approved (in ``language``): the card
    and the events of the approved fix."""
    model.responder = answering(fix_with(nodered, fix, names[1]), lambda _: Reply(text=last_words))
    client = await aiohttp_client(create_app(settings))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, "the service subscribed to Node-RED's comms")
    tab = next(n for n in deployed(nodered)["flows"] if n["type"] == "tab")
    model.script(plan_reply(tab["id"], names),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"],
                                                                       "nodes": nodes(BUGGY, names)}}]))
    plan = (await events_of(await client.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "build a flow that converts Fahrenheit from an inject to Celsius and shows it in debug",
        "mode": "plan"})))[0]
    assert plan["type"] == "plan" and plan["steps"][0]["check"]["expect"] == 37.78
    built = await approve(client, plan, planChanges=True)
    first = of_type(built, "check")
    assert [(c["round"], c["passed"]) for c in first] == [(1, False)]
    assert first[0]["evidence"][0]["kind"] == "mismatch" and first[0]["evidence"][0]["value"] == pytest.approx(82.22,
                                                                                                            abs=0.01)
    card = of_type(built, "approval_required")[0]  # the fix is not in the plan: it asks
    assert [a["tool"] for a in card["actions"]] == ["update_node"] and not of_type(built, "verdict")
    told = [m for m in model.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "check failed (round 1 of" in told and "82.2" in told
    return card, await approve(client, card, language)


async def test_a_wrong_function_is_found_by_the_check_fixed_after_approval_and_the_verdict_is_done(
        aiohttp_client, write_settings, writable_nodered, model):
    card, fixed = await build_and_fix(aiohttp_client, write_settings, writable_nodered, model,
                                      ("fahrenheit", "celsius"), FIXED, "100 °F is 37.78 °C.")
    checks, verdict = of_type(fixed, "check"), of_type(fixed, "verdict")
    assert [(c["round"], c["passed"]) for c in checks] == [(2, True)]
    assert verdict == [{"type": "verdict", "runId": card["runId"], "status": "done", "summary": verdict[0]["summary"],
                        "evidence": [{"kind": "debug", "node": "celsius", "value": 37.78}]}]
    assert "celsius showed 37.78" in verdict[0]["summary"]
    assert fixed[-1]["type"] == "done" and "status" not in fixed[-1]
    assert "".join(e["content"] for e in fixed if e["type"] == "token") == "100 °F is 37.78 °C."
    with sqlite3.connect(write_settings.memory_db_path) as raw:
        rows = list(raw.execute("SELECT tool, decided_by, message FROM approval_audit ORDER BY id"))
    assert rows == [("propose_plan", "user", None), ("add_nodes", "policy", "listed in the approved plan"),
                    ("trigger_inject", "policy", "the approved plan's test"), ("update_node", "user", None),
                    ("trigger_inject", "policy", "the approved plan's test")]


async def test_fixes_that_keep_failing_stop_at_the_round_limit_with_a_not_done_verdict(
        aiohttp_client, write_settings, writable_nodered, model):
    settings = write_settings.model_copy(update={"build_max_rounds": 2})
    _, fixed = await build_and_fix(aiohttp_client, settings, writable_nodered, model,
                                   ("fahrenheit again", "celsius again"), STILL_WRONG,
                                   "It still fails: the function halves the value.", language="de")
    checks, verdict = of_type(fixed, "check"), of_type(fixed, "verdict")
    assert [(c["round"], c["passed"]) for c in checks] == [(2, False)]
    assert verdict[0]["status"] == "not_done" and verdict[0]["summary"].startswith("Nicht fertig")  # German asked
    assert "2 Runde" in verdict[0]["summary"]
    assert verdict[0]["evidence"] == [{"kind": "mismatch", "node": "celsius again", "value": 50, "expected": 37.78}]
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "round limit is reached" in told
    assert of_type(fixed, "approval_required") == [] and fixed[-1]["type"] == "done"


def deploy_as_the_editor(nodered, change: dict) -> None:
    """What the sidebar's editor does with a ``flow_change`` and then its Deploy button: the change's full nodes
    put into the deployed flows (replacing those of the same id), posted to ``/flows`` (full deploy)."""
    current = deployed(nodered)
    new = {n["id"]: n for n in change["changes"]["nodes"]}
    flows = [n for n in current["flows"] if n["id"] not in new] + list(new.values())
    request = urllib.request.Request(f"{nodered.url}/flows", method="POST",
                                     data=json.dumps({"rev": current["rev"], "flows": flows}).encode(),
                                     headers={"Node-RED-API-Version": "v2", "Content-Type": "application/json",
                                              "Node-RED-Deployment-Type": "full"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


async def test_a_build_applied_in_the_editor_is_tested_after_the_user_deploys_it(
        aiohttp_client, write_settings, writable_nodered, model):
    names = ("editor fahrenheit", "editor celsius")
    client = await aiohttp_client(create_app(write_settings))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, "the service subscribed to Node-RED's comms")
    tab = next(n for n in deployed(writable_nodered)["flows"] if n["type"] == "tab")
    model.script(plan_reply(tab["id"], names),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"],
                                                                       "nodes": nodes(FIXED, names)}}]),
                 Reply(tool_calls=[{"name": "deploy_and_test", "arguments": {"note": "the converter"}}]),
                 Reply(text="100 °F is 37.78 °C."))
    plan = (await events_of(await client.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "build a flow that converts Fahrenheit to Celsius", "mode": "plan", "apply": "editor"})))[0]
    built = await approve(client, plan, planChanges=True)
    # Applied into the editor, nothing deployed, nothing checked: the run waits for the user's deploy.
    change = of_type(built, "flow_change")[0]
    assert not any(n.get("name") == names[0] for n in deployed(writable_nodered)["flows"])
    assert of_type(built, "check") == [] and "deploy_and_test" in offered(model.requests[1])
    told = [m for m in model.requests[2]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "not deployed" in told and "deploy_and_test" in told
    waiting = of_type(built, "deploy_test")
    assert waiting == [{"type": "deploy_test", "runId": plan["runId"], "resumeToken": waiting[0]["resumeToken"],
                        "note": "the converter"}]
    assert built[-1] == {**built[-1], "type": "done", "status": "awaiting_approval"}

    deploy_as_the_editor(writable_nodered, change)
    tested = await approve(client, waiting[0])

    assert [(c["round"], c["passed"]) for c in of_type(tested, "check")] == [(1, True)]
    verdict = of_type(tested, "verdict")
    assert verdict[0]["status"] == "done" and verdict[0]["evidence"] == [
        {"kind": "debug", "node": names[1], "value": 37.78}]
    assert "".join(e["content"] for e in tested if e["type"] == "token") == "100 °F is 37.78 °C."
    with sqlite3.connect(write_settings.memory_db_path) as raw:
        rows = list(raw.execute("SELECT tool, decided_by, message FROM approval_audit ORDER BY id"))
    assert rows == [("propose_plan", "user", None), ("add_nodes", "policy", "listed in the approved plan"),
                    ("deploy_and_test", "user", None), ("trigger_inject", "policy", "the approved plan's test")]


async def test_deploy_and_test_declined_tests_nothing(aiohttp_client, write_settings, writable_nodered, model):
    names = ("declined fahrenheit", "declined celsius")
    client = await aiohttp_client(create_app(write_settings))
    tab = next(n for n in deployed(writable_nodered)["flows"] if n["type"] == "tab")
    model.script(plan_reply(tab["id"], names),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"],
                                                                       "nodes": nodes(FIXED, names)}}]),
                 Reply(tool_calls=[{"name": "deploy_and_test", "arguments": {}}]),
                 Reply(text="Deploy it when you are ready."))
    plan = (await events_of(await client.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "build it", "mode": "plan", "apply": "editor"})))[0]
    waiting = of_type(await approve(client, plan, planChanges=True), "deploy_test")[0]
    declined = await events_of(await client.post("/ai-sidebar/resume", headers=ALICE, json={
        "resumeToken": waiting["resumeToken"], "decisions": [{"type": "reject", "message": "later"}]}))
    assert of_type(declined, "check") == [] and of_type(declined, "verdict") == []
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "later" in told
    assert declined[-1]["type"] == "done" and "status" not in declined[-1]


async def test_a_check_without_an_inject_uses_a_test_tab_that_is_gone_after_the_verdict(
        aiohttp_client, write_settings, writable_nodered, model):
    client = await aiohttp_client(create_app(write_settings))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, "the service subscribed to Node-RED's comms")
    before = deployed(writable_nodered)["flows"]
    tab = next(n for n in before if n["type"] == "tab")
    added = [{"id": "tc", "type": "function", "name": "tab test celsius", "func": FIXED, "outputs": 1, "x": 300,
              "y": 400, "wires": [["td"]]},
             {"id": "td", "type": "debug", "name": "tab test debug", "active": True, "tosidebar": True,
              "console": False, "complete": "payload", "targetType": "msg", "x": 480, "y": 400, "wires": []}]
    model.script(
        Reply(tool_calls=[{"name": "propose_plan", "arguments": {"steps": [{
            "title": "Convert Fahrenheit to Celsius", "changes": [{"tool": "add_nodes", "target": tab["id"]}],
            "test": "send 100 °F from a test inject; the debug node shows 37.78",
            "check": {"test_inject": {"to": "tab test celsius", "payload": 100, "payloadType": "num"},
                      "debug": "tab test debug", "expect": 37.78}}]}}]),
        Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": added}}]),
        Reply(text="Done: 37.78 °C."))
    seen_tabs: list[dict] = []

    async def watch() -> None:  # the test tab, seen on Node-RED while the check runs
        while not seen_tabs:
            flows = await asyncio.to_thread(deployed, writable_nodered)
            seen_tabs.extend(n for n in flows["flows"] if n["type"] == "tab" and n["label"].startswith("AI test"))
            await asyncio.sleep(0.02)

    plan = (await events_of(await client.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "build a converter without an inject", "mode": "plan"})))[0]
    assert plan["steps"][0]["check"]["test_inject"] == {"to": "tab test celsius", "payload": 100, "payloadType": "num"}
    watcher = asyncio.create_task(watch())
    built = await approve(client, plan, planChanges=True)
    await asyncio.wait_for(watcher, 5)  # it was seen (the check's debug value came through it, too)

    assert [(c["round"], c["passed"]) for c in of_type(built, "check")] == [(1, True)]
    assert of_type(built, "verdict")[0]["evidence"] == [{"kind": "debug", "node": "tab test debug", "value": 37.78}]
    assert seen_tabs[0]["env"] == [{"name": "AI_SIDEBAR_TEST_TAB", "value": "true", "type": "bool"}]
    after = deployed(writable_nodered)["flows"]
    assert not [n for n in after if str(n["id"]).startswith("ai-test-")]  # the tab, its inject and link nodes gone
    old = {n["id"]: n for n in before}
    assert [n for n in after if n["id"] in old] == before  # every node that was there, byte-identical
    new = [n for n in after if n["id"] not in old]
    assert sorted(n["name"] for n in new) == ["tab test celsius", "tab test debug"]
    with sqlite3.connect(write_settings.memory_db_path) as raw:
        rows = list(raw.execute("SELECT tool, decided_by, message FROM approval_audit ORDER BY id"))
    assert rows == [("propose_plan", "user", None), ("add_nodes", "policy", "listed in the approved plan"),
                    ("add_test_tab", "policy", "the approved plan's test"),
                    ("trigger_inject", "policy", "the approved plan's test"),
                    ("remove_test_tab", "policy", "the approved plan's test")]
