"""Issue 31, the service's part: the sidebar's Ask mode offers no write tool and says how to get a change; the
service says why its own model cannot answer (GET /ai-sidebar/scenarios ``setup``, the start warning) and tries a
provider with one tiny request (POST /ai-sidebar/test-provider)."""

from __future__ import annotations

import logging
import urllib.parse

from pydantic import SecretStr

from service.nodered.tools import WRITE_TOOLS
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
CHANGE = "add a debug node for the alarms"


async def chat(service, message, **body):
    response = await service.post("/ai-sidebar/stream-chat", json={"message": message, **body}, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


def offered(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def test_ask_mode_offers_no_write_tool_and_says_how_to_get_the_change_that_agent_mode_proposes(
        service, model, writable_nodered):
    tab = next(n for n in deployed(writable_nodered)["flows"] if n["type"] == "tab")
    node = {"id": "d", "type": "debug", "name": "alarms", "x": 300, "y": 40, "wires": []}
    model.script(Reply(text="Ich kann das erklären, aber nicht ändern."),
                 Reply(tool_calls=[{"name": "add_nodes", "arguments": {"flow_id": tab["id"], "nodes": [node]}}]),
                 Reply(text="A debug node shows messages in the sidebar."))

    asked = await chat(service, CHANGE, mode="ask", language="de")
    agent = await chat(service, CHANGE, mode="agent")
    knowledge = await chat(service, "what is a debug node?", mode="ask")

    tools = offered(model.requests[0])
    assert tools and not tools & set(WRITE_TOOLS), tools  # read tools stay
    notices = [e for e in asked if e["type"] == "notice"]
    assert [(n["code"], n["mode"]) for n in notices] == [("change_needs_agent", "ask")]
    assert "Agent" in notices[0]["message"] and "Modus" in notices[0]["message"]  # German
    assert asked[-1]["type"] == "done" and "status" not in asked[-1]
    # Agent mode: the write tool is offered, the change waits on an approval card, and nothing needs saying.
    assert "add_nodes" in offered(model.requests[1])
    assert [e["type"] for e in agent][-2:] == ["approval_required", "done"]
    assert not [e for e in agent if e["type"] == "notice"]
    # A question that needs no tools gets no notice in Ask mode.
    assert not [e for e in knowledge if e["type"] == "notice"]


async def test_scenarios_say_why_the_services_own_model_cannot_answer(aiohttp_client, write_settings):
    ready = await aiohttp_client(create_app(write_settings))
    assert (await (await ready.get("/ai-sidebar/scenarios")).json())["setup"] is None

    keyless = write_settings.model_copy(update={"openai_api_key": None, "openai_base_url": None})
    client = await aiohttp_client(create_app(keyless))
    setup = (await (await client.get("/ai-sidebar/scenarios?lang=fr")).json())["setup"]

    assert (setup["code"], setup["provider"], setup["setting"]) == ("provider_not_configured", "openai",
                                                                    "OPENAI_API_KEY")
    assert "OPENAI_API_KEY" in setup["message"] and "openai" in setup["message"]
    assert setup["message"] != (await (await client.get("/ai-sidebar/scenarios")).json())["setup"]["message"]


async def test_test_provider_answers_with_the_model_the_origin_and_the_time_it_took(service, model):
    model.script(Reply(text="OK"))

    answer = await service.post("/ai-sidebar/test-provider", json={
        "provider": {"provider": "openai-compatible", "model": "tiny", "baseUrl": model.base_url + "/",
                     "apiKey": "sk-node-key-0123456789abcdef"}})

    body = await answer.json()
    assert answer.status == 200, body
    assert body["ok"] is True and body["model"] == "tiny" and body["provider"] == "openai-compatible"
    assert body["url"] == origin(model.base_url) and isinstance(body["latencyMs"], int) and body["latencyMs"] >= 0
    sent = model.requests[-1]
    assert sent["model"] == "tiny" and 16 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))


async def test_test_provider_reports_a_refused_key_with_its_code_and_origin_and_never_the_key(service, model):
    key = "sk-node-key-refused-0123456789abcdef"
    model.script(Reply(status=401, error_message="bad key", echo_authorization=True))

    answer = await service.post("/ai-sidebar/test-provider", json={
        "language": "ja", "provider": {"provider": "openai-compatible", "model": "tiny", "baseUrl": model.base_url,
                                       "apiKey": key}})

    text = await answer.text()
    assert answer.status == 200 and key not in text
    body = await answer.json()
    assert body["ok"] is False and body["error"]["code"] == "invalid_api_key" and body["url"] == origin(model.base_url)
    assert body["error"]["message"] != "The model provider refused the API key; check the key in the ai-config node " \
        "or the service environment."  # worded in Japanese


async def test_test_provider_without_a_key_says_which_setting_is_missing(aiohttp_client, write_settings):
    keyless = write_settings.model_copy(update={"openai_api_key": None, "openai_base_url": None})
    client = await aiohttp_client(create_app(keyless))

    answer = await client.post("/ai-sidebar/test-provider", json={})

    body = await answer.json()
    assert answer.status == 200 and body["ok"] is False and body["error"]["code"] == "provider_not_configured"
    assert "OPENAI_API_KEY" in body["error"]["message"] and body["url"] == "https://api.openai.com"


def test_the_service_warns_at_start_when_its_own_model_cannot_answer(caplog, tmp_path):
    from service.__main__ import warn_without_model

    settings = Settings(nodered=NodeRedSettings(url="http://127.0.0.1:1"), memory_db_path=tmp_path / "m.db")
    with caplog.at_level(logging.WARNING, logger="service"):
        warn_without_model(settings)
        warn_without_model(settings.model_copy(update={"openai_api_key": SecretStr("sk-configured-0123456789abcdef")}))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "OPENAI_API_KEY" in warnings[0] and "ai-config" in warnings[0]


async def test_ask_mode_answers_a_runtime_question_without_the_agent_notice_and_refuses_a_write_tool_by_name(
        service, model, writable_nodered):
    model.script(Reply(text="The debug node showed 42."), Reply(text="Der Debug-Node zeigte 42."))
    # Issue 31: questions about what the running flow did need the read tools Ask mode has, not Agent mode.
    runtime = await chat(service, "what did the debug node show last?", mode="ask")
    german = await chat(service, "Was hat der Debug-Node angezeigt?", mode="ask", language="de")
    by_name = await chat(service, "@tools:create_tab|['Scratch from Ask']", mode="ask")

    for events in (runtime, german):
        assert not [e for e in events if e["type"] == "notice"], events
        assert events[-1]["type"] == "done" and "status" not in events[-1]
    # A write tool named in Ask mode gets the notice instead of an approval card, and nothing is written.
    assert [(e["type"], e.get("code")) for e in by_name] == [("notice", "change_needs_agent"), ("done", None)], \
        by_name
    assert not any(n.get("label") == "Scratch from Ask" for n in deployed(writable_nodered)["flows"])
