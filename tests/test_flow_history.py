"""Flow history (issue 35) on a real Node-RED: every deploy captured from its comms notification and stored
deduplicated per node, diffs between two points, the ``what_changed`` tool as the model receives it, and
``restore_flows`` of one tab (and its conflict) through the write tools' rev check."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from service.history.capture import history_for
from service.history.store import HistoryStore
from service.memory.backends import open_database
from service.nodered.settings import NodeRedSettings
from service.nodered.tooling import ToolFailure
from service.tools.context import ServiceToolContext
from service.web.app import create_app
from service.web.keys import APPROVALS, NODERED
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.sse import read_events
from tests.support.writable import settings_for

TAB_A, TAB_B = "a1a1a1a1a1a1a1a1", "b2b2b2b2b2b2b2b2"
SECRET = "sk-proj-Zq3xW9vL2mN8kP4rT6yB1cD5fG7hJ0aSxx"
PASSWORD = "correct-horse-battery-staple-77"


def function(node_id: str, tab: str, name: str, code: str, x: int = 300, y: int = 80,
             wires: list[str] | None = None) -> dict[str, Any]:
    return {"id": node_id, "type": "function", "z": tab, "name": name, "func": code, "outputs": 1, "timeout": 0,
            "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": x, "y": y, "wires": [wires or []]}


def base_flows() -> list[dict[str, Any]]:
    return [
        {"id": TAB_A, "type": "tab", "label": "Alpha", "disabled": False, "info": ""},
        {"id": TAB_B, "type": "tab", "label": "Beta", "disabled": False, "info": ""},
        function("a000000000000001", TAB_A, "first", "return msg;", wires=["a000000000000002"]),
        function("a000000000000002", TAB_A, "second", "msg.payload = 1;\nreturn msg;", y=160),
        function("a000000000000003", TAB_A, "third", "return null;", y=240),
        function("b000000000000001", TAB_B, "beta one", "return msg;"),
    ]


@pytest.fixture(scope="module")
def history_nodered(tmp_path_factory):
    """Node-RED of this module's own (its deploys would disturb other tests)."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-history"), port=free_port(), flows=base_flows(),
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


