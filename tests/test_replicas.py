"""Two service replicas on one PostgreSQL database (issue 23): what one writes the other reads, a resume token of
one resumes on the other, and the per-user stream limit counts the streams of both. The replicas are two apps of
``create_app`` in this process with the same ``DATABASE_URL`` (each its own knowledge index file, as on two
machines)."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
import urllib.request

import pytest
from pydantic import SecretStr

from service.errors import ServiceError
from service.memory.store import MemoryStore
from service.memory.streams import OpenStreams
from service.settings import NodeRedSettings, Settings
from service.web import limits
from service.web.app import create_app
from service.web.limits import StreamLimiter
from tests.conftest import SERVICE_SECRET, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, example_flows, free_port
from tests.support.sse import read_events

ALICE = {"X-Node-RED-User": "alice"}
BOB = {"X-Node-RED-User": "bob"}


@pytest.fixture(scope="module")
def writable_nodered(tmp_path_factory):
    """A Node-RED of this module's own: a resumed run deploys to it."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-replicas"), port=free_port(),
                       flows=example_flows(("common/inject/02 - Trigger a flow at regular intervals.json",)),
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def replica_settings(writable_nodered, model, tmp_path, postgres_url) -> Settings:
    return Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=writable_nodered.url),
                    openai_base_url=model.base_url,
                    openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "a" / "knowledge.db",
                    database_url=SecretStr(postgres_url), mcp_tools_enabled=False, knowledge_refresh=0)


@pytest.fixture
async def replicas(aiohttp_client, replica_settings, tmp_path):
    """Two test clients, each its own app on the one database."""
    other = replica_settings.model_copy(update={"memory_db_path": tmp_path / "b" / "knowledge.db"})
    return await aiohttp_client(create_app(replica_settings)), await aiohttp_client(create_app(other))


async def events_of(response) -> list[dict]:
    assert response.status == 200, await response.text()
    return await read_events(response)


def tab_labels(nodered) -> list[str]:
    request = urllib.request.Request(f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return [n.get("label") for n in json.loads(answer.read())["flows"] if n.get("type") == "tab"]


async def test_a_turn_written_through_one_replica_is_in_the_history_read_through_the_other(replicas, model):
    one, two = replicas
    model.script(Reply(text="A catch node scoped to the function node."), Reply(text="Yes, the same one."))
    await events_of(await one.post("/ai-sidebar/stream-chat", headers=ALICE,
                                   json={"message": "How do I catch persimmon errors?", "sessionId": "shared"}))
    history = await (await two.get("/ai-sidebar/history/shared", headers=ALICE)).json()
    assert [m["content"] for m in history["messages"]] == ["How do I catch persimmon errors?",
                                                          "A catch node scoped to the function node."]
    # the follow-up on the other replica goes to the model with the first turn
    await events_of(await two.post("/ai-sidebar/stream-chat", headers=ALICE,
                                   json={"message": "The same for HTTP?", "sessionId": "shared"}))
    sent = [m["content"] for m in model.requests[-1]["messages"]]
    assert "How do I catch persimmon errors?" in sent and "A catch node scoped to the function node." in sent
    found = (await (await one.post("/ai-sidebar/search", json={"query": "persimmon"}, headers=ALICE)).json())
    assert [r["sessionId"] for r in found["results"]] == ["shared"]
    assert (await two.get("/ai-sidebar/history/shared", headers=BOB)).status == 404


async def test_a_resume_token_from_one_replica_resumes_on_the_other(replicas, model, writable_nodered):
    one, two = replicas
    label = f"Replica tab {time.time_ns()}"
    model.script(Reply(tool_calls=[{"name": "create_tab", "arguments": {"label": label}}]),
                 Reply(text="The tab is there."))
    approval, done = await events_of(await one.post("/ai-sidebar/stream-chat", headers=ALICE,
                                                    json={"message": "make a tab", "sessionId": "w"}))
    assert approval["type"] == "approval_required" and done["status"] == "awaiting_approval"
    pending = (await (await two.get("/ai-sidebar/approvals", headers=ALICE)).json())["pending"]
    assert [run["runId"] for run in pending] == [approval["runId"]]

    body = {"resumeToken": approval["resumeToken"], "decisions": [{"type": "approve"}]}
    resumed = await events_of(await two.post("/ai-sidebar/resume", json=body, headers=ALICE))
    assert [e["type"] for e in resumed][:2] == ["tool_call", "tool_result"] and resumed[1]["ok"] is True
    assert "".join(e["content"] for e in resumed if e["type"] == "token") == "The tab is there."
    assert label in tab_labels(writable_nodered)
    again = await one.post("/ai-sidebar/resume", json=body, headers=ALICE)  # used once, on either replica
    assert again.status == 409 and (await again.json())["error"]["code"] == "approval_used"
    audit = (await (await one.get("/ai-sidebar/approvals", headers=ALICE)).json())["audit"]
    assert [(a["tool"], a["decision"]) for a in audit] == [("create_tab", "approve")]
    history = await (await one.get("/ai-sidebar/history/w", headers=ALICE)).json()
    assert history["messages"][-1]["content"] == "The tab is there."


async def test_the_per_user_stream_limit_counts_the_streams_of_both_replicas(aiohttp_client, replica_settings,
                                                                             tmp_path, model):
    limited = replica_settings.model_copy(update={"max_streams_per_user": 2})
    one = await aiohttp_client(create_app(limited))
    two = await aiohttp_client(create_app(limited.model_copy(update={"memory_db_path": tmp_path / "b.db"})))
    model.default = Reply(text="slow answer here", token_delay=0.5)
    erin = {"X-Node-RED-User": "erin"}
    first = await one.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
    second = await two.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
    assert (first.status, second.status) == (200, 200)
    for replica in (one, two):
        refused = await replica.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
        assert refused.status == 429
        assert (await refused.json())["error"]["code"] == "too_many_requests"
    other = await two.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers={"X-Node-RED-User": "finn"})
    assert other.status == 200
    for response in (first, second, other):
        assert (await read_events(response))[-1]["type"] == "done"
    again = await two.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
    assert again.status == 200
    await read_events(again)
    store = await MemoryStore.open(limited.memory_target())
    try:
        # Every row is deleted at its stream's end: when the handler leaves its slot, just after the stream's last
        # byte reached the client, so a loaded machine may still be deleting. 30 s: far beyond a database write.
        started = time.monotonic()
        while True:
            left = await OpenStreams(store.db).count(("user", "erin"))
            if not left or time.monotonic() - started > 30:
                break
            await asyncio.sleep(0.05)
        assert left == 0
    finally:
        await store.close()


