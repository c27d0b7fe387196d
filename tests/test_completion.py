"""POST /ai-sidebar/complete (issue 39) against a real Node-RED and the scripted model: the completion is the
model's text cleaned; the model is asked with the code around the cursor, the node's wiring and the shape of the
messages that reached it, never a secret; a client that goes away closes the model request; bad input, a turned-off
instance and a spent budget are refused before the model is asked; tokens are counted like a chat's."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from service.assist.completion import CompleteRequest, clean_completion, message_shape
from service.llm.providers import default_model
from service.nodered.client import NodeRedClient, admin_session
from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.conftest import SERVICE_TOKEN
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.test_assist import FLOWS, INJECT, SCALE, SECRET, SEEN, STORE, assist_settings
from tests.test_runtime_evidence import press, wait_for

BEFORE = "const reading = msg.payload."
AFTER = "\nreturn msg;"


@pytest.fixture(scope="module")
def complete_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-complete"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
async def complete_client(aiohttp_client, complete_nodered, model, tmp_path):
    return await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path)))


def body(**extra) -> dict:
    return {"kind": "function", "before": BEFORE, "after": AFTER, "part": "onMessage", "nodeId": SCALE,
            "nodeType": "function", "name": "scale", **extra}


async def message_seen(client, nodered: NodeRed) -> None:
    """The inject node pressed, and the message it sent seen in the service's runtime evidence."""
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(nodered, INJECT) == 200
    await wait_for(lambda: buffer.select(node_ids=[SEEN]), what="the debug node beside the function node")


async def test_a_completion_is_asked_with_the_cursor_the_wiring_and_the_shape_of_recent_messages(
        complete_client, complete_nodered, model):
    await message_seen(complete_client, complete_nodered)
    model.script(Reply(text="temperature;"))

    response = await complete_client.post("/ai-sidebar/complete", json=body())

    assert response.status == 200, await response.text()
    answer = await response.json()
    assert answer["completion"] == "temperature;"
    assert answer["usage"]["inputTokens"] > 0 and answer["usage"]["outputTokens"] > 0
    sent = model.requests[-1]
    prompt = sent["messages"][-1]["content"]
    assert "const reading = msg.payload.<CURSOR>\nreturn msg;" in prompt
    assert '{"payload":{"temperature":"number","password":"string"}}' in prompt
    assert f'inject "reading" (id {INJECT})' in prompt and f'function "store" (id {STORE})' in prompt
    assert "`msg`" in sent["messages"][0]["content"] and "RED.util" in sent["messages"][0]["content"]
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == 128
    assert SECRET not in json.dumps(model.requests) and "21.5" not in prompt  # shapes, not values
    usage = await (await complete_client.get("/ai-sidebar/usage?by=user")).json()
    assert usage["total"]["turns"] == 1 and usage["total"]["inputTokens"] == answer["usage"]["inputTokens"]
    sessions = await (await complete_client.get("/ai-sidebar/sessions")).json()
    assert sessions["sessions"] == []


async def test_a_jsonata_completion_is_asked_as_jsonata(complete_client, model):
    model.script(Reply(text="```jsonata\n$sum(payload.items.price)\n```"))

    response = await complete_client.post("/ai-sidebar/complete", json={"kind": "jsonata", "before": "",
                                                                         "nodeType": "change"})

    assert response.status == 200, await response.text()
    assert (await response.json())["completion"] == "$sum(payload.items.price)"
    assert "JSONata" in model.requests[-1]["messages"][0]["content"]


async def test_a_client_that_goes_away_closes_the_model_request(service_process, model):
    """Against the service as a process: aiohttp's run_app does not cancel a handler whose client left."""
    model.script(Reply(text="one two three", hold_after=1))
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "carol"}
    async with aiohttp.ClientSession() as http:
        request = asyncio.ensure_future(http.post(f"{base}/ai-sidebar/complete", headers=headers,
                                                  json=body(nodeId=None)))
        # Generous: the service process's first model call imports the provider's client (seconds on a busy machine).
        await wait_for(lambda: model.requests, timeout=60, what="the model asked")

        request.cancel()  # the editor typed on and aborted its request

        await wait_for(lambda: model.went_away, what="the model request closed")
    assert model.went_away == [1]


