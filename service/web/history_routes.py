"""The flow history's routes (issue 35; contracts in DESIGN.md, "Contracts for the third wave"):

* ``GET /ai-sidebar/flow-history?limit=&before=``: the captured deploys, newest first.
* ``GET /ai-sidebar/flow-history/diff?from=<rev|time>&to=<rev|time|now>``: what changed between two points,
  per tab and node, values redacted (:func:`service.history.diff.flow_diff`).
* ``PATCH /ai-sidebar/flow-history/{rev}`` ``{"pinned": bool}`` (write permission): keep a deploy whatever the
  retention.

Errors: 400 ``history_point_invalid``/``invalid_request``, 404 ``snapshot_not_found``, 503 ``history_unavailable``
or ``memory_unavailable``, Node-RED's own (403, 502, 504) when ``now`` cannot be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from service.errors import ServiceError
from service.history.capture import CAPTURES, Capture, DeployWatcher, history_for
from service.history.diff import flow_diff
from service.history.points import PointError, parse_time, resolve
from service.history.projects import project_history
from service.history.store import HistoryStore
from service.identity import request_caller
from service.memory.db import MemoryUnavailable
from service.nodered.client import NodeRedError
from service.tools.registry import failure_status
from service.web.keys import HTTP_SESSION, MEMORY, NODERED, SETTINGS
from service.web.schemas import parse_body

log = logging.getLogger(__name__)
routes = web.RouteTableDef()
RETENTION_INTERVAL = 86_400.0  # seconds between retention runs besides those after captures
MAX_LIMIT = 500


class PinRequest(BaseModel):
    """``{"pinned": true}`` keeps the deploy whatever the retention; ``false`` lets it age out again."""

    model_config = ConfigDict(extra="forbid")
    pinned: bool


def _capture(request: web.Request) -> Capture:
    capture = history_for(request.app[NODERED])
    if capture is None:
        raise ServiceError("history_unavailable", status=503)
    return capture


@routes.get("/ai-sidebar/flow-history")
async def flow_history(request: web.Request) -> web.Response:
    """``{"deploys": [{rev, time, user, origin, pinned, counts: {added, removed, changed}, detail}]}`` newest
    first: ``limit`` (1-500, default 100) of them, captured before ``before`` (ISO 8601) when given; ``project``:
    Node-RED's active project and its newest commits (:func:`service.history.projects.project_history`, read with
    the caller's rights), ``null`` when Projects is off."""
    caller = request_caller(request)
    capture = _capture(request)
    try:
        limit = int(request.query.get("limit", "100"))
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise ServiceError("invalid_request", params={"field": "limit", "detail": f"an integer from 1 to {MAX_LIMIT}"})
    raw_before = request.query.get("before")
    before = parse_time(raw_before) if raw_before else None
    if raw_before and before is None:
        raise ServiceError("history_point_invalid", params={"point": raw_before[:128]})
    deploys = await capture.store.listing(limit, before)
    project = await project_history(request.app[NODERED].for_user(caller.token))
    return web.json_response({"deploys": [deploy.as_json() for deploy in deploys], "project": project})


@routes.get("/ai-sidebar/flow-history/diff")
async def flow_history_diff(request: web.Request) -> web.Response:
    """``{"from": {rev, time}, "to": {rev, time}, "tabs": [...], "counts": {...}}`` (see
    :mod:`service.history.diff`); ``from`` is required, ``to`` defaults to ``now`` (read with the caller's
    Node-RED rights)."""
    caller = request_caller(request)
    capture = _capture(request)
    client = request.app[NODERED].for_user(caller.token)
    try:
        start = await resolve(capture.store, client, request.query.get("from", ""))
        end = await resolve(capture.store, client, request.query.get("to", "now"))
    except PointError as err:
        raise ServiceError(err.code, status=404 if err.code == "snapshot_not_found" else 400,
                           **err.sentence_args()) from None
    except NodeRedError as err:
        raise ServiceError(err.code, status=failure_status(err.code), **err.sentence_args()) from None
    return web.json_response({"from": start.label(), "to": end.label(), **flow_diff(start.flows, end.flows)})


@routes.patch("/ai-sidebar/flow-history/{rev}")
async def pin(request: web.Request) -> web.Response:
    """Pin or unpin one deploy (write permission): ``{"rev", "pinned"}``; 404 ``snapshot_not_found``."""
    request_caller(request).require_write()
    body = await parse_body(request, PinRequest)
    capture = _capture(request)
    rev = request.match_info["rev"]
    if not await capture.store.pin(rev, body.pinned):
        raise ServiceError("snapshot_not_found", status=404, params={"point": rev[:128]})
    return web.json_response({"rev": rev, "pinned": body.pinned})


async def history_context(app: web.Application) -> AsyncIterator[None]:
    """While the service runs: capture every deploy of its Node-RED into the memory database (its own comms
    connection, the service's Node-RED credentials) and apply the retention at start and daily. Nothing without
    ``AI_SIDEBAR_FLOW_HISTORY`` or without an open memory database (the routes then answer 503
    ``history_unavailable``)."""
    settings, memory = app[SETTINGS], app[MEMORY].store
    if not settings.flow_history or memory is None:
        yield
        return
    try:
        store = await HistoryStore.open(memory.db)
    except MemoryUnavailable as err:
        log.error("flow history cannot be opened (%s); deploys will not be kept", err.message)
        yield
        return
    client = app[NODERED]
    capture = Capture(store, client, settings.flow_history_keep, settings.flow_history_days)
    watcher = DeployWatcher(client, app[HTTP_SESSION], capture)
    CAPTURES[client.base_url] = capture
    capture.start()
    watcher.start()
    retention = asyncio.create_task(_retention(capture))
    yield
    retention.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await retention
    await watcher.stop()
    await capture.stop()
    if CAPTURES.get(client.base_url) is capture:
        del CAPTURES[client.base_url]


async def _retention(capture: Capture) -> None:
    while True:
        try:
            removed = await capture.retention()
            if removed:
                log.info("flow history retention: removed %d deploys", removed)
        except MemoryUnavailable as err:
            log.warning("flow history retention skipped: %s", err.message)
        await asyncio.sleep(RETENTION_INTERVAL)
