"""``GET /ai-sidebar/usage``: tokens and cost of the recorded turns, per session, user or UTC day (issue 21).

A caller sees its own usage; a caller with write permission (Node-RED's ``ai-sidebar.write``, which ``*`` grants)
sees everyone's, as the one who answers for the model bill.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

from aiohttp import web

from service.errors import ServiceError
from service.identity import request_caller
from service.memory.usage import UsageGrouping, UsageStore
from service.web.keys import MEMORY

routes = web.RouteTableDef()
GROUPINGS: tuple[str, ...] = get_args(UsageGrouping)


def parse_since(raw: str | None) -> float | None:
    """``since`` as Unix seconds: an ISO 8601 date (``2026-12-01``, the start of that UTC day) or date and time
    (UTC unless it names an offset); ``None`` when absent.

    Raises:
        ServiceError: 400 ``invalid_request`` naming the parameter.
    """
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw.upper())  # RFC 3339 allows a lowercase "t" and "z"
    except ValueError:
        raise ServiceError("invalid_request", key="invalid_request.usage_since") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@routes.get("/ai-sidebar/usage")
async def usage(request: web.Request) -> web.Response:
    """``?by=session|user|day`` (default ``session``), ``since=`` (ISO date or date-time, UTC), ``sessionId=`` →
    ``{by, since, scope, total, totals}``: ``scope`` ``own`` or ``all`` (write permission), ``total`` the sum over
    every matching turn and ``totals`` one row per group (see :meth:`UsageStore.totals`).

    Errors: 400 ``invalid_request`` (an unknown ``by``, a ``since`` that is no ISO date), 503
    ``memory_unavailable``.
    """
    caller = request_caller(request)
    by = request.query.get("by", "session")
    if by not in GROUPINGS:
        raise ServiceError("invalid_request", key="invalid_request.usage_by", params={"allowed": ", ".join(GROUPINGS)})
    since = parse_since(request.query.get("since"))
    session_id = request.query.get("sessionId") or None
    store = request.app[MEMORY].store
    if store is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    owner = None if caller.may_write else caller.identity
    ledger = UsageStore(store)
    return web.json_response({
        "by": by, "since": datetime.fromtimestamp(since, UTC).isoformat() if since is not None else None,
        "scope": "own" if owner is not None else "all",
        "total": await ledger.total(owner, since, session_id),
        "totals": await ledger.totals(by, owner, since, session_id),  # type: ignore[arg-type]  # checked above
    })
