"""Reading a server-sent event stream in tests: ``data: <json>`` frames, comment lines ignored."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp


async def iter_events(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """Yield each event's JSON as it arrives."""
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer += chunk
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            for line in frame.decode().splitlines():
                if line.startswith("data:"):
                    yield json.loads(line[5:].strip())


async def read_events(response: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    """All events of a stream, in order."""
    return [event async for event in iter_events(response)]
