"""Reading a request body into one of the models of :mod:`service.requests`: JSON with bounded nesting, decoded off
the event loop when large, within the read timeout, errors as 400/408 in the design's shape."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from service.errors import ServiceError
from service.requests import MAX_JSON_DEPTH, load_json
from service.web.keys import SETTINGS

LARGE_BODY_BYTES = 256 * 1024  # bodies larger than this are decoded off the event loop

Model = TypeVar("Model", bound=BaseModel)


async def parse_body(request: web.Request, model: type[Model]) -> Model:
    """Read a JSON body into ``model``; the client has ``Settings.read_timeout`` seconds to send it. A body over
    :data:`LARGE_BODY_BYTES` (a large flowData) is decoded and validated in a thread.

    Raises:
        ServiceError: 400 ``invalid_json`` (not JSON, nested deeper than :data:`MAX_JSON_DEPTH` levels, or not an
            object), ``invalid_request`` (naming the field), 408 ``request_timeout`` (the body did not arrive in
            time).
    """
    timeout = request.app[SETTINGS].read_timeout
    try:
        async with asyncio.timeout(timeout):
            raw = await request.read()
    except TimeoutError:
        raise ServiceError("request_timeout", status=408, params={"seconds": f"{timeout:g}"}) from None
    if len(raw) > LARGE_BODY_BYTES:
        return await asyncio.to_thread(_decode, raw, model)
    return _decode(raw, model)


def _decode(raw: bytes, model: type[Model]) -> Model:
    try:
        data = load_json(raw or b"null")
    except ValueError as err:
        if "recursion limit" in str(err):
            raise ServiceError("invalid_json", key="invalid_json.depth", params={"depth": MAX_JSON_DEPTH}) from None
        raise ServiceError("invalid_json") from None
    if not isinstance(data, dict):
        raise ServiceError("invalid_json", key="invalid_json.not_object")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise ServiceError("invalid_request", params={"field": where, "detail": first["msg"]}) from None
