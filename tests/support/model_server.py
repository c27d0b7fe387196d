"""A scripted OpenAI-compatible chat completions server for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` the way the OpenAI API does (https://platform.openai.com/docs/api-reference/
chat-streaming): with ``stream: true`` it answers ``text/event-stream`` chunks ``chat.completion.chunk`` whose
``delta`` holds ``content`` pieces or ``tool_calls`` fragments (id, name, then argument pieces), a last chunk with
``finish_reason``, a usage chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``.

Tests queue replies with :meth:`ScriptedModelServer.script` and read what the client sent in ``requests``.

``POST /v1/embeddings`` (https://platform.openai.com/docs/api-reference/embeddings) answers deterministic vectors:
a hashed bag of words (:func:`embed`) in which the words of one :data:`CONCEPTS` entry share a bucket, so that a
paraphrase ("spreadsheet" for "csv") lands near the text it paraphrases, as a real embedding model's would.
Its requests are in ``embedding_requests``.

``POST /v1/completions`` and ``POST /beta/completions`` speak the completions API with a ``suffix`` (fill in the
middle: OpenAI's legacy completions, https://platform.openai.com/docs/api-reference/completions/create, as Ollama
serves it; DeepSeek's FIM beta, https://api-docs.deepseek.com/api/create-completion): one JSON answer
``text_completion`` whose ``choices[0].text`` is the reply's text, with ``usage``. Their requests join ``requests``;
``paths`` says which route each request of ``requests`` came to.
The server runs on its own event loop in a thread, so a service in another process can use it too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web


@dataclass
class Reply:
    """One scripted answer.

    Attributes:
        text: assistant text, sent in ``chunks`` pieces (split on spaces when ``chunks`` is None).
        tool_calls: ``[{"name": str, "arguments": dict}]`` to stream as tool calls (``"raw_arguments": str``
            instead sends that text as the arguments, e.g. JSON that does not parse).
        status: an HTTP error status to answer instead (with an OpenAI-shaped error body).
        echo_authorization: put the request's ``Authorization`` header into the error message, as some
            OpenAI-compatible servers do.
        delay: seconds to wait before answering (to test timeouts); ``token_delay`` between chunks.
        drop_after: close the connection without a proper end after this many text pieces (0: before any
            answer), as a server or proxy that goes away does.
        hold_after: after this many text pieces send nothing more and keep the stream open until the client goes
            away (a model still thinking); the server then appends the number of pieces sent to ``went_away``.
        reasoning: a reasoning model's thoughts, streamed before the text as ``delta.reasoning_content`` pieces
            (split on spaces), as DeepSeek's API, vLLM and LM Studio send them; counted in ``completion_tokens``.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error_message: str = "scripted error"
    echo_authorization: bool = False
    delay: float = 0.0
    token_delay: float = 0.0
    chunks: list[str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    hold_after: int | None = None
    reasoning: str = ""

    def error_text(self, received: str) -> str:
        """The error message, with what the request authenticated with (``received``) when echoing it."""
        return f"{self.error_message} (received {received})" if self.echo_authorization else self.error_message

    def pieces(self) -> list[str]:
        if self.chunks is not None:
            return self.chunks
        words = self.text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words) if w or i == 0]


EMBEDDING_DIMENSIONS = 256
# Words a real embedding model would place together: each row's words share one bucket (the first word's).
CONCEPTS: tuple[tuple[str, ...], ...] = (
    ("csv", "spreadsheet", "spreadsheets", "comma", "tabular"),
    ("delay", "postpone", "slow", "throttle", "wait"),
    ("exec", "command", "shell", "terminal", "program", "binary", "executable", "utility"),
)
_CONCEPT_OF = {word: row[0] for row in CONCEPTS for word in row}


