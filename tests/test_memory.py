"""Memory: the store (on SQLite and on PostgreSQL), multi-turn history sent to the model, per-user isolation, routes
and retention."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from pathlib import Path

import psycopg
import pytest

from service.identity import Identity
from service.memory.migrations import SQLITE, render
from service.memory.records import SessionNotFound
from service.memory.store import HISTORY_WINDOW, MIGRATIONS, MemoryStore
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice"}
BOB = {"X-Node-RED-User": "bob"}
alice, bob = Identity("user", "alice"), Identity("user", "bob")


@pytest.fixture
async def store(memory_target):
    """The store on each backend (see ``memory_target`` in conftest)."""
    memory = await MemoryStore.open(memory_target)
    yield memory
    await memory.close()


@pytest.fixture
async def memory_client(aiohttp_client, backend_settings):
    """The service with its memory on each backend."""
    return await aiohttp_client(create_app(backend_settings))


async def chat(client, headers=None, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=headers or {})
    assert response.status == 200, await response.text()
    return await read_events(response)


async def test_store_uses_wal_and_migrates_once(tmp_path):
    path = tmp_path / "sub" / "memory.db"
    first = await MemoryStore.open(path)
    assert await first.schema_version() == len(MIGRATIONS) == 9
    await first.save_turn("s1", alice, "q", "a", {})
    await first.close()
    await first.close()  # idempotent
    again = await MemoryStore.open(path)
    assert await again.schema_version() == 9
    assert [t.content for t in await again.history(alice, "s1")] == ["q", "a"]
    await again.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"short_term_memory", "long_term_memory", "sessions", "messages_fts", "knowledge_fts"} <= tables


async def test_replicas_opening_one_postgres_database_together_migrate_it_once(postgres_url):
    stores = await asyncio.gather(*(MemoryStore.open(postgres_url) for _ in range(3)))
    try:
        assert [await s.schema_version() for s in stores] == [len(MIGRATIONS)] * 3
        await stores[0].save_turn("s1", alice, "q", "a", {})
        assert [t.content for t in await stores[2].history(alice, "s1")] == ["q", "a"]
    finally:
        for s in stores:
            await s.close()
    again = await MemoryStore.open(postgres_url)
    assert await again.schema_version() == len(MIGRATIONS)
    await again.close()
    async with await psycopg.AsyncConnection.connect(postgres_url) as raw:
        versions = await (await raw.execute("SELECT version FROM memory_schema")).fetchall()
        tables = {r[0] for r in await (await raw.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).fetchall()}
        indexes = {r[0] for r in await (await raw.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'short_term_memory'")).fetchall()}
    assert versions == [(len(MIGRATIONS),)]
    assert {"sessions", "short_term_memory", "long_term_memory", "approval_runs", "approval_audit", "turn_usage",
            "session_summaries", "approval_expired", "open_streams"} <= tables
    assert any("USING gin (search)" in index for index in indexes)


async def test_an_unreachable_postgres_leaves_chat_working_without_memory(aiohttp_client, settings, model):
    from pydantic import SecretStr

    from tests.support.nodered import free_port

    url = f"postgresql://nobody:secret-password@127.0.0.1:{free_port()}/none"
    client = await aiohttp_client(create_app(settings.model_copy(update={"database_url": SecretStr(url)})))
    model.script(Reply(text="still answering"))
    events = await chat(client, message="hello", sessionId="nomem")
    assert events[-1]["type"] == "done" and "still answering" in "".join(
        e.get("content", "") for e in events if e["type"] == "token")
    response = await client.get("/ai-sidebar/sessions")
    assert response.status == 503 and "secret-password" not in await response.text()


async def test_a_write_whose_last_statement_fails_stores_none_of_it_and_the_next_write_works(store):
    from service.memory.db import MemoryUnavailable

    await store.save_turn("s1", alice, "kept question", "kept answer", {})
    before = await store.db.scalar("SELECT COUNT(*) FROM short_term_memory")
    with pytest.raises(MemoryUnavailable):
        await store.db.write([
            ("UPDATE sessions SET name = ? WHERE id = ?", ("renamed", "s1")),
            ("INSERT INTO short_term_memory(session_key, message_type, content, metadata, created_at) "
             "VALUES (?, 'user', 'orphan', '{}', 0)", (999999,)),  # no such session: the foreign key refuses it
        ])
    assert await store.db.scalar("SELECT COUNT(*) FROM short_term_memory") == before
    assert (await store.sessions(alice))[0]["name"] != "renamed"
    await store.save_turn("s1", alice, "next question", "next answer", {})
    assert [t.content for t in await store.history(alice, "s1")][-2:] == ["next question", "next answer"]


async def test_history_gives_the_newest_messages_oldest_first(store):
    for i in range(5):
        await store.save_turn("s1", alice, f"question {i}", f"answer {i}", {"scenario": "general"})
    turns = await store.history(alice, "s1", limit=3)
    assert [t.content for t in turns] == ["answer 3", "question 4", "answer 4"]
    assert turns[0].metadata == {"scenario": "general"}


async def test_an_answer_keeps_what_was_shown_and_the_model_never_reads_one_without_text(store):
    error = {"type": "error", "code": "provider_not_configured", "message": "No provider.", "at": 0}
    await store.save_turn("s1", alice, "hello", "", {"errors": ["provider_not_configured"]}, events=[error])
    card = {"type": "approval_required", "runId": "r1", "actions": [], "at": 6}
    await store.save_turn("s1", alice, "add nodes", "Sure: ", {}, events=[card])
    await store.save_turn("s1", alice, "thanks", "You're welcome.", {})
    turns = await store.history(alice, "s1")
    assert [(t.role, t.content, t.events) for t in turns] == [
        ("user", "hello", None), ("assistant", "", [error]), ("user", "add nodes", None),
        ("assistant", "Sure: ", [card]), ("user", "thanks", None), ("assistant", "You're welcome.", None)]
    assert turns[1].as_dict()["events"] == [error] and "events" not in turns[0].as_dict()
    # The model gets the questions and the answers that said something; the list counts what the sidebar shows.
    assert [t.content for t in await store.window(alice, "s1")] == [
        "hello", "add nodes", "Sure: ", "thanks", "You're welcome."]
    assert [t.content for t in (await store.conversation(alice, "s1"))[1]] == [
        "hello", "add nodes", "Sure: ", "thanks", "You're welcome."]
    assert [s["messages"] for s in await store.sessions(alice)] == [6]
    await store.append_answer("s1", alice, "", {"resumed": "r1"}, [{"type": "tool_call", "tool": "x", "at": 0}])
    assert (await store.history(alice, "s1"))[-1].metadata == {"resumed": "r1"}
    assert not await store.append_answer("s1", alice, "", {"resumed": "r1"}, [])


async def test_messages_stored_before_answers_kept_their_events_restore_as_they_were(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as raw:  # a database of the schema before (version 7) with one turn
        for number, step in enumerate(MIGRATIONS[:7], start=1):
            raw.executescript(f"BEGIN; {render(step, SQLITE)}; PRAGMA user_version={number}; COMMIT;")
        raw.execute("INSERT INTO sessions(owner_kind, owner, conversation, id, name, created_at, updated_at) "
                    "VALUES ('user', 'alice', '', 'old', 'old', 1, 1)")
        for role, content in (("user", "what is a flow?"), ("assistant", "A flow is a tab of nodes.")):
            raw.execute("INSERT INTO short_term_memory(session_key, message_type, content, metadata, created_at) "
                        "VALUES (1, ?, ?, '{\"tools\": [\"get_flow\"]}', 1)", (role, content))
    store = await MemoryStore.open(path)
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        turns = await store.history(alice, "old")
        assert [t.as_dict() for t in turns] == [
            {"id": 1, "role": "user", "content": "what is a flow?", "metadata": {"tools": ["get_flow"]},
             "createdAt": 1},
            {"id": 2, "role": "assistant", "content": "A flow is a tab of nodes.", "metadata": {"tools": ["get_flow"]},
             "createdAt": 1}]
        await store.save_turn("old", alice, "and now?", "Now with events.", {}, events=[{"type": "done", "at": 0}])
        assert (await store.history(alice, "old"))[-1].events == [{"type": "done", "at": 0}]
    finally:
        await store.close()


async def test_a_failed_answer_is_stored_with_its_error_worded_as_it_was_streamed(aiohttp_client, settings):
    no_model = settings.model_copy(update={"openai_api_key": None, "openai_base_url": None})
    client = await aiohttp_client(create_app(no_model))
    events = await read_events(await client.post("/ai-sidebar/stream-chat", headers=ALICE, json={
        "message": "hello there", "sessionId": "nokey", "language": "de"}))
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "provider_not_configured"
    history = await (await client.get("/ai-sidebar/history/nokey", headers=ALICE)).json()
    question, answer = history["messages"]
    assert answer["role"] == "assistant" and answer["content"] == ""
    assert answer["events"] == [{"type": "error", "code": "provider_not_configured", "message": events[0]["message"],
                                 "at": 0}]
    assert "events" not in question and history["approvals"] == {}
    listed = await (await client.get("/ai-sidebar/sessions", headers=ALICE)).json()
    assert [s["messages"] for s in listed["sessions"] if s["id"] == "nokey"] == [2]


async def test_window_is_bounded_by_count_and_size_and_starts_with_a_question(store):
    for i in range(40):
        await store.save_turn("s1", alice, f"q{i}", f"a{i}", {})
    window = await store.window(alice, "s1")
    assert len(window) <= HISTORY_WINDOW and window[0].role == "user" and window[-1].content == "a39"
    await store.save_turn("big", alice, "q", "x" * 30_000, {})
    await store.save_turn("big", alice, "q2", "y" * 30_000, {})
    window = await store.window(alice, "big")
    assert [t.content for t in window] == ["q2", "y" * 30_000]


async def test_a_user_never_reads_lists_searches_or_deletes_another_users_session(store):
    await store.save_turn("s-alice", alice, "my secret MQTT broker password idea", "noted", {})
    with pytest.raises(SessionNotFound):
        await store.history(bob, "s-alice")
    with pytest.raises(SessionNotFound):
        await store.delete_session(bob, "s-alice")
    assert await store.sessions(bob) == []
    assert await store.search(bob, "MQTT broker") == []
    assert await store.window(bob, "s-alice") == []
    # the same id is only bob's own, new session: alice's stays as it was
    await store.save_turn("s-alice", bob, "hijack", "no", {})
    assert [t.content for t in await store.history(bob, "s-alice")] == ["hijack", "no"]
    assert [t.content for t in await store.history(alice, "s-alice")] == ["my secret MQTT broker password idea",
                                                                         "noted"]
    assert len(await store.search(alice, "MQTT broker")) == 1


async def test_search_ranks_by_bm25_with_snippets_and_treats_operators_as_text(store):
    await store.save_turn("s1", alice, "How do I connect an MQTT broker with TLS?",
                          "Use the mqtt-broker config node and a tls-config node for MQTT over TLS.", {})
    await store.save_turn("s2", alice, "What is a debug node?", "It shows messages in the sidebar.", {})
    results = await store.search(alice, "MQTT TLS")
    assert results and all(r["category"] == "message" for r in results)
    assert "[" in results[0]["snippet"] and results[0]["sessionId"] == "s1"
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert await store.search(alice, 'debug" OR "mqtt') == []  # quotes and OR are text, not syntax
    assert await store.search(alice, "NEAR( * ") == []


async def test_a_search_hit_shows_about_a_sentence_around_the_match_with_every_match_marked(store):
    before = "The greenhouse flow reads eleven sensors every minute and keeps their values for a day. "
    after = " sends the readings on to the dashboard, and a second switch routes the alarms to the phone."
    await store.save_turn("long", alice, before + "Then the Quokka switch node" + after, "noted", {})

    [hit] = await store.search(alice, "quokka")

    # Not FTS5's 12 trigram tokens (14 characters): about 120, cut at spaces, the hit a third of the way in.
    assert 100 <= len(hit["snippet"]) <= 160, hit["snippet"]
    assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    assert "Then the [Quokka] switch node sends the readings" in hit["snippet"]
    assert not hit["snippet"].removeprefix("…").startswith(("e ", "s "))  # no word cut in two


async def test_search_finds_chinese_text(store):
    await store.save_turn("s1", alice, "如何连接 MQTT 服务器？", "使用 mqtt-broker 配置节点。", {})
    assert (await store.search(alice, "配置节点"))[0]["role"] == "assistant"


async def test_retention_removes_old_messages_but_keeps_pinned_sessions(store):
    await store.save_turn("old", alice, "old question", "old answer", {})
    await store.save_turn("pinned", alice, "pinned question", "pinned answer", {})
    await store.update_session(alice, "pinned", pinned=True)
    removed = await store.remove_expired(30, now=time.time() + 31 * 86_400)
    assert removed == 2
    assert [s["id"] for s in await store.sessions(alice)] == ["pinned"]
    assert len(await store.history(alice, "pinned")) == 2
    assert await store.remove_expired(0) == 0


async def test_follow_up_question_is_answered_in_context(client, nodered, model):
    tab = nodered.tabs()[0]
    model.script(Reply(text="It catches the error thrown by the function node."), Reply(text="It is a debug node."))
    await chat(client, ALICE, message="explain the current flow", selectedFlow={"id": tab["id"]}, sessionId="m1")
    await chat(client, ALICE, message="and what does its second node do?", sessionId="m1")
    messages = model.requests[-1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "explain the current flow"  # the user's words, not the internal prompt
    assert messages[2]["content"] == "It catches the error thrown by the function node."
    assert messages[3]["content"] == "and what does its second node do?"


async def test_each_chat_stores_the_original_message_answer_and_metadata(client, nodered, model):
    tab = nodered.tabs()[0]
    model.script(Reply(text="Answer one."))
    await chat(client, ALICE, message="explain the current flow", selectedFlow={"id": tab["id"]},
               sessionId="m2", language="es-ES")
    response = await client.get("/ai-sidebar/history/m2", headers=ALICE)
    messages = (await response.json())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "explain the current flow" and messages[1]["content"] == "Answer one."
    assert messages[0]["metadata"] == {"scenario": "general", "flowId": tab["id"], "tools": ["get_flow"],
                                       "language": "es-ES",
                                       "context": {"flow": {"id": tab["id"], "label": None}, "nodes": 0, "debug": 0,
                                                   "mentions": [], "attachments": []}}
    response = await client.get("/ai-sidebar/history/m2", headers=BOB)
    assert response.status == 404 and (await response.json())["error"]["code"] == "session_not_found"


async def test_attached_debug_messages_reach_the_model_as_data_and_the_turn_keeps_its_context(client, nodered, model):
    tab = nodered.tabs()[0]
    node = nodered.nodes_of(tab["id"])[0]
    model.script(Reply(text="The payload is a timestamp."))
    debug = {"nodeId": node["id"], "name": "after parse", "topic": "sensor/1", "property": "payload",
             "format": "number", "msg": "1733011200000"}
    await chat(client, ALICE, message="why this value?", sessionId="m-debug", debugMessages=[debug],
               selectedFlow={"id": tab["id"], "label": tab["label"]},
               selectedNodes=[{"id": node["id"], "type": node["type"]}])
    question = model.requests[-1]["messages"][-1]["content"]
    assert question.startswith("why this value?\n\nDebug messages attached to this question")
    assert (f'<debug_message>\nFrom node "after parse" (id {node["id"]}), topic "sensor/1", msg.payload (number):\n'
            "1733011200000\n</debug_message>") in question
    messages = (await (await client.get("/ai-sidebar/history/m-debug", headers=ALICE)).json())["messages"]
    # The question is stored as typed; what went with it is counted in its metadata.
    assert messages[0]["content"] == "why this value?"
    assert messages[0]["metadata"]["context"] == {"flow": {"id": tab["id"], "label": tab["label"]}, "nodes": 1,
                                                  "debug": 1, "mentions": [], "attachments": []}
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "x", "debugMessages": [debug] * 6},
                                 headers=ALICE)
    assert response.status == 400 and "debugMessages" in (await response.json())["error"]["message"]


async def test_secrets_in_attached_debug_messages_never_reach_the_model(client, model):
    model.script(Reply(text="The login failed."))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    debug = {"nodeId": "n1", "name": "login", "topic": f"auth?access_token={token}", "property": "payload",
             "format": "Object", "msg": json.dumps({"user": "ann", "password": "hunter2",
                                                    "apiKey": "sk-proj-" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4"})}
    await chat(client, ALICE, message="why did the login fail?", sessionId="m-debug-secret", debugMessages=[debug])
    sent = json.dumps(model.requests[-1])
    assert '"user": "ann"' in model.requests[-1]["messages"][-1]["content"]
    for secret in ("hunter2", "sk-proj-x9Y8", token):
        assert secret not in sent


async def test_silent_requests_are_not_stored(memory_client, model):
    await chat(memory_client, ALICE, message="hello", sessionId="quiet", silent=True)
    assert (await memory_client.get("/ai-sidebar/history/quiet", headers=ALICE)).status == 404


async def test_sessions_can_be_created_renamed_pinned_listed_and_deleted(memory_client):
    response = await memory_client.post("/ai-sidebar/sessions", json={"name": "MQTT work"}, headers=ALICE)
    assert response.status == 201
    session = await response.json()
    response = await memory_client.patch(f"/ai-sidebar/sessions/{session['id']}",
                                         json={"name": "MQTT", "pinned": True}, headers=ALICE)
    assert (await response.json())["pinned"] is True
    listed = (await (await memory_client.get("/ai-sidebar/sessions", headers=ALICE)).json())["sessions"]
    assert [(s["id"], s["name"], s["pinned"]) for s in listed] == [(session["id"], "MQTT", True)]
    assert (await (await memory_client.get("/ai-sidebar/sessions", headers=BOB)).json())["sessions"] == []
    assert (await memory_client.delete(f"/ai-sidebar/sessions/{session['id']}", headers=BOB)).status == 404
    assert (await memory_client.delete(f"/ai-sidebar/sessions/{session['id']}", headers=ALICE)).status == 200
    assert (await (await memory_client.get("/ai-sidebar/sessions", headers=ALICE)).json())["sessions"] == []


async def test_bad_memory_requests_are_clear_4xx(client):
    assert (await client.get("/ai-sidebar/history/s1?limit=zero", headers=ALICE)).status == 400
    response = await client.post("/ai-sidebar/search", json={"query": ""}, headers=ALICE)
    assert response.status == 400 and "query" in (await response.json())["error"]["message"]
    response = await client.patch("/ai-sidebar/sessions/nope", json={"pinned": "maybe"}, headers=ALICE)
    assert response.status == 400


async def test_search_route_and_memory_stats(memory_client, model):
    model.script(Reply(text="Use a Catch node scoped to the function node."))
    await chat(memory_client, ALICE, message="How do I catch function node errors?", sessionId="m3")
    response = await memory_client.post("/ai-sidebar/search", json={"query": "catch node", "limit": 5}, headers=ALICE)
    results = (await response.json())["results"]
    # The shipped templates (examples/flows.json) hold catch nodes too: the message is among the best matches.
    assert "m3" in [result.get("sessionId") for result in results if result["category"] == "message"]
    response = await memory_client.post("/ai-sidebar/search", json={"query": "catch node", "category": "message"},
                                 headers=ALICE)
    assert [result["sessionId"] for result in (await response.json())["results"]][:1] == ["m3"]
    stats = await (await memory_client.get("/ai-sidebar/memory-stats", headers=ALICE)).json()
    assert stats["sessions"] == 1 and stats["shortTermMemory"] == 2 and stats["dbSizeBytes"] > 0
    assert stats["longTermMemory"]["template"] >= 3


async def test_templates_are_seeded_from_the_examples_and_can_be_saved(memory_client):
    templates = (await (await memory_client.get("/ai-sidebar/templates", headers=ALICE)).json())["templates"]
    assert {"Sensor telemetry", "Order webhook (has a bug)"} <= {t["name"] for t in templates}
    flow = [{"id": "a1", "type": "inject", "x": 1, "y": 1, "wires": [["a2"]]},
            {"id": "a2", "type": "debug", "x": 2, "y": 1, "wires": []}]
    response = await memory_client.post("/ai-sidebar/templates", json={"name": "tick", "description": "inject→debug",
                                                                 "flow": flow}, headers=ALICE)
    assert response.status == 201
    mine = (await (await memory_client.get("/ai-sidebar/templates", headers=ALICE)).json())["templates"]
    assert next(t for t in mine if t["name"] == "tick")["flow"] == flow
    theirs = (await (await memory_client.get("/ai-sidebar/templates", headers=BOB)).json())["templates"]
    assert "tick" not in {t["name"] for t in theirs}


async def test_a_saved_template_keeps_its_wiring_and_references_but_no_secret_reaches_the_database(client, settings):
    key, password = "sk-live-template-3f9a8b7c6d5e4f3a2b1c", "hunter2-template-pw"
    flow = [{"id": "t1", "type": "http request", "x": 1, "y": 1, "url": "https://api.example.com/v1",
             "headers": [{"keyType": "other", "keyValue": "X-API-Key", "valueType": "other", "valueValue": key}],
             "tls": "t3", "wires": [["t2"]]},
            {"id": "t2", "type": "function", "x": 2, "y": 1, "func": f'const pw = "{password}";\nreturn msg;',
             "wires": [[]]},
            {"id": "t3", "type": "tls-config", "name": "tls", "credentials": {"passphrase": password}}]
    response = await client.post("/ai-sidebar/templates", json={"name": "api call", "flow": flow,
                                                                 "description": f"uses key {key}"}, headers=ALICE)
    assert response.status == 201
    mine = (await (await client.get("/ai-sidebar/templates", headers=ALICE)).json())["templates"]
    stored = next(t for t in mine if t["name"] == "api call")
    assert [(n["id"], n["type"], n.get("wires")) for n in stored["flow"]] == [
        (n["id"], n["type"], n.get("wires")) for n in flow]
    assert stored["flow"][0]["tls"] == "t3" and "credentials" not in stored["flow"][2]
    text = json.dumps(stored) + Path(settings.memory_db_path).read_bytes().decode("latin-1")
    wal = Path(f"{settings.memory_db_path}-wal")
    text += wal.read_bytes().decode("latin-1") if wal.exists() else ""
    assert key not in text and password not in text


async def test_memory_tools_run_through_the_direct_trigger(client, model):
    model.script(Reply(text="Saved."), Reply(text="Found it."))
    await chat(client, ALICE, message="remember the word zeppelin for later", sessionId="m4")
    events = await chat(client, ALICE, message='@tools:search_memory|{"query": "zeppelin"}', sessionId="m5")
    assert events[0] == {"type": "tool_call", "tool": "search_memory", "params": {"query": "zeppelin", "limit": 5},
                         "origin": "direct"}
    assert events[1]["ok"] is True and "zeppelin" in events[1]["result"]
    events = await chat(client, ALICE, message="@tools:get_flow_templates")
    assert "Sensor telemetry" in events[1]["result"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_unwritable_database_leaves_chat_working(aiohttp_client, settings, tmp_path, model):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    client = await aiohttp_client(create_app(settings.model_copy(update={"memory_db_path": locked / "m.db"})))
    events = await chat(client, message="hello", sessionId="x")
    assert events[-1]["type"] == "done" and "token" in [e["type"] for e in events]
    response = await client.get("/ai-sidebar/memory-stats")
    assert response.status == 503 and (await response.json())["error"]["code"] == "memory_unavailable"


async def test_a_database_path_that_cannot_be_a_file_leaves_chat_working(aiohttp_client, settings, tmp_path, model):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a folder should be")
    client = await aiohttp_client(create_app(settings.model_copy(update={"memory_db_path": blocker / "m.db"})))
    events = await chat(client, message="hello", sessionId="x")
    assert events[-1]["type"] == "done" and "token" in [e["type"] for e in events]
    response = await client.get("/ai-sidebar/memory-stats")
    assert response.status == 503 and (await response.json())["error"]["code"] == "memory_unavailable"


async def test_a_session_deleted_while_its_answer_streams_stays_deleted(client, model):
    await chat(client, ALICE, message="first", sessionId="del-mid")
    model.script(Reply(text="slow second answer", token_delay=0.3))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "second", "sessionId": "del-mid"},
                                 headers=ALICE)
    assert (await client.delete("/ai-sidebar/sessions/del-mid", headers=ALICE)).status == 200
    await read_events(response)
    assert (await client.get("/ai-sidebar/history/del-mid", headers=ALICE)).status == 404
    assert "del-mid" not in {s["id"] for s in (await (await client.get("/ai-sidebar/sessions",
                                                                       headers=ALICE)).json())["sessions"]}


async def test_a_summary_replaces_the_one_before_and_the_conversation_resumes_after_it(store):
    for i in range(3):
        await store.save_turn("long", alice, f"question {i}", f"answer {i}", {})
    summary, turns = await store.conversation(alice, "long")
    assert summary is None and len(turns) == 6
    assert await store.save_summary(alice, "long", "first summary", turns[1].id)
    assert await store.save_summary(alice, "long", "the user asked three things", turns[3].id)
    summary, rest = await store.conversation(alice, "long")
    assert summary.text == "the user asked three things" and [t.content for t in rest] == ["question 2", "answer 2"]
    with pytest.raises(SessionNotFound):
        await store.summary(bob, "long")
    await store.delete_session(alice, "long")
    assert not await store.save_summary(alice, "long", "too late", 1)
