"""The knowledge in the chat, against a real Node-RED (examples + the generated workspace) and the scripted model:
routed retrieval reaches the model, the router reads the latest message alone, no model still answers with the
retrieved facts, the knowledge tools and routes, and a refresh after a deploy."""

from __future__ import annotations

import aiohttp
import pytest

from service.knowledge.grading import grade, relevance
from service.knowledge.lexicon import Lexicons
from service.knowledge.retrieval import standalone_query
from service.knowledge.router import Route, Router
from service.knowledge.summary import COUNTS_TITLE
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.conftest import SERVICE_SECRET, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NODERED_VERSION, REPO, NodeRed, example_flows, free_port
from tests.support.sse import read_events
from tests.support.workspaces import workspace

READER = {"X-AI-Sidebar-Permission": "read"}


@pytest.fixture(scope="module")
def workspace_nodered(tmp_path_factory):
    """A Node-RED of this module's own (a test deploys to it): examples + the generated 500-node workspace."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-kchat"), port=free_port(),
                       flows=example_flows() + workspace(), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def knowledge_settings(nodered, model, tmp_path, **changes) -> Settings:
    values = {"token": SERVICE_SECRET, "nodered": NodeRedSettings(url=nodered.url), "openai_base_url": model.base_url,
              "openai_api_key": TEST_API_KEY, "memory_db_path": tmp_path / "memory.db", "mcp_tools_enabled": False,
              "knowledge_refresh": 0, **changes}
    return Settings(**values)


@pytest.fixture
async def kclient(aiohttp_client, workspace_nodered, model, tmp_path):
    """The service over the workspace Node-RED, its knowledge refreshed once (as the start-up refresh does)."""
    client = await aiohttp_client(create_app(knowledge_settings(workspace_nodered, model, tmp_path)))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    return client


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json={"language": "en-US", **body})
    assert response.status == 200, await response.text()
    return await read_events(response)


def router_events(events):
    return [e for e in events if e["type"] in ("tool_call", "tool_result") and
            (e.get("origin") == "router" or e["tool"] in ("search_node_docs", "search_workspace"))]


def last_user_text(model) -> str:
    return [m for m in model.requests[0]["messages"] if m["role"] == "user"][-1]["content"]


async def test_a_which_node_question_reaches_the_model_with_the_csv_nodes_help(kclient, model):
    model.script(Reply(text="Use the csv node."))
    events = await chat(kclient, message="which node can I use to parse CSV?")
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[0] == {"type": "tool_call", "tool": "search_node_docs",
                        "params": {"query": "which node can I use to parse CSV?"}, "origin": "router"}
    assert events[1]["type"] == "tool_result" and f"csv (node-red@{NODERED_VERSION})" in events[1]["result"]
    first = events[1]["sources"][0]
    assert {k: first[k] for k in ("kind", "type", "module", "version")} == {
        "kind": "node-help", "type": "csv", "module": "node-red", "version": NODERED_VERSION}
    assert set(first) <= {"kind", "type", "module", "version", "section"}
    assert all(s["kind"] == "node-help" and s["version"] == NODERED_VERSION for s in events[1]["sources"])
    sent = last_user_text(model)
    assert sent.startswith("which node can I use to parse CSV?")
    assert '<tool_result tool="search_node_docs"' in sent and f"[source: csv (node-red@{NODERED_VERSION})" in sent
    assert "search_workspace" not in sent
    assert events[-1]["type"] == "done" and "error" not in [e["type"] for e in events]


async def test_a_counting_question_reaches_the_model_with_the_exact_count(kclient, workspace_nodered, model):
    functions = [n for n in workspace_nodered.flows if n.get("type") == "function"]
    assert len(workspace_nodered.flows) >= 500
    events = await chat(kclient, message="how many function nodes do I have?")
    assert [(e["type"], e["tool"]) for e in router_events(events)] == [("tool_call", "search_workspace"),
                                                                       ("tool_result", "search_workspace")]
    sent = last_user_text(model)
    assert f"function: {len(functions)} nodes (" in sent
    assert "[source: workspace summary, counts]" in sent


async def test_the_router_reads_only_the_latest_message_and_a_follow_up_is_searched_standalone(kclient, model):
    seen: list[object] = []

    class RecordingRouter(Router):
        async def route(self, message, language=None, fallback=None, names=()):
            seen.append(message)
            return await super().route(message, language, fallback, names)

    slot = kclient.server.app[KNOWLEDGE]
    slot.router = RecordingRouter(slot.knowledge.lexicons)
    history = [{"role": "user", "content": "how many function nodes do I have?"},
               {"role": "assistant", "content": "You have many."}]
    events = await chat(kclient, message="where are they used?", history=history)
    assert seen == ["where are they used?"]
    call = router_events(events)[0]
    assert call["params"] == {"query": "how many function nodes do I have? where are they used?"}
    # A message that is no follow-up is searched as written.
    await chat(kclient, message="which tabs use the broker local broker?", history=history)
    assert seen[-1] == "which tabs use the broker local broker?"
    assert await slot.router.route("hello there") is Route.NEITHER


async def test_with_no_model_configured_a_docs_question_gets_the_retrieved_help_and_a_notice(
        aiohttp_client, workspace_nodered, model, tmp_path):
    settings = knowledge_settings(workspace_nodered, model, tmp_path, openai_api_key=None, openai_base_url=None)
    client = await aiohttp_client(create_app(settings))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    events = await chat(client, message="which node can I use to parse CSV?")
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "token", "done"]
    answer = events[2]["content"]
    assert f"[source: csv (node-red@{NODERED_VERSION})" in answer
    assert answer.endswith("in the assistant service or in an ai-config node.")
    assert "A model is needed for a written answer" in answer
    # Another question keeps the error it had.
    events = await chat(client, message="hello there")
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "provider_not_configured"
    assert model.requests == []


async def test_the_knowledge_route_lists_sources_and_reindex_needs_write(kclient):
    answer = await kclient.get("/ai-sidebar/knowledge", headers=READER)
    assert answer.status == 200
    body = await answer.json()
    assert body["available"] is True and body["refreshInterval"] == 0 and body["refreshedAt"] > 0
    core = next(s for s in body["sources"] if s["store"] == "docs" and s["source"] == "node-red")
    assert core["language"] == "en-US" and core["version"] == NODERED_VERSION and core["chunks"] > 100
    assert {"summary", "tab:w3"} <= {s["source"] for s in body["sources"] if s["store"] == "workspace"}
    assert body["stores"]["docs"]["chunks"] == sum(s["chunks"] for s in body["sources"] if s["store"] == "docs")

    refused = await kclient.post("/ai-sidebar/knowledge/reindex", json={}, headers=READER)
    assert refused.status == 403 and (await refused.json())["error"]["code"] == "forbidden"
    done = await kclient.post("/ai-sidebar/knowledge/reindex", json={})
    assert done.status == 200
    reports = (await done.json())["reports"]
    assert [(r["store"], r["reindexed"], r["removed"]) for r in reports] == [("docs", [], []), ("workspace", [], [])]


async def test_the_knowledge_tools_cite_their_sources(kclient):
    answer = await kclient.post("/ai-sidebar/execute-tool", json={
        "tool": "search_node_docs", "params": {"query": "parse comma separated values", "type": "csv"}})
    assert answer.status == 200, await answer.text()
    results = (await answer.json())["result"]["results"]
    assert results and {r["metadata"]["type"] for r in results} == {"csv"}
    assert results[0]["citation"].startswith(f"csv (node-red@{NODERED_VERSION})")
    answer = await kclient.post("/ai-sidebar/execute-tool", json={
        "tool": "search-workspace", "params": {"query": "which tabs use the broker local broker?"}})
    assert answer.status == 200, await answer.text()
    assert any("store-mqtt" in r["text"] for r in (await answer.json())["result"]["results"])


async def test_a_deploy_is_searchable_after_the_next_refresh(kclient, workspace_nodered):
    async with aiohttp.ClientSession() as session:
        deployed = await (await session.get(f"{workspace_nodered.url}/flows",
                                            headers={"Node-RED-API-Version": "v2"})).json()
        node = next(n for n in deployed["flows"] if n.get("type") == "function" and n.get("z") == "w2")
        node["func"] = "// calibrate the dirigible altimeter\nreturn msg;"
        answer = await session.post(f"{workspace_nodered.url}/flows", json=deployed, headers={
            "Node-RED-API-Version": "v2", "Node-RED-Deployment-Type": "nodes"})
        assert answer.status == 200, await answer.text()
    refresher = kclient.server.app[KNOWLEDGE].refresher
    reports = await refresher.refresh()
    assert [r.reindexed for r in reports if r.store == "workspace"] == [["tab:w2"]]
    answer = await kclient.post("/ai-sidebar/execute-tool", json={
        "tool": "search_workspace", "params": {"query": "dirigible altimeter"}})
    first = (await answer.json())["result"]["results"][0]
    assert first["metadata"]["nodeId"] == node["id"] and first["citation"].startswith('tab "Area 2" (w2)')


async def test_a_database_that_cannot_be_opened_leaves_the_chat_answering_without_knowledge(
        aiohttp_client, workspace_nodered, model, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a folder should be")
    settings = knowledge_settings(workspace_nodered, model, tmp_path, memory_db_path=blocker / "m.db")
    client = await aiohttp_client(create_app(settings))
    events = await chat(client, message="which node can I use to parse CSV?")
    assert router_events(events) == [] and events[-1]["type"] == "done"
    assert "token" in [e["type"] for e in events]
    assert (await (await client.get("/ai-sidebar/knowledge")).json()) == {"available": False, "stores": {},
                                                                          "sources": []}
    refused = await client.post("/ai-sidebar/knowledge/reindex", json={})
    assert refused.status == 503 and (await refused.json())["error"]["code"] == "memory_unavailable"


@pytest.mark.parametrize("message, expected", [
    ("where are they used?", "how many function nodes do I have? where are they used?"),
    ("und wo wird es benutzt?", "how many function nodes do I have? und wo wird es benutzt?"),
    ("它在哪里用?", "how many function nodes do I have? 它在哪里用?"),
    ("which node can I use to parse CSV?", "which node can I use to parse CSV?"),
    ("tell me everything about how this whole long flow of mine handles its errors",
     "tell me everything about how this whole long flow of mine handles its errors"),
])
def test_only_a_short_message_with_a_pronoun_is_joined_to_the_previous_question(message, expected):
    history = [{"role": "user", "content": "how many function nodes do I have?"},
               {"role": "assistant", "content": "61."}]
    assert standalone_query(message, history) == expected
    assert standalone_query(message, []) == message


async def test_a_knowledge_tool_the_agent_calls_lists_its_sources_on_the_tool_result(kclient, model):
    model.script(Reply(tool_calls=[{"name": "search_workspace", "arguments": {"query": "scale each reading"}}]),
                 Reply(text="Found it."))
    events = await chat(kclient, message="hello there")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["tool"] == "search_workspace" and result["ok"] is True
    assert result["sources"] and all(s["kind"] == "workspace" and set(s) == {"kind", "id", "tab", "name",
                                                                             "nodeType"} for s in result["sources"])
    node_sources = [s for s in result["sources"] if s["nodeType"] not in ("tab", "subflow")]
    assert node_sources, result["sources"]
    assert events[-1]["type"] == "done"


async def test_other_tools_results_carry_no_sources(kclient):
    events = await chat(kclient, message='@tools:get_flow|{"flow_id": "w2"}')
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["tool"] == "get_flow" and result["ok"] is True and "sources" not in result


async def test_a_question_that_finds_nothing_is_retried_once_with_the_lexicons_synonyms(
        aiohttp_client, workspace_nodered, model, tmp_path):
    settings = knowledge_settings(workspace_nodered, model, tmp_path, openai_api_key=None, openai_base_url=None)
    client = await aiohttp_client(create_app(settings))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    events = await chat(client, message="which node can I use to postpone stuff?")
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["params"]["query"] for c in calls] == ["which node can I use to postpone stuff?",
                                                     "which node can I use to postpone stuff? delay"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[0]["result"] == "No match." and results[0]["sources"] == []
    assert results[1]["sources"][0]["type"] == "delay"
    assert "[source: delay (node-red@" in next(e for e in events if e["type"] == "token")["content"]


async def test_the_retry_uses_the_models_rewrite_when_a_model_is_configured(kclient, model):
    model.script(Reply(text="delay rate limit messages"), Reply(text="Use the delay node."))
    events = await chat(kclient, message="which node lets me zorble?")  # a word no help and no concept has
    calls = [e["params"]["query"] for e in events if e["type"] == "tool_call"]
    assert calls == ["which node lets me zorble?", "delay rate limit messages"]
    rewrite = model.requests[0]["messages"]
    assert [m["role"] for m in rewrite] == ["system", "user"] and rewrite[1]["content"] == calls[0]
    assert "[source: delay (node-red@" in last_user_text_of(model.requests[1])


async def test_chunks_under_the_relevance_threshold_are_dropped(kclient):
    knowledge = kclient.server.app[KNOWLEDGE].knowledge
    lexicon = knowledge.lexicons.get("en-US")
    query = "parse CSV into objects"
    hits = await knowledge.docs.search(query, "en-US", 10)
    scores = [relevance(query, hit, lexicon.stopwords) for hit in hits]
    assert max(scores) == 1.0 and min(scores) < 1.0
    assert grade(hits, query, lexicon, 1.0) == [hit for hit, score in zip(hits, scores) if score == 1.0]
    assert grade(hits, query, lexicon, 0) == hits
    delay = (await knowledge.docs.search("delay", "en-US", 1))[0]
    assert relevance("spreadsheet export", delay, lexicon.stopwords) == 0


async def test_the_routers_model_fallback_gets_only_the_latest_message(
        aiohttp_client, workspace_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(knowledge_settings(workspace_nodered, model, tmp_path,
                                                                router_model=True)))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    model.script(Reply(text="workspace"), Reply(text="It holds the greenhouse sensors."))
    history = [{"role": "user", "content": "how many function nodes do I have?"},
               {"role": "assistant", "content": "Many."}]
    # No phrase of the lexicon and no tab or subflow label in it: the model decides.
    events = await chat(client, message="Tell me about the greenhouse", history=history)
    classify = model.requests[0]["messages"]
    assert [m["role"] for m in classify] == ["system", "user"]
    assert classify[1]["content"] == "Tell me about the greenhouse"
    assert "function nodes" not in str(classify)
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["search_workspace"]
    # A phrase that decides never asks the model.
    model.reset()
    model.script(Reply(text="Use the csv node."))
    await chat(client, message="which node can I use to parse CSV?")
    assert len(model.requests) == 1


def last_user_text_of(request) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


@pytest.mark.parametrize("language", sorted(p.parent.name for p in (REPO / "locales").glob("*/scenarios.json")))
def test_every_shipped_language_has_its_own_no_model_notice(language):
    lexicon = Lexicons(REPO / "locales").get(language)
    assert lexicon.language == language and "AI_PROVIDER" in lexicon.no_model_notice
    assert "ai-config" in lexicon.no_model_notice
    english = Lexicons(REPO / "locales").get("en-US").no_model_notice
    assert (lexicon.no_model_notice == english) == (language == "en-US")


def test_the_workspace_summarys_counts_are_titled_in_every_shipped_language():
    lexicons = Lexicons(REPO / "locales")
    titles = lexicons.counts_titles()
    assert titles[0] == COUNTS_TITLE and len(titles) == len(lexicons.languages) == 10
    assert all(lexicons.get(language).counts_title in titles for language in lexicons.languages)


async def test_with_no_model_the_notice_is_in_the_users_language(aiohttp_client, workspace_nodered, model, tmp_path):
    settings = knowledge_settings(workspace_nodered, model, tmp_path, openai_api_key=None, openai_base_url=None)
    client = await aiohttp_client(create_app(settings))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    events = await chat(client, message="Welcher Node wandelt CSV in ein Objekt um?", language="de")
    answer = next(e for e in events if e["type"] == "token")["content"]
    assert "[source: csv (node-red@" in answer
    assert answer.endswith(Lexicons(REPO / "locales").get("de").no_model_notice)
    assert "Für eine ausformulierte Antwort wird ein Modell benötigt" in answer


GENERATED_FLOW = """Here is a flow that stores the readings:

