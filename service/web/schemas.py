"""Reading a request body into one of the models of :mod:`service.requests`: JSON with bounded nesting, decoded off
the event loop when large, within the read timeout, errors as 400/408 in the design's shape."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import pydantic_core
from aiohttp import web
from pydantic import BaseModel, ValidationError

from service.errors import ServiceError
from service.web.keys import SETTINGS

LARGE_BODY_BYTES = 256 * 1024  # bodies larger than this are decoded off the event loop

Model = TypeVar("Model", bound=BaseModel)


MAX_JSON_DEPTH = 200  # jiter's recursion limit (pydantic-core's JSON parser): deeper nesting is refused


def load_json(raw: bytes | str) -> Any:
    """Parse JSON text with nesting bounded, so nothing recursive later (validation, redaction, ``json.dumps``)
    can meet a structure deep enough to exhaust the stack.

    pydantic-core's ``from_json`` (Rust, jiter) refuses nesting deeper than about :data:`MAX_JSON_DEPTH` levels
    without recursing in Python; it is as fast as ``json.loads``. It is stricter in one way: a lone UTF-16
    surrogate escape (``"\\ud800"``) is refused.

    Raises:
        ValueError: not JSON, or nested too deeply (the message says which and where).
    """
    return pydantic_core.from_json(raw)


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
