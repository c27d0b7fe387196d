"""AI_SIDEBAR_WORKERS (issue 23): several service processes answer on one port, and SIGTERM stops them all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from service.__main__ import run as run_service
from service.workers import worker_count
from tests.conftest import TEST_API_KEY
from tests.support.health import START_TIMEOUT, wait_healthy
from tests.support.model_server import Reply
from tests.support.nodered import REPO, free_port

SERVICE_TOKEN = "workers-test-token-0123456789abcdef"


def parent_of(pid: int) -> int:
    """The parent pid from ``/proc/<pid>/stat`` (field 4, proc(5))."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return int(text[text.rfind(")") + 2:].split()[1])


def health(port: int) -> dict:
    # A new connection per request (no keep-alive): the kernel picks a listening socket per connection.
    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz", headers={"Connection": "close"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def start_two_workers(env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, set[int]]:
    """Start the service with ``env`` (AI_SIDEBAR_WORKERS=2, AI_SIDEBAR_PORT set), its output in ``log_path``, and
    wait until both workers have answered ``/healthz``; returns the supervisor and the workers' pids. The caller
    stops the supervisor."""
    port = int(env["AI_SIDEBAR_PORT"])
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=REPO)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", process, START_TIMEOUT, 0.2)
        # The second worker starts once the first has opened the database: ask until it answers too.
        pids: set[int] = set()
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline and process.poll() is None:
            pids.add(health(port)["pid"])
        assert len(pids) == 2, f"one pid only within 60 s: {pids}\n{log_path.read_text()[-2000:]}"
    except BaseException:
        process.kill()
        process.wait(10)
        raise
    return process, pids


def test_two_workers_answer_on_one_port_from_two_pids_and_stop_on_sigterm(nodered, model_server, tmp_path):
    port = free_port()
    env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "AI_SIDEBAR_WORKERS": "2",
           "NODE_RED_URL": nodered.url, "OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": TEST_API_KEY,
           "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "MCP_TOOLS_ENABLED": "false"}
    log_path = tmp_path / "service.log"
    process, pids = start_two_workers(env, log_path)
    try:
        assert process.pid not in pids
        assert all(parent_of(pid) == process.pid for pid in pids)

        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log_path.read_text()[-2000:]
        assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_without_the_setting_the_service_is_one_process_that_answers_itself(nodered, model_server, tmp_path):
    # Issue 33: the default was one worker per usable CPU, so a service started by the plugin on a 4-core Raspberry
    # Pi forked four workers (over a GB with their MCP children). Without AI_SIDEBAR_WORKERS it is one process now.
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "AI_SIDEBAR_WORKERS"}
    env.update({"AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "NODE_RED_URL": nodered.url,
                "OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": TEST_API_KEY,
                "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "MCP_TOOLS_ENABLED": "false"})
    log_path = tmp_path / "service.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=REPO)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", process, START_TIMEOUT, 0.2)
        assert {health(port)["pid"] for _ in range(4)} == {process.pid}, log_path.read_text()[-2000:]
        assert children_of(process.pid) == []
    finally:
        process.terminate()
        process.wait(60)


def children_of(pid: int) -> list[int]:
    """The child pids of ``pid`` (``/proc/<pid>/task/<tid>/children``, proc(5))."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:  # that thread ended while we looked (the supervisor's threads come and go)
            continue
    return found


def times_open(pid: int, name: str) -> int:
    """How many descriptors of process ``pid`` are open on a file named ``name`` (``/proc/<pid>/fd``)."""
    try:
        return sum(os.readlink(f"/proc/{pid}/fd/{fd}").endswith("/" + name) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:  # it ended, or closed a descriptor while we looked
        return 0


def test_with_two_workers_on_sqlite_the_per_user_stream_limit_counts_the_streams_of_both(nodered, model, tmp_path):
    """AI_SIDEBAR_MAX_STREAMS_PER_USER=1 and ten questions of one user at once, each on its own connection (the
    kernel spreads them over both workers): exactly one is answered, nine get 429. Counted in each process alone,
    each worker would answer one."""
    port = free_port()
    env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "AI_SIDEBAR_WORKERS": "2",
           "AI_SIDEBAR_MAX_STREAMS_PER_USER": "1", "NODE_RED_URL": nodered.url, "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": TEST_API_KEY, "MEMORY_DB_PATH": str(tmp_path / "memory.db"),
           "MCP_TOOLS_ENABLED": "false",
           # No background writers: a write holding SQLite's lock past its busy timeout makes the limiter count in
           # its own process (a documented fallback: chat goes on when the database cannot be written), which is not
           # what this test is about; under load the flow history's and the knowledge index's first writes did.
           "AI_SIDEBAR_FLOW_HISTORY": "false", "AI_SIDEBAR_KNOWLEDGE_REFRESH": "0"}
    # The answered stream stays open (the model "still thinking" after one piece) until every question has its
    # status: no question can come after it ended, however slowly a busy machine starts the threads.
    model.default = Reply(text="one two three", hold_after=1)
    process, _ = start_two_workers(env, tmp_path / "service.log")
    opened: list[Any] = []
    try:
        def ask(_: int) -> int:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/ai-sidebar/stream-chat", method="POST",
                data=json.dumps({"message": "hello"}).encode(),
                headers={"Authorization": f"Bearer {SERVICE_TOKEN}", "Content-Type": "application/json",
                         "Connection": "close"})
            try:
                answer = urllib.request.urlopen(request, timeout=120)  # returns with the headers
            except urllib.error.HTTPError as err:
                err.read()
                return err.code
            opened.append(answer)
            return answer.status

        with ThreadPoolExecutor(10) as pool:
            statuses = sorted(pool.map(ask, range(10)))
        for answer in opened:
            answer.close()
        # the log without its access lines: a warning says why a worker counted alone
        said = [line for line in (tmp_path / "service.log").read_text().splitlines() if '"POST /ai-sidebar' not in
                line and '"GET /healthz' not in line]
        assert statuses == [200] + [429] * 9, (statuses, "\n".join(said[-40:]))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def test_a_stop_while_the_second_worker_starts_ends_both_workers_and_the_supervisor_with_0(nodered, model, tmp_path):
    # The hang of issue 23: the first worker answers while the second is still starting, and a SIGTERM then reached
    # the second in the middle of its start. aiohttp's run_app skipped its cleanup, the memory database's
    # connections (their threads are not daemons) were never closed, the worker never exited, and the supervisor
    # waited for it until it killed it STOP_GRACE seconds later. The stop is sent as soon as the second worker has
    # opened the memory database (its start has begun), in each of three runs.
    env = {**os.environ, "AI_SIDEBAR_TOKEN": SERVICE_TOKEN, "AI_SIDEBAR_WORKERS": "2",
           "NODE_RED_URL": nodered.url, "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": TEST_API_KEY,
           "MEMORY_DB_PATH": str(tmp_path / "memory.db"), "MCP_TOOLS_ENABLED": "false"}
    log_path = tmp_path / "service.log"
    for run in range(3):
        port = free_port()
        with log_path.open("ab") as log:
            process = subprocess.Popen([sys.executable, "-m", "service"], env={**env, "AI_SIDEBAR_PORT": str(port)},
                                       stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            workers: list[int] = []
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and process.poll() is None:
                workers = sorted(children_of(process.pid))  # the second is forked once the first has started
                if len(workers) == 2 and times_open(workers[1], "memory.db"):
                    break
                time.sleep(0.002)
            assert len(workers) == 2, log_path.read_text()[-3000:]
            process.send_signal(signal.SIGTERM)
            assert process.wait(90) == 0, f"run {run}: " + log_path.read_text()[-3000:]
            assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    assert "did not stop" not in log_path.read_text()


# Two workers that ignore SIGTERM, under the service's supervisor with a grace period of 1 s (instead of 30).
STUCK_WORKERS = """
import logging, signal, sys, time
from service import workers
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
workers.STOP_GRACE = 1.0

def serve(ready):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if ready is not None:
        ready.set()
    while True:
        time.sleep(3600)

sys.exit(workers.supervise(2, serve))
"""


def ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (the ``SigIgn`` mask of ``/proc/<pid>/status``, proc(5))."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in text.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


def state_of(pid: int) -> str:
    """The state letter of process ``pid`` (``/proc/<pid>/stat`` field 3, proc(5)): ``S`` while it sleeps."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rfind(")") + 2]


