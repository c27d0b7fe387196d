"""Approved writes on a workspace of 535 nodes (tabs, subflows, groups, link nodes, config nodes with credentials):
each write posts the whole configuration with its ``rev``; afterwards every node the change did not touch is
byte-identical in ``GET /flows``, the credentials Node-RED keeps are still there, and a deploy by someone else
between reading and writing is a conflict that overwrites nothing. Through the service's approval path (the
scripted model asks, ``POST /ai-sidebar/resume`` approves) and through the MCP server's write tools
(``MCP_WRITE_TOOLS=true``, approved by elicitation), against a real Node-RED of this module's own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiohttp import web
from mcp import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ElicitResult

from mcp_server.server import ERROR_META, NodeRedConfig, build_server
from mcp_server.settings import McpWriteSettings
from service.nodered.settings import EvidenceSettings
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from tests.conftest import SERVICE_SECRET, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import read_events
from tests.support.workspaces import (
    BROKER_PASSWORD,
    CREDENTIALS,
    PROXY_PASSWORD,
    function_code,
    workspace,
)

ALICE = {"X-Node-RED-User": "alice"}
APPROVE = ElicitResult(action="accept", content={"approve": True})


def deployed(nodered: NodeRed) -> dict:
    return nodered.admin("/flows")


@pytest.fixture(scope="module")
def large_writable(tmp_path_factory):
    """Node-RED running the generated workspace, its config nodes' credentials deployed as the editor deploys them
    (then kept encrypted by Node-RED, absent from GET /flows)."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-large-writes"), port=free_port(),
                       flows=workspace(), with_palette=False)
    instance.start()
    instance.deploy_credentials(CREDENTIALS)
    yield instance
    instance.stop()


def service_settings(url: str, model, tmp_path) -> Settings:
    return Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=url),
                    openai_base_url=model.base_url, openai_api_key=TEST_API_KEY,
                    memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False, knowledge_refresh=0,
                    evidence=EvidenceSettings(enabled=False),
                    # These tests count the requests that reach Node-RED; the flow history's own comms connection
                    # and reads after each deploy are tested in tests/test_flow_history.py.
                    flow_history=False)


@pytest.fixture
async def service(aiohttp_client, large_writable, model, tmp_path):
    return await aiohttp_client(create_app(service_settings(large_writable.url, model, tmp_path)))


