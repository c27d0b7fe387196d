"""Agent mode: the scripted model calls tools through the real ChatOpenAI client and LangChain agent."""

from __future__ import annotations

import asyncio

import aiohttp

from service.web.app import create_app
from tests.conftest import SERVICE_TOKEN
from tests.support.model_server import Reply
from tests.support.sse import read_events


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


def busiest_tab(nodered):
    return max(nodered.tabs(), key=lambda t: len(nodered.nodes_of(t["id"])))


def tool_messages(request):
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_model_chooses_get_flow_then_get_node_info_then_answers(client, nodered, model):
    tab = busiest_tab(nodered)
    node = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] != "comment")
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {}}]),
                 Reply(tool_calls=[{"name": "get_node_info", "arguments": {"node_ids": [node["id"]]}}]),
                 Reply(text="The flow starts with an inject node and ends in a debug node."))
    events = await chat(client, message="What could go wrong in what I have open?", selectedFlow={"id": tab["id"]})

    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["tool_call", "tool_result", "tool_call", "tool_result"]
    assert events[0]["tool"] == "get_flow" and events[2] == {"type": "tool_call", "tool": "get_node_info",
                                                               "params": {"node_ids": [node["id"]]}, "origin": "agent"}
    assert all(n["id"] in events[1]["result"] for n in nodered.nodes_of(tab["id"]))  # defaulted to the open tab
    assert node["id"] in events[3]["result"] and "node-red" in events[3]["result"]
    assert kinds[4:-1] == ["token"] * (len(kinds) - 5) and kinds[-1] == "done"
    # The model was offered the scenario's tools with typed arguments, and got each result back.
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in model.requests[0]["tools"]}
    assert {"get_flow", "get_node_info"} <= set(offered)
    assert offered["get_node_info"]["properties"]["node_ids"]
    assert len(model.requests) == 3
    assert tab["id"] in tool_messages(model.requests[1])[0]["content"]
    assert "<tool_result" in tool_messages(model.requests[2])[-1]["content"]


async def test_two_tool_calls_in_one_turn_both_run_and_both_results_reach_the_model(client, nodered, model):
    first, second = nodered.tabs()[:2]
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": first["id"]}},
                                   {"name": "get_flow", "arguments": {"flow_id": second["id"]}}]),
                 Reply(text="Both flows are small."))
    events = await chat(client, message="Compare my first two tabs")
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert sorted(c["params"]["flow_id"] for c in calls) == sorted([first["id"], second["id"]])
    assert len(results) == 2 and all(r["ok"] for r in results)
    answered = tool_messages(model.requests[1])
    assert len(answered) == 2
    assert {first["id"], second["id"]} <= {tid for m in answered for tid in (first["id"], second["id"])
                                           if tid in m["content"]}
    assert [e["type"] for e in events][-1] == "done"


async def test_a_model_that_calls_tools_forever_is_stopped_by_the_limit(aiohttp_client, settings, nodered, model):
    limited = settings.model_copy(update={"agent_max_model_calls": 3})
    client = await aiohttp_client(create_app(limited))
    tab = nodered.tabs()[0]
    model.default = Reply(text="Let me look again.", tool_calls=[{"name": "get_flow",
                                                                  "arguments": {"flow_id": tab["id"]}}])
    events = await chat(client, message="Keep checking my flow")
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "agent_limit" and "3 model calls" in errors[0]["message"]
    assert events[-1]["type"] == "done"
    assert len(model.requests) == 3
    # the text said so far is kept before the error
    assert [e["type"] for e in events].index("token") < [e["type"] for e in events].index("error")


async def test_a_failing_tool_is_told_to_the_model_which_still_answers(client, model):
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": "no-such-tab"}}]),
                 Reply(text="That tab does not exist."))
    events = await chat(client, message="Look at tab no-such-tab for me")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False and "no-such-tab" in result["result"]
    assert "failed" in tool_messages(model.requests[1])[0]["content"]
    assert [e["type"] for e in events][-2:] == ["token", "done"]


