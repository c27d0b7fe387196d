"""Long conversations (issue 22): the history is summarised to the model's context budget, the summary is kept in
memory, and a fact from the start of a 300-turn session still reaches the model."""

from __future__ import annotations

import json
import re
import sys

from langchain_core.messages.utils import count_tokens_approximately

from service.identity import Identity
from service.settings import McpServerConfig
from service.web.app import MEMORY, create_app
from tests.support.model_server import Reply
from tests.support.nodered import REPO
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice"}
alice = Identity("user", "alice")
BUDGET = 6000
FACT = "FACT: the production broker is mqtt-7.example.net on port 8883"
FACTS = re.compile(r"FACT: [^<\n\"\\]*")


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
    messages = [{"role": m["role"], "content": m.get("content") or "",
                 **{key: m[key] for key in ("tool_calls", "tool_call_id") if m.get(key)}} for m in body["messages"]]
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


REPORT_PARTS = 10
LOOP_BUDGET = 6000


def reporting_model(requests_seen: list[dict]):
    """A model that, within one agent turn, asks for the sensor report part after part (each result about 700
    tokens), answers a summary request (LangChain's prompt) with the parts it was shown (an earlier summary's
    included, as a real model keeps them), and, after the last part, answers in text. Every request it receives
    is recorded in ``requests_seen`` in order."""
    asked = []

    def respond(body: dict) -> Reply:
        requests_seen.append(body)
        text = json.dumps(body["messages"])
        if "Messages to summarize" in text:
            earlier = re.findall(r"Report parts read so far: ([\d, ]+)", text)
            parts = set(re.findall(r"part (\d+) line 0", text)) | set(re.findall(r"\d+", " ".join(earlier)))
            parts = sorted(parts, key=int)
            return Reply(text="Report parts read so far: " + ", ".join(parts) + ".")
        if len(asked) < REPORT_PARTS:
            asked.append(len(asked) + 1)
            return Reply(tool_calls=[{"name": "plant__report", "arguments": {"part": len(asked)}}])
        return Reply(text=f"All {REPORT_PARTS} parts read: no alarm.")
    return respond


async def test_an_agent_turn_of_many_large_tool_results_keeps_every_model_request_under_the_budget(
        aiohttp_client, settings, model):
    plant = McpServerConfig(name="plant", command=sys.executable,
                            args=["-m", "tests.support.many_tools_server", "--few"], env={"PYTHONPATH": str(REPO)})
    client = await aiohttp_client(create_app(settings.model_copy(update={
        "context_tokens": LOOP_BUDGET, "mcp_servers": [plant], "tool_search_threshold": 1000,
        "agent_max_tool_calls": REPORT_PARTS + 2, "agent_max_model_calls": REPORT_PARTS + 2})))
    seen: list[dict] = []
    model.responder = reporting_model(seen)

    events = await chat(client, message="Read every part of the plant's sensor report and tell me about alarms.")

    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["tool"] for r in results] == ["plant__report"] * REPORT_PARTS and all(r["ok"] for r in results)
    assert "".join(e["content"] for e in events if e["type"] == "token") == f"All {REPORT_PARTS} parts read: no alarm."
    # The request before any tool ran takes about 3,000 tokens (system prompt and 17 tool schemas); ten results of
    # about 770 tokens each would add 7,700: the loop folded them, each request within the budget.
    assert [request_tokens(body) for body in seen if request_tokens(body) > LOOP_BUDGET] == []
    summaries = [body for body in seen if "Messages to summarize" in json.dumps(body["messages"])]
    assert summaries, "no summary request: the results never outgrew the budget"
    # The system prompt stays the first message of every request of the loop, and the summary follows it.
    answers = [body for body in seen if body not in summaries]
    assert all(body["messages"][0]["role"] == "system" for body in answers)
    # What the first results said reaches the last request through the summary.
    assert "Report parts read so far: 1, 2, 3" in json.dumps(answers[-1]["messages"])
