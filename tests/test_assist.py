"""POST /ai-sidebar/assist (issue 20, contracts20) against a real Node-RED and the scripted model: the function
context sent to the model holds the current code, the wired neighbours, the Setup modules, the Node-RED version
and a redacted recent input message; each kind ends in its proposal event; answers without a usable proposal end
in one translated error; bad requests are refused before the stream; nothing is stored as a conversation."""

from __future__ import annotations

import json

import aiohttp
import pytest

from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.conftest import SERVICE_SECRET, SERVICE_TOKEN, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import read_events
from tests.test_runtime_evidence import press, wait_for

TAB = "a55a000000000001"
INJECT, SCALE, STORE, SEEN, OUT = ("a55a0000000000a1", "a55a0000000000f1", "a55a0000000000f2", "a55a0000000000d1",
                                   "a55a0000000000d2")
SECRET = "hunter2-not-for-models"
CURRENT_CODE = "// scale the reading\nmsg.payload = msg.payload.temperature;\nreturn msg;"
STORE_CODE = "// keep the last reading\nflow.set('last', msg.payload);\nreturn msg;"

FLOWS = [
    {"id": TAB, "type": "tab", "label": "Assist", "disabled": False, "info": ""},
    {"id": INJECT, "type": "inject", "z": TAB, "name": "reading", "props": [{"p": "payload"}], "repeat": "",
     "crontab": "", "once": False, "topic": "", "payloadType": "json",
     "payload": json.dumps({"temperature": 21.5, "password": SECRET}), "x": 100, "y": 80,
     "wires": [[SCALE, SEEN]]},
    {"id": SCALE, "type": "function", "z": TAB, "name": "scale", "func": CURRENT_CODE, "outputs": 1, "timeout": 0,
     "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 300, "y": 80, "wires": [[STORE]]},
    {"id": STORE, "type": "function", "z": TAB, "name": "store", "func": STORE_CODE, "outputs": 1, "timeout": 0,
     "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 500, "y": 80, "wires": [[OUT]]},
    {"id": SEEN, "type": "debug", "z": TAB, "name": "seen", "active": True, "tosidebar": True, "console": False,
     "tostatus": False, "complete": "payload", "targetType": "msg", "x": 300, "y": 160, "wires": []},
    {"id": OUT, "type": "debug", "z": TAB, "name": "out", "active": True, "tosidebar": True, "console": False,
     "tostatus": False, "complete": "true", "targetType": "full", "x": 700, "y": 80, "wires": []},
]
FUNCTION_ANSWER = ("Converts the reading to Fahrenheit.\n\n```javascript on-message\n"
                   "msg.payload = msg.payload.temperature * 9 / 5 + 32;\nreturn msg;\n```\n\n"
                   "```javascript on-start\nflow.set('count', 0);\n```\n")


@pytest.fixture(scope="module")
def assist_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-assist"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def assist_settings(nodered: NodeRed, model, tmp_path, **extra) -> Settings:
    return Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=nodered.url), openai_base_url=model.base_url,
                    openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False,
                    knowledge_refresh=0, **extra)


@pytest.fixture
async def assist_client(aiohttp_client, assist_nodered, model, tmp_path):
    return await aiohttp_client(create_app(assist_settings(assist_nodered, model, tmp_path)))


async def assist(client, **body) -> list[dict]:
    response = await client.post("/ai-sidebar/assist", json=body)
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return await read_events(response)


def function_context(**extra) -> dict:
    return {"nodeId": SCALE, "nodeType": "function", "name": "scale", "tabId": TAB,
            "code": {"onMessage": CURRENT_CODE, "onStart": "", "onStop": ""}, "outputs": 1,
            "libs": [{"var": "dayjs", "module": "dayjs"}], **extra}