def test_workers_that_ignore_the_stop_are_killed_after_the_grace_period_and_the_supervisor_exits_with_1(tmp_path):
    # A signal handler that runs while a wait waits does not end the wait: Python retries it with its original
    # timeout (PEP 475). The supervisor waited for its workers without a timeout until the stop, so a SIGTERM that
    # came during that wait (where the supervisor spends its life) left it waiting for ever for workers that did not
    # stop: the grace period never began, and nothing was killed. The stop is sent once the supervisor sleeps in
    # that wait, both workers ignoring SIGTERM.
    log_path = tmp_path / "supervisor.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-c", STUCK_WORKERS], stdout=log, stderr=subprocess.STDOUT,
                                   cwd=REPO)
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            workers = children_of(process.pid)
            if ("2 workers on one port" in log_path.read_text() and len(workers) == 2
                    and all(ignores_sigterm(pid) for pid in workers) and state_of(process.pid) == "S"):
                break
            time.sleep(0.01)
        assert len(workers) == 2 and all(ignores_sigterm(pid) for pid in workers), log_path.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 1, log_path.read_text()
        assert log_path.read_text().count("did not stop within 1.0 s; killed") == 2, log_path.read_text()
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for pid in workers:  # the workers of a supervisor killed here
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


def test_worker_count_is_the_setting_else_one_whatever_the_cpus_and_one_on_port_zero():
    # One by default (issue 33): a plugin-started service on a 4-core Raspberry Pi took four workers, over a GB.
    assert worker_count(3, 8765) == 3
    assert worker_count(None, 8765) == 1
    assert worker_count(4, 0) == 1


async def test_a_start_that_fails_midway_still_cleans_up_what_it_had_opened():
    # A worker whose start raised after its memory database was open never closed it: the connection's thread (not
    # a daemon) kept the worker alive after asyncio.run ended, and the supervisor, waiting for it to be ready,
    # waited for ever. Here a cleanup context raises after an earlier one has started.
    app = web.Application()
    closed = []

    async def opened(app: web.Application):
        yield
        closed.append("opened")

    async def broken(app: web.Application):
        raise RuntimeError("cannot start")
        yield

    app.cleanup_ctx.extend([opened, broken])
    with pytest.raises(RuntimeError, match="cannot start"):
        await run_service(app, "127.0.0.1", free_port(), False)
    assert closed == ["opened"]