```json
[
  {"id": "t1", "type": "tab", "label": "Readings"},
  {"id": "b1", "type": "mqtt-broker", "broker": "localhost"},
  {"id": "n1", "type": "mqtt in", "z": "t1", "topic": "sensors/#", "broker": "b1", "wires": [["n2"]]},
  {"id": "n2", "type": "functon", "z": "t1", "func": "return msg;", "wires": [["n3"]]},
  {"id": "n3", "type": "influxdb out", "z": "t1", "wires": []}
]
```
"""


async def test_a_generated_flows_unknown_node_types_get_a_notice_before_done(kclient, model):
    model.script(Reply(text=GENERATED_FLOW))
    events = await chat(kclient, message="Write a flow that stores MQTT readings in InfluxDB")
    types = [e["type"] for e in events]
    assert types[-2:] == ["notice", "done"] and "error" not in types
    notice = events[-2]
    assert notice["code"] == "unknown_node_types"
    # mqtt in, mqtt-broker (installed) and tab (the editor's own) are not named.
    assert notice["types"] == [{"type": "functon", "closest": "function"},
                               {"type": "influxdb out", "module": "node-red-contrib-influxdb"}]
    assert notice["message"] == (
        "The flow in this answer uses node types that are not installed in this Node-RED: "
        '"functon" (did you mean "function"?); "influxdb out" (provided by node-red-contrib-influxdb, not installed '
        "or not enabled here).")


async def test_the_unknown_node_types_notice_is_in_the_requests_language(kclient, model):
    model.script(Reply(text=GENERATED_FLOW))
    events = await chat(kclient, message="Schreibe einen Flow, der MQTT-Werte in InfluxDB speichert", language="de")
    notice = next(e for e in events if e["type"] == "notice")
    assert notice["message"].startswith("Der Flow in dieser Antwort verwendet Node-Typen, die in diesem Node-RED "
                                        'nicht installiert sind: "functon" (meinten Sie "function"?); ')


async def test_an_answer_whose_flow_uses_only_installed_types_gets_no_notice(kclient, model):
    model.script(Reply(text='```json\n[{"id": "a", "type": "inject", "wires": [["b"]]}, {"id": "b", "type": '
                            '"debug"}, {"id": "s", "type": "subflow:sf1"}]\n```\n```json\n{"not": "a flow"}\n```'))
    events = await chat(kclient, message="Write a flow that injects a timestamp into a debug node")
    assert [e["type"] for e in events][-1] == "done" and "notice" not in [e["type"] for e in events]


@pytest.mark.parametrize("language", sorted(p.parent.name for p in (REPO / "locales").glob("*/scenarios.json")))
def test_every_shipped_language_has_its_unknown_node_types_sentences(language):
    sentences = Lexicons(REPO / "locales").get(language).unknown_node_types
    assert set(sentences) == {"message", "closest", "module", "unknown"}
    assert "{types}" in sentences["message"] and "{closest}" in sentences["closest"]
    assert "{module}" in sentences["module"] and all("{type}" in sentences[k] for k in ("closest", "module", "unknown"))
    english = Lexicons(REPO / "locales").get("en-US").unknown_node_types
    assert (sentences["message"] == english["message"]) == (language == "en-US")
