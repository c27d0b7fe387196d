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