@pytest.mark.parametrize("bad", [{"kind": "python", "before": "x"}, {"kind": "function"},
                                 {"kind": "function", "before": "x" * 20_001},
                                 {"kind": "function", "before": "", "secret": 1}])
async def test_bad_input_is_refused_before_the_model_is_asked(complete_client, model, bad):
    response = await complete_client.post("/ai-sidebar/complete", json=bad)

    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "invalid_request" and error["message"]
    assert model.requests == []


async def test_an_instance_with_completion_off_refuses_it(aiohttp_client, complete_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path, completion=False)))

    response = await client.post("/ai-sidebar/complete", json=body(), headers={"Accept-Language": "de"})

    assert response.status == 403
    error = (await response.json())["error"]
    assert error["code"] == "completion_disabled" and "ausgeschaltet" in error["message"]
    assert model.requests == []


async def test_a_spent_budget_refuses_a_completion(aiohttp_client, complete_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path,
                                                             daily_token_budget=5)))
    model.script(Reply(text="temperature;"))
    assert (await client.post("/ai-sidebar/complete", json=body(nodeId=None))).status == 200

    response = await client.post("/ai-sidebar/complete", json=body(nodeId=None))

    assert response.status == 429
    assert (await response.json())["error"]["code"] == "budget_exceeded"
    assert len(model.requests) == 1


async def test_a_separate_completion_model_answers_completions_and_the_chat_model_chats(
        aiohttp_client, complete_nodered, model, tmp_path):
    settings = assist_settings(complete_nodered, model, tmp_path, completion_model="small-code-model")
    client = await aiohttp_client(create_app(settings))
    model.script(Reply(text="temperature;"), Reply(text="It scales the reading."))

    assert (await client.post("/ai-sidebar/complete", json=body(nodeId=None))).status == 200
    chat = await client.post("/ai-sidebar/stream-chat", json={"message": "what does a function node do?"})
    assert chat.status == 200
    await chat.read()

    assert [request["model"] for request in model.requests] == ["small-code-model",
                                                               default_model(settings, settings.provider)]
    # An ai-config node's own model wins: the environment's completion model is a model of its provider only.
    model.script(Reply(text="temperature;"))
    chosen = {"provider": "openai-compatible", "model": "node-model", "baseUrl": model.base_url, "apiKey": "sk-node"}
    assert (await client.post("/ai-sidebar/complete", json=body(nodeId=None, provider=chosen))).status == 200
    assert model.requests[-1]["model"] == "node-model"


def test_a_message_shape_keeps_keys_and_types_but_no_value():
    assert message_shape({"payload": {"t": 21.5, "ok": True, "tags": ["a"], "none": None}, "topic": "x"}) == \
        {"payload": {"t": "number", "ok": "boolean", "tags": ["string"], "none": "null"}, "topic": "string"}
    assert message_shape({"a": {"b": {"c": {"d": {"e": 1}}}}}) == {"a": {"b": {"c": {"d": "object"}}}}


def test_a_completion_that_restates_the_line_or_is_fenced_is_cleaned():
    request = CompleteRequest(kind="function", before="let x = msg.", after="")
    assert clean_completion("let x = msg.payload;", request) == "payload;"
    assert clean_completion("```javascript\npayload;\n```", request) == "payload;"
    assert clean_completion("payload;<CURSOR>\n", request) == "payload;"


# -- fill in the middle (the provider's completions endpoint with a suffix) -----------------------------------------

