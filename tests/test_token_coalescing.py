"""Token events joined within AI_SIDEBAR_TOKEN_COALESCE_MS (issue 23): same text, same order, fewer events, never
a token after a non-token event that followed it, and one event per model chunk when the setting is 0."""

from __future__ import annotations

from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events

ANSWER = " ".join(f"word{i}" for i in range(40))


async def chat(aiohttp_client, settings, coalesce_ms: float, **body):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": coalesce_ms})))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "say forty words", **body})
    assert response.status == 200, await response.text()
    return await read_events(response)


async def test_a_burst_of_chunks_is_joined_into_fewer_token_events_with_the_same_text(aiohttp_client, settings,
                                                                                      model):
    # A window of a second: every chunk of the burst comes within it, however loaded the machine.
    model.script(Reply(text=ANSWER))
    events = await chat(aiohttp_client, settings, 1000)

    tokens = [e for e in events if e["type"] == "token"]
    assert "".join(e["content"] for e in tokens) == ANSWER
    assert 1 <= len(tokens) < len(Reply(text=ANSWER).pieces())
    assert all(set(e) == {"type", "content"} for e in tokens)
    assert events[0]["type"] == "token" and events[0]["content"] == "word0 "  # the first one is not held back
    assert events[-1]["type"] == "done" and "error" not in [e["type"] for e in events]


async def test_zero_sends_one_token_event_per_model_chunk(aiohttp_client, settings, model):
    model.script(Reply(text=ANSWER))
    events = await chat(aiohttp_client, settings, 0)

    tokens = [e["content"] for e in events if e["type"] == "token"]
    assert tokens == Reply(text=ANSWER).pieces()


async def test_held_back_tokens_go_out_before_the_error_that_follows_them(aiohttp_client, settings, model):
    model.script(Reply(text=ANSWER, drop_after=25))
    events = await chat(aiohttp_client, settings, 1000)

    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["error", "done"], kinds
    assert set(kinds[:-2]) == {"token"}
    assert "".join(e["content"] for e in events[:-2]) == "".join(Reply(text=ANSWER).pieces()[:25])



async def test_thoughts_are_joined_like_tokens_and_never_mixed_with_them(aiohttp_client, settings, model):
    # A reasoning model on an OpenAI-compatible server: 30 pieces of reasoning_content, then 40 of text.
    thought = " ".join(f"idea{i}" for i in range(30))
    model.script(Reply(text=ANSWER, reasoning=thought))
    events = await chat(aiohttp_client, settings.model_copy(update={"provider": "openai-compatible",
                                                                    "model": "qwen3:8b"}), 1000)

    kinds = [e["type"] for e in events]
    thinking = [e for e in events if e["type"] == "thinking"]
    assert "".join(e["text"] for e in thinking) == thought and all(set(e) == {"type", "text"} for e in thinking)
    assert 1 <= len(thinking) < len(Reply(text=thought).pieces())
    # All thoughts first, then all text: a held-back thought goes out before the first token.
    assert kinds == ["thinking"] * len(thinking) + ["token"] * (len(kinds) - len(thinking) - 1) + ["done"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == ANSWER
