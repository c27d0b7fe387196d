"""Runtime evidence: what Node-RED's editor sees of a running flow (debug messages, ``node.error``/``node.warn``
entries, node status), kept in a buffer bounded per node, in time and in total.

Facts about what arrives on the comms websocket (Node-RED 4.x/5.x source):

* Topic ``debug`` (``@node-red/nodes/core/common/21-debug.js``, ``sendDebug``): a debug node's output
  ``{id, z, _alias?, path, name, topic, property, msg, format}``, and every log entry of level ``warn`` (30) or
  ``error`` (20) ``{level, id, type, z, name, msg, format}`` (``@node-red/runtime/lib/nodes/Node.js``,
  ``log_helper``). ``msg`` went through ``RED.util.encodeObject`` (``@node-red/util/lib/util.js``): objects,
  arrays, maps, sets and errors as JSON text (an error as ``{"__enc__": true, "type": "error", "data": {name,
  message, stack}}``), strings as themselves, numbers and booleans as text, buffers as hex; ``format`` names the
  type (``Object``, ``array[3]``, ``string[12]``, ``number``, ``buffer[4]``, ``error``); ``undefined`` and
  ``null`` arrive as the text ``(undefined)`` with that ``format``. Strings and arrays inside
  are already cut to ``debugMaxLength`` (default 1000).
* Topic ``status/<node id>`` (``@node-red/runtime/lib/api/comms.js``): ``{text, fill, shape}``, or ``{}`` when
  the status was cleared.

Memory stays bounded whatever the rate: a value is decoded and shortened on arrival (:data:`VALUE_BUDGET`
characters at most), and a message leaves the buffer when its node has :attr:`EvidenceBuffer.per_node` newer ones,
when it is older than the window, or when the buffer holds :attr:`EvidenceBuffer.max_entries`. Redaction (the
costly part, about a millisecond per message) runs when a tool reads the buffer, on the few messages it shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from service.nodered.redaction import REDACTED, is_secret_name, redact_text
from service.nodered.status_texts import StatusTexts

LEVEL_ERROR = 20  # @node-red/util/lib/log.js levels
LEVEL_WARN = 30
PARSE_LIMIT = 1_000_000  # characters of an encoded value decoded at most; a larger one is kept by type and size
VALUE_BUDGET = 4_000     # characters of a value kept per message (strings, keys and scalars counted)
STRING_LIMIT = 500       # characters kept of one string inside a value
ITEMS_LIMIT = 20         # items kept of one list, keys of one object
DEPTH_LIMIT = 6
STATUS_TEXT_LIMIT = 200
PREVIEW_LIMIT = 800      # characters of a value's preview a tool shows

Kind = Literal["error", "warning", "debug"]
# ``format`` values whose text is a type, not the value's own (util.js ``encodeObject``): shown by type.
_WORD_FORMATS = ("undefined", "null")
_TYPE_FORMATS = ("undefined", "null", "number", "boolean", "bigint")
_SCALAR_FORMATS = ("string", "buffer", "number", "boolean", "regexp", "function", "bigint", "symbol", "undefined",
                   "null", "date")


@dataclass(frozen=True, slots=True)
class Evidence:
    """One message a node produced: a debug node's output (``debug``) or a ``node.error``/``node.warn`` entry.

    Attributes:
        time: when the service received it (Unix seconds).
        node_id, flow_id, path: the node, its tab or subflow (``z``), and Node-RED's flow path (``tab/instance``
            inside a subflow instance).
        value: the decoded value, shortened (see :data:`VALUE_BUDGET`); not yet redacted.
        shape: its type and shape as received (``object{12 keys}``, ``array[300]``, ``string(1024 chars)``).
        size: characters of the value as Node-RED encoded it.
        shortened: ``value`` holds less than was received.
    """

    seq: int
    time: float
    kind: Kind
    node_id: str
    flow_id: str | None
    path: str | None
    node_name: str | None
    node_type: str | None
    topic: str | None
    property: str | None
    format: str | None
    value: Any
    shape: str
    size: int
    shortened: bool

    def preview(self, limit: int = PREVIEW_LIMIT) -> str:
        """The value, redacted, as compact text of at most ``limit`` characters (an error as ``Name: message``)."""
        value = redact_value(self.value)
        if isinstance(value, dict) and value.get("__enc__") and value.get("type") == "error":
            data: dict[str, Any] = value["data"] if isinstance(value.get("data"), dict) else {}
            stack = str(data.get("stack") or "").splitlines()[1:4]
            text = f"{data.get('name') or 'Error'}: {data.get('message', '')}"
            text += "".join(f"\n    {line.strip()}" for line in stack)
        elif isinstance(value, str):
            text = value
        else:
            text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > limit:
            text = text[:limit] + f"…[+{len(text) - limit} chars]"
        return text

    def in_flow(self, flow_id: str) -> bool:
        """Whether the message came from tab (or subflow) ``flow_id``, directly or from a subflow instance on it."""
        return self.flow_id == flow_id or (self.path or "").split("/")[0] == flow_id


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """A node's last status (the dot and text under it in the editor); ``time`` in Unix seconds."""

    node_id: str
    fill: str | None
    shape: str | None
    text: str | None
    time: float


