"""Config nodes a change needs (issue 36): reuse the existing one that matches, else create one, never a duplicate.

A config node (an ``mqtt-broker``, ``http proxy``, ``tls-config``...) is a node without a place on a tab: no ``x``,
``y`` or ``wires``. One that a write would add is *the same* as an existing one of its type when every property it
gives (but its id, its name and its credentials, which Node-RED never returns) equals the existing node's, compared
as text (``1883`` and ``"1883"``: the editor stores numbers typed in a form as strings). Two the same write would
add that are the same are one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# What does not tell two config nodes apart.
NOT_COMPARED = frozenset({"id", "name", "credentials", "z", "users", "_users"})


def is_config_node(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` is a config node: no place on a tab (``x``, ``y``, ``wires``), not a tab, subflow or group."""
    return (node.get("type") not in ("tab", "subflow", "group", "junction")
            and not any(key in node for key in ("x", "y", "wires")))


def _same(given: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    if given.get("type") != existing.get("type"):
        return False
    return all(_text(value) == _text(existing.get(name)) for name, value in given.items() if name not in NOT_COMPARED)


def _text(value: Any) -> Any:
    """Numbers and booleans as the editor's forms store them (text); lists and objects as they are."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    return value


def reused_config_nodes(given: Iterable[Mapping[str, Any]], flows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{given id: id to use instead}`` for the config nodes among ``given`` that an existing config node of
    ``flows`` matches (the first one, in the order of the flows), or an earlier one of ``given`` (not matched by an
    existing one) does."""
    existing = [node for node in flows if is_config_node(node)]
    reused: dict[str, str] = {}
    kept: list[Mapping[str, Any]] = []
    for node in given:
        if not is_config_node(node) or not isinstance(node.get("id"), str):
            continue
        match = next((other for other in [*existing, *kept] if _same(node, other)), None)
        if match is None:
            kept.append(node)
        else:
            reused[node["id"]] = str(match["id"])
    return reused
