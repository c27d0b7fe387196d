"""External MCP servers and tool search (issue 22): a server's tools join the agent's as ``<server>__<tool>``, a
server that hangs on start or dies mid-call is named in a ``notice`` and the chat goes on, and with 150 tools each
model request carries at most 10 tool schemas, the needed one among them."""

from __future__ import annotations

import json
import re
import sys

import pytest

from service.settings import McpServerConfig, Settings, SettingsError
from service.web.app import create_app
from tests.support.many_tools_server import description, tool_names
from tests.support.model_server import Reply
from tests.support.nodered import REPO
from tests.support.sse import read_events

SERVER = [sys.executable, "-m", "tests.support.many_tools_server"]
WORDS = re.compile(r"[a-z0-9]+")


def server(name: str, *flags: str, start_timeout: float = 20.0) -> McpServerConfig:
    return McpServerConfig(name=name, command=SERVER[0], args=[*SERVER[1:], *flags],
                           env={"PYTHONPATH": str(REPO)}, startTimeout=start_timeout)


async def chat(client, message: str) -> list[dict]:
    response = await client.post("/ai-sidebar/stream-chat", json={"message": message})
    assert response.status == 200, await response.text()
    return await read_events(response)


def _choices(node, found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every ``{const, description}`` of a JSON Schema: the tool names a selection may give."""
    if isinstance(node, dict):
        if "const" in node:
            found.append((node["const"], node.get("description") or ""))
        for value in node.values():
            _choices(value, found)
    elif isinstance(node, list):
        for value in node:
            _choices(value, found)
    return found


def selecting_model(body: dict) -> Reply:
    """A model that answers the tool selector's structured request (``response_format`` with the tool names as
    constants) with the tools whose description shares the most words with the user's message, best first, and
    anything else with a short answer."""
    if "response_format" not in body:
        return Reply(text="Done.")
    asked = set(WORDS.findall(str(body["messages"][-1]["content"]).lower()))
    choices = _choices(body["response_format"], [])
    ranked = sorted(choices, key=lambda c: -len(asked & set(WORDS.findall(f"{c[0]} {c[1]}".lower().replace("_", " ")))))
    return Reply(text=json.dumps({"tools": [name for name, _ in ranked[:10]]}))


LABELLED = [(f"{verb} {SERVICE_WORDS}", f"work__{tool}") for verb, SERVICE_WORDS, tool in [
    ("Please list", "the Jira issue tracker tickets", "jira_list"),
    ("Search", "GitHub pull requests for the login fix", "github_search"),
    ("Count", "rows in the PostgreSQL database tables", "postgres_count"),
    ("Export a report of", "the Grafana dashboards", "grafana_export"),
    ("Read one of the", "Slack channels chat messages", "slack_get"),
    ("List", "Amazon S3 buckets and stored files", "s3_list"),
    ("Create new", "calendar meetings for Monday", "calendar_create"),
    ("Search", "Confluence wiki documentation pages about MQTT", "wiki_search"),
    ("Change existing", "customer relationship records of ACME", "crm_update"),
    ("Count", "factory sensor readings from line 3", "sensors_count"),
    ("Delete", "billing invoices that were paid twice", "invoices_delete"),
    ("Archive old", "Docker containers and images", "docker_archive"),
    ("Search", "my email inbox letters for the invoice", "email_search"),
    ("Read one of the", "weather forecasts and temperatures for Berlin", "weather_get"),
    ("List", "warehouse stock levels and spare parts", "inventory_list"),
    ("Subscribe to changes of", "GitHub pull requests", "github_watch"),
    ("Export a report of", "billing invoices and payments", "invoices_export"),
    ("Count", "Jira issue tracker tickets still open", "jira_count"),
    ("Read one of the", "PostgreSQL database tables", "postgres_get"),
    ("Search", "Slack channels and chat messages for the outage", "slack_search"),
]]


def test_the_labelled_requests_name_real_tools():
    assert len(LABELLED) == 20 and len(tool_names()) == 150
    assert all(tool.removeprefix("work__") in tool_names() for _, tool in LABELLED)
    assert description("jira_list") == "List Jira issue tracker tickets."


async def test_150_tools_each_request_carries_at_most_10_schemas_with_the_needed_one(aiohttp_client, settings,
                                                                                      model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"mcp_servers": [server("work")]})))
    model.responder = selecting_model
    for message, needed in LABELLED:
        model.requests.clear()
        events = await chat(client, message)
        assert events[-1]["type"] == "done" and not [e for e in events if e["type"] in ("error", "notice")], events
        selections = [body for body in model.requests if "response_format" in body]
        answers = [body for body in model.requests if "tools" in body]
        assert len(selections) == 1 and len(_choices(selections[0]["response_format"], [])) > 100
        assert answers and all(len(body["tools"]) <= 10 for body in answers)
        offered = [tool["function"]["name"] for tool in answers[0]["tools"]]
        assert needed in offered, (message, offered)
        assert {"get_flow", "get_node_info", "search_node_docs"} <= set(offered)


async def test_a_server_that_hangs_on_start_or_dies_mid_call_is_named_and_the_chat_goes_on(aiohttp_client,
                                                                                         settings, model):
    servers = [server("stuck", "--hang", start_timeout=2), server("flaky", "--few")]
    client = await aiohttp_client(create_app(settings.model_copy(update={"mcp_servers": servers})))
    model.script(Reply(tool_calls=[{"name": "flaky__explode", "arguments": {}}]),
                 Reply(text="The crash report could not be read."))
    events = await chat(client, "read the crash report")
    notices = {e["server"]: e["message"] for e in events if e["type"] == "notice"}
    assert set(notices) == {"stuck", "flaky"}, events
    assert "stuck" in notices["stuck"] and "no answer in 2 s" in notices["stuck"]
    assert "flaky" in notices["flaky"]
    results = [e for e in events if e["type"] == "tool_result" and e["tool"] == "flaky__explode"]
    assert results and results[0]["ok"] is False and "flaky" in results[0]["result"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == "The crash report could not be read."
    assert events[-1]["type"] == "done"
    offered = [tool["function"]["name"] for tool in model.requests[0]["tools"]]
    assert "flaky__echo" in offered and not [name for name in offered if name.startswith("stuck__")]

    model.requests.clear()
    model.script(Reply(text="Answered without them."))
    events = await chat(client, "and now?")  # the dead server's tools are left out; the answer comes
    assert [e["server"] for e in events if e["type"] == "notice"] == ["stuck", "flaky"]
    assert "".join(e["content"] for e in events if e["type"] == "token") == "Answered without them."
    assert not [t for t in model.requests[0]["tools"] if t["function"]["name"].startswith(("flaky__", "stuck__"))]


def test_the_yaml_file_names_external_servers_as_mcpServers_and_their_secrets_stay_hidden(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("mcpServers:\n  - name: tracker\n    command: npx\n    args: [-y, tracker-mcp]\n"
                      "    env: {TRACKER_TOKEN: s3cret-value}\n  - name: docs\n    url: https://docs.example.com/mcp\n"
                      "    headers: {Authorization: Bearer t0ken}\n    startTimeout: 5\n")
    settings = Settings.from_env({"AI_SIDEBAR_CONFIG": str(config)})
    tracker, docs = settings.mcp_servers
    assert (tracker.command, tracker.args, tracker.env["TRACKER_TOKEN"].get_secret_value()) == \
        ("npx", ["-y", "tracker-mcp"], "s3cret-value")
    assert (docs.url, docs.start_timeout) == ("https://docs.example.com/mcp", 5)
    assert "s3cret-value" not in repr(settings) and "t0ken" not in repr(settings)
    both = tmp_path / "both.yaml"
    both.write_text("mcpServers:\n  - {name: x, command: a, url: 'http://b'}\n")
    with pytest.raises(SettingsError, match="either command"):
        Settings.from_env({"AI_SIDEBAR_CONFIG": str(both)})


async def test_an_external_tool_not_annotated_read_only_waits_for_approval(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(
        update={"mcp_servers": [server("work")], "tool_search_threshold": 1000})))
    model.script(Reply(tool_calls=[{"name": "work__jira_create", "arguments": {"query": "printer jam"}}]))
    events = await chat(client, "open a ticket about the printer jam")
    approval = [e for e in events if e["type"] == "approval_required"]
    assert approval and approval[0]["actions"][0]["tool"] == "work__jira_create", events
    assert approval[0]["actions"][0]["args"] == {"query": "printer jam"}
    assert events[-1] == {**events[-1], "type": "done", "status": "awaiting_approval"}
    assert not [e for e in events if e["type"] == "tool_result" and e["tool"] == "work__jira_create"]
