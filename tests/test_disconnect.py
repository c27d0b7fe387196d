"""``service.web.disconnect.until_client_leaves``, the helper the chat, assist and completion routes share: a
handler's work is cancelled as soon as its client goes away, and finishes normally while the client stays."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from service.web.disconnect import until_client_leaves


async def test_the_work_is_cancelled_when_the_client_goes_away_and_runs_out_while_it_stays(aiohttp_client):
    started, cancelled = asyncio.Event(), asyncio.Event()
    outcome: list[str] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def quick() -> None:
        outcome.append("done")

    async def handler(request: web.Request) -> web.Response:
        await until_client_leaves(request, forever() if request.query.get("wait") else quick())
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/work", handler)
    client = await aiohttp_client(app)

    assert (await (await client.get("/work")).json()) == {"ok": True} and outcome == ["done"]

    request = asyncio.ensure_future(client.get("/work", params={"wait": "1"}))
    await asyncio.wait_for(started.wait(), 10)
    request.cancel()  # the client closes its connection
    # The work is cancelled (by the helper's watch of the transport, or with the handler where the server cancels
    # handlers): it never runs on for nobody.
    await asyncio.wait_for(cancelled.wait(), 10)
    try:
        await request
    except (asyncio.CancelledError, aiohttp.ClientError):
        pass
