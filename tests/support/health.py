"""Waiting for a process started by a test (the service, the MCP server over HTTP) to answer its health route."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request


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
