"""A scripted Anthropic Messages API server for tests (``AI_PROVIDER=anthropic``).

It speaks ``POST /v1/messages`` the way the Anthropic API does (https://docs.anthropic.com/en/api/messages-streaming;
the event shapes are the anthropic SDK's ``anthropic.types.Raw*Event`` models). With ``"stream": true`` it answers
``text/event-stream`` events, each an ``event:`` line naming its type (the SDK skips data without one) and its JSON:
``message_start`` (the message with its input usage), per content block ``content_block_start``,
``content_block_delta`` pieces (``text_delta`` for the text, ``input_json_delta`` for a ``tool_use`` block's input;
a :attr:`Reply.reasoning` as a ``thinking`` block of ``thinking_delta`` pieces and a ``signature_delta`` first)
and ``content_block_stop``, a ``ping``, ``message_delta`` (``stop_reason`` ``end_turn`` or ``tool_use``, the
cumulative usage) and ``message_stop``. Without ``stream`` it answers one ``message``.

Faults come as the API sends them (https://docs.anthropic.com/en/api/errors): an HTTP status with
``{"type": "error", "error": {"type", "message"}}`` and a ``request-id`` header, or an ``error`` event in the middle
of a stream that began with 200 (:attr:`AnthropicReply.stream_error`), as an overloaded API does. Requests the API
refuses are refused here the same way, so that a test fails on a request Anthropic would not take: no API key
(``x-api-key``, or ``Authorization: Bearer`` as the anthropic SDK 2.x sends it) or one not in ``accepted_keys``, no
``anthropic-version``, no ``max_tokens``, a message role other than ``user``
or ``assistant`` (a system prompt goes in the top-level ``system``), or ``tool_use`` and ``tool_result`` blocks that
do not answer each other in consecutive messages.

Prompt caching (https://docs.claude.com/en/docs/build-with-claude/prompt-caching) is kept as the API keeps it: a
request whose ``system`` ends in a block with ``cache_control`` writes its tools and system prompt to the cache
(``cache_creation_input_tokens``) and a later request starting with the same ones reads them
(``cache_read_input_tokens``); ``input_tokens`` is then the rest, as the API counts it.

Replies are scripted as for the OpenAI-compatible server (:mod:`tests.support.model_server`, whose queue, request
log, thread and fault timing this server shares) with its :class:`~tests.support.model_server.Reply`; requests are
in ``requests`` and ``headers`` (the key's header included).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.support.model_server import Reply, ScriptedModelServer

API_VERSION = "2023-06-01"
# The error ``type`` of each HTTP status (https://docs.anthropic.com/en/api/errors).
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}
REQUEST_ID = "req_scripted0001"


@dataclass
class AnthropicReply(Reply):
    """A :class:`Reply` that may also fail in the middle of its stream.

    Attributes:
        stream_error: after the text, an ``error`` event of this status's type (e.g. 529: ``overloaded_error``)
            ends the stream instead of ``message_delta`` and ``message_stop``; the HTTP status stays 200.
    """

    stream_error: int | None = None


def usage_of(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """The usage this server reports for ``reply`` to ``body``: about 4 characters a token of the system prompt,
    messages and tools asked with, and of the thinking, text and tool inputs answered (at least 1)."""
    asked = json.dumps([body.get("system"), body.get("messages"), body.get("tools")])
    tool_inputs = "".join(json.dumps(call.get("arguments", {})) for call in reply.tool_calls)
    answered = reply.text + reply.reasoning + tool_inputs
    return {"input_tokens": len(asked) // 4, "output_tokens": max(1, len(answered) // 4)}


def cacheable_tokens(body: dict[str, Any]) -> int:
    """The tokens of ``body``'s tools and system prompt when its system prompt's last block asks for the prompt
    cache (the part cached), else 0."""
    system = body.get("system")
    if not (isinstance(system, list) and system and system[-1].get("cache_control")):
        return 0
    return len(json.dumps([body.get("tools"), system])) // 4


def refusal(body: dict[str, Any], headers: Any, accepted_keys: set[str] | None) -> tuple[int, str] | None:
    """The HTTP status and message the Anthropic API answers a request it refuses with, or ``None``."""
    key = api_key(headers)
    if not key:
        return 401, "x-api-key header is required"
    if accepted_keys is not None and key not in accepted_keys:
        return 401, "invalid x-api-key" if headers.get("x-api-key") else "Invalid bearer token"
    if not headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    if not isinstance(body.get("max_tokens"), int):
        return 400, "max_tokens: Field required"
    messages = body.get("messages") or []
    for index, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return 400, f"messages.{index}.role: Input should be 'user' or 'assistant'"
        used = _blocks(message, "tool_use", "id")
        answered = _blocks(messages[index + 1], "tool_result", "tool_use_id") if index + 1 < len(messages) else set()
        if used and index + 1 < len(messages) and not used <= answered:
            return 400, (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
                         f"after: {', '.join(sorted(used - answered))}")
        before = _blocks(messages[index - 1], "tool_use", "id") if index else set()
        if not _blocks(message, "tool_result", "tool_use_id") <= before:
            return 400, (f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks; each "
                         "`tool_result` block must have a corresponding `tool_use` block in the previous message")
    return None


def api_key(headers: Any) -> str | None:
    """The API key of a request: its ``x-api-key`` header, else the token of ``Authorization: Bearer``."""
    bearer = headers.get("Authorization", "")
    return headers.get("x-api-key") or (bearer[len("Bearer "):] if bearer.startswith("Bearer ") else None)


def _blocks(message: dict[str, Any], kind: str, field: str) -> set[str]:
    content = message.get("content")
    return {b.get(field) for b in content if b.get("type") == kind} if isinstance(content, list) else set()


class ScriptedAnthropicServer(ScriptedModelServer):
    """Start with :meth:`start` (returns the base URL, to which the SDK adds ``/v1/messages``), stop with
    :meth:`stop`. ``accepted_keys``: the API keys answered (``None``: any)."""

    def __init__(self, accepted_keys: set[str] | None = None) -> None:
        super().__init__()
        self.accepted_keys = accepted_keys
        self.cached: set[str] = set()  # the cached prefixes (tools and system) of the prompt cache

    def reset(self) -> None:
        super().reset()
        self.cached.clear()

    def cache_use(self, body: dict[str, Any]) -> tuple[int, int]:
        """The tokens of ``body`` read from and written to the prompt cache: its tools and system prompt, when the
        system prompt's last block asks for the cache (``(0, 0)`` when it does not)."""
        tokens = cacheable_tokens(body)
        if not tokens:
            return 0, 0
        prefix = json.dumps([body.get("tools"), body.get("system")])
        with self._lock:
            if prefix in self.cached:
                return tokens, 0
            self.cached.add(prefix)
        return 0, tokens

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        refused = refusal(body, request.headers, self.accepted_keys)
        if refused is not None:
            with self._lock:
                self.requests.append(body)
                self.headers.append(dict(request.headers))
            return _error(*refused)
        reply = await self.reply_to(request, body)
        if reply is None:
            return web.Response()
        if reply.status != 200:
            return _error(reply.status, reply.error_text(f"API key: {api_key(request.headers)}"), reply.headers)
        usage = {**usage_of(body, reply), "cache": self.cache_use(body)}
        model = body.get("model", "scripted")
        if not body.get("stream"):
            return web.json_response(_message(reply, model, usage), headers={"request-id": REQUEST_ID})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "request-id": REQUEST_ID})
        await response.prepare(request)

        async def send(event: dict[str, Any]) -> None:
            await response.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

        start = _message(Reply(), model, {**usage, "output_tokens": 1})
        await send({"type": "message_start", "message": {**start, "stop_reason": None}})
        index = 0
        if reply.reasoning:  # extended thinking: a thinking block first, its signature last
            await send({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for piece in Reply(text=reply.reasoning).pieces():
                await send({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "thinking_delta", "thinking": piece}})
            await send({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "signature_delta", "signature": "c2NyaXB0ZWQ="}})
            await send({"type": "content_block_stop", "index": 0})
            index = 1
        if reply.text or not reply.tool_calls:
            await send({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}})
            await send({"type": "ping"})
            for number, piece in enumerate(reply.pieces() if reply.text else []):
                if not await self.piece_due(request, reply, number):
                    return response
                await send({"type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta", "text": piece}})
            if isinstance(reply, AnthropicReply) and reply.stream_error:
                status = reply.stream_error
                await send({"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                                       "message": reply.error_message}})
                await response.write_eof()
                return response
            await send({"type": "content_block_stop", "index": index})
            index += 1
        for number, call in enumerate(reply.tool_calls):
            block = {"type": "tool_use", "id": _tool_use_id(number, call), "name": call["name"], "input": {}}
            await send({"type": "content_block_start", "index": index, "content_block": block})
            arguments = call["raw_arguments"] if "raw_arguments" in call else json.dumps(call.get("arguments", {}))
            half = len(arguments) // 2
            for part in (arguments[:half], arguments[half:]):
                await send({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": part}})
            await send({"type": "content_block_stop", "index": index})
            index += 1
        await send({"type": "message_delta", "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
                    "usage": _usage(usage)})
        await send({"type": "message_stop"})
        await response.write_eof()
        return response


def _tool_use_id(number: int, call: dict[str, Any]) -> str:
    return f"toolu_{number:02d}{call['name']}"


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    """The API's usage: ``input_tokens`` without the cached ones, which it counts apart."""
    read, write = usage.get("cache", (0, 0))
    return {"input_tokens": usage["input_tokens"] - read - write, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": usage["output_tokens"]}


def _message(reply: Reply, model: str, usage: dict[str, int]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": _tool_use_id(number, call), "name": call["name"],
                 "input": call.get("arguments", {})} for number, call in enumerate(reply.tool_calls)]
    return {"id": "msg_scripted0001", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": _stop_reason(reply), "stop_sequence": None, "usage": _usage(usage)}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                                         "message": message}, "request_id": REQUEST_ID},
                             status=status, headers={"request-id": REQUEST_ID, **(headers or {})})
