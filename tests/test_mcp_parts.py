"""Review part by part over MCP (issue 36): a write tool's elicitation offers the change's parts as a multi-select
(protocol 2025-11-25), all ticked; the SDK's own client answering with some unticked gets exactly the ticked parts
deployed on a real Node-RED, re-validated as the sidebar's are: an untick that changes other parts (a wire whose end
is left out) is shown again, and only what that second request showed is applied."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.shared.memory import create_client_server_memory_streams, create_connected_server_and_client_session
from mcp.types import ElicitResult

from mcp_server.server import NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from tests.support.nodered import NodeRed, free_port

FLOWS = [{"id": "t1", "type": "tab", "label": "Parts"},
         {"id": "sink", "type": "debug", "z": "t1", "name": "sink", "x": 500, "y": 300, "wires": []}]
NEW = [{"id": "a", "type": "inject", "name": "tick", "x": 100, "y": 80, "wires": [["b"]]},
       {"id": "b", "type": "function", "name": "scale", "func": "return msg;", "x": 300, "y": 80, "wires": [["c"]]},
       {"id": "c", "type": "debug", "name": "log", "x": 500, "y": 80, "wires": []}]


@pytest.fixture(scope="module")
def parts_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-parts"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


async def add_with(nodered: NodeRed, tmp_path, answer) -> tuple[Any, list]:
    """Call add_nodes with :data:`NEW` over MCP, the client's user answering each request with ``answer(params)``;
    returns the result and the requests."""
    asked: list = []

    async def callback(_context, params):
        asked.append(params)
        return answer(params, len(asked))

    server = build_server(NodeRedConfig(url=nodered.url), knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "audit.db")))
    async with create_connected_server_and_client_session(server._mcp_server, elicitation_callback=callback) as s:
        result = await s.call_tool("add_nodes", {"flow_id": "t1", "nodes": NEW})
    return result, asked


def choices(params) -> dict[str, str]:
    """The parts a request offers, title → id."""
    field = params.requestedSchema["properties"]["parts"]
    assert field["type"] == "array" and field["default"] == [c["const"] for c in field["items"]["anyOf"]]
    return {choice["title"]: choice["const"] for choice in field["items"]["anyOf"]}


def without_log(params, _number):
    offered = choices(params)
    return ElicitResult(action="accept", content={"approve": True, "parts": [
        part for title, part in offered.items() if '"log"' not in title]})


async def test_the_parts_are_offered_ticked_and_exactly_the_ticked_ones_are_deployed(parts_nodered, tmp_path):
    before = {n["id"]: n for n in parts_nodered.admin("/flows")["flows"]}
    result, asked = await add_with(parts_nodered, tmp_path, without_log)
    assert not result.isError, result.content
    assert len(asked) == 1
    assert set(choices(asked[0])) == {'add inject "tick"', 'add function "scale"', 'add debug "log"',
                                      'wire inject "tick" [1] \u2192 function "scale"',
                                      'wire function "scale" [1] \u2192 debug "log"'}
    assert "untick the ones to leave out" in asked[0].message
    after = parts_nodered.admin("/flows")["flows"]
    new = {n["name"]: n for n in after if n["id"] not in before}
    assert sorted(new) == ["scale", "tick"]
    assert new["tick"]["wires"] == [[new["scale"]["id"]]] and new["scale"]["wires"] == [[]]
    assert [n for n in after if n["id"] in before] == list(before.values())  # untouched, in order
    assert len(result.structuredContent["changes"]["parts"]) == 3


async def test_an_untick_that_changes_other_parts_is_shown_again_before_anything_is_applied(parts_nodered, tmp_path):
    before = {n["id"] for n in parts_nodered.admin("/flows")["flows"]}

    def only_log_left_out(params, number):
        if number == 2:  # the adjusted change, asked again
            return ElicitResult(action="accept", content={"approve": True})
        offered = choices(params)
        return ElicitResult(action="accept", content={"approve": True, "parts": [
            part for title, part in offered.items() if title != 'add debug "log"']})

    result, asked = await add_with(parts_nodered, tmp_path, only_log_left_out)
    assert not result.isError, result.content
    assert len(asked) == 2
    assert asked[1].message.startswith("Leaving out the parts you unticked changes others")
    assert "parts" not in asked[1].requestedSchema["properties"]
    shown = json.loads(asked[1].message.split("removed):\n", 1)[1])
    assert [n["name"] for n in shown["added"]] == ["tick", "scale"] and len(shown["wires"]["added"]) == 1
    new = [n for n in parts_nodered.admin("/flows")["flows"] if n["id"] not in before]
    assert sorted(n["name"] for n in new) == ["scale", "tick"]


async def test_declining_the_adjusted_change_applies_nothing(parts_nodered, tmp_path):
    before = parts_nodered.admin("/flows")

    def decline_second(params, number):
        if number == 2:
            return ElicitResult(action="decline")
        offered = choices(params)  # a wire to a node left out: dropped, so asked again
        return ElicitResult(action="accept", content={"approve": True, "parts": [
            offered['add inject "tick"'], offered['add function "scale"'],
            offered['wire function "scale" [1] \u2192 debug "log"']]})

    result, asked = await add_with(parts_nodered, tmp_path, decline_second)
    assert result.isError and "declined" in result.content[0].text  # type: ignore[union-attr]
    assert len(asked) == 2
    assert parts_nodered.admin("/flows") == before


async def test_no_part_ticked_is_a_decline(parts_nodered, tmp_path):
    before = parts_nodered.admin("/flows")
    result, _ = await add_with(parts_nodered, tmp_path,
                               lambda _params, _n: ElicitResult(action="accept", content={"approve": True,
                                                                                          "parts": []}))
    assert result.isError and "declined" in result.content[0].text  # type: ignore[union-attr]
    assert parts_nodered.admin("/flows") == before


async def test_a_client_of_an_earlier_protocol_is_asked_for_the_whole_change_only(parts_nodered, tmp_path):
    """A client that negotiated 2025-06-18 (no multi-select in elicitation forms) gets the one boolean form."""
    asked: list = []

    async def approving(_context, params):
        asked.append(params)
        return ElicitResult(action="accept", content={"approve": True})

    server = build_server(NodeRedConfig(url=parts_nodered.url), knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "audit.db")))
    before = {n["id"] for n in parts_nodered.admin("/flows")["flows"]}
    async with create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: server._mcp_server.run(server_read, server_write,
                                                            server._mcp_server.create_initialization_options()))
            async with ClientSession(client_read, client_write, elicitation_callback=approving) as session:
                # The SDK's initialize() always asks for its latest revision; this client speaks an earlier one.
                answer = await session.send_request(types.ClientRequest(types.InitializeRequest(
                    params=types.InitializeRequestParams(
                        protocolVersion="2025-06-18", clientInfo=types.Implementation(name="older", version="1"),
                        capabilities=types.ClientCapabilities(elicitation=types.ElicitationCapability())))),
                    types.InitializeResult)
                assert answer.protocolVersion == "2025-06-18"
                await session.send_notification(types.ClientNotification(types.InitializedNotification()))
                result = await session.call_tool("add_nodes", {"flow_id": "t1", "nodes": NEW})
            group.cancel_scope.cancel()
    assert not result.isError, result.content
    [request] = asked
    assert list(request.requestedSchema["properties"]) == ["approve"]
    assert "untick" not in request.message
    new = [n for n in parts_nodered.admin("/flows")["flows"] if n["id"] not in before]
    assert sorted(n["name"] for n in new) == ["log", "scale", "tick"]