async def wait_for(condition: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Await ``condition()`` (a coroutine function) until it answers something true; fails after ``timeout``."""
    started = time.monotonic()
    while True:
        found = await condition()
        if found:
            return found
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.02)


async def deploy(nodered: NodeRed, flows: list[dict[str, Any]], kind: str = "nodes") -> str:
    """Deploy ``flows`` over the current rev as an editor does (``kind``: Node-RED's deployment type, the
    editor's default "modified nodes"); returns the new rev."""
    async with aiohttp.ClientSession() as http:
        headers = {"Node-RED-API-Version": "v2"}
        async with http.get(f"{nodered.url}/flows", headers=headers) as answer:
            rev = (await answer.json())["rev"]
        async with http.post(f"{nodered.url}/flows", json={"rev": rev, "flows": flows},
                             headers={**headers, "Node-RED-Deployment-Type": kind}) as answer:
            assert answer.status == 200, await answer.text()
            return (await answer.json())["rev"]


async def live(nodered: NodeRed) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(
            f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"}) as answer:
        return (await answer.json())["flows"]


async def deploy_captured(client, nodered: NodeRed, flows: list[dict[str, Any]]) -> str:
    """Deploy and wait until the service captured that rev."""
    rev = await deploy(nodered, flows)
    store = history_for(client.app[NODERED]).store

    async def captured() -> bool:
        return await store.has(rev)
    await wait_for(captured, what=f"rev {rev} captured")
    return rev


@pytest.fixture
async def history_client(aiohttp_client, history_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(settings_for(history_nodered, model, tmp_path)))
    await deploy_captured(client, history_nodered, base_flows())
    return client


def context(client) -> ServiceToolContext:
    return ServiceToolContext(nodered=client.app[NODERED])


def changed(flows: list[dict[str, Any]], node_id: str, **properties: Any) -> list[dict[str, Any]]:
    return [{**node, **properties} if node["id"] == node_id else node for node in flows]


async def test_the_diff_of_two_deploys_names_exactly_the_changed_nodes_and_properties(history_client,
                                                                                      history_nodered):
    before = await deploy_captured(history_client, history_nodered, base_flows())
    flows = changed(base_flows(), "a000000000000001", func="msg.payload = 42;\nreturn msg;")
    flows = changed(flows, "a000000000000002", name="renamed second")
    flows = changed(flows, "a000000000000003", x=500, y=400)
    flows = [node for node in flows if node["id"] != "b000000000000001"]
    flows.append(function("b000000000000002", TAB_B, "beta two", "return msg;", wires=[]))
    flows = changed(flows, "a000000000000003", x=500, y=400, wires=[["a000000000000001"]])
    after = await deploy_captured(history_client, history_nodered, flows)

    answer = await history_client.get("/ai-sidebar/flow-history/diff", params={"from": before, "to": after})
    assert answer.status == 200, await answer.text()
    diff = await answer.json()
    assert diff["from"]["rev"] == before and diff["to"]["rev"] == after
    tabs = {tab["id"]: tab for tab in diff["tabs"]}
    assert set(tabs) == {TAB_A, TAB_B}
    alpha, beta = tabs[TAB_A], tabs[TAB_B]
    assert [(c["id"], c["properties"]) for c in alpha["changed"]] == [
        ("a000000000000001", {"func": {"before": "return msg;", "after": "msg.payload = 42;\nreturn msg;"}})]
    assert alpha["renamed"] == [{"id": "a000000000000002", "type": "function", "before": "second",
                                 "after": "renamed second"}]
    assert [(m["id"], m["before"], m["after"]) for m in alpha["moved"]] == [("a000000000000003", [300, 240],
                                                                            [500, 400])]
    assert alpha["wires"] == {"added": [["a000000000000003", 0, "a000000000000001"]], "removed": []}
    assert alpha["added"] == [] and alpha["removed"] == []
    assert [n["id"] for n in beta["added"]] == ["b000000000000002"]
    assert [n["id"] for n in beta["removed"]] == ["b000000000000001"]
    assert beta["changed"] == [] and beta["moved"] == []
    assert diff["counts"] == {"added": 1, "removed": 1, "changed": 1, "moved": 1, "renamed": 1, "wires": 1}

    listing = await (await history_client.get("/ai-sidebar/flow-history")).json()
    newest = listing["deploys"][0]
    assert newest["rev"] == after and newest["origin"] == "editor" and newest["user"] is None
    assert newest["counts"] == {"added": 1, "removed": 1, "changed": 3}
    assert newest["time"].endswith("Z")


async def test_a_service_up_before_node_red_captures_its_flows_once_it_answers_without_a_warning(
        aiohttp_client, model, tmp_path, caplog):
    caplog.set_level("INFO", logger="service.history.capture")
    # As under make run: the service starts first, its Node-RED a moment later on the port it was told.
    nodered = NodeRed(userdir=tmp_path / "nodered-later", port=free_port(), flows=base_flows(), with_palette=False)
    client = await aiohttp_client(create_app(settings_for(nodered, model, tmp_path)))
    store = history_for(client.app[NODERED]).store

    async def tried() -> bool:
        return any("not reachable yet" in record.getMessage() for record in caplog.records)
    await wait_for(tried, what="the first capture tried while Node-RED is down")
    await asyncio.to_thread(nodered.start)
    try:
        rev = (await live_answer(nodered))["rev"]

        async def captured() -> bool:
            return await store.has(rev)
        # Node-RED's retained runtime-deploy notification reaches the service's comms subscription.
        await wait_for(captured, timeout=60, what=f"rev {rev} captured once Node-RED answers")
        # Nothing the capture or the comms subscription logged while they waited for Node-RED reads as a fault.
        # (The other loggers are not asked: CI once caught here an unrelated "memory retention skipped: … no such
        # table: short_term_memory", seemingly from another test's app still running.)
        waiting = ("service.history.capture", "service.nodered.comms")
        assert [f"{record.name}: {record.getMessage()}" for record in caplog.records
                if record.levelno >= logging.WARNING and record.name in waiting] == []
    finally:
        await asyncio.to_thread(nodered.stop)


async def live_answer(nodered: NodeRed) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(
            f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"}) as answer:
        return await answer.json()


async def test_the_first_state_captured_is_listed_as_first_without_counts(history_client, history_nodered):
    later = await deploy_captured(history_client, history_nodered,
                                  changed(base_flows(), "a000000000000001", func="return null;"))
    listing = await (await history_client.get("/ai-sidebar/flow-history")).json()
    newest, oldest = listing["deploys"][0], listing["deploys"][-1]
    assert oldest["first"] is True and oldest["counts"] is None, oldest
    assert newest["rev"] == later and newest["first"] is False
    assert newest["counts"] == {"added": 0, "removed": 0, "changed": 1}
    assert all(deploy["first"] is False for deploy in listing["deploys"][:-1])


async def test_unknown_points_answer_coded_errors(history_client):
    answer = await history_client.get("/ai-sidebar/flow-history/diff", params={"from": "0123456789abcdef0123"})
    assert answer.status == 404 and (await answer.json())["error"]["code"] == "snapshot_not_found"
    answer = await history_client.get("/ai-sidebar/flow-history/diff", params={"from": "yesterday-ish"})
    assert answer.status == 400 and (await answer.json())["error"]["code"] == "history_point_invalid"
    answer = await history_client.get("/ai-sidebar/flow-history/diff", params={"from": "1999-01-01T00:00:00Z"})
    assert answer.status == 404 and (await answer.json())["error"]["code"] == "snapshot_not_found"
    answer = await history_client.get("/ai-sidebar/flow-history", params={"limit": "0"})
    assert answer.status == 400 and (await answer.json())["error"]["code"] == "invalid_request"


async def test_no_credential_or_secret_reaches_a_diff_or_the_database(history_client, history_nodered, tmp_path):
    before = await deploy_captured(history_client, history_nodered, base_flows())
    flows = base_flows() + [
        {"id": "c000000000000001", "type": "http request", "z": TAB_B, "name": "api", "method": "GET",
         "url": "https://api.example.com/v1", "headers": [{"keyType": "other", "keyValue": "Authorization",
                                                           "valueType": "other", "valueValue": f"Bearer {SECRET}"}],
         "x": 100, "y": 300, "wires": [[]]}]
    flows = changed(flows, "a000000000000001", func=f'const apiKey = "{SECRET}";\nreturn msg;')
    await deploy(history_nodered, flows)
    # the editor's deploy of a password credential: Node-RED keeps it in flows_cred.json, never in GET /flows
    current = await live(history_nodered)
    after = await deploy_captured(history_client, history_nodered, [
        {**node, "credentials": {"user": "bob", "password": PASSWORD}} if node["id"] == "c000000000000001"
        else node for node in current])
    answer = await history_client.get("/ai-sidebar/flow-history/diff", params={"from": before, "to": after})
    text = await answer.text()
    assert answer.status == 200 and "a000000000000001" in text and "c000000000000001" in text
    assert SECRET not in text and PASSWORD not in text
    database = sqlite3.connect(tmp_path / "memory.db")
    stored = " ".join(row[0] for row in database.execute("SELECT body FROM flow_history_parts"))
    database.close()
    assert PASSWORD not in stored and "credentials" not in stored
    assert SECRET not in stored  # the history keeps no secret, in properties or in code


def with_api_node(flows: list[dict[str, Any]], name: str = "api") -> list[dict[str, Any]]:
    """``flows`` with an http request node sending a secret header and a function holding the secret in code."""
    flows = changed(flows, "b000000000000001", func=f'const apiKey = "{SECRET}";\nreturn msg;')
    return flows + [
        {"id": "c000000000000002", "type": "http request", "z": TAB_B, "name": name, "method": "GET",
         "url": "https://api.example.com/v1", "headers": [{"keyType": "other", "keyValue": "Authorization",
                                                           "valueType": "other", "valueValue": f"Bearer {SECRET}"}],
         "x": 100, "y": 300, "wires": [[]]}]


async def test_a_restore_takes_the_secrets_back_from_the_deployed_nodes_and_names_those_it_cannot(
        history_client, history_nodered, tmp_path):
    good = await deploy_captured(history_client, history_nodered, with_api_node(base_flows()))
    renamed = changed(with_api_node(base_flows(), name="renamed api"), "c000000000000002",
                      url="https://api.example.com/v2")
    await deploy_captured(history_client, history_nodered, renamed)

    ctx = context(history_client)
    from service.history.tools import restore_flows, restore_preview
    preview = await restore_preview(ctx, {"to": good, "scope": "tab", "target_id": TAB_B})
    assert preview["warning"] is None and SECRET not in json.dumps(preview, default=str)
    output = await restore_flows(ctx, to=good, scope="tab", target_id=TAB_B)
    assert output.data["status"] == "deployed"
    now = {node["id"]: node for node in await live(history_nodered)}
    # the secrets of nodes still deployed come back whole (not the history's [redacted])
    assert now["c000000000000002"]["name"] == "api" and now["c000000000000002"]["url"].endswith("/v1")
    assert now["c000000000000002"]["headers"][0]["valueValue"] == f"Bearer {SECRET}"
    assert SECRET in now["b000000000000001"]["func"]

    # After a deploy that removed both, the history cannot know their secrets: the card says so.
    await deploy_captured(history_client, history_nodered, base_flows())
    preview = await restore_preview(ctx, {"to": good, "scope": "tab", "target_id": TAB_B})
    warning = preview["warning"]
    assert warning is not None and warning["key"] == "change.secrets_not_kept"
    assert "headers" in warning.english and "api" in warning.english and "func" in warning.english
    await restore_flows(ctx, to=good, scope="tab", target_id=TAB_B)
    now = {node["id"]: node for node in await live(history_nodered)}
    assert now["c000000000000002"]["headers"][0]["keyValue"] == "Authorization"
    assert SECRET not in json.dumps(now) and "[redacted]" in now["b000000000000001"]["func"]
    database = sqlite3.connect(tmp_path / "memory.db")
    stored = " ".join(row[0] for row in database.execute("SELECT body FROM flow_history_parts"))
    database.close()
    assert SECRET not in stored


async def test_the_model_answers_what_changed_since_a_time_from_the_diff(history_client, history_nodered, model):
    await deploy_captured(history_client, history_nodered, base_flows())
    since = time.time()
    await wait_for(lambda: asyncio.sleep(0.01, result=time.time() > since + 0.05), what="time passes")
    await deploy_captured(history_client, history_nodered,
                          changed(base_flows(), "a000000000000002", func="msg.payload = 'changed at 10:42';"))
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since)) + f".{int(since * 1000) % 1000:03d}Z"
    model.script(Reply(tool_calls=[{"name": "what_changed", "arguments": {"since": moment}}]),
                 Reply(text="The function node second changed."))
    response = await history_client.post("/ai-sidebar/stream-chat", json={
        "message": "What changed since 10:00?", "language": "en-US", "scenario": "general"})
    assert response.status == 200
    events = await read_events(response)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result
    sent = json.dumps(model.requests[-1]["messages"], ensure_ascii=False)
    assert "a000000000000002" in sent and "changed at 10:42" in sent and "func" in sent
    assert "a000000000000001" not in sent  # only what changed


async def test_restore_of_one_tab_after_later_deploys_changes_only_that_tab(history_client, history_nodered):
    good = await deploy_captured(history_client, history_nodered, base_flows())
    later = changed(base_flows(), "a000000000000001", func="throw new Error('broken');")
    later = changed(later, "b000000000000001", func="msg.beta = 2;\nreturn msg;")
    await deploy_captured(history_client, history_nodered, later)
    later = changed(later, "a000000000000003", name="later still")
    await deploy_captured(history_client, history_nodered, later)

    ctx = context(history_client)
    from service.history.tools import restore_flows, restore_preview
    preview = await restore_preview(ctx, {"to": good, "scope": "tab", "target_id": TAB_A})
    assert {c["id"] for c in preview["diff"]["changed"]} == {"a000000000000001", "a000000000000003"}
    assert "Alpha" in preview["summary"]
    output = await restore_flows(ctx, to=good, scope="tab", target_id=TAB_A)
    assert output.data["status"] == "deployed"
    now = {node["id"]: node for node in await live(history_nodered)}
    original = {node["id"]: node for node in base_flows()}
    for node_id in ("a000000000000001", "a000000000000002", "a000000000000003"):
        assert now[node_id]["func"] == original[node_id]["func"] and now[node_id]["name"] == original[node_id]["name"]
    assert now["b000000000000001"]["func"] == "msg.beta = 2;\nreturn msg;"  # the other tab kept as it is now
    store = history_for(history_client.app[NODERED]).store

    async def marked() -> Any:
        found = await store.snapshot(output.data["rev"])
        return found if found is not None and found.origin == "assistant" else None
    snapshot = await wait_for(marked, what="the restore recorded as the assistant's deploy")
    assert snapshot.detail["tool"] == "restore_flows"


async def test_restore_conflicts_when_someone_deployed_that_tab_meanwhile(history_client, history_nodered):
    good = await deploy_captured(history_client, history_nodered, base_flows())
    broken = changed(base_flows(), "a000000000000001", func="throw new Error('broken');")
    await deploy_captured(history_client, history_nodered, broken)
    ctx = context(history_client)
    from service.history.tools import restore_flows, restore_preview
    from service.nodered.write_tools import approval_key
    args = {"to": good, "scope": "tab", "target_id": TAB_A}
    shown = await restore_preview(ctx, args)
    ctx.approved[approval_key("restore_flows", args)] = shown["diff"]
    # someone deploys the other tab meanwhile: the approved restore still applies
    other = changed(broken, "b000000000000001", func="msg.other = true;\nreturn msg;")
    await deploy_captured(history_client, history_nodered, other)
    # and then that tab: the card no longer shows what a restore would overwrite
    meanwhile = changed(other, "a000000000000002", func="msg.fixed_by_hand = true;\nreturn msg;")
    await deploy_captured(history_client, history_nodered, meanwhile)
    with pytest.raises(ToolFailure) as failure:
        await restore_flows(ctx, **args)
    assert failure.value.code == "flows_conflict"
    now = {node["id"]: node for node in await live(history_nodered)}
    assert now["a000000000000002"]["func"] == "msg.fixed_by_hand = true;\nreturn msg;"  # nothing overwritten

    ctx.approved.clear()
    args_other = {"to": good, "scope": "node", "target_id": "a000000000000001"}
    ctx.approved[approval_key("restore_flows", args_other)] = (await restore_preview(ctx, args_other))["diff"]
    await deploy_captured(history_client, history_nodered,
                          changed(meanwhile, "b000000000000001", func="return null;"))
    assert (await restore_flows(ctx, **args_other)).data["status"] == "deployed"
    now = {node["id"]: node for node in await live(history_nodered)}
    assert now["a000000000000001"]["func"] == "return msg;" and now["b000000000000001"]["func"] == "return null;"


def workspace(tabs: int = 10, per_tab: int = 50) -> list[dict[str, Any]]:
    """A generated workspace of ``tabs`` × ``per_tab`` function nodes with realistic code, chained by wires."""
    flows: list[dict[str, Any]] = []
    for t in range(tabs):
        tab = f"{t:04x}000000000000"
        flows.append({"id": tab, "type": "tab", "label": f"Area {t}", "disabled": False, "info": ""})
        for n in range(per_tab):
            node_id = f"{t:04x}{n:012x}"
            following = [f"{t:04x}{n + 1:012x}"] if n + 1 < per_tab else []
            code = (f"// step {n} of area {t}: scale, validate and tag the reading\n"
                    f"const value = Number(msg.payload);\nif (Number.isNaN(value)) {{\n"
                    f"    node.warn('area {t} step {n}: not a number');\n    return null;\n}}\n"
                    f"msg.payload = value * {n + 1};\nmsg.topic = 'area/{t}/step/{n}';\nreturn msg;")
            flows.append(function(node_id, tab, f"area {t} step {n}", code, x=100 + 20 * n, y=40 + 10 * n,
                                  wires=following))
    return flows


@pytest.mark.timeout(600)
async def test_200_deploys_of_a_500_node_workspace_keep_under_5_percent_of_full_copies(history_client,
                                                                                     history_nodered):
    flows = workspace()
    assert sum(1 for node in flows if node["type"] == "function") == 500
    revs = [await deploy_captured(history_client, history_nodered, flows)]
    started = time.monotonic()
    full_copy = len(json.dumps(flows, separators=(",", ":")))
    for round_number in range(199):
        for k in range(3):  # a few nodes each deploy
            target = flows[1 + (round_number * 7 + k * 13) % 500 + (round_number * 7 + k * 13) % 500 // 50]
            if target["type"] == "function":
                target["func"] = target["func"] + f"\n// change {round_number}.{k}"
        revs.append(await deploy_captured(history_client, history_nodered, flows))
    elapsed = time.monotonic() - started
    store = history_for(history_client.app[NODERED]).store
    assert all([await store.has(rev) for rev in revs]) and len(set(revs)) == 200
    usage = await store.storage()
    ratio = usage["bytes"] / (200 * full_copy)
    assert ratio <= 0.05, (usage, full_copy, ratio)
    print(f"200 deploys captured in {elapsed:.1f} s; stored {usage} = {ratio:.2%} of 200 full copies")
    # every snapshot is whole again: the first and the last as deployed
    def by_id(flows: list[dict[str, Any]] | None) -> dict[str, Any]:
        return {node["id"]: node for node in flows or []}
    assert by_id(await store.flows(revs[-1])) == by_id(await live(history_nodered))


async def test_retention_keeps_the_newest_and_the_pinned(memory_target):
    db = await open_database(memory_target)
    store = await HistoryStore.open(db)
    for number in range(6):
        await store.save(f"rev{number}", [{"id": "t", "type": "tab", "label": f"v{number}"}], origin="editor",
                         at=1_000_000 + number)
    assert await store.pin("rev0", True)
    assert not await store.pin("missing", True)
    assert await store.apply_retention(keep=3, days=0) == 2
    assert [s.rev for s in await store.listing()] == ["rev5", "rev4", "rev3", "rev0"]
    assert await store.flows("rev0") == [{"id": "t", "type": "tab", "label": "v0"}]
    # age: everything older than a day goes, the pinned one stays
    assert await store.apply_retention(keep=100, days=1, now=1_000_005 + 86_400 * 2) == 3
    assert [s.rev for s in await store.listing()] == ["rev0"]
    assert (await store.storage())["parts"] == 2  # rev0's tab and manifest; the others collected
    await db.close()


@pytest.mark.postgres
async def test_replicas_on_postgresql_store_one_snapshot_per_rev(aiohttp_client, history_nodered, model, tmp_path,
                                                                 postgres_url):
    """Two replicas, each with its own comms connection (one reaches Node-RED as 127.0.0.1, the other as
    localhost), capture every deploy into one database: one row per rev, no failure."""
    clients = []
    for number, host in enumerate(("127.0.0.1", "localhost")):
        settings = settings_for(history_nodered, model, tmp_path / f"replica{number}").model_copy(update={
            "database_url": SecretStr(postgres_url),
            "nodered": NodeRedSettings(url=f"http://{host}:{history_nodered.port}")})
        clients.append(await aiohttp_client(create_app(settings)))
    stores = [history_for(client.app[NODERED]).store for client in clients]
    revs = []
    for round_number in range(5):
        revs.append(await deploy(history_nodered, changed(base_flows(), "a000000000000001",
                                                          func=f"return msg; // {round_number}")))
        for store in stores:
            async def captured(store=store, rev=revs[-1]) -> bool:
                return await store.has(rev)
            await wait_for(captured, what=f"both replicas saw {revs[-1]}")
    captures = [history_for(client.app[NODERED]) for client in clients]
    assert sum(capture.captured for capture in captures) >= 5  # the deploys were split between them or not
    rows = await stores[0].db.fetchall("SELECT rev, COUNT(*) AS n FROM flow_history_snapshots GROUP BY rev")
    assert all(row["n"] == 1 for row in rows) and {row["rev"] for row in rows} >= set(revs)
    listing = await (await clients[1].get("/ai-sidebar/flow-history")).json()
    assert [d["rev"] for d in listing["deploys"][:5]] == revs[::-1]


async def test_the_agent_restores_a_tab_only_after_the_user_approves_the_card(history_client, history_nodered,
                                                                              model):
    good = await deploy_captured(history_client, history_nodered, base_flows())
    broken = changed(base_flows(), "a000000000000001", func=f'const apiKey = "{SECRET}";\nthrow new Error("x");')
    await deploy_captured(history_client, history_nodered, broken)
    model.script(Reply(tool_calls=[{"name": "restore_flows", "arguments": {"to": good, "scope": "tab",
                                                                           "target_id": TAB_A}}]),
                 Reply(text="Restored the Alpha tab."))
    alice = {"X-Node-RED-User": "alice"}
    response = await history_client.post("/ai-sidebar/stream-chat", json={
        "message": "put the Alpha tab back as it was", "scenario": "general", "sessionId": "h1"}, headers=alice)
    events = await read_events(response)
    assert [e["type"] for e in events] == ["approval_required", "done"], events
    action = events[0]["actions"][0]
    assert action["tool"] == "restore_flows" and action["summary"].startswith('Restore tab "Alpha"')
    assert [(c["id"], list(c["properties"])) for c in action["diff"]["changed"]] == [("a000000000000001", ["func"])]
    assert SECRET not in json.dumps(events)  # the card shows the value it replaces redacted
    assert {n["id"]: n for n in await live(history_nodered)}["a000000000000001"]["func"] != "return msg;"
    resumed = await read_events(await history_client.post("/ai-sidebar/resume", json={
        "resumeToken": events[0]["resumeToken"], "decisions": [{"type": "approve"}]}, headers=alice))
    result = next(e for e in resumed if e["type"] == "tool_result")
    assert result["ok"] and result["result"].startswith('Deployed: Restore tab "Alpha"'), result
    assert {n["id"]: n for n in await live(history_nodered)}["a000000000000001"]["func"] == "return msg;"
    # The listing names the deploy's run (the one the approval card was for) and the approval that allowed it.
    run_id = events[0]["runId"]

    async def recorded() -> Any:
        listing = await (await history_client.get("/ai-sidebar/flow-history", headers=alice)).json()
        return next((d for d in listing["deploys"] if d["origin"] == "assistant"), None)
    deploy = await wait_for(recorded, what="the approved restore listed as the assistant's deploy")
    assert deploy["detail"]["tool"] == "restore_flows" and deploy["detail"]["runId"] == run_id, deploy
    machinery = history_client.app[APPROVALS].approvals
    assert machinery is not None
    approvals = await machinery.store._db.fetchall("SELECT approval_id FROM approval_runs WHERE run_id = ?",
                                                   (run_id,))
    assert deploy["detail"]["approvalId"] == approvals[0]["approval_id"]


async def test_a_restore_button_trigger_is_kept_and_named_by_its_display_text(history_client, history_nodered,
                                                                               model):
    good = await deploy_captured(history_client, history_nodered, base_flows())
    await deploy_captured(history_client, history_nodered, changed(base_flows(), "a000000000000001", name="later"))
    trigger = "@tools:restore_flows|" + json.dumps({"to": good, "scope": "tab", "target_id": TAB_A})
    shown = "Restore flow “Alpha” to 12/2/26, 10:42 AM"
    bob = {"X-Node-RED-User": "bob"}
    calls = len(model.requests)
    events = await read_events(await history_client.post("/ai-sidebar/stream-chat", json={
        "message": trigger, "display": shown, "scenario": "general", "sessionId": "h-display"}, headers=bob))
    assert events[0]["type"] == "approval_required", events
    assert len(model.requests) == calls  # the trigger ran without the model

    messages = (await (await history_client.get("/ai-sidebar/history/h-display", headers=bob)).json())["messages"]
    assert messages[0]["role"] == "user" and messages[0]["content"] == shown, messages
    assert trigger not in json.dumps(messages)
    sessions = (await (await history_client.get("/ai-sidebar/sessions", headers=bob)).json())["sessions"]
    assert [s["name"] for s in sessions if s["id"] == "h-display"] == [shown]
    # Approved: the answer after the restore is asked with the words the user saw.
    resumed = await read_events(await history_client.post("/ai-sidebar/resume", json={
        "resumeToken": events[0]["resumeToken"], "decisions": [{"type": "approve"}]}, headers=bob))
    assert next(e for e in resumed if e["type"] == "tool_result")["ok"], resumed
    assert len(model.requests) == calls + 1
    sent = json.dumps(model.requests[-1]["messages"], ensure_ascii=False)
    assert shown in sent and "@tools:" not in sent

    # Any other message is kept as it was typed.
    await read_events(await history_client.post("/ai-sidebar/stream-chat", json={
        "message": "hello", "display": "not this",
        "scenario": "general", "sessionId": "h-typed"}, headers=bob))
    messages = (await (await history_client.get("/ai-sidebar/history/h-typed", headers=bob)).json())["messages"]
    assert messages[0]["content"] == "hello"
