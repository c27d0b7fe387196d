"""A deploy's flows cut into content-addressed parts, so that a deploy that changed a few nodes stores a few nodes.

Layout: every flow object (node, config node, tab, subflow, group) is one *part*, keyed by the hash of its canonical
JSON. The objects are grouped by their container (``z``: a tab or subflow id; ``""`` for tabs, subflows and global
config nodes); each group is a *manifest*, the ordered list of its parts' hashes, itself a part keyed by its hash. A
snapshot is the ordered list of its manifests' hashes. A deploy that changes one node thus stores that node, one
manifest (its tab's) and the snapshot's short list.

Secrets never enter a part: ``GET /flows`` never returns credentials (Node-RED keeps them in flows_cred.json), and
every object is stored as :func:`kept` makes it, its secrets (secret-named properties, secrets inside code and text)
replaced by ``[redacted]`` as a model sees flows. A restore takes them back from the deployed flows
(:func:`fill_secrets`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from service.nodered.node_secrets import strip_secrets
from service.nodered.redaction import REDACTED

HASH_CHARS = 24  # hex digits of a SHA-256 kept: 96 bits, no collision among billions of parts
MEMO_CHARS = 8_000_000  # characters the memo of kept objects may hold (a few copies of a very large workspace)


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, UTF-8 as is): equal content, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(text: str) -> str:
    """The part key of canonical JSON ``text``: the first :data:`HASH_CHARS` hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def kept(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``flows`` (``GET /flows``'s list) as the history keeps them: each object through
    :func:`~service.nodered.node_secrets.strip_secrets`, every id of ``flows`` a reference (a config node's id in
    a property named ``auth`` is kept). Objects that are not dicts are dropped. New objects each call (keys sorted),
    from the memo for an object kept before (:class:`_Memo`)."""
    return [json.loads(part.text) for part in _parts(flows)]


@dataclass(frozen=True, slots=True)
class _Part:
    """One flow object as kept: its canonical JSON ``text`` and its ``key`` (:func:`content_hash`); ``strings``, every
    string inside the object as read, and ``ids``, those of them that were ids of the flows when it was kept."""

    text: str
    key: str
    strings: frozenset[str]
    ids: frozenset[str]


class _Memo:
    """The kept form of each flow object seen before, by the canonical JSON of the object as read.

    A deploy changes a few objects of many, and :func:`~service.nodered.node_secrets.strip_secrets` scans every text
    of every object it is given (about 8 ms of CPU for a 500-node workspace on a 2-core server, several times that
    on a Raspberry Pi; each capture did it twice). The kept form depends on the object and on which of its strings
    are ids of the flows (a reference is never a secret), so an entry serves only while that set is the same.
    Bounded by :data:`MEMO_CHARS` (emptied when full); shared by the threads that keep flows.
    """

    def __init__(self, limit: int = MEMO_CHARS):
        self._entries: dict[str, _Part] = {}
        self._chars = 0
        self._limit = limit
        self._lock = threading.Lock()

    def part(self, node: dict[str, Any], references: frozenset[str]) -> _Part:
        """``node`` kept, ``references`` being the ids of its flows."""
        read = canonical(node)
        with self._lock:
            found = self._entries.get(read)
        if found is not None and found.strings & references == found.ids:
            return found
        strings = frozenset(_strings(node))
        text = canonical(strip_secrets(node, references))
        part = _Part(text, content_hash(text), strings, strings & references)
        size = len(read) + len(text) + sum(len(string) for string in strings)
        with self._lock:
            if self._chars + size > self._limit:
                self._entries.clear()
                self._chars = 0
            if read not in self._entries:
                self._chars += size
            self._entries[read] = part
        return part


_MEMO = _Memo()


def _parts(flows: list[dict[str, Any]]) -> list[_Part]:
    references = frozenset(node["id"] for node in flows if isinstance(node, dict) and isinstance(node.get("id"), str))
    return [_MEMO.part(node, references) for node in flows if isinstance(node, dict)]


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (dict keys too), at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


Lost = list[tuple[dict[str, Any], str]]  # (object, property name) of each secret a restore could not take back


def fill_secrets(restored: list[dict[str, Any]], live: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Lost]:
    """``restored`` (objects from the history, :func:`kept`) with the secrets the history did not keep taken back from
    ``live`` (the flows deployed now, as ``GET /flows`` returns them).

    A property holding ``[redacted]`` takes the deployed node's value when that node (same id) still exists and its
    value, kept the same way, equals the restored one: only the secret can differ, and the deployed one is the one
    known. Otherwise the secret is lost: a property that was only the secret becomes ``""``, a text with a secret
    inside keeps the ``[redacted]`` mark.

    Returns:
        ``(objects, lost)``: new objects, and ``(object, property name)`` for each secret that could not be restored.
    """
    live_by_id = {node["id"]: node for node in live if isinstance(node, dict) and isinstance(node.get("id"), str)}
    live_kept = {node["id"]: node for node in kept(list(live_by_id.values()))}
    result: list[dict[str, Any]] = []
    lost: Lost = []
    for node in restored:
        filled = dict(node)
        for name, value in node.items():
            if REDACTED not in canonical(value):
                continue
            deployed, deployed_kept = live_by_id.get(node.get("id", "")), live_kept.get(node.get("id", ""))
            if deployed is not None and deployed_kept is not None and name in deployed \
                    and deployed_kept.get(name) == value:
                filled[name] = deployed[name]
            else:
                filled[name] = "" if value == REDACTED else value
                lost.append((node, name))
        result.append(filled)
    return result, lost


@dataclass(frozen=True)
class Cut:
    """Flows cut into parts (:func:`split`): ``manifests``, the ordered hashes of the snapshot's manifests;
    ``parts``, every part (objects and manifests) by hash, as canonical JSON text; ``keys``, the part of each object
    in the order of the flows. Made only by :func:`split`, so every part is kept (no secret)."""

    manifests: list[str]
    parts: dict[str, str]
    keys: list[str]

    def kept(self) -> list[dict[str, Any]]:
        """The flows as :func:`kept` keeps them (new objects)."""
        return [json.loads(self.parts[key]) for key in self.keys]


def split(flows: list[dict[str, Any]]) -> Cut:
    """Cut ``flows`` (``GET /flows``'s list) into parts, each object as :func:`kept` keeps it."""
    groups: dict[str, list[str]] = {}
    parts: dict[str, str] = {}
    objects = [node for node in flows if isinstance(node, dict)]
    keys = []
    for node, part in zip(objects, _parts(objects), strict=True):
        parts[part.key] = part.text
        keys.append(part.key)
        z = node.get("z")  # the container of the object kept is the object's own: z is structure, never redacted
        container = z if isinstance(z, str) else ""
        groups.setdefault(container, []).append(part.key)
    manifests = []
    for container in sorted(groups, key=lambda z: (z != "", z)):  # the tabs and global config nodes first
        text = canonical(groups[container])
        key = content_hash(text)
        parts[key] = text
        manifests.append(key)
    return Cut(manifests, parts, keys)


def join(manifests: list[str], parts: dict[str, str]) -> list[dict[str, Any]]:
    """The flows a snapshot's ``manifests`` stand for, from ``parts`` (hash → canonical JSON) holding them all.

    Raises:
        KeyError: a part is missing (the database lost it).
    """
    flows: list[dict[str, Any]] = []
    for manifest in manifests:
        for key in json.loads(parts[manifest]):
            flows.append(json.loads(parts[key]))
    return flows