async def test_deepseek_completes_through_its_fill_in_the_middle_endpoint_with_the_context_as_a_comment(
        aiohttp_client, complete_nodered, model, tmp_path):
    settings = assist_settings(complete_nodered, model, tmp_path, provider="deepseek", deepseek_api_key="sk-deep-0001",
                               deepseek_api_base=model.base_url)
    client = await aiohttp_client(create_app(settings))
    await message_seen(client, complete_nodered)
    model.script(Reply(text="temperature;"))

    response = await client.post("/ai-sidebar/complete", json=body())

    assert response.status == 200, await response.text()
    answer = await response.json()
    assert answer["completion"] == "temperature;"
    assert model.paths == ["/beta/completions"]  # DeepSeek's FIM beta beside its /v1
    sent = model.requests[-1]
    assert sent["model"] == "deepseek-chat" and sent["max_tokens"] == 128 and sent["temperature"] == 0
    assert sent["prompt"].endswith("\n" + BEFORE) and sent["suffix"] == AFTER
    header = sent["prompt"][:-len(BEFORE)]
    assert all(line.startswith("// ") for line in header.strip("\n").split("\n"))  # the context is a JS comment
    assert '// Node: function "scale"' in header and "RED.util" in header
    assert '{"payload":{"temperature":"number","password":"string"}}' in header
    assert f'inject "reading" (id {INJECT})' in header
    assert SECRET not in json.dumps(model.requests) and "21.5" not in header
    # Usage from the completions API's usage, recorded and budgeted like a chat's.
    prompt_tokens = (len(sent["prompt"]) + len(sent["suffix"])) // 4
    assert answer["usage"]["inputTokens"] == prompt_tokens and answer["usage"]["outputTokens"] == 3
    usage = await (await client.get("/ai-sidebar/usage?by=user")).json()
    assert usage["total"]["turns"] == 1 and usage["total"]["inputTokens"] == prompt_tokens


async def test_jsonata_and_template_context_is_a_comment_of_their_own_language(
        aiohttp_client, complete_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path, completion_fim="on")))
    model.script(Reply(text="tems.price)"), Reply(text="payload}}"))

    jsonata = await client.post("/ai-sidebar/complete", json={"kind": "jsonata", "before": "$sum(payload.i",
                                                               "nodeType": "change", "name": "a */ b"})
    template = await client.post("/ai-sidebar/complete", json={"kind": "template", "before": "Hello {{",
                                                                "after": "!", "nodeType": "template"})

    assert (await jsonata.json())["completion"] == "tems.price)"
    assert (await template.json())["completion"] == "payload}}"
    assert model.paths == ["/v1/completions", "/v1/completions"]  # AI_COMPLETION_FIM=on: OpenAI's completions
    first, second = (request["prompt"] for request in model.requests)
    assert first.startswith('/* Node: change "a   b"') and first.endswith(" */\n$sum(payload.i")
    assert first.count("*/") == 1  # the node's name cannot end the comment
    assert second.startswith("{{! Node: template") and second.endswith(" }}\nHello {{")


async def test_a_server_that_refuses_fill_in_the_middle_is_answered_by_the_chat_prompt_and_remembered(
        aiohttp_client, complete_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path, completion_fim="on")))
    model.script(Reply(status=400, error_message="registry.ollama.ai/library/llama3:latest does not support insert"),
                 Reply(text="temperature;"), Reply(text="unit;"))

    first = await client.post("/ai-sidebar/complete", json=body(nodeId=None))
    second = await client.post("/ai-sidebar/complete", json=body(nodeId=None, before="msg.topic = msg.payload."))

    assert (await first.json())["completion"] == "temperature;"
    assert (await second.json())["completion"] == "unit;"
    # Asked once: the model's server is remembered without FIM, so the second completion goes to the chat.
    assert model.paths == ["/v1/completions", "/v1/chat/completions", "/v1/chat/completions"]


@pytest.mark.parametrize(("status", "message", "code"), [(401, "Incorrect API key", "invalid_api_key"),
                                                          (400, "prompt is too long", "llm_error")])
async def test_other_faults_of_the_fill_in_the_middle_endpoint_are_the_providers_codes_without_fallback(
        aiohttp_client, complete_nodered, model, tmp_path, status, message, code):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path, completion_fim="on")))
    model.script(Reply(status=status, error_message=message))

    response = await client.post("/ai-sidebar/complete", json=body(nodeId=None))

    assert response.status == 502
    assert (await response.json())["error"]["code"] == code
    assert model.paths == ["/v1/completions"]


