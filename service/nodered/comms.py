"""A subscriber to Node-RED's comms websocket, the channel the editor receives debug messages and node status on;
what arrives goes into an :class:`~service.nodered.evidence.EvidenceBuffer`.

The protocol (``@node-red/editor-api/lib/editor/comms.js``, ``@node-red/runtime/lib/api/comms.js``):

* The websocket is ``<httpAdminRoot>/comms`` (``ws://`` or ``wss://``, the scheme of the admin root).
* With ``adminAuth`` on, the first message is ``{"auth": "<access token>"}``; Node-RED answers ``{"auth": "ok"}``
  or ``{"auth": "fail"}`` and closes (the token's user needs the ``status.read`` permission, which ``read``
  includes). Without a token it serves the ``default`` user, if settings.js has one; otherwise it fails the same
  way. An expired session is also told ``{"auth": "fail"}``, then closed.
* ``{"subscribe": "<topic>"}`` (``+`` and ``#`` wildcards) replays the retained messages of that topic (node
  status); every connection receives all published messages anyway.
* Node-RED sends JSON arrays of ``{topic, data}``, at most 50 every 50 ms per connection (so at most 1,000
  messages per second reach a subscriber), and an ``hb`` topic after 15 s of silence.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from typing import Any

import aiohttp

from service.nodered.client import NodeRedClient, NodeRedError
from service.nodered.evidence import EvidenceBuffer

log = logging.getLogger(__name__)

TOPICS = ("debug", "status/#", "notification/runtime-deploy")  # the last: flows of a revision started
BACKOFF = (0.5, 1.0, 2.0, 3.0)  # seconds before reconnecting; the last repeats (evidence flows again within 10 s)
HEARTBEAT = 15.0  # seconds between websocket pings: a Node-RED that vanished without closing is noticed
REFUSED_RETRY = 60.0  # seconds between attempts while Node-RED refuses the credentials
AUTH_TIMEOUT = 10.0  # seconds Node-RED has to answer the auth message


class CommsRefused(Exception):
    """Node-RED refused the comms connection (``{"auth": "fail"}``)."""


def comms_url(base_url: str) -> str:
    """The comms websocket of the admin root ``base_url`` (``http://h:1880/admin`` → ``ws://h:1880/admin/comms``)."""
    scheme, rest = base_url.rstrip("/").split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/comms"


class CommsSubscriber:
    """Keeps one comms connection open to the Node-RED of ``client``, reconnecting with backoff, feeding ``buffer``.

    It never raises out of :meth:`run`: any failure is logged (once per kind, until the next success) and retried.

    Args:
        client: the Admin API client (its base URL and credentials: a configured token, or the password grant).
        session: the aiohttp session to connect with.
        buffer: where messages go; its ``connected`` and ``last_error`` tell the tools the subscription's state.
        backoff: seconds before each reconnection attempt, the last one repeating.
    """

    topics: tuple[str, ...] = TOPICS  # what it subscribes to (retained messages replayed); a subclass may change it

    def __init__(self, client: NodeRedClient, session: aiohttp.ClientSession, buffer: EvidenceBuffer,
                 backoff: Sequence[float] = BACKOFF, heartbeat: float = HEARTBEAT):
        self._client, self._session, self.buffer = client, session, buffer
        self._backoff, self._heartbeat = tuple(backoff), heartbeat
        self._task: asyncio.Task[None] | None = None
        self.connections = 0  # successful subscriptions so far

    def start(self) -> None:
        """Run :meth:`run` in a background task."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="nodered-comms")

    async def stop(self) -> None:
        """Cancel the background task and wait for it (the websocket is closed on the way out)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.buffer.connected = False

    async def run(self) -> None:
        """Connect, subscribe and read until cancelled, reconnecting after every failure."""
        attempt = 0
        refusals = 0
        reported: str | None = None
        ever_connected = False
        while True:
            refused = False
            unreachable = False
            try:
                await self._session_once(renew=refusals > 0)
                reason = "Node-RED closed the comms websocket"
            except asyncio.CancelledError:
                raise
            except CommsRefused:
                reason = ("Node-RED refused the comms websocket: set NODE_RED_TOKEN, or NODE_RED_USERNAME and "
                          "NODE_RED_PASSWORD, of a user with read permission")
                refused = True
            except NodeRedError as err:
                reason = f"{err.code}: {err.message}"
                refused = err.code in ("nodered_login_failed", "nodered_unauthorized")
                unreachable = err.code == "nodered_unreachable"
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as err:
                reason = f"Node-RED's comms websocket is not reachable ({type(err).__name__})"
                unreachable = True
            except Exception:  # a bug here must not stop the service; it is logged with its stack
                log.exception("runtime evidence: the comms subscriber failed")
                reason = "internal error in the comms subscriber"
            refusals = refusals + 1 if refused else 0
            if self.buffer.connected and not refused:  # it had worked: the first retry comes soon
                attempt = 0
                reported = None
                ever_connected = True
            self.buffer.connected = False
            self.buffer.last_error = reason
            if reason != reported:  # once per kind of failure, not on every retry
                if unreachable and not ever_connected:
                    # `make run` starts the service before Node-RED: not reachable yet is expected, not a fault.
                    log.info("runtime evidence: Node-RED is not reachable yet (%s); waiting for it", reason)
                else:
                    log.warning("runtime evidence: %s; reconnecting", reason)
                reported = reason
            # A refusal is retried once at once with a fresh login (an expired session), then rarely: the
            # credentials must change first.
            delay = REFUSED_RETRY if refusals > 1 else self._backoff[min(attempt, len(self._backoff) - 1)]
            await asyncio.sleep(delay)
            attempt += 1

    async def _session_once(self, renew: bool) -> None:
        """One connection: authenticate when adminAuth is on, subscribe, then read until it closes."""
        scheme = await self._client.get_auth_login()
        token = await self._client.access_token(renew=renew) if scheme.get("type") else None
        async with self._session.ws_connect(comms_url(self._client.base_url), heartbeat=self._heartbeat,
                                            timeout=aiohttp.ClientWSTimeout(ws_close=5.0)) as ws:
            if token:
                await ws.send_str(json.dumps({"auth": token}))
                answer = await ws.receive(timeout=AUTH_TIMEOUT)
                if answer.type is not aiohttp.WSMsgType.TEXT or _auth_answer(answer.data) != "ok":
                    raise CommsRefused()
            for topic in self.topics:
                await ws.send_str(json.dumps({"subscribe": topic}))
            self._connected()
            async for message in ws:
                if message.type is not aiohttp.WSMsgType.TEXT:
                    break
                self._take(message.data)

    def _take(self, text: str) -> None:
        try:
            batch = json.loads(text)
        except ValueError:
            return
        if isinstance(batch, dict):
            if batch.get("auth") == "fail":  # the session expired
                raise CommsRefused()
            return
        for item in batch if isinstance(batch, list) else ():
            if isinstance(item, dict):
                self._item(item)

    def _item(self, item: dict[str, Any]) -> None:
        """One ``{topic, data}`` message Node-RED sent (a subclass may take other topics)."""
        topic = item.get("topic")
        if topic == "debug":
            self.buffer.add_debug(item.get("data"))
        elif isinstance(topic, str) and topic.startswith("status/"):
            self.buffer.add_status(topic[len("status/"):], item.get("data"))
        elif topic == "notification/runtime-deploy":
            self.buffer.add_started(item.get("data"))

    def _connected(self) -> None:
        self.connections += 1
        self.buffer.connected = True
        self.buffer.last_error = None
        log.info("runtime evidence: subscribed to Node-RED's comms websocket")


def _auth_answer(text: str) -> Any:
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    return answer.get("auth") if isinstance(answer, dict) else None