def embed(text: str) -> list[float]:
    """A unit vector of :data:`EMBEDDING_DIMENSIONS`: each word (after :data:`CONCEPTS`) adds 1 to its bucket."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.casefold()):
        word = _CONCEPT_OF.get(word, word)
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % EMBEDDING_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


DEFAULT_REPLY = Reply(text="This is a scripted answer from the test model server.")


class ScriptedModelServer:
    """Start with :meth:`start` (returns the base URL ending in ``/v1``), stop with :meth:`stop`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_status = 200
        # Per held stream (``Reply.hold_after``) whose client went away: the text pieces it had been sent.
        self.went_away: list[int] = []
        self.default = DEFAULT_REPLY
        # When set and the queue is empty: a function of the request's body that answers it (a model whose reply
        # depends on what it was asked, e.g. a summary of the messages it received).
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        """Replace the queue of replies; when it runs out, ``default`` answers."""
        with self._lock:
            self._queue = list(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue = []
            self.requests.clear()
            self.headers.clear()
            self.paths.clear()
            self.embedding_requests.clear()
            self.embedding_status = 200
            self.went_away.clear()
            self.default = DEFAULT_REPLY
            self.responder = None

    def emptied(self) -> Iterator[Self]:
        """For a per-test fixture: this server emptied (:meth:`reset`) before the test and after it."""
        self.reset()
        yield self
        self.reset()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._queue:
                return self._queue.pop(0)
            responder = self.responder
        return responder(body) if responder is not None else self.default

    def start(self, port: int = 0) -> str:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            app = web.Application()
            self.routes(app)
            self._runner = web.AppRunner(app)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", port)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="scripted-model-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted model server did not start")
        return self.base_url

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def routes(self, app: web.Application) -> None:
        """Add the endpoints this server speaks to ``app`` (a server of another provider's API replaces them)."""
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/completions", self._fill_in)
        app.router.add_post("/beta/completions", self._fill_in)

    async def reply_to(self, request: web.Request, body: dict[str, Any]) -> Reply | None:
        """The next reply for ``body`` (recorded with the request's headers), after its ``delay``; ``None`` when it
        drops the connection before any answer (``drop_after=0``)."""
        with self._lock:
            self.paths.append(request.path)
        reply = self._next(body, dict(request.headers))
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.drop_after == 0:
            request.transport.abort()
            return None
        return reply

    async def piece_due(self, request: web.Request, reply: Reply, index: int) -> bool:
        """Whether text piece ``index`` is to be sent, after ``reply.token_delay``; ``False`` once the stream ends
        there: the connection dropped (``drop_after``) or held until the client leaves (``hold_after``)."""
        if index == reply.drop_after:
            request.transport.abort()
            return False
        if index == reply.hold_after:
            # aiohttp does not cancel a handler whose client left, nor signal it: the closed transport is the
            # only sign, hence polled.
            while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            with self._lock:
                self.went_away.append(index)
            return False
        if reply.token_delay:
            await asyncio.sleep(reply.token_delay)
        return True

    async def _fill_in(self, request: web.Request) -> web.Response:
        """A completions request (``prompt``, ``suffix``), answered at once with the reply's whole text; a reply
        with ``hold_after`` answers nothing until the client goes away (``went_away`` gets 0)."""
        body = await request.json()
        reply = await self.reply_to(request, body)
        if reply is None:
            return web.Response()
        if reply.status != 200:
            return web.json_response({"error": {"message": reply.error_message, "type": "invalid_request_error",
                                                "code": str(reply.status)}}, status=reply.status)
        if reply.hold_after is not None:
            await self.piece_due(request, reply, reply.hold_after)
            return web.Response()
        prompt_tokens = (len(str(body.get("prompt", ""))) + len(str(body.get("suffix") or ""))) // 4
        completion_tokens = max(1, len(reply.text) // 4)
        return web.json_response({
            "id": "cmpl-scripted", "object": "text_completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "text": reply.text, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}})

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.embedding_requests.append(body)
            status = self.embedding_status
        if status != 200:
            return web.json_response({"error": {"message": "scripted error", "type": "scripted",
                                                "code": str(status)}}, status=status)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(inputs):
            vector = embed(text if isinstance(text, str) else " ".join(map(str, text)))
            if body.get("encoding_format") == "base64":
                value: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                value = vector
            data.append({"object": "embedding", "index": index, "embedding": value})
        tokens = sum(len(str(text).split()) for text in inputs)
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "scripted"),
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        reply = await self.reply_to(request, body)
        if reply is None:
            return web.Response()
        if reply.status != 200:
            message = reply.error_text(f"Authorization: {request.headers.get('Authorization')}")
            return web.json_response({"error": {"message": message, "type": "scripted",
                                                "code": str(reply.status)}}, status=reply.status,
                                     headers=reply.headers)
        model = body.get("model", "scripted")
        created = int(time.time())
        base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created, "model": model}
        if not body.get("stream"):
            return web.json_response(_completion(reply, model, created))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(payload: Any) -> None:
            await response.write(f"data: {json.dumps(payload)}\n\n".encode())

        with contextlib.suppress(ConnectionResetError):
            # (A client leaving mid-stream, a Stop or a cancelled request, is normal for a model server: the stream
            # just ends, with no handler traceback in the test's log.)
            if await self._stream(request, reply, body, base, send):
                await response.write(b"data: [DONE]\n\n")
                await response.write_eof()
        return response

    async def _stream(self, request: web.Request, reply: Reply, body: dict[str, Any], base: dict[str, Any],
                      send: Callable[[Any], Awaitable[None]]) -> bool:
        """Send the chunks of a streamed chat completion for ``reply`` through ``send``; ``False`` when
        :meth:`piece_due` ended the stream early (nothing more is to be written)."""
        await send({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})
        for piece in Reply(text=reply.reasoning).pieces() if reply.reasoning else []:
            await send({**base, "choices": [{"index": 0, "delta": {"reasoning_content": piece},
                                             "finish_reason": None}]})
        for index, piece in enumerate(reply.pieces() if reply.text else []):
            if not await self.piece_due(request, reply, index):
                return False
            await send({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        for index, call in enumerate(reply.tool_calls):
            arguments = call["raw_arguments"] if "raw_arguments" in call else json.dumps(call.get("arguments", {}))
            head = {"index": index, "id": f"call_{index}_{call['name']}", "type": "function",
                    "function": {"name": call["name"], "arguments": ""}}
            await send({**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}]})
            half = len(arguments) // 2
            for part in (arguments[:half], arguments[half:]):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": part}}]}
                await send({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        finish = "tool_calls" if reply.tool_calls else "stop"
        await send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages", []))
            completion_tokens = max(1, (len(reply.text) + len(reply.reasoning)) // 4)
            await send({**base, "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                                        "completion_tokens": completion_tokens,
                                                        "total_tokens": prompt_tokens + completion_tokens}})
        return True


def _completion(reply: Reply, model: str, created: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": f"call_{i}_{c['name']}", "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                                 for i, c in enumerate(reply.tool_calls)]
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def echo_reply(body: dict[str, Any]) -> Reply:
    """What the stand-alone server (:func:`main`) answers: no model at all, only what it received, so that a
    person trying the assistant without a provider sees the request go through (messages, tools offered)."""
    messages = body.get("messages") or []
    last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    content = last.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    if len(text) > 300:
        text = text[:300] + "…"
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    return Reply(text=(f"(Scripted test model, not a real LLM.) I received {len(messages)} messages"
                       f"{' and ' + str(len(tools)) + ' tools' if tools else ''}; the last question was: {text}"))


def main() -> None:
    """``python -m tests.support.model_server [--port 11434]``: serve :func:`echo_reply` answers on 127.0.0.1
    until Ctrl-C, to try the sidebar without a model (README, "No key at hand?")."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=11434)
    port = parser.parse_args().port
    server = ScriptedModelServer()

    def answer(body: dict[str, Any]) -> Reply:
        server.requests.clear()  # kept for tests; a long-running server needs none of them
        server.headers.clear()
        return echo_reply(body)

    server.responder = answer
    url = server.start(port)
    print(f"scripted model server on {url} (Ctrl-C stops it)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