async def test_the_function_context_holds_the_code_the_neighbours_and_a_redacted_input_message(
        assist_client, assist_nodered, model):
    buffer = assist_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(assist_nodered, INJECT) == 200
    await wait_for(lambda: buffer.select(node_ids=[SEEN]), what="the debug node beside the function node")
    model.script(Reply(text=FUNCTION_ANSWER))

    events = await assist(assist_client, kind="function", description="convert to Fahrenheit", language="en-US",
                          context=function_context())

    assert [e["type"] for e in events if e["type"] != "token"] == ["proposal", "done"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == FUNCTION_ANSWER
    proposal = next(e for e in events if e["type"] == "proposal")
    assert proposal["kind"] == "function"
    assert proposal["code"] == {"onMessage": "msg.payload = msg.payload.temperature * 9 / 5 + 32;\nreturn msg;",
                                "onStart": "flow.set('count', 0);"}
    assert proposal["samples"] == [{"payload": {"temperature": 21.5, "password": "[redacted]"}}]
    sent = model.requests[-1]["messages"]
    prompt = sent[-1]["content"]
    assert "convert to Fahrenheit" in prompt
    assert "msg.payload = msg.payload.temperature;" in prompt  # the current code
    assert f'inject "reading" (id {INJECT}) output 1' in prompt  # upstream
    assert f'output 1 → function "store" (id {STORE})' in prompt  # downstream
    assert "// keep the last reading" in prompt  # a neighbouring function node's first lines
    assert "dayjs = dayjs" in prompt and "Outputs: 1" in prompt
    async with aiohttp.ClientSession() as http, http.get(f"{assist_nodered.url}/settings") as answer:
        assert f"Node-RED version: {(await answer.json())['version']}" in prompt
    assert '"temperature": 21.5' in prompt and f'seen at debug "seen" (id {SEEN})' in prompt
    assert prompt.index("<node_context>") < prompt.index("msg.payload = msg.payload.temperature;") < \
        prompt.index("</node_context>")
    assert "never as instructions" in sent[0]["content"]
    assert SECRET not in json.dumps([model.requests, events])
    # Memory off: no conversation was stored, only the run's token usage.
    sessions = await (await assist_client.get("/ai-sidebar/sessions")).json()
    assert sessions["sessions"] == []
    usage = await (await assist_client.get("/ai-sidebar/usage?by=user")).json()
    assert usage["total"]["turns"] == 1 and usage["total"]["inputTokens"] > 0


async def test_an_undeployed_function_node_is_said_to_have_no_neighbours_and_gets_no_samples(assist_client, model):
    model.script(Reply(text="```js\nreturn msg;\n```"))
    events = await assist(assist_client, kind="function", description="pass it on",
                          context=function_context(nodeId="a55a0000000000ff"))
    proposal = next(e for e in events if e["type"] == "proposal")
    assert proposal == {"type": "proposal", "kind": "function", "code": {"onMessage": "return msg;"}, "samples": []}
    assert "not deployed yet" in model.requests[-1]["messages"][-1]["content"]


async def test_a_jsonata_proposal_carries_the_expression_and_the_model_saw_the_test_message(assist_client, model):
    model.script(Reply(text="Sum of the prices:\n```jsonata\n$sum(payload.items.price)\n```"))
    events = await assist(assist_client, kind="jsonata", description="total price of all items",
                          context={"nodeType": "change", "expression": "payload",
                                   "testMessage": {"payload": {"items": [{"price": 3}, {"price": 4}]}}})
    assert [e for e in events if e["type"] == "proposal"] == [
        {"type": "proposal", "kind": "jsonata", "expression": "$sum(payload.items.price)"}]
    assert events[-1]["type"] == "done"
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert '{"payload": {"items": [{"price": 3}, {"price": 4}]}}' in prompt and "```jsonata\npayload\n```" in prompt
    assert "JSONata" in model.requests[-1]["messages"][0]["content"]


async def test_a_json_proposal_carries_the_value_and_its_pretty_text(assist_client, model):
    model.script(Reply(text='Here:\n```json\n{"on": true, "level": [1, 2]}\n```'))
    events = await assist(assist_client, kind="json", description="switch on at levels 1 and 2",
                          context={"nodeType": "inject", "value": "{}"})
    proposal = next(e for e in events if e["type"] == "proposal")
    assert proposal["value"] == {"on": True, "level": [1, 2]}
    assert proposal["text"] == '{\n    "on": true,\n    "level": [\n        1,\n        2\n    ]\n}'


async def test_an_answer_without_a_code_block_is_one_no_proposal_error_in_the_requests_language(
        assist_client, model):
    german = json.loads(open("locales/de/errors.json", encoding="utf-8").read())["no_proposal"]
    model.script(Reply(text="Ich bin mir nicht sicher, was gemeint ist."))
    events = await assist(assist_client, kind="function", description="mach was", language="de",
                          context=function_context())
    assert [e["type"] for e in events if e["type"] != "token"] == ["error", "done"]
    error = events[-2]
    assert error["code"] == "no_proposal" and error["message"] == german.replace("{kind}", "function")


async def test_json_that_does_not_parse_is_one_invalid_json_error(assist_client, model):
    model.script(Reply(text="```json\n{on: true,}\n```"))
    events = await assist(assist_client, kind="json", description="on", language="fr", context={"value": ""})
    assert [e["type"] for e in events if e["type"] != "token"] == ["error", "done"]
    assert events[-2]["code"] == "invalid_json" and "JSON" in events[-2]["message"]
    assert events[-2]["message"].startswith("Le JSON proposé par le modèle")


async def test_a_provider_fault_is_the_stream_chat_error_and_no_proposal_follows(assist_client, model):
    model.script(Reply(status=401, error_message="bad key"))
    events = await assist(assist_client, kind="jsonata", description="x")
    assert [e["type"] for e in events] == ["error", "done"]
    assert events[0]["code"] == "invalid_api_key"


@pytest.mark.parametrize("body, status, code", [
    ({"kind": "function", "description": "x", "sessionId": "s"}, 400, "invalid_request"),
    ({"kind": "yaml", "description": "x"}, 400, "invalid_request"),
    ({"kind": "json", "description": ""}, 400, "invalid_request"),
    ({"kind": "json", "description": "x", "context": {"nodeId": "a b"}}, 400, "invalid_request"),
    ({"kind": "json", "description": "x", "context": {"flowData": []}}, 400, "invalid_request"),
    ({"kind": "json", "description": "x" * 40_000}, 413, "message_too_long"),
])
async def test_bad_requests_are_refused_before_the_stream(assist_client, model, body, status, code):
    response = await assist_client.post("/ai-sidebar/assist", json=body)
    assert response.status == status
    assert (await response.json())["error"]["code"] == code
    assert model.requests == []


async def test_the_route_needs_the_service_token(aiohttp_client, assist_nodered, model, tmp_path):
    # No default Authorization (headers of its own): the first request comes without the token.
    client = await aiohttp_client(create_app(assist_settings(assist_nodered, model, tmp_path)), headers={})
    body = {"kind": "jsonata", "description": "x"}
    refused = await client.post("/ai-sidebar/assist", json=body)
    assert refused.status == 401 and model.requests == []
    model.script(Reply(text="```jsonata\npayload\n```"))
    answer = await client.post("/ai-sidebar/assist", json=body,
                               headers={"Authorization": f"Bearer {SERVICE_TOKEN}"})
    assert answer.status == 200
    assert [e["type"] for e in await read_events(answer) if e["type"] != "token"] == ["proposal", "done"]


async def test_the_context_is_read_with_the_callers_rights(aiohttp_client, nodered_with_auth, model, tmp_path):
    """Node-RED with adminAuth: a caller whose token it refuses gets no neighbours (the flows were unreadable),
    and the proposal still comes."""
    client = await aiohttp_client(create_app(assist_settings(nodered_with_auth, model, tmp_path)))
    model.script(Reply(text="```js\nreturn msg;\n```"))
    events = await assist(client, kind="function", description="x", context=function_context())
    assert any(e["type"] == "proposal" for e in events)
    assert "could not be read" in model.requests[-1]["messages"][-1]["content"]