async def test_the_streams_of_a_replica_that_stopped_refreshing_them_age_out(memory_target):
    store = await MemoryStore.open(memory_target)
    dead, alive = OpenStreams(store.db, "dead"), OpenStreams(store.db, "alive")
    erin = ("user", "erin")
    try:
        assert all([await dead.open(erin, 2) for _ in range(2)]) and await dead.count(erin) == 2
        assert await alive.open(erin, 2) is None
        # the dead replica's last heartbeat was a minute ago: its rows have expired
        await store.db.write([("UPDATE open_streams SET expires_at = ? WHERE replica = 'dead'", (time.time() - 1,))])
        row = await alive.open(erin, 2)
        assert row is not None and await alive.count(erin) == 1
        await alive.heartbeat()
        expiry = await store.db.scalar("SELECT expires_at FROM open_streams WHERE id = ?", (row,))
        assert expiry > time.time() + alive.ttl - 5
        # the heartbeat deleted the dead replica's expired rows
        assert await store.db.scalar("SELECT COUNT(*) FROM open_streams WHERE replica = 'dead'") == 0
        await alive.forget_replica()
        assert await alive.count(erin) == 0
    finally:
        await store.close()


async def test_two_replicas_never_both_take_the_last_slot(postgres_url):
    stores = [await MemoryStore.open(postgres_url) for _ in range(2)]
    try:
        replicas = [OpenStreams(s.db) for s in stores]
        taken = await asyncio.gather(*(replicas[i % 2].open(("user", "erin"), 3) for i in range(10)))
        assert sum(row is not None for row in taken) == 3
    finally:
        for s in stores:
            await s.close()



async def test_a_stream_waits_out_a_contended_sqlite_file_and_is_counted_across_workers(tmp_path, monkeypatch, caplog):
    """Two workers on one SQLite file (AI_SIDEBAR_WORKERS): another process holding the write lock past the busy
    timeout is contention, not a broken database; the stream is asked for again and counted in the file, so that
    the other worker refuses the same user's next one. Held past the limiter's patience, it is counted alone."""
    monkeypatch.setattr("service.memory.db.BUSY_TIMEOUT_MS", 100)
    path = tmp_path / "memory.db"
    stores = [await MemoryStore.open(path) for _ in range(2)]
    limiters = [StreamLimiter(1), StreamLimiter(1)]
    for limiter, store in zip(limiters, stores, strict=True):
        limiter.share(OpenStreams(store.db))
    erin = ("user", "erin")
    other = sqlite3.connect(path, isolation_level=None)  # a third writer: another worker in the middle of a write
    caplog.set_level(logging.INFO, logger="service.web.limits")

    async def hold(limiter: StreamLimiter, entered: asyncio.Event, release: asyncio.Event) -> None:
        async with limiter.slot(erin):
            entered.set()
            await release.wait()

    async def said(words: str, task: asyncio.Task, entered: asyncio.Event) -> None:
        while not any(words in record.getMessage() for record in caplog.records):
            assert not task.done() and not entered.is_set(), "the stream went on without being counted in the file"
            await asyncio.sleep(0.02)  # polling the log for a state, not waiting a duration

    try:
        other.execute("BEGIN IMMEDIATE")
        entered, release = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(hold(limiters[0], entered, release))
        await said("asking again", task, entered)  # the first attempt waited out the busy timeout
        other.execute("ROLLBACK")
        await entered.wait()
        assert await OpenStreams(stores[1].db).count(erin) == 1
        with pytest.raises(ServiceError) as refused:
            async with limiters[1].slot(erin):
                pass
        assert refused.value.code == "too_many_requests" and refused.value.status == 429
        assert not any("not counted across" in record.getMessage() for record in caplog.records)
        release.set()
        await task
        # held for longer than the limiter's patience: the stream goes on, counted in its own process
        monkeypatch.setattr(limits, "SHARED_PATIENCE", 0.3)
        other.execute("BEGIN IMMEDIATE")
        entered, release = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(hold(limiters[1], entered, release))
        await entered.wait()
        assert any("not counted across" in record.getMessage() for record in caplog.records)
        assert limiters[1].open_streams(erin) == 1
        release.set()
        await task
    finally:
        other.close()
        for store in stores:
            await store.close()