async def test_a_client_that_goes_away_closes_the_fill_in_the_middle_request(service_process, model):
    model.script(Reply(text="temperature;", hold_after=0))
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "carol"}
    node = {"provider": "openai-compatible", "model": "coder", "baseUrl": model.base_url, "completionFim": "on"}
    async with aiohttp.ClientSession() as http:
        request = asyncio.ensure_future(http.post(f"{base}/ai-sidebar/complete", headers=headers,
                                                  json=body(nodeId=None, provider=node)))
        # Generous: the service process's first model call imports the provider's client (seconds on a busy machine).
        await wait_for(lambda: model.requests, timeout=60, what="the model asked")

        request.cancel()  # the editor typed on and aborted its request

        await wait_for(lambda: model.went_away, what="the model request closed")
    assert model.paths == ["/v1/completions"] and model.went_away == [0]


async def test_an_ai_config_nodes_completion_model_and_fim_setting_answer_its_completions(
        aiohttp_client, complete_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(assist_settings(complete_nodered, model, tmp_path,
                                                             completion_model="env-code-model")))
    node = {"provider": "openai-compatible", "model": "node-chat", "baseUrl": model.base_url, "apiKey": "sk-node-01"}
    model.script(Reply(text="a;"), Reply(text="b;"), Reply(text="c;"))

    for chosen in ({**node, "completionModel": "node-coder", "completionFim": "on"},
                   {**node, "completionModel": "node-coder"}, node):
        response = await client.post("/ai-sidebar/complete", json=body(nodeId=None, provider=chosen))
        assert response.status == 200, await response.text()

    assert [(path, request["model"]) for path, request in zip(model.paths, model.requests, strict=True)] == [
        ("/v1/completions", "node-coder"), ("/v1/chat/completions", "node-coder"),
        ("/v1/chat/completions", "node-chat")]  # no completion model of its own: the node's chat model


CONFIG = "c0de000000000001"


@pytest.fixture(scope="module")
def config_nodered(tmp_path_factory, service_process, model_server):
    """Node-RED with the palette, relaying to the service process, and an ai-config node with a completion model."""
    flows = [{"id": CONFIG, "type": "ai-config", "name": "local coder", "provider": "openai-compatible",
              "model": "node-chat", "baseUrl": model_server.base_url, "temperature": "", "maxTokens": "",
              "memory": True, "tools": True, "scenarios": "", "completionModel": "node-coder", "completionFim": "on"}]
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-complete-config"), port=free_port(), flows=flows,
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_process.service_port}",
                            "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    instance.start()
    yield instance
    instance.stop()


async def test_the_chosen_ai_config_nodes_completion_model_answers_through_the_plugin(config_nodered, model):
    model.script(Reply(text="temperature;"))
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{config_nodered.url}/ai-sidebar/complete",
                                   json={**body(nodeId=None), "configId": CONFIG})
        assert response.status == 200, await response.text()
        assert (await response.json())["completion"] == "temperature;"
    assert model.paths == ["/v1/completions"] and model.requests[0]["model"] == "node-coder"
    assert model.requests[0]["prompt"].endswith(BEFORE) and model.requests[0]["suffix"] == AFTER


async def test_a_callers_flows_are_reused_for_a_few_seconds_and_read_again_after(complete_nodered):
    """The node context of completions reads GET /flows at most once per FLOWS_MAX_AGE per caller."""
    async with admin_session() as http:
        client = NodeRedClient(complete_nodered.url, http)
        first = await client.recent_flows(60)
        note = {"id": "c0de0000000000aa", "type": "comment", "z": FLOWS[0]["id"], "name": "deployed meanwhile",
                "info": "", "x": 100, "y": 400, "wires": []}
        deployed = await client.post_flows(first["flows"] + [note], first["rev"])
        try:
            assert (await client.recent_flows(60))["rev"] == first["rev"]  # within the window: the same answer
            assert (await client.get_flows())["rev"] == deployed
            assert (await client.recent_flows(0.0))["rev"] == deployed  # a window that has passed reads again
            # Another caller (its own token) never gets this caller's copy: it reads for itself.
            assert (await client.for_user("another-users-token").recent_flows(60))["rev"] == deployed
        finally:
            await client.post_flows(first["flows"], None)
