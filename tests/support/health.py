"""Waiting for a process started by a test (the service, the MCP server over HTTP) to answer its health route."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request

# Seconds a test waits for a Python process it started (the service, the MCP server over HTTP) to answer: a bound on
# a hang, not a measure of speed (a process that exits is noticed at once). Quiet, the service answers /healthz in
# about 2 s; on the 2-core CI machine with make test's three passes and two `yes` burners beside it (load average
# 10-14) it took 16 s on 2026-12-02, and imports of LangChain dominate it, so 30 s failed a whole pass. Issue 32:
# the suite must hold on a busy machine.
START_TIMEOUT = 180.0


def wait_healthy(url: str, process: subprocess.Popen | None, timeout: float, interval: float = 0.01) -> float:
    """Poll ``url`` until it answers 200; returns the monotonic time it did.

    Raises:
        RuntimeError: ``process`` exited first, or ``timeout`` seconds passed (generous values: a loaded machine
            starts a Python service in seconds, not milliseconds).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return time.monotonic()
        except (OSError, urllib.error.HTTPError):
            pass
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        time.sleep(interval)
    raise RuntimeError(f"{url} did not answer 200 within {timeout} s")


# Seconds a test's teardown gives a process it started to stop after SIGTERM (the service closes its database, the
# MCP server and its Node-RED sessions first): a fresh clone's make test beside two `yes` burners (load average 14,
# 2026-12-02) saw the service take over 10 s, which failed a whole pass at teardown. Then it is killed.
STOP_TIMEOUT = 60.0


def stop_process(process: subprocess.Popen, timeout: float = STOP_TIMEOUT) -> None:
    """Stop a process a test started: SIGTERM, up to ``timeout`` seconds for it to exit, then SIGKILL. A teardown's
    cleanup, not a check of a graceful stop (tests/test_workers.py and tests/test_faults.py check that)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
