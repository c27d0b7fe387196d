"""Plan mode (issue 34): the scripted model reads without write tools and proposes a plan (``plan`` event, ``done``
``awaiting_approval``); the answer goes through ``POST /ai-sidebar/resume`` under the approval token rules; after an
approval the run builds, each write behind its card unless the user approved the plan's changes, and then only the
writes the plan listed go without one."""

from __future__ import annotations

import sqlite3

from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
NODES = [{"id": "a", "type": "inject", "name": "fahrenheit", "x": 100, "y": 40, "wires": [["b"]]},
         {"id": "b", "type": "debug", "name": "celsius", "x": 300, "y": 40, "wires": []}]


async def events_of(response):
    assert response.status == 200, await response.text()
    return await read_events(response)


async def chat(service, message, **body):
    return await events_of(await service.post("/ai-sidebar/stream-chat", json={"message": message, **body},
                                              headers=ALICE))


async def resume(service, paused, *decisions, headers=None):
    return await service.post("/ai-sidebar/resume", json={"resumeToken": paused["resumeToken"],
                                                          "decisions": list(decisions)}, headers=headers or ALICE)


def first_tab(nodered) -> dict:
    return next(n for n in deployed(nodered)["flows"] if n["type"] == "tab")


def offered(request) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


def propose(tab_id: str, title: str = "Convert Fahrenheit to Celsius") -> Reply:
    return Reply(tool_calls=[{"name": "propose_plan", "arguments": {
        "steps": [{"title": title, "changes": [{"tool": "add_nodes", "target": tab_id, "summary": "inject, debug"}],
                   "test": "trigger the inject, read 37.8 in debug"}],
        "assumptions": ["the flow runs on the open tab"]}}])


def audit(settings) -> list[tuple]:
    with sqlite3.connect(settings.memory_db_path) as raw:
        return list(raw.execute("SELECT tool, decision, decided_by, message FROM approval_audit ORDER BY id"))


async def test_an_approved_plans_listed_change_runs_without_a_card_and_an_unlisted_one_still_asks(
        service, writable_nodered, model, write_settings):
    tab = first_tab(writable_nodered)
    model.script(propose(tab["id"]),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NODES}}]),
                 Reply(tool_calls=[{"name": "create_tab", "arguments": {"label": "Not in the plan"}}]))
    plan, done = await chat(service, "build a Fahrenheit to Celsius flow", mode="plan")
    assert plan["type"] == "plan" and done["status"] == "awaiting_approval"
    assert plan["steps"][0]["changes"] == [{"tool": "add_nodes", "target": tab["id"], "summary": "inject, debug"}]
    assert plan["assumptions"] == ["the flow runs on the open tab"] and len(plan["resumeToken"]) >= 43
    assert "propose_plan" in offered(model.requests[0]) and not {"add_nodes", "create_tab"} & offered(
        model.requests[0])  # planning reads only
    other = await resume(service, plan, {"type": "approve", "planChanges": True}, headers={"X-Node-RED-User": "bob"})
    assert other.status == 404 and (await other.json())["error"]["code"] == "approval_not_found"

    built = await events_of(await resume(service, plan, {"type": "approve", "planChanges": True}))
    assert [e["type"] for e in built][-2:] == ["approval_required", "done"]
    assert [a["tool"] for a in built[-2]["actions"]] == ["create_tab"] and built[-1]["status"] == "awaiting_approval"
    results = [e for e in built if e["type"] == "tool_result"]
    assert [(r["tool"], r["ok"]) for r in results] == [("propose_plan", True), ("add_nodes", True)]
    assert {"add_nodes", "create_tab"} <= offered(model.requests[1])  # building: the write tools are offered
    flows = deployed(writable_nodered)["flows"]
    assert {n.get("name") for n in flows if n.get("z") == tab["id"]} >= {"fahrenheit", "celsius"}
    assert not any(n.get("label") == "Not in the plan" for n in flows)
    assert audit(write_settings) == [("propose_plan", "approve", "user", None),
                                      ("add_nodes", "approve", "policy", "listed in the approved plan")]
    replayed = await resume(service, plan, {"type": "approve", "planChanges": True})
    assert replayed.status == 409 and (await replayed.json())["error"]["code"] == "approval_used"
    wrong = await resume(service, built[-2], {"type": "approve", "planChanges": True})
    assert wrong.status == 400 and (await wrong.json())["error"]["code"] == "invalid_request"


async def test_a_plan_prefix_edit_goes_back_to_the_model_and_a_plain_approval_keeps_every_card(
        service, writable_nodered, model):
    tab = first_tab(writable_nodered)
    before = deployed(writable_nodered)
    model.script(propose(tab["id"]), propose(tab["id"], "Convert on the open tab, rounded"),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": NODES}}]))
    plan = (await chat(service, "/plan build a Fahrenheit to Celsius flow"))[0]
    assert plan["type"] == "plan"
    assert model.requests[0]["messages"][-1]["content"] == "build a Fahrenheit to Celsius flow"
    assert (await resume(service, plan, {"type": "edit"})).status == 400  # an edit of a plan says what to change
    again = await events_of(await resume(service, plan, {"type": "edit", "message": "round to one decimal"}))
    assert [e["type"] for e in again][-2:] == ["plan", "done"] and again[-2]["steps"][0]["title"].endswith("rounded")
    told = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "round to one decimal" in told[-1]["content"]
    assert "add_nodes" not in offered(model.requests[1])  # still planning
    card = await events_of(await resume(service, again[-2], {"type": "approve"}))
    assert [e["type"] for e in card][-2:] == ["approval_required", "done"]
    assert [a["tool"] for a in card[-2]["actions"]] == ["add_nodes"] and deployed(writable_nodered) == before
