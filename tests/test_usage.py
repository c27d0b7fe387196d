"""Tokens and cost (issue 21): every model call of a turn counted and stored with the turn, priced from the shipped
table (or the operator's), ``done`` carrying the usage, ``GET /ai-sidebar/usage`` totals per session, user and day
with permissions, and the daily token budget checked before any model call. The scripted model server reports usage
in its stream (prompt characters // 4, answer characters // 4)."""

from __future__ import annotations

import sqlite3

import aiohttp
import pytest

from service.llm.prices import ModelPrice, PriceTable, bundled_prices
from service.settings import Settings
from service.web.app import create_app
from tests.conftest import SERVICE_TOKEN
from tests.support.model_server import Reply
from tests.support.nodered import admin_auth_nodered
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice", "X-AI-Sidebar-Permission": "read"}
BOB = {"X-Node-RED-User": "bob", "X-AI-Sidebar-Permission": "read"}
BOSS = {"X-Node-RED-User": "boss", "X-AI-Sidebar-Permission": "write"}
GPT_4O_MINI = bundled_prices()["openai"]["gpt-4o-mini"]


async def chat(client, headers=None, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=headers or {})
    assert response.status == 200, await response.text()
    return await read_events(response)


async def usage(client, headers, **query):
    response = await client.get("/ai-sidebar/usage", params=query, headers=headers)
    assert response.status == 200, await response.text()
    return await response.json()


def scripted_tokens(request, reply_text: str) -> tuple[int, int]:
    """What the scripted server reports for one request: (prompt tokens, completion tokens)."""
    prompt = sum(len(str(m.get("content", ""))) // 4 for m in request["messages"])  # as the server counts
    return prompt, max(1, len(reply_text) // 4)


def stored_usage(settings) -> list[sqlite3.Row]:
    with sqlite3.connect(settings.memory_db_path) as raw:
        raw.row_factory = sqlite3.Row
        return raw.execute("SELECT * FROM turn_usage ORDER BY id").fetchall()


async def test_every_model_call_of_an_agent_turn_is_summed_priced_and_stored_with_the_turn(client, settings,
                                                                                          nodered, model):
    tab = nodered.tabs()[0]
    answer = "The flow injects a timestamp and shows it in the debug sidebar."
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {}}]), Reply(text=answer))
    events = await chat(client, message="What could go wrong in what I have open?", selectedFlow={"id": tab["id"]},
                        sessionId="usage-agent")

    assert len(model.requests) == 2  # two model calls in one turn
    calls = [scripted_tokens(model.requests[0], ""), scripted_tokens(model.requests[1], answer)]
    expected_in, expected_out = sum(c[0] for c in calls), sum(c[1] for c in calls)
    done = events[-1]
    assert done["type"] == "done"
    assert done["usage"]["inputTokens"] == expected_in and done["usage"]["outputTokens"] == expected_out
    expected_cost = (expected_in * GPT_4O_MINI.input + expected_out * GPT_4O_MINI.output) / 1_000_000
    assert done["usage"]["cost"] == pytest.approx(expected_cost)

    [row] = stored_usage(settings)
    assert (row["owner_kind"], row["owner"], row["session_id"]) == ("anonymous", "", "usage-agent")
    assert (row["provider"], row["model"]) == ("openai", "gpt-4o-mini")
    assert (row["input_tokens"], row["output_tokens"]) == (expected_in, expected_out)
    assert row["cost"] == pytest.approx(expected_cost)
    with sqlite3.connect(settings.memory_db_path) as raw:
        question = raw.execute("SELECT message_type, content FROM short_term_memory WHERE id = ?",
                               (row["message_id"],)).fetchone()
    assert question == ("user", "What could go wrong in what I have open?")


async def test_a_model_without_a_price_has_null_cost_and_an_operator_price_prices_it(aiohttp_client, settings,
                                                                                    model):
    unpriced = settings.model_copy(update={"model": "local-llama"})
    events = await chat(await aiohttp_client(create_app(unpriced)), message="hello")
    assert events[-1]["usage"]["outputTokens"] >= 1 and events[-1]["usage"]["cost"] is None

    priced = settings.model_copy(update={"model": "local-llama",
                                         "prices": {"openai": {"local-llama": ModelPrice(input=1000, output=2000)}}})
    events = await chat(await aiohttp_client(create_app(priced)), message="hello")
    used = events[-1]["usage"]
    assert used["cost"] == pytest.approx((used["inputTokens"] * 1000 + used["outputTokens"] * 2000) / 1_000_000)


