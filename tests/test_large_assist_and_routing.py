"""The assist context and the router graph on a generated large workspace: the 535-node workspace plus an area tab
of 341 nodes with 184 KB of function code (:func:`tests.support.workspaces.code_heavy_tab`), credentials deployed.
What the scripted model receives is checked: the assisted node's own code and its wired neighbours, within the
context's bounds, with no secret of the flows; workspace questions answered from the retrieved node or tab, with
the labelled number of model calls."""

from __future__ import annotations

import json
import re

import pytest

from service.assist.context import FIRST_LINES, LINE_LIMIT, MAX_NEIGHBOURS, MAX_SAMPLES
from service.assist.prompts import MESSAGE_LIMIT, PART_LIMIT
from service.web.app import create_app
from service.web.keys import EVIDENCE, KNOWLEDGE
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.router_paths import ROUTER_REQUESTS, run_labelled, summary
from tests.support.sse import read_events
from tests.support.workspaces import (
    API_KEY,
    BROKER_PASSWORD,
    CRED_VALUE,
    CREDENTIALS,
    FEEDS,
    PROXY_PASSWORD,
    READING_PASSWORD,
    SUBFLOW_CRED_VALUE,
    code_heavy_tab,
    function_code,
    workspace,
)
from tests.test_assist import assist
from tests.test_knowledge_chat import knowledge_settings
from tests.test_router_graph import MOST_CALLS
from tests.test_runtime_evidence import press, wait_for

SECRETS = (API_KEY, READING_PASSWORD, CRED_VALUE, SUBFLOW_CRED_VALUE, BROKER_PASSWORD, PROXY_PASSWORD)
MERGE = "w9-merge"


