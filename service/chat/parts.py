"""Review part by part at resume (issue 36): the parts a decision ticks (``{"type": "approve", "parts": [...]}``)
checked against the card, re-validated on the live flows (:func:`service.nodered.change_parts.select_parts`), and
handed to the write (``ToolContext.parts``) so that it applies exactly those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from service.chat.pauses import OWN_TOOLS
from service.errors import ServiceError
from service.nodered.change_parts import part_ids, select_parts, unknown_parts
from service.nodered.client import NodeRedError
from service.nodered.tooling import ToolContext
from service.nodered.write_tools import approval_key
from service.tools.registry import ToolRegistry, failure_status

# Reads the live flows (``[node, ...]``); raises NodeRedError.
Flows = Callable[[], Awaitable[list[dict[str, Any]]]]

# The audit message of a part-approval whose parts needed adjusting: the card was shown again, nothing ran.
SHOWN_AGAIN = "parts adjusted by re-validation; shown again, nothing applied"


async def ticked_parts(actions: list[dict[str, Any]], decisions: list[dict[str, Any]],
                       live: Flows | None) -> list[dict[str, Any]] | None:
    """Check the ``parts`` of ``decisions`` (one per action) and re-validate them on the flows ``live`` reads.
    A decision ticking every part loses its ``parts`` (it approves all). Returns ``None`` when every ticked set
    stands as it is, else the actions to show again: each with ``ticked`` (the parts to preselect: the adjusted
    ones, or the user's) and ``adjusted: true`` on those re-validation changed.

    Raises:
        ServiceError: 400 ``invalid_request`` (parts on a decision that is no write's approval, or naming no part
            of the card: nothing is recorded), a Node-RED error code when the flows cannot be read.
    """
    to_check = []
    for position, (action, decision) in enumerate(zip(actions, decisions, strict=True)):
        parts = decision.get("parts")
        if parts is None:
            continue
        if decision["type"] != "approve" or action["tool"] in OWN_TOOLS or not isinstance(action.get("diff"), dict):
            raise ServiceError("invalid_request", key="invalid_request.parts_write", params={"tool": action["tool"]})
        unknown = unknown_parts(action["diff"], parts)
        if unknown:
            raise ServiceError("invalid_request", key="invalid_request.parts",
                               params={"parts": ", ".join(unknown[:5]), "tool": action["tool"]})
        if set(parts) == set(part_ids(action["diff"])):
            del decision["parts"]
        else:
            to_check.append(position)
    if not to_check or live is None:
        return None
    try:
        flows = await live()
    except NodeRedError as err:
        raise ServiceError(err.code, status=failure_status(err.code), **err.sentence_args()) from None
    shown = [dict(action) for action in actions]
    adjusted = False
    for position in to_check:
        ticked = decisions[position]["parts"]
        selection = select_parts(flows, actions[position]["diff"], ticked)
        shown[position]["ticked"] = selection.parts if selection.adjusted else list(ticked)
        if selection.adjusted:
            shown[position]["adjusted"] = adjusted = True
    return shown if adjusted else None


async def note_parts(registry: ToolRegistry, context: ToolContext, action: dict[str, Any],
                     decision: dict[str, Any]) -> None:
    """Note in ``context`` the parts a decision ticked of write ``action`` (run with the arguments it was planned
    with), so that the write applies only those (:func:`service.nodered.write_tools.commit`)."""
    if decision.get("parts") is None or decision["type"] != "approve":
        return
    parsed = await registry.parse(action["tool"], action["args"])
    context.parts[approval_key(action["tool"], parsed)] = list(decision["parts"])
