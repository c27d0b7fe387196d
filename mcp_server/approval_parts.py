"""Review part by part over MCP (issue 36): the elicitation form that lets the client's user untick parts of a write.

A change's parts are the sidebar's (:func:`service.nodered.change_parts.parts_of`: each node added, property changed,
wire added or removed, node removed). MCP elicitation forms hold flat fields only; since protocol revision
2025-11-25 a field may be a multi-select: ``{"type": "array", "items": {"anyOf": [{"const", "title"}, ...]}}``
(specification, "Elicitation", multi-select enum schema; the Python SDK accepts ``list[str]`` fields). So the
form gets ``parts``, every part ticked by default, beside ``approve``, for a client that negotiated that revision or
a later one and a change of 2 to :data:`MAX_PARTS` parts; any other asks for the whole change only.
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import Context
from pydantic import BaseModel, Field, JsonValue, create_model

from service.nodered.change_parts import parts_of

# The protocol revision that added multi-select enums to elicitation forms.
MULTI_SELECT_SINCE = "2025-11-25"
# Parts a form lists at the most: a longer list is no review a person does; such a change is approved whole.
MAX_PARTS = 100


class ApprovalAnswer(BaseModel):
    """The form the client shows its user (MCP elicitation allows flat primitive fields only)."""

    approve: bool = Field(description="true: make this change in Node-RED now; false: leave Node-RED as it is")


def offered_parts(ctx: Context[Any, Any, Any], diff: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of ``diff`` to offer for unticking (:func:`parts_of`), or ``[]``: a client before
    :data:`MULTI_SELECT_SINCE`, fewer than two parts or more than :data:`MAX_PARTS`."""
    params = ctx.session.client_params
    if params is None or str(params.protocolVersion) < MULTI_SELECT_SINCE:
        return []
    parts = parts_of(diff)
    return parts if 2 <= len(parts) <= MAX_PARTS else []


def parts_form(parts: list[dict[str, Any]], diff: dict[str, Any],
               flows: list[dict[str, Any]] | None) -> type[ApprovalAnswer]:
    """:class:`ApprovalAnswer` with ``parts``: a multi-select of ``parts`` (each titled in English from ``diff``'s
    new nodes and the deployed ``flows``), all ticked by default."""
    nodes = {node["id"]: node for node in [*(flows or []), *(diff.get("added") or [])] if isinstance(node, dict)}
    choices: list[JsonValue] = [{"const": part["id"], "title": part_title(part, nodes)} for part in parts]
    return create_model(
        "ApprovalPartsAnswer", __base__=ApprovalAnswer,
        parts=(list[str], Field(default=[part["id"] for part in parts], description=(
            "the parts to apply; untick one to leave it out (a part another needs is shown again)"),
            json_schema_extra={"items": {"anyOf": choices}, "uniqueItems": True})))


def part_title(part: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> str:
    """One part as a line a person reads: ``add inject "tick"``, ``change func of function "scale"``, ``wire
    inject "tick" [1] → debug "log"``, ``remove wire ...``, ``delete debug "old"``."""
    def label(node_id: str) -> str:
        node = nodes.get(node_id)
        if node is None:
            return f"[{node_id}]"
        name = node.get("label") if node.get("type") == "tab" else node.get("name")
        return f'{node.get("type")} "{name}"' if name else f"{node.get('type')} [{node_id}]"

    kind = part["kind"]
    if kind == "add":
        return f"add {label(part['node'])}"
    if kind == "prop":
        return f"change {part['property']} of {label(part['node'])}"
    if kind in ("wire+", "wire-"):
        wire = f"wire {label(part['source'])} [{int(part['port']) + 1}] \u2192 {label(part['target'])}"
        return wire if kind == "wire+" else f"remove {wire}"
    return f"delete {label(part['node'])}"
