"""HTTP handlers (DESIGN.md, "HTTP API"): validate, call one function, respond."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from . import __version__
from .errors import ServiceError
from .keys import MODELS, NODERED, SCENARIOS, SETTINGS, STREAMS
from .models import StreamChatRequest, parse_body
from .pipeline import ChatDeps, run_chat
from .sse import EventStream

log = logging.getLogger(__name__)
routes = web.RouteTableDef()

# Header the Node-RED plugin uses to pass on the editor user's own Admin API token.
USER_TOKEN_HEADER = "X-Node-RED-Token"


@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    """Liveness: ``{"status": "ok", "version"}``; the only route open without the service token."""
    return web.json_response({"status": "ok", "version": __version__})


@routes.get("/ai-sidebar/scenarios")
async def scenarios(request: web.Request) -> web.Response:
    """``?lang=xx-YY`` → the editor's view of that language's scenarios (no system prompts)."""
    catalog = request.app[SCENARIOS].get(request.query.get("lang"))
    return web.json_response(catalog.public())


@routes.post("/ai-sidebar/stream-chat")
async def stream_chat(request: web.Request) -> web.StreamResponse:
    """Answer a chat message as a server-sent event stream; bad input is a JSON 4xx before the stream opens."""
    body = await parse_body(request, StreamChatRequest)
    settings = request.app[SETTINGS]
    if len(body.message) > settings.max_message_chars:
        raise ServiceError("message_too_long", f"The message has {len(body.message)} characters; the limit is "
                                               f"{settings.max_message_chars}.", 413)
    deps = ChatDeps(settings=settings,
                    nodered=request.app[NODERED].for_user(request.headers.get(USER_TOKEN_HEADER)),
                    models=request.app[MODELS], scenarios=request.app[SCENARIOS])
    stream = EventStream()
    await stream.prepare(request)
    request.app[STREAMS].add(stream)
    session_id = body.sessionId
    try:
        result = await run_chat(body, deps, stream.send)
        session_id = result.session_id
        done = {"type": "done", "sessionId": session_id}
        if result.usage:
            done["usage"] = result.usage
        await stream.send(done)
    except ConnectionResetError:
        log.info("client went away during session %s", session_id)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("chat failed")
        try:
            await stream.send({"type": "error", "code": "internal_error",
                               "message": "The assistant service hit an unexpected error; see its log."})
            await stream.send({"type": "done", "sessionId": session_id})
        except ConnectionResetError:
            pass
    finally:
        await stream.close()
    return stream.response
