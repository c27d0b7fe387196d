"""Several service processes on one port (``AI_SIDEBAR_WORKERS``): each worker is a forked copy of this process
with its own event loop, listening on the same address with ``SO_REUSEPORT`` (the kernel spreads new connections
over the listening sockets; Linux ``socket(7)``), so one machine's cores all serve streams.

The first worker opens (and migrates) the memory database before the others start, so that they never migrate it
at the same time. The supervisor forwards SIGTERM and SIGINT to the workers and waits for them; a worker that
exits on its own stops the others and the supervisor exits with its code (a process manager restarts the whole).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.synchronize import Event
from typing import Any

log = logging.getLogger("service.workers")

STOP_GRACE = 30.0  # seconds a worker has to finish after SIGTERM before it is killed
Serve = Callable[[Event | None], None]


def worker_count(configured: int | None, port: int) -> int:
    """``AI_SIDEBAR_WORKERS``, else the CPUs this process may run on (``os.sched_getaffinity``, which a container's
    cpuset limits, else ``os.cpu_count``); 1 on port 0 (each worker would get a port of its own)."""
    if port == 0:
        return 1
    if configured:
        return configured
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on every platform
        return os.cpu_count() or 1


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _child(serve: Serve, ready: Event | None) -> None:
    # The supervisor's handlers are not the worker's: aiohttp installs its own for SIGINT and SIGTERM. The signals
    # were blocked across the fork (see ``start``): one sent meanwhile is delivered now, to the default handler, and
    # ends the worker, instead of reaching the supervisor's handler copied into the child and being lost.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    serve(ready)


def supervise(count: int, serve: Serve) -> int:
    """Run ``count`` workers, each calling ``serve(ready)`` (it must set ``ready``, when given, once the app has
    started: the first worker's signal to start the others); returns the exit code for the supervisor.

    ``fork`` start method: the workers share the already imported code; the supervisor has started no thread yet.
    A worker that has not stopped :data:`STOP_GRACE` seconds after the stop is killed, and the code is then 1.
    """
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    workers: list[Any] = []
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGTERM)

    def start(event: Event | None, number: int) -> Any:
        worker = context.Process(target=_child, args=(serve, event), name=f"ai-sidebar-worker-{number}")
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            worker.start()
            workers.append(worker)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if stopping and worker.pid is not None:  # a stop came while it was being forked: it gets it too
            os.kill(worker.pid, signal.SIGTERM)
        return worker

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        first = start(ready, 1)
        while not ready.wait(0.2):
            if not first.is_alive() or stopping:
                break
        if first.is_alive() and not stopping:
            for number in range(2, count + 1):
                start(None, number)
            log.info("%d workers on one port: pids %s", count, ", ".join(str(w.pid) for w in workers))
        code = 0
        while any(w.is_alive() for w in workers):
            # Once stopping, a worker gets STOP_GRACE seconds in all; then it is killed below.
            if not wait([w.sentinel for w in workers if w.is_alive()], STOP_GRACE if stopping else None):
                break
            ended = [w for w in workers if not w.is_alive() and w.exitcode not in (None,)]
            if not stopping and ended:
                failed = ended[0]
                code = failed.exitcode if failed.exitcode and failed.exitcode > 0 else 1
                log.error("worker %s (pid %s) exited with %s; stopping the others", failed.name, failed.pid,
                          failed.exitcode)
                stop(signal.SIGTERM, None)
        for worker in workers:
            worker.join(STOP_GRACE)
            if worker.is_alive():
                log.error("worker %s (pid %s) did not stop within %s s; killed", worker.name, worker.pid,
                          STOP_GRACE)
                worker.kill()
                worker.join(5)
                code = code or 1
        if not stopping and workers and code == 0:
            code = workers[0].exitcode or 0
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