@pytest.fixture(scope="module")
def large_nodered(tmp_path_factory):
    """Node-RED running the workspace and the code-heavy tab, the config nodes' credentials deployed."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-large-assist"), port=free_port(),
                       flows=workspace() + code_heavy_tab(), with_palette=False)
    instance.start()
    instance.deploy_credentials(CREDENTIALS)
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def flows(large_nodered) -> dict[str, dict]:
    """The deployed nodes by id, in flow order."""
    return {node["id"]: node for node in large_nodered.admin("/flows")["flows"]}


@pytest.fixture
async def large_client(aiohttp_client, large_nodered, model, tmp_path):
    return await aiohttp_client(create_app(knowledge_settings(large_nodered, model, tmp_path)))


def prompt_bound(description: str) -> int:
    """The most characters an assist prompt of the function kind holds, from the context's own limits: the
    description, three code parts of at most PART_LIMIT (and the note saying what was left out), MAX_NEIGHBOURS
    per direction described in at most 300 characters plus FIRST_LINES lines of LINE_LIMIT characters, MAX_SAMPLES
    messages of MESSAGE_LIMIT, and 3,000 characters of fixed text."""
    return (len(description) + 3 * (PART_LIMIT + 100) + 2 * MAX_NEIGHBOURS * (300 + FIRST_LINES * (LINE_LIMIT + 1))
            + MAX_SAMPLES * MESSAGE_LIMIT + 3_000)


def first_line(code: str) -> str:
    return code.split("\n", 1)[0]


async def test_a_function_node_on_a_tab_of_184_kb_of_code_gets_its_code_and_neighbours_within_the_bounds(
        large_client, large_nodered, flows, model):
    tab = [node for node in flows.values() if node.get("z") == "w9"]
    assert len(tab) >= 300 and sum(len(node.get("func", "")) for node in tab) >= 100_000
    buffer = large_client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    assert await press(large_nodered, "w9-reading") == 200
    await wait_for(lambda: buffer.select(node_ids=["w9-seen"]), what="the debug node beside the merge node")
    own = flows[MERGE]["func"]
    model.script(Reply(text="```javascript on-message\nreturn msg;\n```"))
    description = "add the readings of all feeds together"
    events = await assist(large_client, kind="function", description=description, language="en-US", context={
        "nodeId": MERGE, "nodeType": "function", "name": "merge readings", "tabId": "w9",
        "code": {"onMessage": own, "onStart": "", "onStop": ""}, "outputs": 1})
    assert [e["type"] for e in events if e["type"] != "token"] == ["proposal", "done"]

    [request] = model.requests
    prompt = request["messages"][-1]["content"]
    assert len(prompt) <= prompt_bound(description)
    assert f"```javascript\n{own}\n```" in prompt  # its own code, whole
    # Wired before it: the feeds and the inject node, the first MAX_NEIGHBOURS of them in flow order.
    upstream = re.search(r"Wired before it \(upstream\): (.*)", prompt)[1]
    described = re.findall(r"\(id ([\w-]+)\) output 1", upstream)
    assert described == [f"w9-feed{n:02d}" for n in range(MAX_NEIGHBOURS)] and FEEDS > MAX_NEIGHBOURS
    assert 'output 1 → function "store merged" (id w9-store), output 1 → debug "merged" (id w9-out)' in prompt
    # A neighbouring function node's first lines, no more: the rest of the tab's code stays out.
    assert "First lines of function \"store merged\" (id w9-store):\n// keep the merged reading" in prompt
    for n in range(1, MAX_NEIGHBOURS):
        lines = flows[f"w9-feed{n:02d}"]["func"].split("\n")
        assert "\n".join(lines[:FIRST_LINES]) in prompt and lines[FIRST_LINES] not in prompt
    shown = {*described, MERGE, "w9-store"}
    for node in tab:
        if node.get("type") == "function" and node["id"] not in shown:
            assert first_line(node["func"]) not in prompt, node["id"]
    # The first feed's key and the inject's password are redacted; no other secret of the flows is there.
    assert "First lines of function \"feed 0\" (id w9-feed00):\nconst apiKey = \"[redacted]\";" in prompt
    assert '"password": "[redacted]"' in prompt and 'seen at debug "seen" (id w9-seen)' in prompt
    sent = json.dumps([model.requests, events])
    assert [secret for secret in SECRETS if secret in sent] == []


async def test_code_of_the_edit_dialogs_largest_size_is_shortened_with_a_note_and_its_key_redacted(
        large_client, flows, model):
    code = f'const token = "{API_KEY}";\n' + function_code(1_700, 5)
    code = code[:100_000]
    model.script(Reply(text="```javascript on-message\nreturn msg;\n```"))
    description = "make it faster"
    await assist(large_client, kind="function", description=description, context={
        "nodeId": MERGE, "nodeType": "function", "code": {"onMessage": code, "onStart": code, "onStop": ""}})
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert len(prompt) <= prompt_bound(description)
    redacted = code.replace(API_KEY, "[redacted]")
    shown = redacted[:PART_LIMIT]
    assert prompt.count(f"```javascript\n{shown}\n…[{len(redacted) - PART_LIMIT} more characters not shown]\n```") == 2
    assert API_KEY not in prompt
    assert 'Wired after it (downstream): output 1 → function "store merged"' in prompt


@pytest.fixture
async def routed_client(aiohttp_client, large_nodered, model, tmp_path):
    """The service as it runs by default (the MCP server's tools on), its knowledge of the large workspace
    refreshed once."""
    client = await aiohttp_client(create_app(knowledge_settings(large_nodered, model, tmp_path,
                                                            mcp_tools_enabled=True)))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    return client


async def ask(client, message: str) -> list[dict]:
    response = await client.post("/ai-sidebar/stream-chat", json={"message": message, "language": "en-US"})
    assert response.status == 200, await response.text()
    return await read_events(response)


def workspace_result(events: list[dict]) -> dict:
    [result] = [e for e in events if e["type"] == "tool_result" and e["tool"] == "search_workspace"]
    return result


async def test_workspace_questions_on_the_large_workspace_are_answered_from_the_right_node_or_tab_in_one_call(
        routed_client, model):
    cases = [
        ("Where is the function node that keeps the merged reading?", "w9-store", "Area 9"),
        ("Which tabs use the broker 'local broker'?", "store-broker", None),
        ("Where is the http request node post record?", "store", "Storage"),  # no chunk of its own: its tab
    ]
    for message, node_id, tab in cases:
        model.script(Reply(text="There."))
        before = len(model.requests)
        events = await ask(routed_client, message)
        assert len(model.requests) - before == 1 and "tools" not in model.requests[-1], message
        result = workspace_result(events)
        first = result["sources"][0]
        assert first["id"] == node_id and first["tab"] == tab, (message, result["sources"][:3])
        assert f"({node_id})" in model.requests[-1]["messages"][-1]["content"]
        if node_id == "store-broker":  # the broker's users are named with their tab
            assert 'mqtt out "announce" (store-mqtt) on tab "Storage"' in model.requests[-1]["messages"][-1]["content"]
        if node_id == "store":
            assert 'http request "post record" (store-http)' in model.requests[-1]["messages"][-1]["content"]
    # Five tabs "Area 1" … "Area 5" hold the same kinds of nodes: the digit after the word picks the tab. Naming
    # a tab is enough to search the workspace, also beside a docs phrase ("what does").
    for message in ("What is in my flow Area 3?", "What does Area 3 do?"):
        model.script(Reply(text="There."))
        sources = workspace_result(await ask(routed_client, message))["sources"]
        assert len(sources) >= 3 and {source["tab"] for source in sources} == {"Area 3"}, (message, sources)
    # The node help finds nothing relevant for "Storage", the workspace does: its answer stands, the query is not
    # rewritten for the node help (a model call that pulled unrelated help in).
    model.script(Reply(text="There."), Reply(text="There."))
    before = len(model.requests)
    events = await ask(routed_client, "What does Storage do?")
    assert "Storage" in {source["tab"] for source in workspace_result(events)["sources"]}
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["search_workspace"]
    assert len(model.requests) - before == 1


# A counting question per shipped language and the node type it counts. Japanese asks with いくつ, written in Hiragana,
# which queries otherwise leave out as grammar (ja/knowledge.json keptWords, service/knowledge/text.py).
COUNTING = [("en-US", "How many function nodes do I have?", "function"),
            ("de", "Wie viele Debug-Nodes habe ich?", "debug"),
            ("fr", "Combien de nœuds function y a-t-il ?", "function"),
            ("es-ES", "¿Cuántos nodos inject hay en mis flujos?", "inject"),
            ("pt-BR", "Quantos nós function existem no meu fluxo?", "function"),
            ("ru", "Сколько узлов function в моём потоке?", "function"),
            ("ja", "functionノードはいくつありますか？", "function"),
            ("zh-CN", "我有多少个function节点？", "function"),
            ("zh-TW", "我的流程裡有幾個debug節點？", "debug"),
            ("ko", "function 노드가 몇 개 있나요?", "function")]


async def test_a_counting_question_in_every_language_gets_the_exact_count_of_the_large_workspace_in_one_call(
        routed_client, flows, model):
    assert sum(1 for node in flows.values() if node.get("type") == "function") >= 120
    for language, question, node_type in COUNTING:
        count = sum(1 for node in flows.values() if node.get("type") == node_type)
        model.script(Reply(text="That many."))
        before = len(model.requests)
        response = await routed_client.post("/ai-sidebar/stream-chat", json={"message": question,
                                                                            "language": language})
        events = await read_events(response)
        assert len(model.requests) - before == 1 and "tools" not in model.requests[-1], question
        assert workspace_result(events)["ok"] is True
        assert f"{node_type}: {count} nodes (" in model.requests[-1]["messages"][-1]["content"], question


async def test_the_labelled_requests_take_their_paths_with_their_model_calls_on_the_large_workspace(
        routed_client, large_nodered, model):
    outcomes = await run_labelled(routed_client, model, large_nodered.url)
    report = summary(outcomes)
    assert report["requests"] == len(ROUTER_REQUESTS)
    assert report["off_path"] == [], "\n".join(map(str, report["off_path"]))
    for outcome in outcomes:
        labelled = outcome.request
        assert outcome.model_calls <= MOST_CALLS.get(labelled.path, labelled.agent_steps + 1), outcome
    agent = [o for o in outcomes if o.request.path == "agent"]
    assert all(o.model_calls == o.request.agent_steps + 1 for o in agent)
    assert [(o.request.message, o.errors) for o in outcomes if o.errors and o.request.message[0] != "@"] == []
    sent = json.dumps(model.requests)
    assert [secret for secret in SECRETS if secret in sent] == []
