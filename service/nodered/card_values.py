"""What an approval card shows of the values a write sets: what is approved is exactly what is written.

Two rules (issue 29):

* A value the flows already held as a secret is shown masked (:data:`REDACTED`), as the model saw it, and it is
  written exactly as it was deployed: the mask the model copies into a changed value (``"https://api.example.com/
  ?token=[redacted]&page=3"``) stands for the deployed secret, and :func:`restore_masked` puts the deployed secret
  back before anything is written. A mask that stands for no deployed secret (a new node, a property that held
  none, more masks than the deployed value had secrets), or that moves it (to another host in a URL, after other
  text elsewhere), is refused: the mask string itself is never written, and a secret the card shows as a mask
  never goes anywhere the flows did not already send it.
* A new value (one the model supplied) is shown in full, even when it looks like a secret, and the card says so
  (:func:`secret_looking_properties`, worded by ``change.secret_shown`` of ``locales/<lang>/approvals.json``): the
  person approving reads what will be deployed, never ``[redacted]`` in place of a value that is written.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from service.nodered.node_secrets import strip_secrets
from service.nodered.redaction import REDACTED
from service.nodered.tooling import ToolFailure

# Structure: never secret, never shown as a value that looks like one.
_STRUCTURE = frozenset({"id", "type", "z", "g", "x", "y", "w", "h", "wires", "links", "nodes"})


def redacted_value(node_type: str | None, name: str, value: Any, references: frozenset[str]) -> Any:
    """``value`` of property ``name`` of a node of ``node_type`` as the model sees it (:func:`strip_secrets`)."""
    return strip_secrets({"type": node_type, name: value}, references).get(name)


def restore_masked(tool: str, node: dict[str, Any], name: str, value: Any, references: frozenset[str]) -> Any:
    """The value to write for property ``name`` of deployed ``node`` when the model asks for ``value``: every
    :data:`REDACTED` mask in it replaced by the deployed secret it stands for.

    A value equal to what the model was shown of the deployed one is the deployed value itself; inside a string,
    the masks are matched in order with the secrets of the deployed string at the same place (same key, same list
    position), or all with its one secret.

    Raises:
        ToolFailure: ``invalid_params`` (naming ``tool``) when a mask stands for no deployed secret (the mask
            string is never written).
    """
    before = node.get(name)
    return _restore(tool, before, redacted_value(node.get("type"), name, before, references), value,
                    f"properties.{name}")


def refuse_masks(tool: str, value: Any, where: str) -> None:
    """Refuse a new value of ``tool``'s arguments (no deployed counterpart) that holds the mask string.

    Raises:
        ToolFailure: ``invalid_params`` naming ``where`` (e.g. ``nodes.2``).
    """
    if _has_mask(value):
        raise _mask_failure(tool, where)


def secret_looking_properties(node: dict[str, Any], references: frozenset[str],
                              names: list[str] | None = None) -> list[str]:
    """The properties of ``node`` (or only ``names`` of them) whose shown values hold something the redaction
    would mask: the values a card shows in full with a warning. A :data:`REDACTED` mask kept as it is (a deployed
    secret) does not count."""
    shown = strip_secrets(node, references)
    return [name for name in (names if names is not None else list(node))
            if name not in _STRUCTURE and name != "credentials" and name in node and shown.get(name) != node[name]]


def secret_looking_value(key: str, value: Any) -> bool:
    """Whether context value ``value`` under ``key`` holds something the redaction would mask (a secret-named key,
    a token in the text): ``set_context``'s card shows it in full with a warning."""
    return bool(redacted_value(None, key, value, frozenset()) != value)


def redacted_context(context: dict[str, Any]) -> dict[str, Any]:
    """A ``set_context`` diff's ``context`` (:mod:`service.nodered.context_plans`) with its value redacted as the
    model sees flows: how a card is kept at rest and audited."""
    return {**context, "value": redacted_value(None, str(context.get("key") or ""), context.get("value"),
                                              frozenset())}


