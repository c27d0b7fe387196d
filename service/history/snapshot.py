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
from typing import Any

from service.nodered.node_secrets import strip_secrets
from service.nodered.redaction import REDACTED

HASH_CHARS = 24  # hex digits of a SHA-256 kept: 96 bits, no collision among billions of parts


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, UTF-8 as is): equal content, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(text: str) -> str:
    """The part key of canonical JSON ``text``: the first :data:`HASH_CHARS` hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def kept(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``flows`` (``GET /flows``'s list) as the history keeps them: each object through
    :func:`~service.nodered.node_secrets.strip_secrets`, every id of ``flows`` a reference (a config node's id in
    a property named ``auth`` is kept). Objects that are not dicts are dropped."""
    references = frozenset(node["id"] for node in flows if isinstance(node, dict) and isinstance(node.get("id"), str))
    return [strip_secrets(node, references) for node in flows if isinstance(node, dict)]


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


def split(flows: list[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Cut ``flows`` (``GET /flows``'s list) into parts, each object as :func:`kept` keeps it.

    Returns:
        ``(manifests, parts)``: the ordered hashes of the snapshot's manifests, and every part (objects and
        manifests) by hash, as canonical JSON text.
    """
    groups: dict[str, list[str]] = {}
    parts: dict[str, str] = {}
    for node in kept(flows):
        text = canonical(node)
        key = content_hash(text)
        parts[key] = text
        z = node.get("z")
        container = z if isinstance(z, str) else ""
        groups.setdefault(container, []).append(key)
    manifests = []
    for container in sorted(groups, key=lambda z: (z != "", z)):  # the tabs and global config nodes first
        text = canonical(groups[container])
        key = content_hash(text)
        parts[key] = text
        manifests.append(key)
    return manifests, parts


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
