"""Errors with the design's stable codes, and where they leave the service: the middleware that turns them into
JSON answers and the stream's ``error`` events, both worded in the request's language.

Outside a stream every error is ``{"error": {"code": "snake_case", "message": "sentence"}}`` with a 4xx/5xx
status (DESIGN.md, "HTTP API"); never an HTML page, never a stack trace. Sentences come from
``locales/<lang>/errors.json`` (:mod:`service.nodered.messages`); the code never changes with the language.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from service.nodered.messages import CodedError, MessageCatalog, english_catalog

log = logging.getLogger(__name__)

# The ``language`` of a request body, for handlers that read one (stream-chat): it wins over Accept-Language.
REQUEST_LANGUAGE = web.RequestKey("ai_sidebar_language", str)
# The app's sentence catalog (locales/<lang>/errors.json), set by the app factory; re-exported by
# :mod:`service.web.keys` with the other app keys. It lives here, at the bottom, because errors are worded with it.
MESSAGES: web.AppKey[MessageCatalog] = web.AppKey("messages")


class ServiceError(CodedError):
    """A fault with a stable code; ``status`` is the HTTP status used outside a stream.

    ``ServiceError("tools_disabled", status=400)`` words itself from the catalog (translated on the way out);
    ``params`` fill the sentence's placeholders and ``key`` picks a variant sentence of the code. A free
    ``message`` is kept as given, in English.
    """

    def __init__(self, code: str, message: str | None = None, status: int = 400, *, key: str | None = None,
                 params: Mapping[str, Any] | None = None):
        super().__init__(code, message, key=key, params=params)
        self.status = status

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def error_response(code: str, message: str, status: int) -> web.Response:
    """A JSON error answer in the design's shape."""
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def request_language(request: web.Request) -> str:
    """The shipped language to word this request's errors in: the body's ``language`` (when a handler stored it
    under :data:`REQUEST_LANGUAGE`), else ``Accept-Language``, else English."""
    return _catalog(request.app).negotiate(request.get(REQUEST_LANGUAGE), request.headers.get("Accept-Language"))


def _catalog(app: web.Application) -> MessageCatalog:
    return app.get(MESSAGES) or english_catalog()


class ErrorEvent(dict):
    """A stream ``error`` event, ``{"type": "error", "code", "message"}`` in English, that keeps its error so the
    stream can word it in the request's language (:func:`localized`)."""

    def __init__(self, error: CodedError):
        super().__init__(type="error", code=error.code, message=error.message)
        self.error = error


def error_event(error: CodedError) -> ErrorEvent:
    """The one way to build a stream ``error`` event from a :class:`ServiceError` or a tool failure."""
    return ErrorEvent(error)


_HTTP_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    413: "request_too_large", 415: "unsupported_media_type",
}


def _http_error(request: web.Request, err: web.HTTPException) -> ServiceError:
    code = _HTTP_CODES.get(err.status, "http_error")
    if err.status == 404:
        return ServiceError(code, status=404, key="not_found.route",
                            params={"method": request.method, "path": request.path})
    if err.status == 405:
        return ServiceError(code, status=405, params={"method": request.method, "path": request.path})
    return ServiceError(code, status=err.status, params={"status": err.status})


@web.middleware
async def error_middleware(request: web.Request,
                           handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Map :class:`ServiceError`, aiohttp's HTTP exceptions and anything unexpected to JSON errors, worded in
    the request's language (:func:`request_language`)."""
    try:
        return await handler(request)
    except ServiceError as err:
        error = err.detached()  # kept in this frame: its traceback would make a cycle through the request's frames
    except web.HTTPException as err:
        if err.status < 400:
            raise
        error = _http_error(request, err)
    except Exception:
        log.exception("unexpected error in %s %s", request.method, request.path)
        error = ServiceError("internal_error", status=500)
    message = error.translated(_catalog(request.app), request_language(request))
    return error_response(error.code, message, error.status)
