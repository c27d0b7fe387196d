"""The router graph (issue 21) against a real Node-RED and the scripted model server: the labelled requests each
take their path, ≥ 80 % of them are answered with ≤ 2 model calls, each path's calls stay within its bound, and the
README's drawing is the compiled graph's."""

from __future__ import annotations

import re

import pytest

from service.chat.router_graph import PATHS, ROUTER
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.support.nodered import REPO
from tests.support.router_paths import ROUTER_REQUESTS, run_labelled, summary
from tests.support.tool_requests import NEEDS_TOOLS

# The most model calls each path may make for the labelled set: the answer, plus the rewrite of a query that
# found nothing (retrieval); the agent: its steps plus the answer.
MOST_CALLS = {"direct": 1, "keyword": 1, "retrieval": 2}


@pytest.fixture
async def full_client(aiohttp_client, settings):
    """The service as it runs by default: the MCP server's tools on (get_settings, get_diagnostics, ...), the
    knowledge refreshed once."""
    client = await aiohttp_client(create_app(settings.model_copy(update={"mcp_tools_enabled": True})))
    await client.server.app[KNOWLEDGE].refresher.refresh()
    return client


def test_the_labelled_set_covers_every_routed_path_in_several_languages():
    assert len(ROUTER_REQUESTS) >= 60
    assert {r.path for r in ROUTER_REQUESTS} == {"direct", "keyword", "retrieval", "agent"} <= set(PATHS)
    assert len({r.language for r in ROUTER_REQUESTS}) == 10


async def test_each_labelled_request_takes_its_path_with_few_model_calls(full_client, model, nodered):
    outcomes = await run_labelled(full_client, model, nodered.url)
    report = summary(outcomes)
    assert report["off_path"] == [], "\n".join(map(str, report["off_path"]))
    assert report["share_at_most_2_calls"] >= 0.8, report
    for outcome in outcomes:
        labelled = outcome.request
        bound = MOST_CALLS.get(labelled.path, labelled.agent_steps + 1)
        assert outcome.model_calls <= bound, (labelled, outcome.model_calls)
    # The run ends at the tool: a flow that does not exist, a write that waits for approval.
    ended = {o.request.message: (o.model_calls, o.errors) for o in outcomes if o.request.message.startswith("@")}
    assert ended['@tools:get_flow|{"flow_id": "no-such-flow"}'] == (0, ["flow_not_found"])
    assert ended['@tools:create_tab|{"label": "Router test"}'] == (0, [])
    assert ended["@tools:get_settings"] == (1, [])
    agent = [o for o in outcomes if o.request.path == "agent"]
    assert all(o.model_calls == o.request.agent_steps + 1 for o in agent), [(o.request, o.model_calls) for o in agent]
    assert all(o.errors == [] for o in outcomes if o.request.message[0] != "@"), \
        [(o.request.message, o.errors) for o in outcomes if o.errors]


def test_the_requests_that_need_tools_cover_ten_languages():
    assert len(NEEDS_TOOLS) >= 40
    assert len({r.language for r in NEEDS_TOOLS}) == 10 and {r.path for r in NEEDS_TOOLS} == {"tools"}


async def test_every_request_that_needs_tools_reaches_a_model_call_that_offers_them(full_client, model, nodered):
    """Issue 30, fault 0: a change or a runtime question is never answered by a tool-less call, even where node
    help was found or a keyword forced a tool first; and the agent answers it at once (no rewrite of a search)."""
    outcomes = await run_labelled(full_client, model, nodered.url, NEEDS_TOOLS)
    report = summary(outcomes)
    assert report["share_needing_tools_offered_them"] == 1.0, "\n".join(map(str, report["off_path"]))
    assert all(o.model_calls == 1 and o.errors == [] for o in outcomes), \
        [(o.request.message, o.model_calls, o.errors) for o in outcomes if o.model_calls != 1 or o.errors]
    # Those that found help or ran a forced tool first still carry it to the agent.
    assert {o.path for o in outcomes} >= {"agent", "keyword"}


async def test_knowledge_that_was_found_is_answered_in_one_call_without_tools(client, model, nodered):
    await client.server.app[KNOWLEDGE].refresher.refresh()
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "Which node can I use to parse CSV?"})
    assert response.status == 200
    await response.read()
    assert len(model.requests) == 1 and "tools" not in model.requests[0]
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "Hello!"})
    await response.read()
    assert len(model.requests) == 2 and model.requests[1]["tools"]  # nothing found: the agent, tools offered


def test_the_readme_draws_the_compiled_router_graph():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```mermaid\n(.*?)```", readme, re.S)
    assert ROUTER.get_graph().draw_mermaid() in blocks
