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


async def stream_chat(client: Any, **body: Any) -> list[dict[str, Any]]:
    """All events of ``POST /ai-sidebar/stream-chat`` with ``body`` through ``client`` (an aiohttp test client),
    which must answer 200."""
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


def event_types(events: list[dict[str, Any]]) -> list[str]:
    """The ``type`` of each event, in order."""
    return [event["type"] for event in events]