def test_the_config_file_overrides_one_price_and_keeps_the_others(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("ai_sidebar_prices:\n  openai:\n    gpt-4o-mini: {input: 9, output: 19}\n"
                      "  openai-compatible:\n    qwen3: {input: 0.5, output: 1.5, source: 'https://example.org'}\n")
    settings = Settings.from_env({"AI_SIDEBAR_CONFIG": str(config)})
    table = PriceTable(settings.prices)
    assert table.cost("openai", ("gpt-4o-mini",), 1_000_000, 1_000_000) == 28
    assert table.cost("openai-compatible", ("qwen3",), 2_000_000, 0) == 1.0
    assert table.price("openai", "gpt-4o") == bundled_prices()["openai"]["gpt-4o"]
    assert table.cost("openai", ("no-such-model",), 10, 10) is None


def test_every_shipped_price_names_its_source_and_date():
    for provider, models in bundled_prices().items():
        for name, price in models.items():
            assert price.source and price.source.startswith("https://"), (provider, name)
            assert price.checked is not None, (provider, name)


async def test_a_silent_request_records_its_usage_without_its_messages(client, settings, model):
    events = await chat(client, message="hello quietly", sessionId="quiet", silent=True)
    [row] = stored_usage(settings)
    assert (row["session_id"], row["message_id"], row["input_tokens"]) == ("quiet", None,
                                                                           events[-1]["usage"]["inputTokens"])
    with sqlite3.connect(settings.memory_db_path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM short_term_memory").fetchone()[0] == 0


@pytest.fixture
async def memory_client(aiohttp_client, backend_settings):
    """The service with its memory on each backend (SQLite, PostgreSQL)."""
    return await aiohttp_client(create_app(backend_settings))


async def test_usage_totals_match_the_stored_turns_and_each_caller_sees_only_their_own(memory_client, model):
    client = memory_client
    done = {}
    for who, headers, session, text in (("alice", ALICE, "a-1", "Alpha answer."),
                                        ("alice", ALICE, "a-2", "A second, longer answer for alice."),
                                        ("bob", BOB, "b-1", "Bob's answer.")):
        model.script(Reply(text=text))
        events = await chat(client, headers, message=f"question of {who} in {session}", sessionId=session)
        done[session] = events[-1]["usage"]

    mine = await usage(client, ALICE, by="session")
    assert mine["scope"] == "own"
    assert {row["sessionId"]: (row["inputTokens"], row["outputTokens"]) for row in mine["totals"]} == {
        s: (done[s]["inputTokens"], done[s]["outputTokens"]) for s in ("a-1", "a-2")}
    assert all(row["user"] == {"kind": "user", "name": "alice"} for row in mine["totals"])
    assert mine["total"]["inputTokens"] == done["a-1"]["inputTokens"] + done["a-2"]["inputTokens"]
    assert mine["total"]["cost"] == pytest.approx(done["a-1"]["cost"] + done["a-2"]["cost"])
    assert mine["total"]["turns"] == 2 and mine["total"]["unpricedTurns"] == 0

    bobs = await usage(client, BOB, by="user")
    assert [row["user"]["name"] for row in bobs["totals"]] == ["bob"]
    assert bobs["total"]["outputTokens"] == done["b-1"]["outputTokens"]

    everyone = await usage(client, BOSS, by="user")
    assert everyone["scope"] == "all"
    by_user = {row["user"]["name"]: row for row in everyone["totals"]}
    assert set(by_user) == {"alice", "bob"}
    assert by_user["alice"]["inputTokens"] == mine["total"]["inputTokens"]
    assert everyone["total"]["outputTokens"] == sum(d["outputTokens"] for d in done.values())

    [today] = (await usage(client, BOSS, by="day"))["totals"]
    assert today["turns"] == 3 and today["inputTokens"] == sum(d["inputTokens"] for d in done.values())
    assert (await usage(client, BOSS, by="day", since="2999-01-01"))["totals"] == []
    assert (await usage(client, BOSS, since="2000-01-01t00:00:00z"))["total"]["turns"] == 3
    assert (await usage(client, ALICE, sessionId="b-1"))["totals"] == []  # another user's session is not theirs


async def test_usage_refuses_an_unknown_grouping_and_a_since_that_is_no_date(client):
    for query in ({"by": "month"}, {"since": "yesterday"}):
        response = await client.get("/ai-sidebar/usage", params=query)
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_request"


async def test_over_the_daily_budget_one_budget_exceeded_error_comes_before_any_model_call(aiohttp_client,
                                                                                           backend_settings, model):
    budgeted = backend_settings.model_copy(update={"daily_token_budget": 5, "user_token_budgets": {"bob": 0}})
    client = await aiohttp_client(create_app(budgeted))
    first = await chat(client, ALICE, message="hello")
    assert first[-1]["usage"]["inputTokens"] + first[-1]["usage"]["outputTokens"] > 5
    asked = len(model.requests)

    events = await chat(client, ALICE, message="hello again", language="de")
    assert [e["type"] for e in events] == ["error", "done"]
    assert events[0]["code"] == "budget_exceeded" and "Token-Budget" in events[0]["message"]
    assert len(model.requests) == asked  # the model was not called

    for _ in range(2):  # bob has no budget (0 in AI_SIDEBAR_USER_TOKEN_BUDGETS)
        assert "error" not in [e["type"] for e in await chat(client, BOB, message="hello")]


@pytest.fixture(scope="module")
def team_nodered(tmp_path_factory, service_process):
    """adminAuth with two read-only users and one with every permission, the plugin pointed at the service."""
    instance = admin_auth_nodered(tmp_path_factory.mktemp("nodered-team"),
                                  {"ann": ("ann-pass", "read"), "ben": ("ben-pass", "read"),
                                   "chief": ("chief-pass", "*")},
                                  service_process.service_port, SERVICE_TOKEN)
    instance.start()
    yield instance
    instance.stop()


async def test_through_node_red_read_only_users_see_their_own_usage_and_a_full_user_everyones(team_nodered, model):
    base = f"{team_nodered.url}/ai-sidebar"
    async with aiohttp.ClientSession() as http:
        tokens = {}
        for name, scope in (("ann", "read"), ("ben", "read"), ("chief", "*")):
            form = {"client_id": "node-red-admin", "grant_type": "password", "scope": scope, "username": name,
                    "password": f"{name}-pass"}
            async with http.post(f"{team_nodered.url}/auth/token", data=form) as response:
                tokens[name] = {"Authorization": f"Bearer {(await response.json())['access_token']}"}
        done = {}
        for name in ("ann", "ben"):
            model.script(Reply(text=f"An answer for {name}."))
            async with http.post(f"{base}/stream-chat", headers=tokens[name],
                                 json={"message": f"hello from {name}", "sessionId": f"team-{name}"}) as response:
                done[name] = (await read_events(response))[-1]["usage"]

        async def totals(name, by):
            async with http.get(f"{base}/usage", params={"by": by}, headers=tokens[name]) as response:
                assert response.status == 200, await response.text()
                return await response.json()

        for name in ("ann", "ben"):
            own = await totals(name, "session")
            assert own["scope"] == "own"
            assert [(r["user"]["name"], r["sessionId"]) for r in own["totals"]] == [(name, f"team-{name}")]
            assert (own["total"]["inputTokens"], own["total"]["outputTokens"]) == (
                done[name]["inputTokens"], done[name]["outputTokens"])
        everyone = await totals("chief", "user")
        assert everyone["scope"] == "all"
        rows = {r["user"]["name"]: r for r in everyone["totals"] if r["user"]["kind"] == "user"}
        for name in ("ann", "ben"):
            assert (rows[name]["inputTokens"], rows[name]["outputTokens"], rows[name]["turns"]) == (
                done[name]["inputTokens"], done[name]["outputTokens"], 1)
