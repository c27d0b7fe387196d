"""Capture of every deploy: a comms subscriber that hears Node-RED's ``notification/runtime-deploy`` and stores the
flows of each new ``rev`` in the :class:`~service.history.store.HistoryStore`, off the deploy's request path.

Facts from Node-RED's source (4.x and 5.x, ``@node-red/runtime/lib/flows/index.js`` ``setFlows``; published by
``@node-red/runtime/lib/api/comms.js`` ``handleRuntimeEvent`` as topic ``notification/<id>``): after every deploy,
and after the flows load at start, the runtime emits ``{id: "runtime-deploy", payload: {revision}, retain: true}``;
the comms websocket sends it to every connection as ``{"topic": "notification/runtime-deploy", "data":
{"revision": "<rev>"}}`` and replays it to a new subscriber (retained), so a deploy made while the service was away is
captured when it connects again. The notification names neither the user nor the deploy type: the user is known only
for the assistant's own deploys (:data:`service.nodered.write_tools.DEPLOY_HOOKS`); every other deploy is recorded
with origin ``editor`` (the Admin API does not tell an editor's deploy from another client's).

The flows are read once per new ``rev`` (``GET /flows``, v2), with the service's own Node-RED credentials; notices
that arrive while a capture runs collapse into one more read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from typing import Any

import aiohttp

from service.history.diff import counts
from service.history.snapshot import split
from service.history.store import HistoryStore
from service.memory.db import MemoryUnavailable
from service.nodered import write_tools
from service.nodered.client import NodeRedClient, NodeRedError
from service.nodered.comms import CommsSubscriber
from service.nodered.evidence import EvidenceBuffer
from service.nodered.tooling import ToolContext

log = logging.getLogger(__name__)

DEPLOY_TOPIC = "notification/runtime-deploy"
OWN_DEPLOYS = 200  # the assistant's recent deploys remembered until captured


class Capture:
    """Stores the flows of each new ``rev`` of the Node-RED ``client`` talks to in ``store``, then applies the
    retention (``keep`` newest snapshots, ``days`` of age; pinned ones kept)."""

    def __init__(self, store: HistoryStore, client: NodeRedClient, keep: int, days: float):
        self.store, self._client, self._keep, self._days = store, client, keep, days
        self._wake = asyncio.Event()
        self._last: tuple[str | None, list[dict[str, Any]]] | None = None
        self._own: OrderedDict[str, tuple[str | None, dict[str, Any]]] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._marks: set[asyncio.Task[None]] = set()
        self.captured = 0  # snapshots this process stored

    def notice(self, rev: Any) -> None:
        """Node-RED deployed ``rev``: capture it soon (in the background task)."""
        if isinstance(rev, str) and rev and (self._last is None or rev != self._last[0]):
            self._wake.set()

    def own(self, rev: str, user: str | None, detail: dict[str, Any]) -> None:
        """The assistant deployed ``rev`` for ``user``: record it with origin ``assistant`` when captured (or now,
        when it was captured already)."""
        self._own[rev] = (user, detail)
        while len(self._own) > OWN_DEPLOYS:
            self._own.popitem(last=False)
        if self._last is not None and self._last[0] == rev:
            task = asyncio.get_running_loop().create_task(self._mark(rev))
            self._marks.add(task)
            task.add_done_callback(self._marks.discard)
        self._wake.set()

    def start(self) -> None:
        """Run the capture loop in a background task."""
        if self._task is None:
            self._wake.set()  # the flows as they are now, once at start
            self._task = asyncio.create_task(self._run(), name="flow-history-capture")

    async def stop(self) -> None:
        """Cancel the background task (and pending origin updates) and wait for them."""
        for task in [self._task, *self._marks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = None

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.capture()
            except NodeRedError as err:
                if self._last is None and err.code == "nodered_unreachable":
                    # A service started beside Node-RED (make run, a supervisor) is often up first. Node-RED's
                    # retained runtime-deploy notification reaches the DeployWatcher once Node-RED answers, and the
                    # flows are captured then: nothing is lost, nothing to warn about.
                    log.info("flow history: Node-RED is not reachable yet; its flows are captured once it answers")
                else:
                    log.warning("flow history: deploy not captured (%s)", err.message)
            except MemoryUnavailable as err:
                log.warning("flow history: deploy not captured (%s)", err.message)
            except Exception:  # a bug here must not stop the capture of later deploys
                log.exception("flow history: deploy not captured")

    async def capture(self) -> str | None:
        """Read the flows now and store them when their ``rev`` is new. Returns the ``rev`` read.

        Raises:
            NodeRedError: Node-RED cannot be read. MemoryUnavailable: the database fails.
        """
        answer = await self._client.get_flows()
        rev = answer.get("rev")
        if not isinstance(rev, str) or (self._last is not None and self._last[0] == rev):
            return rev
        cut = split(answer.get("flows") or [])
        flows = cut.kept()  # as stored, so that the counts compare like with like
        own = self._own.pop(rev, None)
        if await self.store.has(rev):
            if own is not None:
                await self.store.mark_assistant(rev, own[0], own[1])
        else:
            previous = self._last[1] if self._last is not None else await self._latest_flows()
            stored = await self.store.save(rev, cut, origin="assistant" if own else "editor",
                                           user=own[0] if own else None, detail=own[1] if own else None,
                                           counts=counts(previous, flows) if previous is not None else None)
            if stored:
                self.captured += 1
                if self.captured % 20 == 0:
                    await self.store.apply_retention(self._keep, self._days)
            elif own is not None:  # another replica stored it first
                await self.store.mark_assistant(rev, own[0], own[1])
        self._last = (rev, flows)
        return rev

    async def retention(self) -> int:
        """Apply the retention now; returns the snapshots removed."""
        return await self.store.apply_retention(self._keep, self._days)

    async def _latest_flows(self) -> list[dict[str, Any]] | None:
        latest = await self.store.latest()
        return await self.store.flows(latest.rev) if latest is not None else None

    async def _mark(self, rev: str) -> None:
        own = self._own.pop(rev, None)
        if own is not None:
            try:
                await self.store.mark_assistant(rev, own[0], own[1])
            except MemoryUnavailable as err:
                log.warning("flow history: the assistant's deploy %s not marked (%s)", rev, err.message)


class DeployWatcher(CommsSubscriber):
    """A comms connection of its own that passes each ``notification/runtime-deploy`` to a :class:`Capture`
    (reconnecting as :class:`~service.nodered.comms.CommsSubscriber` does; works with runtime evidence off)."""

    topics = (DEPLOY_TOPIC,)

    def __init__(self, client: NodeRedClient, session: aiohttp.ClientSession, capture: Capture):
        super().__init__(client, session, EvidenceBuffer(per_node=1, max_entries=1))
        self.capture = capture

    def _item(self, item: dict[str, Any]) -> None:
        if item.get("topic") == DEPLOY_TOPIC and isinstance(item.get("data"), dict):
            self.capture.notice(item["data"].get("revision"))


# The captures running in this process, by the admin root of their Node-RED (NodeRedClient.base_url): how the tools
# and routes find the history of the Node-RED a request talks to.
CAPTURES: dict[str, Capture] = {}


def history_for(client: NodeRedClient) -> Capture | None:
    """The capture (and its store) of the Node-RED ``client`` talks to, or ``None`` when history is off."""
    return CAPTURES.get(client.base_url)


def _assistant_deployed(ctx: ToolContext, rev: str | None, change: write_tools.Change) -> None:
    capture = history_for(ctx.nodered)
    if capture is None or not rev:
        return
    identity = getattr(ctx, "identity", None)
    detail: dict[str, Any] = {"tool": change.tool, "summary": change.summary}
    # The run and the approval the deploy came from, when a person's decision continued a run (ServiceToolContext).
    for key, attr in (("runId", "run_id"), ("approvalId", "approval_id")):
        if getattr(ctx, attr, None):
            detail[key] = getattr(ctx, attr)
    capture.own(rev, getattr(identity, "name", None) or None, detail)


write_tools.DEPLOY_HOOKS.append(_assistant_deployed)
