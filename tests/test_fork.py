"""Edit and resend (issues 31 and 35): a conversation forked at one of its questions, on SQLite and PostgreSQL.

The fork holds copies of the messages before that question, the model then receives exactly those, and the
forked conversation keeps its later turns."""

from __future__ import annotations

import pytest

from service.web.app import create_app
from tests.support.model_server import Reply
from tests.test_memory import ALICE, BOB, chat


@pytest.fixture
async def memory_client(aiohttp_client, backend_settings):
    """The service with its memory on each backend (SQLite, PostgreSQL)."""
    return await aiohttp_client(create_app(backend_settings))


async def history(client, session_id, headers=ALICE):
    response = await client.get(f"/ai-sidebar/history/{session_id}", headers=headers)
    assert response.status == 200, await response.text()
    return (await response.json())["messages"]


async def fork(client, session_id, message_id, headers=ALICE, **body):
    return await client.post(f"/ai-sidebar/sessions/{session_id}/fork", json={"messageId": message_id, **body},
                             headers=headers)


def said(messages):
    return [(m["role"], m["content"]) for m in messages]


async def test_a_fork_holds_the_turns_before_the_question_and_the_model_gets_exactly_those(memory_client, model):
    model.script(Reply(text="Answer one."), Reply(text="Answer two."))
    await chat(memory_client, ALICE, message="first question", sessionId="f1")
    await chat(memory_client, ALICE, message="second question", sessionId="f1")
    before = await history(memory_client, "f1")
    assert said(before) == [("user", "first question"), ("assistant", "Answer one."),
                            ("user", "second question"), ("assistant", "Answer two.")]

    response = await fork(memory_client, "f1", before[2]["id"])
    assert response.status == 201, await response.text()
    made = await response.json()
    assert made["forkedFrom"] == {"sessionId": "f1", "messageId": before[2]["id"]} and made["messages"] == 2
    assert made["sessionId"] != "f1" and made["title"] == "first question"
    forked = await history(memory_client, made["sessionId"])
    assert said(forked) == said(before[:2])
    assert [m["createdAt"] for m in forked] == [m["createdAt"] for m in before[:2]]
    assert await history(memory_client, "f1") == before
    listed = (await (await memory_client.get("/ai-sidebar/sessions", headers=ALICE)).json())["sessions"]
    assert {s["id"] for s in listed} == {"f1", made["sessionId"]}

    model.script(Reply(text="Answer two, edited."))
    await chat(memory_client, ALICE, message="second question, edited", sessionId=made["sessionId"])
    sent = [(m["role"], m["content"]) for m in model.requests[-1]["messages"][1:]]
    assert sent == [("user", "first question"), ("assistant", "Answer one."), ("user", "second question, edited")]
    assert said(await history(memory_client, made["sessionId"]))[2:] == [
        ("user", "second question, edited"), ("assistant", "Answer two, edited.")]
    assert await history(memory_client, "f1") == before


async def test_a_fork_at_the_first_question_is_an_empty_conversation_named_as_asked(memory_client, model):
    model.script(Reply(text="Answer one."))
    await chat(memory_client, ALICE, message="first question", sessionId="f2")
    first = (await history(memory_client, "f2"))[0]
    response = await fork(memory_client, "f2", first["id"], name="first question, edited")
    made = await response.json()
    assert response.status == 201 and made["messages"] == 0 and made["title"] == "first question, edited"
    model.script(Reply(text="Fresh."))
    await chat(memory_client, ALICE, message="first question, edited", sessionId=made["sessionId"])
    assert [m["role"] for m in model.requests[-1]["messages"]] == ["system", "user"]


async def test_a_fork_of_another_users_session_or_at_a_message_that_is_no_question_of_it_is_404(memory_client, model):
    model.script(Reply(text="Answer one."), Reply(text="Other answer."))
    await chat(memory_client, ALICE, message="first question", sessionId="f3")
    await chat(memory_client, ALICE, message="other question", sessionId="f4")
    question, answer = await history(memory_client, "f3")
    other = (await history(memory_client, "f4"))[0]

    response = await fork(memory_client, "f3", question["id"], headers=BOB)
    assert response.status == 404 and (await response.json())["error"]["code"] == "session_not_found"
    for session_id, message_id in (("f3", other["id"]), ("f3", answer["id"]), ("f3", 10**9)):
        response = await fork(memory_client, session_id, message_id)
        error = (await response.json())["error"]
        assert response.status == 404 and error["code"] == "message_not_found", error
        assert str(message_id) in error["message"]
    response = await fork(memory_client, "nope", question["id"])
    assert response.status == 404 and (await response.json())["error"]["code"] == "session_not_found"
    response = await fork(memory_client, "f3", "one")
    assert response.status == 400 and (await response.json())["error"]["code"] == "invalid_request"
    assert [s["id"] for s in (await (await memory_client.get("/ai-sidebar/sessions", headers=BOB)).json())
            ["sessions"]] == []
    listed = (await (await memory_client.get("/ai-sidebar/sessions", headers=ALICE)).json())["sessions"]
    assert sorted(s["id"] for s in listed) == ["f3", "f4"]
