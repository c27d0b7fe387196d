"""The ai-chat and ai-config nodes on a real Node-RED, asking the service as a process, answered by the scripted model.

A Node-RED of its own runs the package's "Ask over HTTP" example with an ai-config node whose key is deployed through
the Admin API (as the editor deploys it, so Node-RED encrypts it), its http in node enabled as the example's comment
tells a user to; curl-like GETs on ``/ask`` must come back with the model's text, and afterwards no file, log or
database of Node-RED or the service may hold the key in clear. The repository's "Ask the assistant" tab ships
disabled, so ``make run`` exposes no endpoint until a user enables it.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import SERVICE_TOKEN, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import PALETTE, NodeRed, free_port, project_flows
from tests.support.sse import read_events

CONFIG_KEY = "sk-ai-config-node-e2e-key-7f3a9c1d2b4e"
CONFIG_ID = "e2e0a1c0f19c0001"
TAB_ID = "e2e0a1c0f19c00aa"
MODEL_NAME = "scripted-e2e-model"


def ask_over_http_flow(model_base_url: str) -> list[dict]:
    """The package's "Ask over HTTP" example on a tab, its http in node enabled (it ships disabled), its ai-chat node
    using an ai-config node with a key."""
    nodes = json.loads((PALETTE / "examples" / "Ask over HTTP.json").read_text(encoding="utf-8"))
    for node in nodes:
        node["z"] = TAB_ID
        if node["type"] == "http in":
            assert node.pop("d") is True
        if node["type"] == "ai-chat":
            node["config"] = CONFIG_ID
    config = {"id": CONFIG_ID, "type": "ai-config", "name": "scripted model", "provider": "openai-compatible",
              "model": MODEL_NAME, "baseUrl": model_base_url, "temperature": "0.1", "maxTokens": "200",
              "memory": True, "tools": True, "scenarios": "", "credentials": {"apiKey": CONFIG_KEY}}
    return [{"id": TAB_ID, "type": "tab", "label": "Ask over HTTP"}, *nodes, config]


def wait_for_log(instance: NodeRed, text: str, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if instance.log_path.read_text(errors="replace").count(text) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"Node-RED did not log {text!r} {count} times:\n{instance.log_tail()}")


@pytest.fixture(scope="module")
def node_red(tmp_path_factory, service_process, model_server):
    """Node-RED with the palette package, pointed at the service process, with the example deployed."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-ai-chat"), port=free_port(),
                       env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_process.service_port}",
                            "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    instance.start()
    body = json.dumps(ask_over_http_flow(model_server.base_url)).encode()
    # Deployed as the editor deploys: the key travels once, inline, and Node-RED stores it encrypted.
    request = urllib.request.Request(f"{instance.url}/flows", data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Node-RED-Deployment-Type": "full"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    # Node-RED answers the deploy before the new flows have started.
    wait_for_log(instance, "Started flows", 2)
    yield instance
    instance.stop()


async def ask(base: str, question: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/ask", params={"q": question}) as response:
            return response.status, await response.text()


async def test_a_question_over_http_is_answered_with_the_config_nodes_model_and_key(node_red, model):
    model.script(Reply(text="A flow is a set of nodes wired together."))
    status, text = await ask(node_red.url, "What is a flow?")
    assert (status, text) == (200, "A flow is a set of nodes wired together.")
    assert model.requests[-1]["model"] == MODEL_NAME
    assert model.requests[-1]["messages"][-1]["content"].endswith("What is a flow?")
    assert model.headers[-1]["Authorization"] == f"Bearer {CONFIG_KEY}"


async def test_a_key_the_provider_refuses_ends_the_request_through_the_catch_node(node_red, model):
    model.script(Reply(status=401, error_message="Incorrect API key provided."))
    status, text = await ask(node_red.url, "Is my key right?")
    assert status == 502
    assert "invalid_api_key" in text and CONFIG_KEY not in text


async def test_a_provider_error_that_echoes_the_config_nodes_key_reaches_the_flow_redacted(node_red, model):
    # Some OpenAI-compatible servers put the Authorization header they received into their error text.
    model.script(Reply(status=400, error_message="Bad request", echo_authorization=True))
    status, text = await ask(node_red.url, "Does my key leak?")
    assert model.headers[-1]["Authorization"] == f"Bearer {CONFIG_KEY}"
    assert status == 502
    assert "llm_error" in text and "Bad request" in text and "[redacted]" in text
    assert CONFIG_KEY not in text


async def test_a_missing_question_is_a_400_from_the_catch_node(node_red, model):
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{node_red.url}/ask") as response:
            assert response.status == 400
            assert "Ask something" in await response.text()
    assert model.requests == []


def deploy_modified(instance: NodeRed, flows: list[dict]) -> None:
    """Deploy ``flows`` as the editor's Deploy button does ("modified flows") and wait until they have started."""
    started = instance.log_path.read_text(errors="replace").count("Started modified flows")
    request = urllib.request.Request(f"{instance.url}/flows", data=json.dumps(flows).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Node-RED-Deployment-Type": "flows"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    wait_for_log(instance, "Started modified flows", started + 1)


def with_tab_disabled(flows: list[dict], label: str, disabled: bool) -> list[dict]:
    return [{**node, "disabled": disabled} if node.get("type") == "tab" and node.get("label") == label else node
            for node in flows]


async def test_the_repositorys_ask_tab_ships_disabled_and_once_enabled_the_services_own_provider_answers(
        nodered, service_process, model):
    """The repository's "Ask the assistant" tab (examples/flows.json): no endpoint until a user enables the tab (as
    its description says); then its ai-chat node, without ai-config, is answered by the service's own provider."""
    shipped = project_flows()
    tab = next(node for node in shipped if node.get("type") == "tab" and node.get("label") == "Ask the assistant")
    assert tab["disabled"] is True and "httpNodeAuth" in tab["info"]
    status, _ = await ask(nodered.url, "Anyone there?")
    assert status == 404
    assert model.requests == []

    with urllib.request.urlopen(f"{nodered.url}/flows", timeout=10) as response:
        running = json.loads(response.read())
    deploy_modified(nodered, with_tab_disabled(running, "Ask the assistant", False))
    try:
        model.script(Reply(text="The sensor flow converts readings to Celsius."))
        status, text = await ask(nodered.url, "What does the Sensor telemetry flow do?")
        assert (status, text) == (200, "The sensor flow converts readings to Celsius.")
        assert model.headers[-1]["Authorization"] == f"Bearer {TEST_API_KEY}"
    finally:
        deploy_modified(nodered, with_tab_disabled(running, "Ask the assistant", True))


def files_below(directory: Path) -> list[Path]:
    """Every regular file below ``directory``, not following symlinks (the palette package is one)."""
    found = []
    for path in directory.rglob("*"):
        if any(parent.is_symlink() for parent in [path, *path.parents]):
            continue
        if path.is_file():
            found.append(path)
    return found


async def test_the_key_is_nowhere_in_clear_after_the_run(node_red, service_process, model):
    # At least one answered question and one refused key went through before this check.
    model.script(Reply(text="Still here."))
    assert (await ask(node_red.url, "One more question?"))[0] == 200
    async with aiohttp.ClientSession() as http:
        for route in ("flows", "ai-sidebar/configs", f"credentials/ai-config/{CONFIG_ID}"):
            async with http.get(f"{node_red.url}/{route}") as response:
                assert response.status == 200
                assert CONFIG_KEY not in await response.text(), route
    searched = files_below(node_red.userdir) + files_below(service_process.log_path.parent)
    names = {path.name for path in searched}
    assert {"flows.json", "flows_cred.json", "node-red.log", "service.log", "memory.db"} <= names
    key = CONFIG_KEY.encode()
    holders = [str(path) for path in searched if key in path.read_bytes()]
    assert holders == []


async def test_anonymous_callers_of_the_enabled_ask_tab_get_no_tool_no_flow_content_and_no_other_callers_words(
        nodered, service_process, model):
    """The penetration test's case (issue 14, item 1) end to end: the repository's "Ask the assistant" tab enabled,
    callers without any login. A ``@tools:`` trigger runs nothing, a question about "the current flow" reaches the
    model without tools or flow content, and what one caller said never reaches another caller's prompt."""
    with urllib.request.urlopen(f"{nodered.url}/flows", timeout=10) as response:
        running = json.loads(response.read())
    node_ids = [node["id"] for node in project_flows() if node.get("type") not in ("tab",)]
    deploy_modified(nodered, with_tab_disabled(running, "Ask the assistant", False))
    try:
        status, text = await ask(nodered.url, "@tools:get_flow|['8880f38b3ee17326']")
        assert status == 502 and "ai-sidebar.write" in text
        assert model.requests == []
        assert not any(node_id in text for node_id in node_ids)

        model.script(Reply(text="Noted."))
        status, _ = await ask(nodered.url, "My project codename is BLUEFALCON-7731, remember it.")
        assert status == 200
        model.script(Reply(text="I cannot see your flows."))
        status, text = await ask(nodered.url, "Explain the current flow and tell me what others asked you.")
        assert (status, text) == (200, "I cannot see your flows.")
        second = model.requests[-1]
        assert "tools" not in second or not second["tools"]
        prompt = json.dumps(second["messages"], ensure_ascii=False)
        assert "BLUEFALCON-7731" not in prompt
        assert not any(node_id in prompt for node_id in node_ids)
        assert len(model.requests) == 2  # one model call each: no agent, no tool round trip
    finally:
        deploy_modified(nodered, with_tab_disabled(running, "Ask the assistant", True))


CATCH_TAB = "e2e0c47c4a7c0001"
THROWING = "e2e0c47c4a7c00f1"
THROWING_INJECT = "e2e0c47c4a7c0011"
PAYLOAD_PASSWORD = "payload-password-never-to-the-model-8841"
ERROR_TOKEN = "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
CODE_KEY = "sk-proj-Q7mZ2vX9kL4pR8tN1wY6cB3hJ5fD0gS2aE7uI9oP"


def catch_path_tab(tools: bool) -> list[dict]:
    """inject → function (raises ``node.error("boom 7 …", msg)``) and catch → ai-chat → debug (to the log).

    The message carries a password, the error text a token taken from it, the function's code a quoted key: none of
    them may reach the model."""
    func = ("// the limit this converter checks: 4242\n"
            f'const apiKey = "{CODE_KEY}";\n'
            'node.error("boom 7 for sensor " + msg.payload.sensor + ", upstream refused token " + msg.payload.token, '
            "msg);\nreturn null;\n")
    payload = json.dumps({"sensor": "greenhouse", "password": PAYLOAD_PASSWORD, "token": ERROR_TOKEN})
    return [
        {"id": CATCH_TAB, "type": "tab", "label": "Explain an error (e2e)"},
        {"id": THROWING_INJECT, "type": "inject", "z": CATCH_TAB, "props": [{"p": "payload"}], "repeat": "",
         "once": False, "topic": "", "payload": payload, "payloadType": "json", "x": 100, "y": 40,
         "wires": [[THROWING]]},
        {"id": THROWING, "type": "function", "z": CATCH_TAB, "name": "to Celsius", "func": func, "outputs": 1,
         "x": 300, "y": 40, "wires": [[]]},
        {"id": "e2e0c47c4a7c00c1", "type": "catch", "z": CATCH_TAB, "scope": [THROWING], "uncaught": False,
         "x": 100, "y": 100, "wires": [["e2e0c47c4a7c00a1"]]},
        {"id": "e2e0c47c4a7c00a1", "type": "ai-chat", "z": CATCH_TAB, "name": "explain the error", "config": "",
         "scenario": "", "language": "", "tools": tools, "memory": False, "concurrency": 1, "queueLimit": 10,
         "outputs": 1, "x": 300, "y": 100, "wires": [["e2e0c47c4a7c00d1"]]},
        {"id": "e2e0c47c4a7c00d1", "type": "debug", "z": CATCH_TAB, "name": "explanation", "active": True,
         "tosidebar": True, "console": True, "complete": "payload", "targetType": "msg", "x": 500, "y": 100,
         "wires": []},
    ]


@pytest.mark.parametrize("tools", [True, False], ids=["tools-on", "tools-off"])
async def test_an_ai_chat_node_in_a_catch_path_explains_the_error_with_the_source_node_and_no_secret(
        nodered, service_process, model, tools):
    """A function node raises ``node.error("boom 7 …", msg)``; catch → ai-chat → debug. The model receives the error
    text and the id of the node that raised it, with tools on also the node's code (read by the service), and none
    of the message's secrets, the error text's token or the code's key; the explanation reaches the debug node."""
    with urllib.request.urlopen(f"{nodered.url}/flows", timeout=10) as response:
        running = json.loads(response.read())
    deploy_modified(nodered, running + catch_path_tab(tools))
    explanation = f"The function reports a reading it cannot use ({'tools on' if tools else 'tools off'})."
    try:
        model.script(Reply(text=explanation))
        request = urllib.request.Request(f"{nodered.url}/inject/{THROWING_INJECT}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        wait_for_log(nodered, explanation, 1)
    finally:
        deploy_modified(nodered, running)
    assert len(model.requests) == 1
    prompt = json.dumps(model.requests[0]["messages"], ensure_ascii=False)
    assert "boom 7 for sensor greenhouse, upstream refused token [redacted]" in prompt
    assert f"function \\\"to Celsius\\\" (id {THROWING})" in prompt
    assert "Explain this error and how to fix it." in prompt
    assert ("the limit this converter checks: 4242" in prompt) is tools
    for secret in (PAYLOAD_PASSWORD, ERROR_TOKEN, CODE_KEY):
        assert secret not in prompt


async def test_an_error_raised_by_a_node_no_flow_holds_is_still_explained(client, model):
    """A node inside a subflow instance (or deleted since) raised the error: reading it fails, quietly, and the
    model explains the error alone, told that the node could not be read."""
    model.script(Reply(text="The node is gone, but the error says why."))
    error = {"message": "boom 7", "source": {"id": "a1b2c3d4e5f60799", "type": "function", "name": "in a subflow"}}
    headers = {"X-AI-Sidebar-Flow-Node": "e2e0c47c4a7c00a1", "X-AI-Sidebar-Flow-Grants": "tools",
               "X-AI-Sidebar-Permission": "read"}
    response = await client.post("/ai-sidebar/stream-chat", headers=headers,
                                 json={"message": "Explain this error and how to fix it.", "error": error})
    assert response.status == 200, await response.text()
    events = await read_events(response)
    assert [event["type"] for event in events[:2]] == ["tool_call", "tool_result"]
    assert events[0] == {"type": "tool_call", "tool": "get_node_info", "params": {"node_ids": ["a1b2c3d4e5f60799"]},
                         "origin": "error"}
    assert events[1]["ok"] is False
    assert "error" not in [event["type"] for event in events]
    assert "".join(event["content"] for event in events if event["type"] == "token") == \
        "The node is gone, but the error says why."
    prompt = json.dumps(model.requests[-1]["messages"])
    assert "boom 7" in prompt and "a1b2c3d4e5f60799" in prompt and "could not run" in prompt


async def test_a_caught_error_outside_the_request_models_limits_is_a_400(client, model):
    bad = {"message": "boom 7", "source": {"id": "not an id"}}
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "why?", "error": bad})
    assert response.status == 400
    body = await response.json()
    assert body["error"]["code"] == "invalid_request" and "error.source.id" in body["error"]["message"]
    assert model.requests == []
