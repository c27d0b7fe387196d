"""One declaration per tool: a tool declared here, in a registry of its own, is offered to the agent, runs through
execute-tool's rules and is listed by the MCP server; write tools need write permission; old names still work."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import BaseModel, ConfigDict, Field

from mcp_server.server import NodeRedConfig, build_server
from service.chat.agent import AgentLimits, agent_tools, run_agent
from service.chat.context import ChatResult
from service.llm.providers import ChatModelFactory, ProviderConfig
from service.nodered.client import NodeRedClient, admin_session
from service.nodered.tooling import Tool, ToolFailure, ToolOutput
from service.nodered.tools import READ_TOOLS
from service.tools.context import ServiceToolContext
from service.tools.registry import ToolRegistry, default_tools
from service.web.app import create_app
from service.web.keys import TOOLS
from tests.support.model_server import Reply
from tests.support.sse import read_events


class CountArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field("tab", pattern="^(tab|subflow)$", description="'tab' or 'subflow'")


class CountResult(BaseModel):
    kind: str
    count: int


async def count_flows(ctx, kind: str = "tab") -> ToolOutput:
    """How many tabs (or subflows) are deployed."""
    flows = (await ctx.nodered.get_flows())["flows"]
    count = sum(1 for node in flows if node.get("type") == kind)
    return ToolOutput(data={"kind": kind, "count": count}, text=f"{count} {kind}s are deployed.")


COUNT_FLOWS = Tool(name="count_flows", title="Count flows", args=CountArgs, result=CountResult, run=count_flows,
                   description="Count the deployed tabs or subflows of Node-RED. Use it when the user asks how many "
                               "flows they have; it reads nothing else.")


class RenameArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow_id: str
    label: str


async def rename_tab(ctx, flow_id: str, label: str) -> ToolOutput:
    """Stands for a write tool: says what it would do, changes nothing."""
    return ToolOutput(data={"flow_id": flow_id, "label": label}, text=f"would rename {flow_id} to {label}")


RENAME_TAB = Tool(name="rename_tab", title="Rename a tab", args=RenameArgs, run=rename_tab, access="write",
                  permission="write", description="Rename a tab of Node-RED (stands for a write tool in tests).")


def tabs(nodered) -> int:
    return len(nodered.tabs())


async def test_a_tool_declared_once_is_offered_to_the_agent_which_calls_it(settings, nodered, model):
    registry = ToolRegistry(tools=[*default_tools(), COUNT_FLOWS])
    events: list[dict] = []

    async def emit(event: dict) -> None:
        events.append(event)

    model.script(Reply(tool_calls=[{"name": "count_flows", "arguments": {"kind": "tab"}}]),
                 Reply(text="You have some tabs."))
    result = ChatResult(session_id="s")
    async with admin_session() as http:
        context = ServiceToolContext(nodered=NodeRedClient(nodered.url, http))
        offered = registry.offered(["count-flows", "search_memory"], permission="read", memory=False)
        assert offered == ["count_flows"]  # alias read, memory tool left out without memory
        tools = agent_tools(registry, offered, context, emit, result)
        # Closed at the end: its HTTP client's aiohttp session would otherwise be collected open later, and
        # asyncio logs "Unclosed client session" as an error in whichever test is running then.
        factory = ChatModelFactory()
        try:
            await run_agent(factory.get(ProviderConfig.from_settings(settings)), tools,
                            [SystemMessage("You help."), HumanMessage("How many tabs?")], AgentLimits(), emit, result)
        finally:
            await factory.aclose()

    shown = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert shown["count_flows"]["description"] == COUNT_FLOWS.description
    assert shown["count_flows"]["parameters"]["properties"]["kind"]["pattern"] == "^(tab|subflow)$"
    assert events[:2] == [
        {"type": "tool_call", "tool": "count_flows", "params": {"kind": "tab"}, "origin": "agent"},
        {"type": "tool_result", "tool": "count_flows", "result": f"{tabs(nodered)} tabs are deployed.", "ok": True}]
    told = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert f"{tabs(nodered)} tabs are deployed." in told[0]["content"]
    assert result.answer == "You have some tabs." and result.tools == ["count_flows"]


async def test_a_tool_declared_once_runs_through_execute_tool_by_either_spelling(aiohttp_client, settings, nodered):
    app = create_app(settings)
    app[TOOLS] = ToolRegistry(tools=[*default_tools(), COUNT_FLOWS])
    client = await aiohttp_client(app)

    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "count-flows", "params": ["tab"]})
    assert response.status == 200
    assert await response.json() == {"tool": "count_flows", "result": {"kind": "tab", "count": tabs(nodered)}}

    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "count_flows",
                                                                    "params": {"kind": "group"}})
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "invalid_params" and "count_flows" in error["message"] and "kind" in error["message"]

    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "count_flows"},
                                 headers={"X-AI-Sidebar-Permission": "read"})
    assert response.status == 403 and (await response.json())["error"]["code"] == "forbidden"


async def test_a_core_tool_declared_once_is_listed_and_answered_by_the_mcp_server(nodered):
    server = build_server(NodeRedConfig(url=nodered.url), tools=[*READ_TOOLS, COUNT_FLOWS, RENAME_TAB])
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        counted = await session.call_tool("count_flows", {"kind": "tab"})
        refused = await session.call_tool("count_flows", {"kind": "group"})
        write = await session.call_tool("rename_tab", {"flow_id": "t1", "label": "New"})
    count = listed["count_flows"]
    assert (count.title, count.description) == ("Count flows", COUNT_FLOWS.description)
    assert count.inputSchema["properties"]["kind"]["pattern"] == "^(tab|subflow)$"
    assert set(count.outputSchema["properties"]) == {"kind", "count"}
    assert count.annotations.readOnlyHint is True and count.annotations.destructiveHint is False
    assert not counted.isError and counted.structuredContent == {"kind": "tab", "count": tabs(nodered)}
    assert refused.isError
    # A write tool is never offered by the MCP server (it has no approval step): not listed, a call refused.
    assert "rename_tab" not in listed and all(tool.annotations.readOnlyHint for tool in listed.values())
    assert write.isError and "would rename" not in write.content[0].text


async def test_a_write_tool_is_neither_offered_nor_run_without_write_permission(nodered):
    registry = ToolRegistry(tools=[*default_tools(), RENAME_TAB])
    assert registry.offered(["get_flow", "rename_tab"], permission="read", memory=True) == ["get_flow"]
    assert registry.offered(["get_flow", "rename-tab"], permission="write", memory=True) == ["get_flow",
                                                                                             "rename_tab"]
    async with admin_session() as http:
        context = ServiceToolContext(nodered=NodeRedClient(nodered.url, http))
        params = await registry.parse("rename-tab", {"flow_id": "t1", "label": "New"})
        with pytest.raises(ToolFailure) as refused:
            await registry.run("rename_tab", params, context, permission="read")
        output = await registry.run("rename_tab", params, context, permission="write")
    assert refused.value.code == "forbidden" and "ai-sidebar.write" in refused.value.message
    assert output.text == "would rename t1 to New"


def test_a_declaration_is_checked_when_it_is_made():
    with pytest.raises(ValueError, match="snake_case"):
        Tool(name="count-flows", title="", description="", args=CountArgs, run=count_flows)
    with pytest.raises(ValueError, match="write permission"):
        Tool(name="rename", title="", description="", args=RenameArgs, run=rename_tab, access="write")


def test_the_text_a_model_gets_is_bounded_by_the_declaration():
    short = Tool(name="short", title="", description="", args=CountArgs, run=count_flows, text_limit=100)
    text = "\n".join(f"line {i:03d} " + "x" * 20 for i in range(50))
    bounded = ToolRegistry(tools=[short]).for_model("short", text)
    assert len(bounded) < 200 and bounded.startswith("line 000") and "more characters not shown" in bounded


async def test_old_hyphenated_names_are_read_as_the_new_ones(client, nodered):
    tab = nodered.tabs()[0]
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "get-flow", "params": [tab["id"]]})
    assert response.status == 200 and (await response.json())["tool"] == "get_flow"
    response = await client.post("/ai-sidebar/stream-chat", json={"message": f"@tools:get-node-info|['{tab['id']}']"})
    events = await read_events(response)
    assert events[0]["type"] == "tool_call" and events[0]["tool"] == "get_node_info"
    response = await client.get("/ai-sidebar/scenarios?lang=en-US")
    tools = {t for s in (await response.json())["scenarios"].values() for t in s["tools"]}
    assert "get_flow" in tools and not any("-" in t for t in tools)