def _restore(tool: str, before: Any, shown: Any, value: Any, where: str) -> Any:
    if before is not None and value == shown and _has_mask(shown):
        return copy.deepcopy(before)
    if isinstance(value, str):
        if REDACTED not in value:
            return value
        secrets = _masked_secrets(before, shown)
        masks = value.count(REDACTED)
        if secrets and (len(secrets) == masks or len(set(secrets)) == 1) and _same_places(value, shown, masks):
            parts = value.split(REDACTED)
            filled = [parts[0]]
            for index, part in enumerate(parts[1:]):
                filled.append(secrets[index if len(secrets) == masks else 0])
                filled.append(part)
            return "".join(filled)
        raise _mask_failure(tool, where)
    if isinstance(value, dict):
        before_dict = before if isinstance(before, dict) else {}
        shown_dict = shown if isinstance(shown, dict) else {}
        return {key: _restore(tool, before_dict.get(key), shown_dict.get(key), item, f"{where}.{key}")
                for key, item in value.items()}
    if isinstance(value, list):
        before_list = before if isinstance(before, list) else []
        shown_list = shown if isinstance(shown, list) else []
        return [_restore(tool, before_list[i] if i < len(before_list) else None,
                         shown_list[i] if i < len(shown_list) else None, item, f"{where}.{i}")
                for i, item in enumerate(value)]
    return value


# A URL in a line of text, up to where it plainly ends; NUL stands for a mask inside it (see :func:`_places`).
_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'`<>]*", re.I)
CONTEXT_CHARS = 200  # the text before a mask that says where it is, when no URL holds it


def _same_places(value: str, shown: str, masks: int) -> bool:
    """Whether each mask of the new ``value`` keeps its deployed secret where it was in ``shown`` (the deployed
    value as the model saw it): inside a URL, the same scheme and host (an approved change must not carry a secret
    the card shows as a mask to another host: ``https://evil.example/?k=[redacted]``); elsewhere, the same text
    before it on its line (``const key = "[redacted]"``). Masks are matched by position when there are as many
    as deployed secrets, else each with any place of the one secret."""
    new, old = _places(value), _places(shown)
    if len(old) == masks:
        return new == old
    return set(new) <= set(old)


def _places(text: str) -> list[str]:
    """Where each :data:`REDACTED` mask of ``text`` is: the origin (``scheme://host:port``, user info left out)
    of the URL that holds it, else the (at most :data:`CONTEXT_CHARS`) characters before it on its line."""
    parts = text.split(REDACTED)
    places = []
    for index in range(len(parts) - 1):
        left = parts[index].rsplit("\n", 1)[-1]
        line = left + "\0" + parts[index + 1].split("\n", 1)[0]
        url = next((m.group() for m in _URL.finditer(line) if m.start() <= len(left) < m.end()), None)
        places.append(_origin(url) if url else left[-CONTEXT_CHARS:])
    return places


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return f"{scheme.lower()}://{authority.rpartition('@')[2].lower()}"


def _masked_secrets(before: Any, shown: Any) -> list[str]:
    """The secrets of deployed string ``before`` that its shown form ``shown`` masks, in order ([] if none)."""
    if not isinstance(before, str) or not isinstance(shown, str) or REDACTED not in shown:
        return []
    pattern = "(.+?)".join(re.escape(part) for part in shown.split(REDACTED))
    match = re.fullmatch(pattern, before, re.S)
    return list(match.groups()) if match else []


def _has_mask(value: Any) -> bool:
    return any(REDACTED in text for text in _strings(value))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _mask_failure(tool: str, where: str) -> ToolFailure:
    return ToolFailure("invalid_params", params={"tool": tool, "parameter": where, "detail": (
        f"{REDACTED} stands for a secret you cannot see; it can only keep a secret the node already has, in the "
        "same place (the same host in a URL, the same text before it elsewhere). Leave this value out of the "
        "change (the deployed secret stays), or ask the user to enter the secret in the Node-RED editor")})