def redact_value(value: Any, secret: bool = False) -> Any:
    """``value`` with secrets replaced by :data:`~service.nodered.redaction.REDACTED`: every scalar under a
    secret-looking key (``password``, ``apiKey``, ``Authorization``, ...), and secret formats inside any string."""
    if isinstance(value, dict):
        return {key: redact_value(item, secret or is_secret_name(str(key))) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item, secret) for item in value]
    if secret and value not in (None, "", True, False):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    return value


def shorten(value: Any, budget: int = VALUE_BUDGET) -> tuple[Any, bool]:
    """``value`` cut to about ``budget`` characters: strings to :data:`STRING_LIMIT`, lists and objects to
    :data:`ITEMS_LIMIT` entries, nesting to :data:`DEPTH_LIMIT`; returns ``(shortened value, whether anything was
    cut)``. A cut string ends with ``…[+N chars]``; a cut list or object gets a ``"…"`` entry saying how many."""
    left = [budget]
    cut = [False]

    def walk(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            keep = min(len(item), STRING_LIMIT, max(left[0], 0))
            left[0] -= keep + 2
            if keep < len(item):
                cut[0] = True
                return item[:keep] + f"…[+{len(item) - keep} chars]"
            return item
        if isinstance(item, (dict, list)):
            if depth >= DEPTH_LIMIT or left[0] <= 0:
                cut[0] = True
                return "…"
            pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
            kept: list[tuple[Any, Any]] = []
            for key, child in pairs[:ITEMS_LIMIT]:
                if left[0] <= 0:
                    break
                left[0] -= len(str(key)) + 4 if isinstance(item, dict) else 2
                kept.append((key, walk(child, depth + 1)))
            if len(kept) < len(pairs):
                cut[0] = True
                more = f"…[+{len(pairs) - len(kept)} more]"
                return ({**{str(k): v for k, v in kept}, "…": more} if isinstance(item, dict)
                        else [v for _, v in kept] + [more])
            return {str(k): v for k, v in kept} if isinstance(item, dict) else [v for _, v in kept]
        left[0] -= len(str(item))
        return item

    shortened = walk(value, 0)
    return shortened, cut[0]


def shape_of(value: Any, size: int) -> str:
    """Type and shape of a decoded value: ``object{3 keys}``, ``array[10]``, ``string(12 chars)``, ``number``."""
    if isinstance(value, dict):
        if value.get("__enc__"):
            kind = value.get("type", "value")
            return f"{kind}[{value['length']}]" if "length" in value else str(kind)
        return f"object{{{len(value)} {'key' if len(value) == 1 else 'keys'}}}"
    if isinstance(value, list):
        return f"array[{len(value)}]"
    if isinstance(value, str):
        return f"string({size} chars)"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__ if value is not None else "null"


def decode(encoded: Any, format_: str | None) -> tuple[Any, int]:
    """A debug message's ``msg`` as Node-RED encoded it → ``(value, size in characters)``: JSON text of objects and
    arrays decoded; strings, numbers and hex buffers kept as text (their ``format`` says which)."""
    if not isinstance(encoded, str):
        return encoded, len(json.dumps(encoded, default=str))
    size = len(encoded)
    scalar = (format_ or "").startswith(_SCALAR_FORMATS)
    if not scalar and size <= PARSE_LIMIT and encoded[:1] in ("{", "["):
        try:
            return json.loads(encoded), size
        except ValueError:
            pass
    if size > PARSE_LIMIT:
        return encoded[:STRING_LIMIT], size
    return encoded, size


class EvidenceBuffer:
    """The evidence of one Node-RED: messages per node, statuses per node, and the subscriber's state.

    Args:
        per_node: messages kept per node and kind (debug output; errors and warnings apart, so a chatty node
            never pushes its own errors out).
        window: seconds a message is kept.
        max_entries: messages kept in all (the oldest goes first); also the number of node statuses kept.
        clock: Unix time now (tests).
    """

    def __init__(self, per_node: int = 20, window: float = 900.0, max_entries: int = 2000,
                 clock: Callable[[], float] = time.time):
        self.per_node, self.window, self.max_entries = per_node, window, max_entries
        self._clock = clock
        self._seq = 0
        self._entries: OrderedDict[int, Evidence] = OrderedDict()
        self._by_node: dict[tuple[str, bool], deque[int]] = {}
        self._status: OrderedDict[str, NodeStatus] = OrderedDict()
        self.received = 0
        self.connected = False
        self.last_error: str | None = None
        self.connected_at: float | None = None
        self.status_texts = StatusTexts()  # the editor's wording of status texts, per language
        self._waiters: list[asyncio.Future[None]] = []  # arrivals() and started() waiting for the next message
        self.started_rev: str | None = None  # the revision of the flows Node-RED last finished starting

    @classmethod
    def from_settings(cls, settings: Any) -> EvidenceBuffer:
        """A buffer sized by :class:`~service.nodered.settings.EvidenceSettings`."""
        return cls(settings.per_node, settings.window, settings.max_entries)

    def __len__(self) -> int:
        return len(self._entries)

    # -- arrival -----------------------------------------------------------------------------------------

    def add_debug(self, data: Any) -> Evidence | None:
        """Keep one payload of the ``debug`` topic (a debug node's output or a warn/error log entry); other log
        levels and malformed payloads are ignored (``None``)."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return None
        level = data.get("level")
        if level is None:
            kind: Kind = "debug"
        elif level == LEVEL_ERROR:
            kind = "error"
        elif level == LEVEL_WARN:
            kind = "warning"
        else:
            return None
        format_ = _text(data.get("format"))
        value, size = decode(data.get("msg"), format_)
        if format_ in _WORD_FORMATS:
            # Sent as the text "(undefined)"; the Debug sidebar shows the word, so does the model.
            value, size = format_, 0
        shape = (format_ if format_ in _TYPE_FORMATS else shape_of(value, size) if size <= PARSE_LIMIT
                 else f"{format_ or 'value'} ({size} chars, not decoded)")
        value, shortened = shorten(value)
        self._seq += 1
        entry = Evidence(seq=self._seq, time=self._clock(), kind=kind, node_id=data["id"], flow_id=_text(data.get("z")),
                         path=_text(data.get("path")), node_name=_text(data.get("name")),
                         node_type=_text(data.get("type")), topic=_text(data.get("topic")),
                         property=_text(data.get("property")), format=format_, value=value, shape=shape, size=size,
                         shortened=shortened or size > PARSE_LIMIT)
        self.received += 1
        self._keep(entry)
        return entry

    def add_status(self, node_id: str, data: Any) -> None:
        """Keep a ``status/<node id>`` payload as the node's status; an empty one clears it."""
        if not isinstance(data, dict) or not any(data.get(k) for k in ("text", "fill", "shape")):
            self._status.pop(node_id, None)
            return
        text = data.get("text")
        text = str(text)[:STATUS_TEXT_LIMIT] if text not in (None, "") else None
        self._status[node_id] = NodeStatus(node_id, _text(data.get("fill")), _text(data.get("shape")), text,
                                           self._clock())
        self._status.move_to_end(node_id)
        while len(self._status) > self.max_entries:
            self._status.popitem(last=False)

    def _keep(self, entry: Evidence) -> None:
        key = (entry.node_id, entry.kind == "debug")
        queue = self._by_node.setdefault(key, deque())
        if len(queue) >= self.per_node:
            del self._entries[queue.popleft()]
        queue.append(entry.seq)
        self._entries[entry.seq] = entry
        self._expire(entry.time - self.window)
        while len(self._entries) > self.max_entries:
            self._drop_oldest()
        self._wake()

    def add_started(self, data: Any) -> None:
        """Keep a ``notification/runtime-deploy`` payload (``{revision}``: Node-RED sends it once the flows of that
        revision have started, after the deploy's answer)."""
        if isinstance(data, dict) and isinstance(data.get("revision"), str):
            self.started_rev = data["revision"]
            self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def _expire(self, before: float) -> None:
        while self._entries and next(iter(self._entries.values())).time < before:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        seq, entry = self._entries.popitem(last=False)
        key = (entry.node_id, entry.kind == "debug")
        queue = self._by_node[key]
        # The oldest message of all is the oldest of its node: both orders are arrival order.
        queue.popleft()
        if not queue:
            del self._by_node[key]

    # -- reading -----------------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The sequence number of the latest message kept (0: none yet): pass it to :meth:`arrivals`."""
        return self._seq

    async def arrivals(self, node_ids: Collection[str], after: int, wait: float) -> list[Evidence]:
        """The messages (debug output, errors, warnings) of ``node_ids`` kept after sequence number ``after``,
        oldest first, waiting up to ``wait`` seconds for the first one: woken by each arrival, never polling.
        ``[]`` when none came in time."""
        return await self._until(lambda: [e for e in self._entries.values()
                                          if e.seq > after and e.node_id in node_ids], wait) or []

    async def started(self, revision: str, wait: float) -> bool:
        """Whether Node-RED has started the flows of ``revision`` (its deploy answers before they run), waiting up
        to ``wait`` seconds for the notification."""
        return bool(await self._until(lambda: self.started_rev == revision, wait))

    async def _until(self, found: Callable[[], Any], wait: float) -> Any:
        """``found()`` once it is truthy, re-evaluated at each arrival, or its last (falsy) value after ``wait``
        seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            result = found()
            remaining = deadline - loop.time()
            if result or remaining <= 0:
                return result
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, remaining)

    def select(self, *, flow_id: str | None = None, node_ids: Collection[str] | None = None,
               since: float | None = None, limit: int | None = None) -> list[Evidence]:
        """Messages of tab ``flow_id`` and/or of ``node_ids`` from the last ``since`` seconds (default the
        window): errors first, then warnings, then debug output, newest first in each; at most ``limit``."""
        now = self._clock()
        self._expire(now - self.window)
        oldest = now - min(since, self.window) if since is not None else now - self.window
        if node_ids is not None:
            wanted: Iterable[Evidence] = (self._entries[seq] for node in node_ids for debug in (False, True)
                                          for seq in self._by_node.get((node, debug), ()))
        else:
            wanted = self._entries.values()
        chosen = [e for e in wanted if e.time >= oldest and (flow_id is None or node_ids is not None
                                                             or e.in_flow(flow_id))]
        order = {"error": 0, "warning": 1, "debug": 2}
        chosen.sort(key=lambda e: (order[e.kind], -e.seq))
        return chosen[:limit] if limit is not None else chosen

    def statuses(self, node_ids: Collection[str] | None = None) -> list[NodeStatus]:
        """The last status of each of ``node_ids`` that has one (all nodes when ``None``), newest first."""
        if node_ids is None:
            found = list(self._status.values())
        else:
            found = [self._status[node] for node in node_ids if node in self._status]
        return sorted(found, key=lambda s: -s.time)

    def state(self) -> str:
        """One sentence on the subscription, for a model: connected since when, or why not."""
        if self.connected:
            return "connected to Node-RED's comms websocket"
        reason = f": {self.last_error}" if self.last_error else ""
        return f"NOT connected to Node-RED's comms websocket{reason}; messages may be missing"


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