async def test_provider_fault_in_agent_mode_is_one_mapped_error(client, model):
    model.script(Reply(status=401, error_message="bad key"))
    events = await chat(client, message="What do my flows do?")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "invalid_api_key"


async def test_a_tool_call_with_invalid_arguments_is_shown_and_told_to_the_model_which_retries(client, nodered,
                                                                                                model):
    node = nodered.nodes_of(nodered.tabs()[0]["id"])[0]
    model.script(Reply(tool_calls=[{"name": "get_node_info", "arguments": {"node_ids": "not-a-list"}}]),
                 Reply(tool_calls=[{"name": "get_node_info", "arguments": {"node_ids": [node["id"]]}}]),
                 Reply(text="Found it."))
    events = await chat(client, message="Which nodes are odd?")
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "tool_call", "tool_result", "token", "token",
                                           "done"]
    assert events[0] == {"type": "tool_call", "tool": "get_node_info", "params": {"node_ids": "not-a-list"},
                         "origin": "agent"}
    assert events[1] == {"type": "tool_result", "tool": "get_node_info", "ok": False, "code": "invalid_params",
                         "result": "get_node_info: parameter 'node_ids': Input should be a valid list.",
                         "message": "get_node_info: parameter 'node_ids': Input should be a valid list."}
    told = tool_messages(model.requests[1])
    assert len(told) == 1 and "failed" in told[0]["content"] and "valid list" in told[0]["content"]
    assert events[3]["ok"] is True and node["id"] in events[3]["result"]
    # the model still sees the same argument schema as LangChain builds it from the tool's pydantic model
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in model.requests[0]["tools"]}
    assert offered["get_node_info"] == {"type": "object", "properties": {"node_ids": {
        "anyOf": [{"type": "array", "items": {"type": "string"}, "maxItems": 200}, {"type": "null"}],
        "default": None, "description": "node ids (from get_flow); default: the nodes selected in the editor"}}}


async def test_a_tool_call_whose_arguments_are_not_json_is_shown_and_the_model_may_retry(client, nodered, model):
    tab = nodered.tabs()[0]
    model.script(Reply(tool_calls=[{"name": "get_flow", "raw_arguments": "}{flow_id: oops"}]),
                 Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}]),
                 Reply(text="Done."))
    events = await chat(client, message="Look at my first tab")
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "tool_call", "tool_result", "token", "done"]
    assert events[0] == {"type": "tool_call", "tool": "get_flow", "params": "}{flow_id: oops", "origin": "agent"}
    assert events[1]["ok"] is False and "not valid JSON" in events[1]["result"]
    told = tool_messages(model.requests[1])
    assert len(told) == 1 and "not valid JSON" in told[0]["content"]
    assert events[2]["params"] == {"flow_id": tab["id"]} and events[3]["ok"] is True


async def test_a_call_of_a_tool_that_was_not_offered_is_shown(client, model):
    model.script(Reply(tool_calls=[{"name": "deploy-flows", "arguments": {"everything": True}}]),
                 Reply(text="I cannot deploy."))
    events = await chat(client, message="Deploy my flows")
    assert [e["type"] for e in events][:2] == ["tool_call", "tool_result"]
    assert events[0] == {"type": "tool_call", "tool": "deploy-flows", "params": {"everything": True},
                         "origin": "agent"}
    assert events[1]["ok"] is False and "no such tool" in events[1]["result"]
    assert "no such tool" in tool_messages(model.requests[1])[0]["content"]
    assert [e["type"] for e in events][-2:] == ["token", "done"]



