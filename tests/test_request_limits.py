"""Hostile requests (issue 14 item 7): deeply nested JSON is a 400, never a 500 with a RecursionError in the log;
a client that is slow to send its headers or its body is cut off after ``read_timeout`` seconds."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import pytest

from service.web.app import create_app
from tests.conftest import SERVICE_TOKEN
from tests.support.sse import read_events

DEEP = 100_000  # levels of nesting

JSON_ROUTES = [("POST", "/ai-sidebar/stream-chat"), ("POST", "/ai-sidebar/execute-tool"),
               ("POST", "/ai-sidebar/search"), ("POST", "/ai-sidebar/templates"), ("POST", "/ai-sidebar/sessions"),
               ("PATCH", "/ai-sidebar/sessions/s1")]


@pytest.mark.parametrize("body", [b"[" * DEEP, b'{"message": "hi", "flowData": [{"id": "n1", "x": ' + b"[" * DEEP,
                                  b'{"a":' * DEEP + b"1" + b"}" * DEEP],
                         ids=["open-brackets", "deep-inside-flowdata", "closed-objects"])
async def test_deeply_nested_json_is_a_400_on_every_json_route_and_leaves_no_error_in_the_log(client, caplog, body):
    caplog.set_level(logging.INFO)
    for method, path in JSON_ROUTES:
        response = await client.request(method, path, data=body, headers={"Content-Type": "application/json"})
        answer = await response.json()
        assert response.status == 400, (path, answer)
        assert answer["error"]["code"] == "invalid_json" and "nested" in answer["error"]["message"]
    assert "RecursionError" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_nesting_a_flow_really_uses_is_accepted(client, model):
    value: object = "leaf"
    for _ in range(60):
        value = {"inner": [value]}
    flow = [{"id": "t1", "type": "tab", "label": "Deep"},
            {"id": "n1", "type": "change", "z": "t1", "x": 100, "y": 40,
             "rules": [{"t": "set", "p": "payload", "to": value}], "wires": [[]]}]
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "explain the current flow",
                                                                  "selectedFlow": {"id": "t1"}, "flowData": flow})
    events = await read_events(response)
    assert response.status == 200 and events[1]["ok"] is True and "n1" in events[1]["result"]


@pytest.mark.parametrize("params", ["[" * 5000, "-" * 5000 + "1", "1+" * 3000 + "1"],
                         ids=["deep-list", "deep-unary", "long-sum"])
async def test_hostile_direct_trigger_parameters_are_invalid_params(client, caplog, model, params):
    response = await client.post("/ai-sidebar/stream-chat", json={"message": f"@tools:get_flow|{params}"})
    events = await read_events(response)
    assert [e["type"] for e in events] == ["error", "done"] and events[0]["code"] == "invalid_params"
    assert "RecursionError" not in caplog.text and "MemoryError" not in caplog.text


@pytest.fixture
async def quick_server(aiohttp_server, settings):
    """The service with a read timeout of half a second."""
    return await aiohttp_server(create_app(settings.model_copy(update={"read_timeout": 0.5})))


def content_length(head: bytes) -> int:
    return int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))


async def test_a_connection_that_sends_part_of_its_headers_is_closed_after_the_read_timeout(quick_server):
    # The server shares this test's event loop. The part is sent on a blocking socket before the loop runs again, so
    # it waits in the kernel before the server accepts the connection and starts its timer: the server reads it
    # first (asyncio runs I/O callbacks before due timers). Written from the loop instead, a stall of more than the
    # timeout between the accept and the write let the server close with the part unread, and Linux then answers
    # with a reset instead of an end of stream (a loaded CI run).
    started = time.monotonic()
    sock = socket.create_connection((quick_server.host, quick_server.port))
    sock.sendall(b"POST /ai-sidebar/stream-chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
    reader, writer = await asyncio.open_connection(sock=sock)
    rest = await asyncio.wait_for(reader.read(), 10.0)
    waited = time.monotonic() - started
    writer.close()
    # Closed, not before the 0.5 s timeout; the upper bound (6× the timeout) only tells the timeout from the 10 s
    # wait above, and a load that slows the event loop delays the close by far less.
    assert rest == b"" and 0.4 < waited < 3.0


async def test_sending_headers_a_byte_at_a_time_does_not_extend_the_read_timeout(quick_server):
    reader, writer = await asyncio.open_connection(quick_server.host, quick_server.port)
    started = time.monotonic()
    header = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
    sent = 0

    async def trickle() -> None:
        nonlocal sent
        for byte in header:
            writer.write(bytes([byte]))
            await writer.drain()
            sent += 1
            await asyncio.sleep(0.05)

    sender = asyncio.create_task(trickle())
    try:
        rest = await asyncio.wait_for(reader.read(), 10.0)
    except ConnectionResetError:
        # A byte written in the same loop pass as the server's close arrives unread, and Linux answers a close
        # with unread data by a reset: closed by the server all the same.
        rest = b""
    finally:
        sender.cancel()
        writer.close()
    # Closed while the header was still coming (counted in bytes, not seconds: a byte every 0.05 s would take 7 s
    # to finish it), and not before the 0.5 s timeout.
    assert rest == b"" and sent < len(header) and time.monotonic() - started > 0.4, sent


async def test_a_body_that_does_not_arrive_in_time_is_a_408(quick_server):
    reader, writer = await asyncio.open_connection(quick_server.host, quick_server.port)
    # With the service's token: without it the request is refused (401) before its body is read.
    writer.write(b"POST /ai-sidebar/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + SERVICE_TOKEN.encode() + b"\r\n"
                 b"Content-Length: 100\r\n\r\n{\"query\":")
    await writer.drain()
    started = time.monotonic()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    waited = time.monotonic() - started
    body = json.loads(await reader.readexactly(content_length(head)))
    writer.close()
    assert head.startswith(b"HTTP/1.1 408") and body["error"]["code"] == "request_timeout"
    # Not before the 0.5 s timeout; the upper bound (6× the timeout) only tells it from the 10 s wait above.
    assert "AI_SIDEBAR_READ_TIMEOUT" in body["error"]["message"] and 0.4 < waited < 3.0


async def test_a_normal_request_on_a_kept_alive_connection_is_unaffected(quick_server):
    reader, writer = await asyncio.open_connection(quick_server.host, quick_server.port)
    for _ in range(3):
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
        assert head.startswith(b"HTTP/1.1 200")
        await reader.readexactly(content_length(head))
        await asyncio.sleep(0.2)  # idle, but less than the timeout
    writer.close()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_a_body_a_web_page_could_send_cross_site_is_refused_and_nothing_is_stored(client, content_type):
    # What fetch(url, {mode: "no-cors", body}) sends without a CORS preflight: text/plain, a form, a Blob of no type.
    headers = {"Content-Type": content_type} if content_type else {}
    response = await client.post("/ai-sidebar/sessions", data=b'{"name": "pwned"}', headers=headers,
                                 skip_auto_headers=["Content-Type"])
    assert response.status == 415
    assert (await response.json())["error"]["code"] == "unsupported_media_type"
    sessions = await (await client.get("/ai-sidebar/sessions")).json()
    assert all(s.get("name") != "pwned" for s in sessions.get("sessions", sessions))
    tool = await client.post("/ai-sidebar/execute-tool", data=b'{"tool": "get_flows"}', headers=headers,
                             skip_auto_headers=["Content-Type"])
    assert tool.status == 415
