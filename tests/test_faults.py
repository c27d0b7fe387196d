"""Faults: each ends the stream with exactly one error event and done, and leaks nothing."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sqlite3
from collections.abc import Iterator

import aiohttp
import psycopg
import pytest
from aiohttp import web

from service.identity import ANONYMOUS
from service.memory.db import BUSY_TIMEOUT_MS
from service.nodered.settings import NodeRedSettings
from service.web.app import create_app
from service.web.keys import LIMITER, STREAMS
from tests.conftest import SERVICE_TOKEN
from tests.support.health import START_TIMEOUT, STOP_TIMEOUT, wait_healthy
from tests.support.model_server import Reply
from tests.support.sse import iter_events, read_events


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


def kinds(events):
    return [e["type"] for e in events]


@pytest.fixture
async def slow_nodered(aiohttp_server):
    """A Node-RED that accepts connections but answers nothing for 30 seconds."""
    async def hang(request):
        await asyncio.sleep(30)
        return web.json_response({})
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hang)
    return await aiohttp_server(app)


async def test_slow_node_red_times_out_with_one_error_and_the_model_still_answers(aiohttp_client, settings, model,
                                                                                 slow_nodered):
    slow = settings.model_copy(update={"nodered": NodeRedSettings(url=str(slow_nodered.make_url("")), timeout=0.5)})
    client = await aiohttp_client(create_app(slow))
    events = await chat(client, message="explain the current flow", selectedFlow={"id": "t1"})
    assert kinds(events).count("error") == 1
    assert next(e for e in events if e["type"] == "error")["code"] == "nodered_timeout"
    assert "token" in kinds(events) and kinds(events)[-1] == "done"


@contextlib.contextmanager
def write_lock(settings) -> Iterator[None]:
    """Hold, from a connection of the test's own, the lock a turn's save needs: SQLite's database write lock (an
    exclusive transaction), or on PostgreSQL an EXCLUSIVE lock on ``short_term_memory``, which lets reads through as
    SQLite's WAL does and makes writes wait (https://www.postgresql.org/docs/current/explicit-locking.html)."""
    target = settings.memory_target()
    if isinstance(target, str):  # DATABASE_URL: PostgreSQL
        with psycopg.connect(target, options=f"-c lock_timeout={BUSY_TIMEOUT_MS}") as conn:  # never a hang
            conn.execute("LOCK TABLE short_term_memory IN EXCLUSIVE MODE")  # a transaction open until rollback
            try:
                yield
            finally:
                conn.rollback()
    else:
        with contextlib.closing(sqlite3.connect(target, timeout=0.1)) as conn:
            conn.execute("BEGIN EXCLUSIVE")
            try:
                yield
            finally:
                conn.rollback()


async def test_locked_database_gives_one_memory_error_before_done(aiohttp_client, backend_settings, model):
    """A write waits at most BUSY_TIMEOUT_MS for a lock another connection holds (SQLite's busy_timeout,
    PostgreSQL's lock_timeout), then the turn ends with the answer, one memory_unavailable and done."""
    client = await aiohttp_client(create_app(backend_settings))
    await chat(client, message="first", sessionId="lock")  # creates the database
    with write_lock(backend_settings):
        events = await chat(client, message="second", sessionId="lock")
    assert kinds(events)[-2:] == ["error", "done"] and events[-2]["code"] == "memory_unavailable"
    # One error, the memory's: the agent's checkpointer failing on the lock is not the model's fault (llm_error).
    assert [e["code"] for e in events if e["type"] == "error"] == ["memory_unavailable"]
    assert "token" in kinds(events) and kinds(events).index("token") < kinds(events).index("error")
    # the service keeps serving once the lock is gone, and saves the turn
    third = await chat(client, message="third", sessionId="lock")
    assert "error" not in kinds(third) and kinds(third)[-1] == "done"
    history = await (await client.get("/ai-sidebar/history/lock")).json()
    questions = [m["content"] for m in history["messages"] if m["role"] == "user"]
    assert questions == ["first", "third"]


def rename_table(settings, old: str, new: str) -> None:
    """Rename a table of the service's memory database from a connection of the test's own. The connection is
    synchronous on purpose: the service shares the test's event loop and waits until the rename is done."""
    target = settings.memory_target()
    if isinstance(target, str):  # DATABASE_URL: PostgreSQL
        # lock_timeout: never a hang
        with psycopg.connect(target, autocommit=True, options=f"-c lock_timeout={BUSY_TIMEOUT_MS}") as conn:
            conn.execute(f"ALTER TABLE {old} RENAME TO {new}")
    else:
        with contextlib.closing(sqlite3.connect(target, timeout=5)) as conn:
            conn.execute(f"ALTER TABLE {old} RENAME TO {new}")


