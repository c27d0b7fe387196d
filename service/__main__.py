"""``ai-sidebar-service``: build the settings from the environment and run the aiohttp app, in one process or in
``AI_SIDEBAR_WORKERS`` processes sharing the port (:mod:`service.workers`)."""

import asyncio
import gc
import logging
import os
import signal
import sys
from multiprocessing.synchronize import Event

from aiohttp import web

from service.llm.providers import ProviderConfig, unready
from service.settings import Settings, SettingsError
from service.tracing.setup import install_from_env, wanted_exporters
from service.web.app import create_app
from service.workers import supervise, worker_count

log = logging.getLogger("service")


def main() -> None:
    """Entry point of the ``ai-sidebar-service`` console script."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        settings = Settings.from_env()
        settings.check_bind()
        wanted_exporters(os.environ)  # a bad tracing setting stops the start here, not in every worker
    except (SettingsError, ValueError) as err:
        print(f"ai-sidebar-service: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    warn_without_token(settings)
    warn_without_model(settings)
    count = worker_count(settings.workers, settings.port)
    if count == 1:
        serve(settings, None, reuse_port=False)
        return
    # Each worker knows there are several: the per-user stream limit then counts in the database (web/app.py).
    several = settings.model_copy(update={"workers": count})
    raise SystemExit(supervise(count, lambda ready: serve(several, ready, reuse_port=True)))


def warn_without_token(settings: Settings) -> None:
    """Say at start what a service without ``AI_SIDEBAR_TOKEN`` does (issue 29): it cannot tell Node-RED's plugin
    from any other local process, so it believes no identity or permission header (:mod:`service.identity`)."""
    if settings.token is not None:
        return
    log.warning("AI_SIDEBAR_TOKEN is not set: any local process can call this service, so it believes no "
                "identity or permission header. Every caller is the anonymous editor, read-only: it can ask "
                "questions (read with the Node-RED credentials of this service, %s) but cannot change flows, "
                "approve changes or read other users' conversations. Set the same AI_SIDEBAR_TOKEN for Node-RED "
                "and this service, or let Node-RED start it (aiSidebar.startService), to use writes and users.",
                "which are set" if settings.nodered.token or settings.nodered.username else "none set")


def warn_without_model(settings: Settings) -> None:
    """Say at start when the service's own provider cannot answer (issue 31: the terminal said nothing until the
    first question failed): which setting is missing, and that an ``ai-config`` node (the sidebar's setup card)
    is the other way. The key's value never appears, only the names of settings."""
    problem = unready(ProviderConfig.from_settings(settings))
    if problem is None:
        return
    log.warning("no model can answer questions without an ai-config node: %s Until then the sidebar offers to "
                "create an ai-config node (its setup card) and answers only with one.", problem.message)


def serve(settings: Settings, ready: Event | None, reuse_port: bool) -> None:
    """Run one service process until SIGINT or SIGTERM; ``ready`` is set once the app has started (its databases
    open). Tracing is set up here, in each process: its exporter's thread must not be forked."""
    try:
        install_from_env()
    except ValueError as err:
        print(f"ai-sidebar-service: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    app = create_app(settings)
    if ready is not None:
        async def started(app: web.Application) -> None:
            ready.set()
        app.on_startup.append(started)
    tune_collector()
    asyncio.run(run(app, settings.host, settings.port, reuse_port))


async def run(app: web.Application, host: str, port: int, reuse_port: bool) -> None:
    """Start ``app``, listen on ``host``:``port`` until SIGINT or SIGTERM, then shut it down and clean it up.

    A stop that comes while the app is starting waits for the start to end, then cleans up as after serving.
    aiohttp's ``run_app`` raises ``GracefulExit`` into the start instead, and its runner's cleanup is skipped then
    (``web._run_app`` calls ``runner.setup()`` before its ``try``): the cleanup contexts that had opened an
    aiosqlite connection never closed it, and its thread (not a daemon) kept the process from exiting. With
    several workers the second one is still starting when the first already answers, so a stop right after the
    service came up left that worker hanging until the supervisor killed it (issue 23). A start that raises cleans
    up what had started, then raises.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(app, handle_signals=False)
    try:
        await runner.setup()
    except BaseException:
        # A start that fails midway: the cleanup contexts that had started are left (aiohttp's cleanup runs them
        # even without a server); an open aiosqlite connection would otherwise keep the process from exiting.
        await runner.cleanup()
        raise
    try:
        if not stop.is_set():
            site = web.TCPSite(runner, host, port, reuse_port=reuse_port)
            await site.start()
            log.info("======== Running on %s ========", site.name)
            await stop.wait()
    finally:
        await runner.cleanup()


def tune_collector() -> None:
    """Garbage-collector passes walk objects with the GIL held, so no request is served meanwhile; a request that
    allocates much (a megabyte flowData: ~50,000 containers) triggered a full pass over the whole heap that took
    0.3-0.8 s on a loaded 2-core machine. What exists at start (modules, catalogs) lives as long as the process:
    frozen out of every pass. Young passes run every 20,000 allocations instead of 700, so that such a request's
    objects are not walked again and again on their way to the old generation. (CPython's ``gc.freeze`` and
    ``gc.set_threshold``: https://docs.python.org/3/library/gc.html)"""
    gc.freeze()
    gc.set_threshold(20_000, 20, 10)


if __name__ == "__main__":
    main()
