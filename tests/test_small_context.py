"""Small local models keep the conversation (issue 41): with the context budget of a small window
(``AI_SIDEBAR_CONTEXT_TOKENS`` 2,000 to 8,000) every request carries the recent turns, or a summary and the recent
turns; a fact from the start reaches the model sixty turns later; folds keep the summary plain text; when nothing of
the history fits, the answer says so."""

from __future__ import annotations

import json
import re

import pytest

from service.identity import Identity
from service.settings import NodeRedSettings
from service.web.app import MEMORY, create_app
from tests.support.model_server import Reply
from tests.support.nodered import free_port
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice"}
alice = Identity("user", "alice")
TURNS = 60
FACT = "FACT: the production broker is mqtt-7.example.net on port 8883"
FACTS = re.compile(r"FACT: [^\n\"\\]*")
SUMMARY_MARK = "Messages to summarize"
# About 60 tokens: sixty turns outgrow even the 8,000-token budget, so every budget folds.
ANSWER = ("Return null so that the flow stops there: a function node that returns null sends nothing, and the nodes "
          "wired after it do not run. Return msg to pass the message on, or an array to send to several outputs.")


def question(turn: int) -> str:
    """The user's message of ``turn`` (1-based): the fact at turn 2, the question about it at the last turn."""
    if turn == 2:
        return FACT
    if turn == TURNS:
        return "What did I tell you at the start about the production broker?"
    return f"Turn {turn}: should the function node number {turn} return msg or null when msg.payload is empty?"


def fact_keeping_model(body: dict) -> Reply:
    """A model that answers a summary request with every ``FACT:`` line it was shown (an earlier summary's
    included, as a real model keeps stated facts) and anything else with a short answer."""
    text = json.dumps(body["messages"])
    if SUMMARY_MARK in text:
        return Reply(text="\n".join(dict.fromkeys(FACTS.findall(text))) or "Nothing to keep.")
    return Reply(text=ANSWER)


def is_summary_request(body: dict) -> bool:
    return SUMMARY_MARK in json.dumps(body["messages"])


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


@pytest.mark.parametrize("budget", [2000, 4000, 8000])
async def test_every_request_of_a_60_turn_session_carries_the_recent_turns_and_the_first_facts(
        aiohttp_client, settings, model, budget):
    client = await aiohttp_client(create_app(settings.model_copy(update={"context_tokens": budget})))
    model.responder = fact_keeping_model
    bare = []
    for turn in range(1, TURNS + 1):
        model.requests.clear()
        events = await chat(client, message=question(turn), sessionId="small")
        assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
        answers = [body for body in model.requests if not is_summary_request(body)]
        assert answers, f"turn {turn}: no answer request"
        sent = [m.get("content") or "" for m in answers[-1]["messages"]]
        if turn > 1 and question(turn - 1) not in sent:
            bare.append(turn)
        if turn == TURNS:
            assert FACT in json.dumps(answers[-1]["messages"]), "the fact of turn 2 did not reach turn 60"
    assert bare == [], f"budget {budget}: requests without the previous turn at turns {bare}"
    summary = await client.app[MEMORY].store.summary(alice, "small")
    assert summary is not None and FACT in summary.text


MARKUP_FACT = 'FACT: the flow "Sensors & <alarms>" publishes to plant/alarms'


def copying_model(body: dict) -> Reply:
    """A small model that writes its summary by copying, verbatim, every line of the summary request that holds a
    ``FACT:`` (markup included, as small models do)."""
    text = body["messages"][-1]["content"] if body["messages"] else ""
    if SUMMARY_MARK in json.dumps(body["messages"]):
        return Reply(text="\n".join(dict.fromkeys(line for line in text.splitlines() if "FACT:" in line)) or "-")
    return Reply(text=ANSWER)


async def test_three_successive_folds_keep_the_summary_free_of_escaped_markup(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"context_tokens": 2000})))
    store = client.app[MEMORY].store
    model.responder = copying_model
    folds = 0
    turn = 0
    while folds < 3:
        turn += 1
        assert turn < 60, "fewer than three folds in 60 turns"
        model.requests.clear()
        events = await chat(client, message=MARKUP_FACT if turn == 1 else question(turn), sessionId="markup")
        assert events[-1]["type"] == "done"
        folds += sum(1 for body in model.requests if is_summary_request(body))
    summary = await store.summary(alice, "markup")
    assert summary is not None and MARKUP_FACT in summary.text, summary
    assert not re.search(r"&(amp|lt|gt|quot);", summary.text), summary.text


def long_summary_model(body: dict) -> Reply:
    """A model whose summaries are longer than a 512-token window can hold."""
    if is_summary_request(body):
        return Reply(text="Summary: " + "the user asked about function nodes and msg.payload. " * 60)
    return Reply(text=ANSWER)


async def test_an_answer_without_room_for_even_a_summary_says_that_earlier_turns_were_left_out(
        aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"context_tokens": 512})))
    store = client.app[MEMORY].store
    for turn in range(1, 6):
        await store.save_turn("tight", alice, question(turn), ANSWER, {})
    model.responder = long_summary_model

    events = await chat(client, message="Und was soll der Funktions-Node jetzt zurückgeben?", sessionId="tight",
                        language="de")

    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    notices = [e for e in events if e["type"] == "notice" and e["code"] == "history_left_out"]
    assert len(notices) == 1 and notices[0]["messages"] > 0, events
    assert "nicht einmal als Zusammenfassung" in notices[0]["message"]


@pytest.mark.knowledge_refresh  # the background build is the point (its Node-RED never answers: no race)
async def test_a_which_node_question_while_the_first_help_index_is_built_says_the_index_is_not_ready(
        aiohttp_client, settings, model):
    # Node-RED is not answering yet (``make run`` starts the service first): the first index cannot be built.
    starting = settings.model_copy(update={"knowledge_refresh": 3600,
                                           "nodered": NodeRedSettings(url=f"http://127.0.0.1:{free_port()}")})
    client = await aiohttp_client(create_app(starting))
    model.script(Reply(text="Verwende den csv-Node."))

    events = await chat(client, message="Welcher Node liest eine CSV-Datei ein?", language="de")

    assert events[-1]["type"] == "done", events
    notices = [e for e in events if e["type"] == "notice" and e["code"] == "knowledge_index_building"]
    assert len(notices) == 1, events
    assert "noch indexiert" in notices[0]["message"]