async def test_a_checkpointer_failing_mid_turn_gives_one_memory_error_after_the_answer(aiohttp_client, backend_settings,
                                                                                     model):
    """The agent's LangGraph checkpointer (AsyncSqliteSaver, or AsyncPostgresSaver on the psycopg pool) writes the
    run's checkpoint when the run ends; its table gone by then, the driver's error is the memory's fault, not the
    model's, on both backends."""
    client = await aiohttp_client(create_app(backend_settings))
    await chat(client, message="first", sessionId="ckpt")  # opens the database and the checkpointer's tables
    model.default = Reply(text=" ".join(["word"] * 12), token_delay=0.02)
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "second", "sessionId": "ckpt"})
    assert response.status == 200, await response.text()
    events: list[dict] = []
    try:
        async for event in iter_events(response):
            if event["type"] == "token" and "token" not in kinds(events):
                rename_table(backend_settings, "checkpoints", "checkpoints_away")  # while the model still answers
            events.append(event)
    finally:
        rename_table(backend_settings, "checkpoints_away", "checkpoints")
    assert kinds(events)[-2:] == ["error", "done"] and events[-2]["code"] == "memory_unavailable"
    assert [e["code"] for e in events if e["type"] == "error"] == ["memory_unavailable"]  # no llm_error
    assert "".join(e["content"] for e in events if e["type"] == "token").split() == ["word"] * 12  # the whole answer
    # the table back, the next turn is checkpointed again
    again = await chat(client, message="third", sessionId="ckpt")
    assert "error" not in kinds(again) and kinds(again)[-1] == "done"


async def test_a_hundred_faulted_streams_leave_no_task_stream_or_slot_behind(aiohttp_client, settings, model):
    app = create_app(settings)
    client = await aiohttp_client(app)
    model.default = Reply(status=401, error_message="bad key")
    await chat(client, message="warm up")
    baseline = len([t for t in asyncio.all_tasks() if not t.done()])
    for _ in range(100):
        events = await chat(client, message="hello")
        assert kinds(events) == ["error", "done"]
    await asyncio.sleep(0.1)
    gc.collect()
    assert len([t for t in asyncio.all_tasks() if not t.done()]) <= baseline
    assert len(app[STREAMS]) == 0
    assert app[LIMITER].open_streams(ANONYMOUS.principal) == 0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def test_a_hundred_disconnects_mid_stream_leave_no_connection_open(service_process, model):
    """Against the service as a process: its open file descriptors (sockets included) come back to the baseline."""
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "X-Node-RED-User": "leaver"}
    model.default = Reply(text=" ".join(["word"] * 40), token_delay=0.05)
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/ai-sidebar/stream-chat", headers=headers, json={"message": "warm up"}) as r:
            await r.read()
        before = open_fds(service_process.pid)
        for _ in range(100):
            response = await http.post(f"{base}/ai-sidebar/stream-chat", headers=headers, json={"message": "hi"})
            async for line in response.content:
                if b'"token"' in line:
                    break
            response.close()
        after = before + 100
        for _ in range(60):  # each cancelled run closes its model connection within the poll interval
            after = open_fds(service_process.pid)
            if after <= before + 2:
                break
            await asyncio.sleep(0.25)
        async with http.get(f"{base}/healthz") as health:
            assert health.status == 200
    assert after <= before + 2


async def test_per_user_stream_limit_is_a_clear_429_and_other_users_are_served(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"max_streams_per_user": 2})))
    model.default = Reply(text="slow answer here", token_delay=0.5)
    erin = {"X-Node-RED-User": "erin"}
    open_streams = [await client.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
                    for _ in range(2)]
    refused = await client.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
    assert refused.status == 429 and (await refused.json())["error"]["code"] == "too_many_requests"
    other = await client.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers={"X-Node-RED-User": "finn"})
    assert other.status == 200
    for response in open_streams + [other]:
        assert kinds(await read_events(response))[-1] == "done"
    again = await client.post("/ai-sidebar/stream-chat", json={"message": "hi"}, headers=erin)
    assert again.status == 200
    await read_events(again)


async def test_service_shutdown_mid_answer_is_clean_and_keeps_the_partial_answer(nodered, model, tmp_path):
    import signal
    import subprocess
    import sys

    from tests.support.nodered import REPO, free_port

    port, db, log_path = free_port(), tmp_path / "memory.db", tmp_path / "service.log"
    env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "NODE_RED_URL": nodered.url, "MEMORY_DB_PATH": str(db),
           "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test-shutdown-key-000000", "MCP_TOOLS_ENABLED": "0"}
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], env=env, cwd=REPO, stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(wait_healthy, f"{base}/healthz", process, START_TIMEOUT, 0.1)
        async with aiohttp.ClientSession() as http:
            model.script(Reply(text="first second third", token_delay=1.0))
            response = await http.post(f"{base}/ai-sidebar/stream-chat", json={"message": "slow", "sessionId": "sd"})
            async for line in response.content:
                if b'"token"' in line:
                    break
            process.send_signal(signal.SIGTERM)
            rest = await response.content.read()
        assert process.wait(STOP_TIMEOUT) == 0  # a graceful stop: generous on a busy machine
    finally:
        if process.poll() is None:
            process.kill()
    text = log_path.read_text()
    assert "Traceback" not in text and "llm_error" not in text, text
    assert b"llm_error" not in rest
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT message_type, content, metadata FROM short_term_memory ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["user", "assistant"] and rows[1][1] == "first "
    assert '"stopped": true' in rows[1][2]
