"""Several service processes on one port (``AI_SIDEBAR_WORKERS``): each worker is a forked copy of this process
with its own event loop, listening on the same address with ``SO_REUSEPORT`` (the kernel spreads new connections
over the listening sockets; Linux ``socket(7)``), so one machine's cores all serve streams.

The first worker opens (and migrates) the memory database before the others start, so that they never migrate it
at the same time. The supervisor forwards SIGTERM and SIGINT to the workers and waits for them; a worker that
exits on its own stops the others and the supervisor exits with its code (a process manager restarts the whole).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.synchronize import Event
from typing import Any

log = logging.getLogger("service.workers")

STOP_GRACE = 30.0  # seconds a worker has to finish after SIGTERM before it is killed
Serve = Callable[[Event | None], None]


def worker_count(configured: int | None, port: int) -> int:
    """``AI_SIDEBAR_WORKERS``, else 1; 1 on port 0 too (each worker would get a port of its own).

    One by default because most Node-RED installations run on small machines (a Raspberry Pi, a 1-2 GB gateway or
    VM): each worker is a whole service with its own MCP server, about 145 MB idle (issue 33, README "Workers"),
    and one event loop already serves a few editors' streams. A host with the memory for more sets the count.
    """
    if port == 0:
        return 1
    return configured or 1


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _child(serve: Serve, ready: Event | None, supervisors: tuple[int, ...]) -> None:
    # The supervisor's handlers are not the worker's: aiohttp installs its own for SIGINT and SIGTERM. The signals
    # were blocked across the fork (see ``start``): one sent meanwhile is delivered now, to the default handler, and
    # ends the worker, instead of reaching the supervisor's handler copied into the child and being lost. The
    # supervisor's own descriptors (``supervisors``, its wake-up pipe) are closed.
    for fd in supervisors:
        os.close(fd)
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
    deadline = 0.0  # once stopping: time.monotonic() by which every worker must have stopped, else it is killed
    # Written by ``stop``: a signal handler runs while ``wait`` below waits, and that wait is then retried with its
    # original timeout (PEP 475), None before the stop; this pipe in the waited-on list ends it, so that the
    # grace period runs from the stop.
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping, deadline
        if not stopping:
            deadline = time.monotonic() + STOP_GRACE
        stopping = True
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signal.SIGTERM)
        with contextlib.suppress(BlockingIOError):  # full: a wake-up is already pending
            os.write(wakeup_w, b"\0")

    def start(event: Event | None, number: int) -> Any:
        worker = context.Process(target=_child, args=(serve, event, (wakeup_r, wakeup_w)),
                                 name=f"ai-sidebar-worker-{number}")
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
        while True:
            # Which workers live is read once per pass: asked again for the wait, a worker reaped in between was
            # left out of it, and a wait on no worker at all lasted its whole timeout (a stop took STOP_GRACE).
            alive = [w for w in workers if w.is_alive()]
            if not alive or (stopping and time.monotonic() >= deadline):
                break
            timeout = max(0.0, deadline - time.monotonic()) if stopping else None
            ended = wait([w.sentinel for w in alive] + [wakeup_r], timeout)
            if wakeup_r in ended:
                os.read(wakeup_r, 512)
            for worker in alive:
                if worker.sentinel in ended:
                    # Its descriptors are closed, so it is exiting: wait until it has (until then the sentinel
                    # stays readable and each pass would find it alive again at once).
                    worker.join()
            failed = next((w for w in alive if w.exitcode is not None), None)
            if failed is not None and not stopping:
                code = failed.exitcode if failed.exitcode > 0 else 1
                log.error("worker %s (pid %s) exited with %s; stopping the others", failed.name, failed.pid,
                          failed.exitcode)
                stop(signal.SIGTERM, None)
        for worker in workers:
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
        os.close(wakeup_r)
        os.close(wakeup_w)
