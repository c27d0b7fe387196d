"""Knowledge management routes: what is indexed (sources with counts and freshness) and a reindex now.

Reading needs the read permission every caller has; reindexing needs write (it makes the service read all of
Node-RED's help and flows again with its own credentials).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from service.errors import ServiceError
from service.identity import request_caller
from service.knowledge.index import RefreshReport
from service.knowledge.refresher import KnowledgeSlot
from service.nodered.client import NodeRedError
from service.tools.registry import failure_status
from service.web.keys import KNOWLEDGE
from service.web.schemas import parse_body

routes = web.RouteTableDef()
STORES = ("docs", "workspace")


async def describe(slot: KnowledgeSlot) -> dict[str, Any]:
    """``{available, refreshInterval, refreshedAt, lastError, languages, stores: {store: {sources, chunks,
    languages, indexedAt}}, sources: [{store, language, source, chunks, indexedAt, module?, version?}]}``;
    times are Unix seconds, ``refreshedAt`` ``None`` before the first refresh."""
    if slot.knowledge is None or slot.refresher is None:
        return {"available": False, "stores": {}, "sources": []}
    index, refresher = slot.knowledge.index, slot.refresher
    sources = []
    for store in STORES:
        for info in (await index.sources(store)).values():
            entry: dict[str, Any] = {"store": store, "language": info.language, "source": info.source,
                                     "chunks": info.chunks, "indexedAt": info.indexed_at}
            entry.update({key: info.metadata[key] for key in ("module", "version") if key in info.metadata})
            sources.append(entry)
    sources.sort(key=lambda s: (s["store"], s["language"], s["source"]))
    return {"available": True, "refreshInterval": refresher.interval, "refreshedAt": refresher.refreshed_at,
            "lastError": refresher.last_error, "languages": list(refresher.languages),
            "stores": await index.stats(), "sources": sources}


def _report(report: RefreshReport) -> dict[str, Any]:
    return {"store": report.store, "language": report.language, "reindexed": report.reindexed,
            "removed": report.removed, "unchanged": report.unchanged}


@routes.get("/ai-sidebar/knowledge")
async def knowledge(request: web.Request) -> web.Response:
    """The indexed sources of both stores with chunk counts and when each was indexed (read permission)."""
    request_caller(request)  # a malformed identity header is refused here as on every route
    return web.json_response(await describe(request.app[KNOWLEDGE]))


class ReindexRequest(BaseModel):
    """The reindex body: an empty JSON object (a JSON body, so that a web page cannot send it cross-site)."""

    model_config = ConfigDict(extra="forbid")


@routes.post("/ai-sidebar/knowledge/reindex")
async def reindex(request: web.Request) -> web.Response:
    """Refresh both stores now (write permission): ``{reports: [{store, language, reindexed[], removed[],
    unchanged}], ...the GET answer}``.

    Errors: 403 ``forbidden`` for a read-only caller; 503 ``memory_unavailable`` when the database (which holds
    the index) is not open; the Admin API's error (403, 502, 504) when Node-RED cannot be read.
    """
    request_caller(request).require_write()
    await parse_body(request, ReindexRequest)
    slot = request.app[KNOWLEDGE]
    if slot.refresher is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    try:
        reports = await slot.refresher.refresh()
    except NodeRedError as err:
        raise ServiceError(err.code, status=failure_status(err.code), **err.sentence_args()) from None
    return web.json_response({"reports": [_report(r) for r in reports], **await describe(slot)})
