"""Secrets in Node-RED nodes (the Node-RED knowledge described in :mod:`service.nodered.redaction`): credentials
dropped, header values sent only for safe header names, typed-input rules that set a secret-named property without
their literal value, code scanned for quoted secrets; every other string through
:func:`~service.nodered.redaction.redact_text`."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from service.nodered.redaction import REDACTED, is_safe_header, is_secret_name, looks_random, name_words, redact_text

# Properties of code: scanned as JavaScript (quoted literals only).
CODE_PROPERTIES = frozenset({"func", "initialize", "finalize"})
# Structure: ids and positions, never secret, never scanned.
_STRUCTURE = frozenset({"id", "type", "z", "g", "x", "y", "w", "h", "wires", "links", "scope", "nodes", "_users"})
# Typed-input types whose value names where the data comes from (a msg/flow/global path, an env variable) rather
# than holding it (Node-RED's typedInput types).
_REFERENCE_TYPES = frozenset({"msg", "flow", "global", "env", "node", "date"})
# Rule objects: the keys that name the property a rule sets, the keys holding the value and its type.
_RULE_TARGETS = ("p", "property", "name", "key")
_RULE_VALUES = (("to", "tot"), ("v", "vt"), ("v2", "v2t"), ("value", "type"), ("from", "fromt"))
_RULE_TYPES = frozenset(t for _, t in _RULE_VALUES)


def strip_secrets(node: dict[str, Any], references: Container[str] = frozenset()) -> dict[str, Any]:
    """A copy of ``node`` safe to show or send to a model.

    Args:
        node: one flow object (node, config node, tab, subflow, group) as ``GET /flows`` returns it.
        references: ids of the nodes in the flows. A string value equal to one of them is a reference (a config
            node, a link target) and is kept whatever its property name (``auth: "<id of a config node>"``).

    Returns:
        A new dict: ``credentials`` dropped; secret-named properties ``[redacted]``; header values of
        ``http request``/``websocket-client``/``http response`` redacted unless the header is known-safe; rules
        and environment entries that set a secret-named property, and ``cred`` environment values, redacted unless
        the value is a ``msg``/``flow``/``global``/``env`` reference; secrets inside any other text (code, URLs,
        templates, payloads) redacted in place, at any depth. Numbers and booleans are kept.
    """
    secret_switch = node.get("type") == "switch" and isinstance(node.get("property"), str) \
        and node.get("propertyType", "msg") in _REFERENCE_TYPES and is_secret_name(node["property"])
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "credentials":
            continue
        if key in _STRUCTURE:
            result[key] = value
        elif key == "headers":
            result[key] = _headers(value, references)
        elif key == "rules" and secret_switch:
            # A switch testing a secret-named property compares it with the secret itself.
            result[key] = [_clean_rule(rule, references, secret=True) if isinstance(rule, dict) else rule
                           for rule in value] if isinstance(value, list) else _clean(key, value, references)
        else:
            result[key] = _clean(key, value, references)
    return result


def _clean(key: str, value: Any, references: Container[str], secret_name: bool | None = None) -> Any:
    if isinstance(value, str):
        if not value or value in references:
            return value
        if is_secret_name(key) if secret_name is None else secret_name:
            return REDACTED
        if key in CODE_PROPERTIES:
            return redact_text(value, code=True)
        cleaned = redact_text(value)
        if cleaned == value and looks_random(value.strip()) and not _is_id_name(key):
            return REDACTED
        return cleaned
    if isinstance(value, list):
        return [_clean(key, item, references, secret_name) for item in value]
    if isinstance(value, dict):
        if any(isinstance(value.get(k), str) for k in _RULE_TARGETS) or value.get("type") == "cred":
            return _clean_rule(value, references)
        return {k: _clean(k, v, references) for k, v in value.items()}
    return value


def _clean_rule(rule: dict[str, Any], references: Container[str], secret: bool = False) -> dict[str, Any]:
    """A change rule, inject property, switch rule or environment entry: its value is redacted when it sets a
    secret-named property (or is a ``cred`` environment value) and is a literal rather than a reference."""
    cred = rule.get("type") == "cred"
    secret = secret or cred or any(isinstance(rule.get(k), str) and is_secret_name(rule[k]) for k in _RULE_TARGETS)
    value_types = dict(_RULE_VALUES)
    cleaned: dict[str, Any] = {}
    for key, value in rule.items():
        if key in _RULE_TYPES:
            cleaned[key] = value  # a typedInput type
        elif key in _RULE_TARGETS:
            # a property name, unless it is a key in a format of its own ({"key": "AKIA..."})
            cleaned[key] = redact_text(value) if isinstance(value, str) else _clean(key, value, references)
        elif key not in value_types or not secret or not isinstance(value, str) or not value:
            cleaned[key] = _clean(key, value, references)
        elif value in references or not cred and rule.get(value_types[key]) in _REFERENCE_TYPES:
            cleaned[key] = value  # a msg/flow/global path, an env variable name: where the secret comes from
        else:
            cleaned[key] = REDACTED
    return cleaned


def _headers(headers: Any, references: Container[str]) -> Any:
    """Header values of ``http request``/``websocket-client`` (``[{keyType, keyValue, valueType, valueValue}]``,
    Node-RED 2.1+) and ``http response`` (``{name: value}``): kept only for known-safe header names."""
    if isinstance(headers, dict):
        return {name: (_clean(name, value, references) if is_safe_header(name) else
                       value if not isinstance(value, str) or not value else REDACTED)
                for name, value in headers.items()}
    if not isinstance(headers, list):
        return _clean("headers", headers, references)
    cleaned = []
    for header in headers:
        if not isinstance(header, dict):
            cleaned.append(_clean("headers", header, references))
            continue
        # keyType is "other" (the name is in keyValue), "msg" (a msg property holds the name) or the name itself
        # (a preset such as "Content-Type"); valueType likewise, where a preset is the value itself.
        key_type = header.get("keyType")
        name = header.get("keyValue") if key_type in ("other", "msg") else key_type
        safe = key_type != "msg" and is_safe_header(name or "")
        entry = dict(header)
        if not safe:
            value_type = header.get("valueType")
            if value_type != "msg" and header.get("valueValue"):
                entry["valueValue"] = REDACTED
            if value_type not in ("msg", "other", None, ""):
                entry["valueType"] = REDACTED
        cleaned.append(entry)
    return cleaned


def _is_id_name(key: str) -> bool:
    words = name_words(key)
    return bool(words) and words[-1] in ("id", "ids", "uuid", "guid", "hash", "checksum", "etag", "sha", "md5")
