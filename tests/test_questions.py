"""Clarifying questions (issue 34): the scripted model calls ``ask_user``; the stream pauses with a ``question``
event and ``done`` ``awaiting_answer``; ``POST /ai-sidebar/resume`` with ``answer`` continues the same run, also
after a service restart, under the token rules of approvals (one use, one identity, expiry)."""

from __future__ import annotations

import sqlite3

from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
BROKERS = ["localhost:1883", "test.mosquitto.org:1883"]
ASK = Reply(tool_calls=[{"name": "ask_user", "arguments": {"question": "Which MQTT broker?", "choices": BROKERS}}])


async def events_of(response):
    assert response.status == 200, await response.text()
    return await read_events(response)


async def chat(service, message, headers=None):
    return await events_of(await service.post("/ai-sidebar/stream-chat", json={"message": message},
                                              headers=headers or ALICE))


async def answer(service, question, headers=None, **body):
    return await service.post("/ai-sidebar/resume", json={"resumeToken": question["resumeToken"], **body},
                              headers=headers or ALICE)


def audit(settings) -> list[tuple[str, str]]:
    with sqlite3.connect(settings.memory_db_path) as raw:
        return list(raw.execute("SELECT tool, decision FROM approval_audit ORDER BY id"))


async def test_a_question_answered_from_a_quick_reply_continues_the_run_after_a_service_restart(
        aiohttp_client, write_settings, writable_nodered, model):
    model.script(ASK, Reply(text="I will use localhost:1883."))
    first = await aiohttp_client(create_app(write_settings))
    question, done = await chat(first, "read temperatures from MQTT")
    assert question == {"type": "question", "runId": question["runId"], "resumeToken": question["resumeToken"],
                        "question": "Which MQTT broker?", "choices": BROKERS, "free": True}
    assert done["status"] == "awaiting_answer" and len(question["resumeToken"]) >= 43
    await first.close()  # the service stops: the paused run is in the checkpointer's database only
    second = await aiohttp_client(create_app(write_settings))
    resumed = await events_of(await answer(second, question, answer={"choice": "localhost:1883"}))
    kinds = [e["type"] for e in resumed]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-1] == "done" and "status" not in resumed[-1]
    assert resumed[0]["tool"] == "ask_user" and resumed[0]["params"]["answer"] == "localhost:1883"
    assert "".join(e["content"] for e in resumed if e["type"] == "token") == "I will use localhost:1883."
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "localhost:1883" in told[-1]["content"]
    assert audit(write_settings) == [("ask_user", "edit")]


async def test_an_answer_is_single_use_bound_to_its_user_checked_against_the_choices_and_expires(
        service, writable_nodered, model, write_settings):
    model.default = ASK
    first, second = (await chat(service, "use MQTT"))[0], (await chat(service, "use MQTT"))[0]
    model.default = Reply(text="Fine.")
    other = await answer(service, first, headers={"X-Node-RED-User": "bob"}, answer={"choice": BROKERS[0]})
    assert other.status == 404 and (await other.json())["error"]["code"] == "approval_not_found"
    for wrong in ({"answer": {"choice": "elsewhere:1883"}}, {"decisions": [{"type": "approve"}]},
                  {"answer": {"choice": BROKERS[0], "text": "both"}}, {}):
        refused = await answer(service, first, **wrong)
        assert refused.status == 400, wrong
        assert (await refused.json())["error"]["code"] == "invalid_request"
    assert audit(write_settings) == []
    with sqlite3.connect(write_settings.memory_db_path) as raw:  # an hour passes for the second one
        raw.execute("UPDATE approval_runs SET expires_at = expires_at - 3601 WHERE created_at = "
                    "(SELECT MAX(created_at) FROM approval_runs)")
    expired = await answer(service, second, answer={"text": "my own broker"})
    assert expired.status == 410 and (await expired.json())["error"]["code"] == "approval_expired"
    await events_of(await answer(service, first, answer={"text": "mqtt.local:1883"}))
    told = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "mqtt.local:1883" in told[-1]["content"]
    reused = await answer(service, first, answer={"choice": BROKERS[0]})
    assert reused.status == 409 and (await reused.json())["error"]["code"] == "approval_used"


async def test_a_question_asked_together_with_a_write_is_refused_and_the_write_still_asks(
        service, writable_nodered, model):
    before = deployed(writable_nodered)
    model.script(Reply(tool_calls=[
        {"name": "ask_user", "arguments": {"question": "Which tab?"}},
        {"name": "create_tab", "arguments": {"label": "Sensors"}}]), Reply(text="Waiting."))
    events = await chat(service, "make a tab for sensors")
    assert [e["type"] for e in events] == ["approval_required", "done"]
    assert [a["tool"] for a in events[0]["actions"]] == ["create_tab"]
    assert events[1]["status"] == "awaiting_approval" and deployed(writable_nodered) == before
    text_answer = await answer(service, events[0], answer={"text": "Sensors"})
    assert text_answer.status == 400  # a write is answered with decisions, not an answer


async def test_ask_mode_offers_questions_but_no_write_tool_before_and_after_the_answer(service, model):
    model.script(Reply(tool_calls=[{"name": "ask_user", "arguments": {"question": "Which tab do you mean?",
                                                                      "choices": ["Tab 1", "Tab 2"]}}]),
                 Reply(text="Tab 2 has three nodes."))
    question, done = await events_of(await service.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "what does my tab do?", "mode": "ask"}))
    assert question["type"] == "question" and question["choices"] == ["Tab 1", "Tab 2"]
    assert done["status"] == "awaiting_answer"
    resumed = await events_of(await answer(service, question, answer={"choice": "Tab 2"}))
    assert "".join(e["content"] for e in resumed if e["type"] == "token") == "Tab 2 has three nodes."
    for request in model.requests:  # the question, and the run it continues: Ask mode's tools, ask_user, no write
        names = {tool["function"]["name"] for tool in request.get("tools") or []}
        assert "ask_user" in names and "get_flow" in names
        assert not names & {"add_nodes", "update_node", "create_tab", "delete_nodes", "trigger_inject"}, names
    told = [m for m in model.requests[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "Tab 2" in str(told)
