"""Long conversations (issue 22): the history is summarised to the model's context budget, the summary is kept in
memory, and a fact from the start of a 300-turn session still reaches the model."""

from __future__ import annotations

import json
import re

from langchain_core.messages.utils import count_tokens_approximately

from service.identity import Identity
from service.web.app import MEMORY, create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice"}
alice = Identity("user", "alice")
BUDGET = 6000
FACT = "FACT: the production broker is mqtt-7.example.net on port 8883"
FACTS = re.compile(r"FACT: [^<\n\"]*")


def summarising_model(body: dict) -> Reply:
    """A model that answers a summary request (LangChain's summary prompt) with every ``FACT:`` line it was given,
    as a real model keeps stated facts, and anything else with a short answer."""
    text = json.dumps(body["messages"])
    if "Messages to summarize" in text:
        return Reply(text="\n".join(dict.fromkeys(FACTS.findall(text))) or "Nothing to keep.")
    return Reply(text="Noted.")


def request_tokens(body: dict) -> int:
    """Input tokens of one chat completions request as the service counts them (no tiktoken offline: the
    approximate counter), its tool schemas included."""
    messages = [{"role": m["role"], "content": m.get("content") or ""} for m in body["messages"]]
    tools = [{"role": "user", "content": json.dumps(tool["function"])} for tool in body.get("tools", [])]
    return count_tokens_approximately(messages) + count_tokens_approximately(tools)


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


async def test_a_300_turn_session_stays_within_the_budget_and_keeps_its_early_facts(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"context_tokens": BUDGET})))
    store = client.app[MEMORY].store
    for turn in range(1, 298):
        question = FACT if turn == 2 else f"Turn {turn}: how should the function node number {turn} handle msg.payload?"
        await store.save_turn("long", alice, question, f"Answer {turn}: set msg.payload in node {turn} and return "
                              "msg so that the next node gets it.", {})
    model.responder = summarising_model

    for turn in range(298, 301):
        model.requests.clear()
        events = await chat(client, message=f"Turn {turn}: which broker do we use in production?", sessionId="long")
        assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"]
        assert all(request_tokens(body) <= BUDGET for body in model.requests), \
            [request_tokens(body) for body in model.requests]
        answer_request = json.dumps(model.requests[-1]["messages"])
        assert FACT in answer_request
        if turn == 298:  # the backlog of 594 messages took several summary requests, each within the budget
            assert len(model.requests) > 3
        else:  # the stored summary is reused: at most one more fold per turn
            assert len(model.requests) <= 2

    summary = await store.summary(alice, "long")
    assert summary is not None and FACT in summary.text
    response = await client.get("/ai-sidebar/history/long?limit=10", headers=ALICE)
    body = await response.json()
    assert body["summary"]["throughId"] == summary.through_id
    assert body["messages"][-1]["content"] == "Noted."