async def test_client_going_away_cancels_the_model_request_and_keeps_what_was_said(service_process, model):
    """Against the service as a process (aiohttp's run_app does not cancel handlers on disconnect). The model sends
    one token and then holds its stream open until its client leaves: only a cancelled model request ends it.
    Only the answer is held: once the service's knowledge index holds something, the retrieval may first ask the
    model to rewrite the query, and whether it has by then depends on a background refresh (the request that took a
    queued reply in 2 runs of 6, and a flake)."""
    # The answer is held whichever path gives it: the agent (tools offered) or, when the knowledge index already
    # holds something the router retrieves for the question, one call with what was retrieved (no tools).
    def answering(body) -> bool:
        last = str((body.get("messages") or [{}])[-1].get("content"))
        return bool(body.get("tools")) or "Retrieved for this question" in last

    model.responder = lambda body: (Reply(text="one two three four five six", hold_after=1) if answering(body)
                                    else Reply(text="counting"))
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "carol"}
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{base}/ai-sidebar/stream-chat", headers=headers,
                                   json={"message": "count slowly", "sessionId": "gone"})
        async for line in response.content:
            if b'"token"' in line:
                break
        response.close()  # the browser tab closes
        # Polled for up to 30 s: the wait is bounded, not timed. The answer is saved after the model request ends,
        # so the model server seeing its client leave comes first: wait for the saved answer too (under load the
        # history was once read between the two).
        messages: list = []
        for _ in range(600):
            history = await http.get(f"{base}/ai-sidebar/history/gone", headers=headers)
            messages = (await history.json())["messages"] if history.status == 200 else []
            if model.went_away and len(messages) >= 2:
                break
            await asyncio.sleep(0.05)
        assert history.status == 200, await history.text()
    # On failure, say what the model was asked (a run of 6 under load once saw no held request end).
    asked = [(len(r.get("tools") or []), str(r.get("messages", [{}])[-1].get("content"))[:60]) for r in model.requests]
    assert model.went_away == [1], (asked, messages)  # the service closed its model request after its one token
    assert messages[0]["content"] == "count slowly"
    assert messages[1]["content"] == "one "


# OpenAI's client honours retry-after-ms; a short one keeps the retry test fast while still backing off.
QUICK_RETRY = {"retry-after-ms": "50"}


async def test_rate_limit_is_retried_then_answered(client, model):
    model.script(Reply(status=429, error_message="slow down", headers=QUICK_RETRY), Reply(text="Here you go."))
    events = await chat(client, message="What do my flows do?")
    assert [e["type"] for e in events][-2:] == ["token", "done"] and "error" not in [e["type"] for e in events]
    assert len(model.requests) == 2


async def test_rate_limit_that_persists_is_one_rate_limited_error(client, model):
    model.default = Reply(status=429, error_message="slow down", headers=QUICK_RETRY)
    events = await chat(client, message="What do my flows do?")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "rate_limited"
    assert len(model.requests) == 3  # the first try and two retries


async def test_model_timeout_is_llm_timeout(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"llm_timeout": 0.3})))
    model.default = Reply(text="too late", delay=1.0)
    events = await chat(client, message="hello")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "llm_timeout"


async def test_server_error_is_llm_error_with_the_providers_sentence(client, model):
    model.default = Reply(status=500, error_message="the GPU caught fire", headers=QUICK_RETRY)
    events = await chat(client, message="hello")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "llm_error"
    assert "the GPU caught fire" in events[0]["message"] and "Traceback" not in events[0]["message"]


async def test_a_model_without_tool_calling_is_answered_as_plain_chat(client, model):
    model.script(Reply(status=400, error_message="registry.ollama.ai/library/gemma:2b does not support tools"),
                 Reply(text="Plain answer."))
    events = await chat(client, message="What do my flows do?")
    # The answer, then the notice that says the model cannot call tools (tests/test_tool_less_models.py).
    kinds = [e["type"] for e in events]
    assert kinds[-3:] == ["token", "notice", "done"] and "error" not in kinds
    assert events[-2]["code"] == "model_without_tools"
    assert "tools" in model.requests[0] and "tools" not in model.requests[1]


async def test_other_400s_in_agent_mode_stay_one_error(client, model):
    model.script(Reply(status=400, error_message="context length exceeded"))
    events = await chat(client, message="What do my flows do?")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "llm_error"
