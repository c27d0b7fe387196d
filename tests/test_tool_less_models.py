"""Models that cannot call tools (issue 38): configured so (``AI_MODEL_TOOL_CALLING=false``, an ai-config node's
``toolCalling: false``) or found so (the server refuses a request that offers tools), they answer without the
agent: the tools the service runs from the question's words and retrieval still answer, no request offers tools,
and a ``model_without_tools`` notice says what the model cannot do. The real ChatOpenAI client against the scripted
OpenAI-compatible server, a real Node-RED for the tools."""

from __future__ import annotations

import json

from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import event_types, stream_chat

REFUSAL = Reply(status=400, error_message="registry.ollama.ai/library/gemma3:4b does not support tools")
AGENT_QUESTION = "What could go wrong in what I have open?"


def tokens(events) -> str:
    return "".join(e["content"] for e in events if e["type"] == "token")


def notices(events) -> list[dict]:
    return [e for e in events if e["type"] == "notice" and e["code"] == "model_without_tools"]


def tab_with_nodes(nodered) -> dict:
    return max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))


async def test_a_server_that_refuses_tools_is_answered_without_them_and_never_offered_them_again(
        aiohttp_client, settings, model, nodered):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": 0})))
    tab = tab_with_nodes(nodered)
    model.script(REFUSAL, Reply(text="It may throw an error."), Reply(text="Add a catch node."))

    first = await stream_chat(client, message=AGENT_QUESTION, selectedFlow={"id": tab["id"]}, sessionId="no-tools")
    assert "error" not in event_types(first) and tokens(first) == "It may throw an error."
    [notice] = notices(first)
    assert notice["model"] == "gpt-4o-mini" and "cannot call tools" in notice["message"]
    assert "tools" in model.requests[0] and "tools" not in model.requests[1]

    # The next question goes straight down the paths without the agent: one request, no tools offered.
    second = await stream_chat(client, message="And how do I handle errors there?", selectedFlow={"id": tab["id"]},
                               sessionId="no-tools")
    assert "error" not in event_types(second) and tokens(second) == "Add a catch node."
    assert len(model.requests) == 3 and "tools" not in model.requests[2]
    assert "tool_call" not in event_types(second) or all(
        e["origin"] != "agent" for e in second if e["type"] == "tool_call")


async def test_a_model_configured_without_tool_calling_still_gets_the_open_flow_read_for_it(
        aiohttp_client, settings, model, nodered):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": 0,
                                                                        "model_tool_calling": False})))
    tab = tab_with_nodes(nodered)
    model.script(Reply(text="This flow catches the function node's error."))
    events = await stream_chat(client, message="explain the current flow", selectedFlow={"id": tab["id"]},
                               sessionId="no-tools-keyword")

    # The service ran get_flow itself (the question's words), and the model read its result in its prompt.
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["tool"], c["origin"]) for c in calls] == [("get_flow", "keyword")], calls
    assert tokens(events) == "This flow catches the function node's error." and "error" not in event_types(events)
    [request] = model.requests
    assert "tools" not in request
    assert all(node["id"] in json.dumps(request["messages"]) for node in nodered.nodes_of(tab["id"]))


async def test_an_ai_config_node_without_tool_calling_gets_no_agent_and_is_told_so(aiohttp_client, settings, model,
                                                                                    nodered):
    client = await aiohttp_client(create_app(settings.model_copy(update={"token_coalesce_ms": 0})))
    tab = tab_with_nodes(nodered)
    node = {"provider": "openai-compatible", "baseUrl": model.base_url, "model": "gemma3:4b", "toolCalling": False}
    model.script(Reply(text="Check the function node."))
    events = await stream_chat(client, message=AGENT_QUESTION, selectedFlow={"id": tab["id"]}, provider=node,
                               sessionId="no-tools-node", language="de")

    assert tokens(events) == "Check the function node." and "error" not in event_types(events)
    assert all("tools" not in request for request in model.requests)
    [notice] = notices(events)
    assert notice["model"] == "gemma3:4b" and "kann keine Werkzeuge aufrufen" in notice["message"]
    assert event_types(events)[-2:] == ["notice", "done"]

    # The same node with tool calling: the agent is offered its tools, and no notice.
    model.requests.clear()
    model.script(Reply(text="Fine."))
    events = await stream_chat(client, message=AGENT_QUESTION, selectedFlow={"id": tab["id"]},
                               provider={**node, "toolCalling": True}, sessionId="tools-node")
    assert "tools" in model.requests[0] and notices(events) == []
