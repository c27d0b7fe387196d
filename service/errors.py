"""Errors with the design's stable codes, and the middleware that turns them into JSON answers.

Outside a stream every error is ``{"error": {"code": "snake_case", "message": "sentence"}}`` with a 4xx/5xx
status (DESIGN.md, "HTTP API"); never an HTML page, never a stack trace.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)


class ServiceError(Exception):
    """A fault with a stable code; ``status`` is the HTTP status used outside a stream."""

    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def error_response(code: str, message: str, status: int) -> web.Response:
    """A JSON error answer in the design's shape."""
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


_HTTP_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    413: "request_too_large", 415: "unsupported_media_type",
}


@web.middleware
async def error_middleware(request: web.Request,
                           handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Map :class:`ServiceError`, aiohttp's HTTP exceptions and anything unexpected to JSON errors."""
    try:
        return await handler(request)
    except ServiceError as err:
        return error_response(err.code, err.message, err.status)
    except web.HTTPException as err:
        if err.status < 400:
            raise
        code = _HTTP_CODES.get(err.status, "http_error")
        message = err.reason if err.status != 404 else f"There is no route {request.method} {request.path}."
        return error_response(code, message, err.status)
    except Exception:
        log.exception("unexpected error in %s %s", request.method, request.path)
        return error_response("internal_error", "The assistant service hit an unexpected error; see its log.", 500)