async def chat(service, message: str, **body) -> list[dict]:
    response = await service.post("/ai-sidebar/stream-chat", json={"message": message, **body}, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


async def approve(service, approval: dict) -> list[dict]:
    response = await service.post("/ai-sidebar/resume", headers=ALICE, json={
        "resumeToken": approval["resumeToken"], "decisions": [{"type": "approve"}]})
    assert response.status == 200, await response.text()
    return await read_events(response)


async def ask_to_write(service, model, tool: str, args: dict) -> dict:
    """The model asks for one write; returns the ``approval_required`` event (nothing written yet)."""
    model.script(Reply(tool_calls=[{"name": tool, "arguments": args}]), Reply(text="Done."))
    events = await chat(service, f"please {tool}")
    assert [e["type"] for e in events] == ["approval_required", "done"], events
    return events[0]


def node_bytes(flows: list[dict]) -> dict[str, str]:
    """Each node's JSON text as Node-RED answered it (its own key order), by id."""
    return {node["id"]: json.dumps(node, ensure_ascii=False) for node in flows}


def assert_untouched(before: list[dict], after: list[dict], changed: set[str] = frozenset(),
                     removed: set[str] = frozenset()) -> list[dict]:
    """Every node of ``before`` but ``changed`` and ``removed`` is in ``after`` byte-identical and in the same order;
    ``removed`` are gone, ``changed`` are there (and differ); returns the nodes ``after`` added."""
    old, new = node_bytes(before), node_bytes(after)
    kept = [node_id for node_id in old if node_id not in removed]
    assert not removed & set(new), removed & set(new)
    assert [node_id for node_id in new if node_id in old] == kept  # the order of the configuration is kept
    assert {node_id for node_id in kept if old[node_id] != new[node_id]} == set(changed)
    return [node for node in after if node["id"] not in old]


def assert_credentials_kept(nodered: NodeRed) -> None:
    """Node-RED still holds the config nodes' credentials (it tells a password's presence, never its value)."""
    assert nodered.admin("/credentials/mqtt-broker/store-broker") == {
        "user": CREDENTIALS["store-broker"]["user"], "has_password": True}
    assert nodered.admin("/credentials/http-proxy/store-proxy") == {
        "username": CREDENTIALS["store-proxy"]["username"], "has_password": True}


def test_the_credentials_were_deployed_and_are_never_in_get_flows(large_writable):
    current = json.dumps(deployed(large_writable))
    assert BROKER_PASSWORD not in current and PROXY_PASSWORD not in current and '"credentials"' not in current
    assert_credentials_kept(large_writable)
    assert len(deployed(large_writable)["flows"]) >= 535


async def test_an_approved_change_of_one_function_node_leaves_every_other_node_byte_identical(
        service, large_writable, model):
    before = deployed(large_writable)
    target = "w3-n003"
    code = function_code(400, 3)  # 24 KB: the model rewrote it at length
    approval = await ask_to_write(service, model, "update_node", {"node_id": target, "properties": {"func": code}})
    assert approval["actions"][0]["diff"]["changed"][0]["id"] == target
    assert deployed(large_writable) == before  # nothing is written before the approval

    resumed = await approve(service, approval)
    result = next(e for e in resumed if e["type"] == "tool_result")
    assert result["ok"] is True and result["result"].startswith("Deployed: Change func of function")
    after = deployed(large_writable)
    assert after["rev"] != before["rev"]
    assert assert_untouched(before["flows"], after["flows"], changed={target}) == []
    old = next(n for n in before["flows"] if n["id"] == target)
    assert node_bytes(after["flows"])[target] == json.dumps({**old, "func": code}, ensure_ascii=False)
    assert_credentials_kept(large_writable)


async def test_sixty_approved_new_nodes_get_new_ids_and_nothing_else_changes(service, large_writable, model):
    before = deployed(large_writable)
    chain = [f"new{n}" for n in range(60)]
    nodes = [{"id": node_id, "type": "function" if n % 2 else "change", "name": f"added {n}", "x": 100 + n,
              "y": 900, "wires": [[chain[n + 1]] if n + 1 < len(chain) else []],
              **({"func": function_code(5, n), "outputs": 1} if n % 2 else {"rules": []})}
             for n, node_id in enumerate(chain)]
    # A link call to the storage tab's link in, as in the generated areas: an existing target is kept.
    nodes.append({"id": "call", "type": "link call", "name": "ask storage too", "links": ["store-in"],
                  "linkType": "static", "timeout": "30", "x": 50, "y": 900, "wires": [[chain[0]]]})
    approval = await ask_to_write(service, model, "add_nodes", {"flow_id": "w1", "nodes": nodes})
    assert approval["actions"][0]["summary"].startswith('Add 61 nodes (change, function, link call) to tab "Area 1"')

    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    added = assert_untouched(before["flows"], after["flows"])
    assert len(added) == 61 and not {n["id"] for n in added} & {*chain, "call"}
    assert all(n["z"] == "w1" for n in added)
    by_name = {n["name"]: n for n in added}
    assert by_name["ask storage too"]["links"] == ["store-in"]
    assert by_name["ask storage too"]["wires"] == [[by_name["added 0"]["id"]]]
    assert all(by_name[f"added {n}"]["wires"] == [[by_name[f"added {n + 1}"]["id"]]] for n in range(59))
    assert_credentials_kept(large_writable)


async def test_a_new_link_out_to_an_existing_link_in_is_listed_at_both_ends_after_approval(service, large_writable,
                                                                                           model):
    """Issue 30 (left from round 1): Node-RED keeps a link at both ends; a new link out that names the link in of
    another tab is added to that link in's ``links`` too, on the card and in what is deployed."""
    before = deployed(large_writable)
    target = next(n for n in before["flows"] if n["id"] == "w3-li")
    nodes = [{"id": "tell", "type": "link out", "name": "tell area 3", "mode": "link", "links": ["w3-li"],
              "x": 700, "y": 950},
             {"id": "hear", "type": "link in", "name": "hear area 3", "links": ["w3-lo"], "x": 50, "y": 950,
              "wires": [[]]}]
    approval = await ask_to_write(service, model, "add_nodes", {"flow_id": "w1", "nodes": nodes})
    changed = {entry["id"]: entry["properties"]["links"] for entry in approval["actions"][0]["diff"]["changed"]}
    assert set(changed) == {"w3-li", "w3-lo"}
    assert changed["w3-li"]["before"] == target["links"] and len(changed["w3-li"]["after"]) == 2

    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    added = {n["name"]: n for n in assert_untouched(before["flows"], after["flows"], changed={"w3-li", "w3-lo"})}
    by_id = {n["id"]: n for n in after["flows"]}
    tell, hear = added["tell area 3"], added["hear area 3"]
    assert tell["links"] == ["w3-li"] and by_id["w3-li"]["links"] == [*target["links"], tell["id"]]
    assert hear["links"] == ["w3-lo"] and hear["id"] in by_id["w3-lo"]["links"]


async def test_an_approved_delete_removes_the_nodes_and_only_the_references_to_them(service, large_writable, model):
    before = deployed(large_writable)
    # Area 5's link in (the target of Area 4's link out) and its grouped inject node. Area 5: even areas are locked;
    # the link out on locked Area 4 loses its link to the deleted node, as the editor keeps links consistent.
    approval = await ask_to_write(service, model, "delete_nodes", {"node_ids": ["w5-li", "w5-n000"]})
    assert approval["actions"][0]["diff"]["removed"] == ["w5-li", "w5-n000"]

    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    assert assert_untouched(before["flows"], after["flows"], changed={"w4-lo", "w5-g"},
                            removed={"w5-li", "w5-n000"}) == []
    now = {n["id"]: n for n in after["flows"]}
    assert now["w4-lo"]["links"] == [] and now["w5-g"]["nodes"] == []
    assert_credentials_kept(large_writable)


def following(value, mapping: dict[str, str]):
    """``value`` with every id of ``mapping`` in it (a string, a list of them, the ports of ``wires``) renamed."""
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [following(item, mapping) for item in value]
    return value


async def test_a_whole_generated_flow_approved_onto_a_new_tab_keeps_its_structure_and_nothing_else_changes(
        service, large_writable, model):
    before = deployed(large_writable)
    # Area 7 as a flow export: 94 nodes with a group, a junction, link out/in/call and subflow instances.
    flow = [node for node in workspace(tabs=7) if node.get("z") == "w7"]
    approval = await ask_to_write(service, model, "add_nodes", {"new_tab_label": "Area 7", "nodes": flow})
    assert approval["actions"][0]["summary"].startswith(f'Add {len(flow)} nodes (') and \
        approval["actions"][0]["summary"].endswith('to a new tab "Area 7".')

    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    # The other ends of its links to existing nodes list the new link nodes too (Node-RED keeps both ends): Area 3's
    # link in gets the new link out, Area 1's link out the new link in; nothing else changes.
    [tab, *nodes] = assert_untouched(before["flows"], after["flows"], changed={"w3-li", "w1-lo"})
    assert (tab["type"], tab["label"]) == ("tab", "Area 7") and len(nodes) == len(flow)
    mapping = {old["id"]: new["id"] for old, new in zip(flow, nodes, strict=True)}
    assert not set(mapping.values()) & set(node_bytes(before["flows"]))
    # Every reference among the given nodes follows the new ids (wires, group members and g, link targets); a
    # reference to an existing node (another tab's link in, the storage tab's link in, a subflow) is kept.
    for old, new in zip(flow, nodes, strict=True):
        expected = {key: following(value, mapping) for key, value in old.items() if key not in ("id", "z")}
        if old["type"] != "group":
            expected.setdefault("wires", [])  # a node without outputs (debug, link out) is given empty wires
        assert new == {**expected, "id": mapping[old["id"]], "z": tab["id"]}, old["id"]
    by_old = dict(zip([n["id"] for n in flow], nodes, strict=True))
    assert by_old["w7-lc"]["links"] == ["store-in"] and by_old["w7-lo"]["links"] == ["w3-li"]
    ends = {node["id"]: node for node in after["flows"] if node["id"] in ("w3-li", "w1-lo")}
    old_ends = {node["id"]: node for node in before["flows"] if node["id"] in ("w3-li", "w1-lo")}
    assert ends["w3-li"]["links"] == [*old_ends["w3-li"]["links"], by_old["w7-lo"]["id"]]
    assert ends["w1-lo"]["links"] == [*old_ends["w1-lo"]["links"], by_old["w7-li"]["id"]]
    assert by_old["w7-g"]["nodes"] == [mapping["w7-n000"]] and by_old["w7-n000"]["g"] == mapping["w7-g"]
    assert_credentials_kept(large_writable)


def add_flow_as_someone_else(nodered: NodeRed, label: str) -> dict:
    """Another user adds a tab through the single-flow API (``POST /flow``), sending an id Node-RED ignores; returns
    ``{"sent", "id"}``: the id sent and the one Node-RED gave the tab."""
    sent = f"theirs-{label.lower().replace(' ', '-')}"
    answer = nodered.admin("/flow", {"id": sent, "label": label, "nodes": [
        {"id": f"{sent}-c", "type": "comment", "name": "their note", "x": 100, "y": 40, "wires": []}]})
    return {"sent": sent, "id": answer["id"]}


@pytest.fixture
async def meddling_proxy(aiohttp_server, large_writable):
    """An HTTP proxy in front of the Node-RED: it forwards every request, but before the first ``POST /flows`` it
    lets ``before_deploy`` (someone else deploying) run first; ``seen`` lists the requests it forwarded."""
    state: dict = {"before_deploy": None, "seen": []}

    async def forward(request: web.Request) -> web.Response:
        if request.method == "POST" and request.path == "/flows" and state["before_deploy"] is not None:
            before_deploy, state["before_deploy"] = state["before_deploy"], None
            await before_deploy()
        state["seen"].append(f"{request.method} {request.path}")
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length", "transfer-encoding", "connection")}
        async with aiohttp.ClientSession() as http, http.request(
                request.method, f"{large_writable.url}{request.path_qs}", data=await request.read(),
                headers=headers) as answer:
            return web.Response(status=answer.status, body=await answer.read(),
                                headers={"Content-Type": answer.headers.get("Content-Type", "application/json")})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", forward)
    server = await aiohttp_server(app)
    state["url"] = str(server.make_url("")).rstrip("/")
    return state


async def test_a_deploy_between_reading_and_writing_is_a_conflict_and_nothing_is_lost(
        aiohttp_client, meddling_proxy, large_writable, model, tmp_path):
    service = await aiohttp_client(create_app(service_settings(meddling_proxy["url"], model, tmp_path)))
    before = deployed(large_writable)
    approval = await ask_to_write(service, model, "update_node", {"node_id": "w5-n003",
                                                                  "properties": {"func": "return null;"}})
    theirs: dict = {}

    async def someone_deploys() -> None:
        theirs.update(add_flow_as_someone_else(large_writable, "Their tab"))

    meddling_proxy["before_deploy"] = someone_deploys
    resumed = await approve(service, approval)
    assert meddling_proxy["seen"][-2:] == ["GET /flows", "POST /flows"]  # planned again, then deployed over its rev
    result = next(e for e in resumed if e["type"] == "tool_result")
    assert result["ok"] is False and "nothing was overwritten" in result["result"]
    assert resumed[-1]["type"] == "done"
    after = deployed(large_writable)
    # Their tab is there, under the id Node-RED gave it (POST /flow ignores the id sent); the approved change is not.
    added = assert_untouched(before["flows"], after["flows"])
    assert theirs["id"] != theirs["sent"]
    assert {(n["id"], n["type"]) for n in added if n["type"] == "tab"} == {(theirs["id"], "tab")}
    assert [n["name"] for n in added if n.get("z") == theirs["id"]] == ["their note"]
    assert_credentials_kept(large_writable)


async def test_a_deploy_between_the_card_and_the_approval_is_kept_and_the_change_applied_on_top(
        service, large_writable, model):
    before = deployed(large_writable)
    approval = await ask_to_write(service, model, "update_node", {"node_id": "w5-n011",
                                                                  "properties": {"func": "return msg;"}})
    theirs = add_flow_as_someone_else(large_writable, "Meanwhile")
    meanwhile = deployed(large_writable)

    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    assert assert_untouched(meanwhile["flows"], after["flows"], changed={"w5-n011"}) == []
    assert {n["id"] for n in assert_untouched(before["flows"], after["flows"], changed={"w5-n011"})} == {
        theirs["id"], *(n["id"] for n in meanwhile["flows"] if n.get("z") == theirs["id"])}
    assert next(n for n in after["flows"] if n["id"] == "w5-n011")["func"] == "return msg;"


def deploy_as_someone_else(nodered: NodeRed, node_id: str, **properties) -> dict:
    """Another user changes one node and deploys the whole configuration over the current ``rev``; returns the
    flows after that deploy."""
    current = deployed(nodered)
    nodered.admin("/flows", {"rev": current["rev"], "flows": [
        {**node, **properties} if node["id"] == node_id else node for node in current["flows"]]})
    return deployed(nodered)


@pytest.mark.parametrize("asked_by", ["agent", "@tools"])
async def test_an_approved_change_of_a_node_someone_else_changed_since_the_card_is_a_conflict_that_keeps_theirs(
        service, large_writable, model, asked_by):
    """The card showed the node's code before the change; someone then deployed other code for that node. Planned
    again at the approval, the change would overwrite theirs unseen: it is refused, nothing is written."""
    target = "w5-n019" if asked_by == "agent" else "w5-n027"  # function nodes
    args = {"node_id": target, "properties": {"func": "return null;"}}
    if asked_by == "agent":
        approval = await ask_to_write(service, model, "update_node", args)
    else:
        events = await chat(service, f"@tools:update_node|{json.dumps(args)}")
        approval = events[0]
        assert approval["type"] == "approval_required", events
    before = next(n for n in deployed(large_writable)["flows"] if n["id"] == target)["func"]
    assert approval["actions"][0]["diff"]["changed"][0]["properties"]["func"]["before"] == before
    theirs = deploy_as_someone_else(large_writable, target, func="// their fix\nreturn msg;")

    model.script(Reply(text="It was not written."))
    resumed = await approve(service, approval)
    result = next(e for e in resumed if e["type"] == "tool_result")
    assert result["ok"] is False and "changed since it was approved" in result["result"], result
    assert deployed(large_writable) == theirs  # their code stays, nothing else was written

    # The same call approved with nothing changed under it is written (the check is on the diff, not on time).
    approval = await ask_to_write(service, model, "update_node", args)
    resumed = await approve(service, approval)
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"] is True
    after = deployed(large_writable)
    assert assert_untouched(theirs["flows"], after["flows"], changed={target}) == []


@asynccontextmanager
async def mcp_writer(large_writable: NodeRed, tmp_path) -> AsyncIterator[tuple[ClientSession, dict]]:
    """An MCP session of a client whose user approves every write (``state["run_first"]`` runs before the answer;
    ``state["asked"]`` collects the approval requests)."""
    server = build_server(NodeRedConfig(url=large_writable.url), knowledge_db=None,
                          writes=McpWriteSettings(enabled=True, audit_db=str(tmp_path / "audit.db")))
    state: dict = {"run_first": None, "asked": []}

    async def approving(_context, params):
        state["asked"].append(params.message)
        run_first: Callable[[], Awaitable[None]] | None = state.pop("run_first", None)
        if run_first is not None:
            await run_first()
        return APPROVE

    async with create_connected_server_and_client_session(server._mcp_server,
                                                          elicitation_callback=approving) as session:
        yield session, state


async def test_mcp_writes_plan_and_commit_leave_every_untouched_node_byte_identical(large_writable, tmp_path):
    before = deployed(large_writable)
    code = function_code(120, 2)
    async with mcp_writer(large_writable, tmp_path) as (session, state):
        changed = await session.call_tool("update_node", {"node_id": "w3-n011", "properties": {"func": code}})
        assert not changed.isError, changed.content
        middle = deployed(large_writable)
        assert changed.structuredContent["rev"] == middle["rev"]
        assert assert_untouched(before["flows"], middle["flows"], changed={"w3-n011"}) == []

        # A subflow instance wired both ways: the link in's wire to it goes with it.
        removed = await session.call_tool("delete_nodes", {"node_ids": ["w3-sfB"]})
        assert not removed.isError, removed.content
        after = deployed(large_writable)
        assert assert_untouched(middle["flows"], after["flows"], changed={"w3-li"}, removed={"w3-sfB"}) == []
        assert next(n for n in after["flows"] if n["id"] == "w3-li")["wires"] == [[]]

        added = await session.call_tool("add_nodes", {"flow_id": "sfB", "nodes": [  # sfA is locked
            {"id": "a", "type": "debug", "name": "inside the subflow", "x": 400, "y": 90, "wires": []}]})
        assert not added.isError, added.content
    final = deployed(large_writable)
    [new] = assert_untouched(after["flows"], final["flows"])
    assert (new["z"], new["name"]) == ("sfB", "inside the subflow")
    # Each approval request showed the change, not the workspace: within the MCP preview bound.
    assert len(state["asked"]) == 3 and all(len(message) <= 20_000 for message in state["asked"])
    assert 'Change func of function "function 11" on tab' in state["asked"][0]
    assert_credentials_kept(large_writable)


async def test_an_mcp_write_over_a_deploy_made_while_the_user_decided_is_a_conflict(large_writable, tmp_path):
    before = deployed(large_writable)
    theirs: dict = {}

    async def someone_deploys() -> None:
        theirs.update(add_flow_as_someone_else(large_writable, "While deciding"))

    async with mcp_writer(large_writable, tmp_path) as (session, state):
        state["run_first"] = someone_deploys
        result = await session.call_tool("delete_nodes", {"node_ids": ["w1-n019"]})
    assert result.isError and result.meta[ERROR_META]["code"] == "flows_conflict"
    after = deployed(large_writable)
    added = assert_untouched(before["flows"], after["flows"])
    assert {n["id"] for n in added} == {theirs["id"], *(n["id"] for n in after["flows"] if n.get("z") == theirs["id"])}
    assert "w1-n019" in node_bytes(after["flows"])
    assert_credentials_kept(large_writable)
