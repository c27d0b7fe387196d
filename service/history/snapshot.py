"""A deploy's flows cut into content-addressed parts, so that a deploy that changed a few nodes stores a few nodes.

Layout: every flow object (node, config node, tab, subflow, group) is one *part*, keyed by the hash of its canonical
JSON. The objects are grouped by their container (``z``: a tab or subflow id; ``""`` for tabs, subflows and global
config nodes); each group is a *manifest*, the ordered list of its parts' hashes, itself a part keyed by its hash. A
snapshot is the ordered list of its manifests' hashes. A deploy that changes one node thus stores that node, one
manifest (its tab's) and the snapshot's short list.

Credentials never enter a part: ``GET /flows`` never returns them (Node-RED keeps them in flows_cred.json), and a
``credentials`` property is dropped all the same.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASH_CHARS = 24  # hex digits of a SHA-256 kept: 96 bits, no collision among billions of parts


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, UTF-8 as is): equal content, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(text: str) -> str:
    """The part key of canonical JSON ``text``: the first :data:`HASH_CHARS` hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def split(flows: list[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """Cut ``flows`` (``GET /flows``'s list) into parts.

    Returns:
        ``(manifests, parts)``: the ordered hashes of the snapshot's manifests, and every part (objects and
        manifests) by hash, as canonical JSON text.
    """
    groups: dict[str, list[str]] = {}
    parts: dict[str, str] = {}
    for node in flows:
        if not isinstance(node, dict):
            continue
        clean = {key: value for key, value in node.items() if key != "credentials"}
        text = canonical(clean)
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
