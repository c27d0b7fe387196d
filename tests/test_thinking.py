"""Reasoning models (issue 38): what a model thinks streams as ``thinking`` events, apart from the answer, is
never stored as the answer and is counted once. The real ChatOpenAI client (and its reasoning-keeping subclass for
OpenAI-compatible servers) against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import random

import pytest

from service.chat.thinking import ThinkSplitter, without_thinking
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import event_types, stream_chat
from tests.test_browser_sidebar import browser_installed, run_browser  # noqa: F401  (browser_installed: fixture)

THOUGHT = "The user asks about the delay node. It can rate limit. I should mention both modes."
ANSWER = "A delay node delays each message, or limits the rate at which messages pass."


def texts(events, kind: str) -> str:
    field = "content" if kind == "token" else "text"
    return "".join(e[field] for e in events if e["type"] == kind)


async def stored_answer(client, session: str) -> str:
    history = await (await client.get(f"/ai-sidebar/history/{session}")).json()
    return json.dumps(history)


@pytest.fixture
def local_settings(settings):
    """An OpenAI-compatible server (Ollama, vLLM, LM Studio) running a reasoning model, one event per chunk."""
    return settings.model_copy(update={"provider": "openai-compatible", "model": "qwen3:8b", "token_coalesce_ms": 0})


async def test_reasoning_content_streams_as_thinking_before_the_answer_and_is_neither_stored_nor_counted_twice(
        aiohttp_client, local_settings, model):
    client = await aiohttp_client(create_app(local_settings))
    model.script(Reply(text=ANSWER, reasoning=THOUGHT))
    events = await stream_chat(client, message="What does a delay node do?", sessionId="think-rc")

    kinds = event_types(events)
    assert kinds[-1] == "done" and "error" not in kinds
    # All thinking first, in the pieces the server sent, then the answer.
    assert kinds.index("token") > max(i for i, kind in enumerate(kinds) if kind == "thinking")
    assert [e["text"] for e in events if e["type"] == "thinking"] == Reply(text=THOUGHT).pieces()
    assert texts(events, "token") == ANSWER
    # The server counted the reasoning in its completion tokens; the done event has exactly its count.
    [request] = model.requests
    prompt = sum(len(str(m.get("content", ""))) // 4 for m in request["messages"])
    assert events[-1]["usage"]["inputTokens"] == prompt
    assert events[-1]["usage"]["outputTokens"] == (len(ANSWER) + len(THOUGHT)) // 4
    stored = await stored_answer(client, "think-rc")
    assert ANSWER in stored and "rate limit. I should" not in stored and '"thinking"' not in stored

    # The next turn sends the answer back as the assistant's message, without the reasoning.
    model.script(Reply(text="Set its mode to rate limit."))
    await stream_chat(client, message="And to limit the rate?", sessionId="think-rc")
    sent = json.dumps(model.requests[-1]["messages"])
    assert ANSWER in sent and "I should mention" not in sent


async def test_a_think_block_in_the_text_cut_anywhere_is_shown_apart_and_the_answer_stored_without_it(
        aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": 0})))
    # The tags cut across chunks, as a tokenizer may send them.
    chunks = ["<th", "ink>", "The user", " wants <b>bold</b>", " a delay.</thi", "nk>\n", "\n", "A delay ",
              "node waits <", "1 s."]
    model.script(Reply(text="".join(chunks), chunks=chunks))
    events = await stream_chat(client, message="What does a delay node do?", sessionId="think-tag")

    assert texts(events, "thinking") == "The user wants <b>bold</b> a delay."
    assert texts(events, "token") == "A delay node waits <1 s."
    assert "<think>" not in json.dumps(events) and "</think>" not in json.dumps(events)
    stored = await stored_answer(client, "think-tag")
    assert "A delay node waits <1 s." in stored and "The user wants" not in stored


async def test_an_answer_that_only_looks_like_the_start_of_a_tag_loses_nothing(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": 0})))
    model.script(Reply(text="Use a < b, then </thi", chunks=["Use a < b, then ", "</thi"]))
    events = await stream_chat(client, message="compare", sessionId="think-none")
    assert texts(events, "token") == "Use a < b, then </thi" and "thinking" not in event_types(events)


def test_the_splitter_finds_the_same_parts_wherever_the_stream_is_cut():
    text = "<think>Plan: read <flow> and </thin k</think>\n\nThe flow has < 3 nodes.<think>again</think>Done <th"
    rng = random.Random(38)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 20)))
        splitter = ThinkSplitter()
        parts = []
        for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
            parts += splitter.feed(text[start:end])
        parts += splitter.flush()
        assert "".join(p for thinking, p in parts if thinking) == "Plan: read <flow> and </thin kagain"
        assert "".join(p for thinking, p in parts if not thinking) == "The flow has < 3 nodes.Done <th"
    assert without_thinking("<think>hmm</think>\nkeywords: delay") == "keywords: delay"


def test_the_sidebar_shows_the_thoughts_in_a_block_that_closes_when_the_answer_begins(
        nodered, service_process, model, browser_installed):  # noqa: F811
    tab = next(t for t in nodered.tabs() if len(nodered.nodes_of(t["id"])) >= 3)
    thought = "The user asks about the open tab. It has an inject and a debug node."
    answer = "This flow injects a timestamp and shows it in the debug sidebar."
    # Slow enough that the sidebar is seen while the model still thinks.
    chunks = ["<think>", "The user asks about ", "the open tab. ", "It has an inject and a debug node.",
              "</think>\n\n", "This flow injects ", "a timestamp and shows it ", "in the debug sidebar."]
    model.script(Reply(text="".join(chunks), chunks=chunks, token_delay=0.4))

    seen = run_browser("sidebar_thinking.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"],
                                               "QUESTION": "explain the current flow", "FINAL_TEXT": "debug sidebar"})

    assert seen["pageErrors"] == [], seen["pageErrors"]
    thinking, answered, reopened = seen["thinking"], seen["answered"], seen["reopened"]
    assert thinking["open"] and thinking["thoughtsVisible"] and thinking["label"] == "Thinking…", thinking
    assert thought.startswith(thinking["thoughts"]) and thinking["answerTexts"] in ([], [""]), thinking
    assert not answered["open"] and answered["label"] == "Thoughts" and not answered["thoughtsVisible"], answered
    assert answered["thoughts"] == thought and answered["count"] == 1 and answered["beforeText"], answered
    assert answered["answerTexts"][-1] == answer and "<think>" not in answered["answerTexts"][-1]
    assert answered["tooltip"] == "What the model thought before answering; not part of the answer"
    assert reopened["open"] and reopened["thoughtsVisible"]
    for screenshot in (seen["thinkingScreenshot"], seen["answeredScreenshot"]):
        assert os.path.getsize(screenshot) > 10_000
