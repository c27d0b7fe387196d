"""Where new nodes go on a tab (issue 36): where a person would put them — next to the existing nodes they are wired
to, on Node-RED's 20 px grid, never over another node.

Sizes are those the editor draws (editor-client ``view.js``: ``node_width`` 100, ``node_height`` 30, ``gridSize``
20): a node is at least 100 px wide and as wide as its label needs, rounded up to the grid; its label's width is
estimated at 7 px a character (the editor measures 14 px Helvetica text; 7 px is its mean advance for mixed-case
labels) plus 50 px for the icon and padding. It is 30 px high, or 15 px per output when it has more than two.
``x``/``y`` are a node's centre, as in a flow export.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

GRID = 20
NODE_WIDTH = 100
NODE_HEIGHT = 30
CHAR_WIDTH = 7  # px per label character (estimate, see the module docstring)
ICON_PADDING = 50
GAP_X = 80  # between a node and the next one along a wire
GAP_Y = 20  # kept free around a node
MAX_SHIFTS = 2000  # grid steps tried downwards before giving up finding free space


def size(node: dict[str, Any]) -> tuple[int, int]:
    """``(width, height)`` in px of ``node`` as the editor draws it (its ``w``/``h`` when it has them, else the
    estimate of the module docstring)."""
    if isinstance(node.get("w"), (int, float)) and isinstance(node.get("h"), (int, float)):
        return int(node["w"]), int(node["h"])
    label = str(node.get("name") or node.get("label") or node.get("type") or "")
    width = max(NODE_WIDTH, GRID * math.ceil((len(label) * CHAR_WIDTH + ICON_PADDING) / GRID))
    outputs = len(node.get("wires") or []) or int(node.get("outputs") or 0)
    return width, max(NODE_HEIGHT, 15 * outputs if outputs > 2 else NODE_HEIGHT)


def _placed(node: dict[str, Any]) -> bool:
    return isinstance(node.get("x"), (int, float)) and isinstance(node.get("y"), (int, float)) \
        and node.get("type") not in ("tab", "subflow", "group") and "wires" in node


def _rect(node: dict[str, Any], margin: int = 0) -> tuple[float, float, float, float]:
    width, height = size(node)
    return (node["x"] - width / 2 - margin, node["y"] - height / 2 - margin,
            node["x"] + width / 2 + margin, node["y"] + height / 2 + margin)


def overlaps(a: dict[str, Any], b: dict[str, Any], margin: int = 0) -> bool:
    """Whether the boxes of two placed nodes overlap (each grown by ``margin`` px)."""
    ax1, ay1, ax2, ay2 = _rect(a, margin)
    bx1, by1, bx2, by2 = _rect(b, margin)
    return ax1 < bx2 and bx1 < ax2 and ay1 < by2 and by1 < ay2


def _snap(value: float) -> int:
    return int(GRID * round(value / GRID))


def _layered(added: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Positions relative to the first node for nodes without their own: a column per
    step along the wires among them (longest path from a node nobody wires to), a row per node in the column."""
    ids = {node["id"] for node in added}
    incoming: dict[str, set[str]] = {node["id"]: set() for node in added}
    for node in added:
        for port in node.get("wires") or []:
            for target in port or []:
                if target in ids and target != node["id"]:
                    incoming[target].add(node["id"])
    column: dict[str, int] = {}

    def depth(node_id: str, seen: frozenset[str]) -> int:
        if node_id not in column:
            column[node_id] = 1 + max((depth(s, seen | {node_id}) for s in incoming[node_id] if s not in seen),
                                      default=-1)
        return column[node_id]
    for node in added:
        depth(node["id"], frozenset())
    width = max((size(node)[0] for node in added), default=NODE_WIDTH) + GAP_X
    rows: dict[int, int] = {}
    positions = {}
    for node in added:
        row = rows.get(column[node["id"]], 0)
        rows[column[node["id"]]] = row + 1
        positions[node["id"]] = (_snap(column[node["id"]] * width), row * 60)
    return positions


def place(existing: Iterable[dict[str, Any]], added: list[dict[str, Any]], own_layout: bool = True) -> None:
    """Move the flow nodes of ``added`` (new nodes of one tab, changed in place) to where a person would put them
    among ``existing`` (the tab's nodes). Their layout among themselves is kept when the caller gave every position
    (``own_layout``), else laid out in layers (:func:`_layered`). Nodes with their own positions that overlap
    nothing and are wired to no existing node stay exactly where they are (a flow export keeps its layout). The
    others go next to the first existing node one of them is wired to (left of a target, right of a source), else
    below the tab's nodes, then down the grid until no box overlaps an existing one; each centre placed ends on the
    20 px grid, each box right of and below (20, 20). Config nodes, groups and tabs are not moved."""
    flow = [node for node in added if "wires" in node and node.get("type") not in ("tab", "subflow", "group")]
    if not flow:
        return
    others = [node for node in existing if _placed(node)]
    own = own_layout and all(_placed(node) for node in flow)
    relative = ({node["id"]: (node["x"] - flow[0]["x"], node["y"] - flow[0]["y"]) for node in flow} if own
                else _layered(flow))
    by_id = {node["id"]: node for node in others}
    wired = any(target in by_id for node in flow for port in node.get("wires") or [] for target in port or [])
    if own and not wired and not any(overlaps(new, old, GAP_Y // 2) for new in flow
                                                    for old in others):
        return  # a layout of the caller's own (a flow export) stays as it is
    anchor_x, anchor_y = _anchor(flow, by_id, others, relative)
    for node in flow:
        node["x"], node["y"] = _snap(anchor_x + relative[node["id"]][0]), _snap(anchor_y + relative[node["id"]][1])
    left = min(node["x"] - size(node)[0] / 2 for node in flow)
    top = min(node["y"] - size(node)[1] / 2 for node in flow)
    for node in flow:
        node["x"] += GRID * math.ceil(max(0, GRID - left) / GRID)
        node["y"] += GRID * math.ceil(max(0, GRID - top) / GRID)
    for _ in range(MAX_SHIFTS):
        if not any(overlaps(new, old, GAP_Y // 2) for new in flow for old in others):
            return
        for node in flow:
            node["y"] += GRID


def _anchor(flow: list[dict[str, Any]], by_id: dict[str, dict[str, Any]], others: list[dict[str, Any]],
            relative: dict[str, tuple[int, int]]) -> tuple[float, float]:
    """Where the first of ``flow`` goes: beside the existing node a new one is wired from or to, else below."""
    for node in flow:
        offset_x, offset_y = relative[node["id"]]
        for port in node.get("wires") or []:
            for target in port or []:
                if target in by_id:  # new → existing: left of the target
                    old = by_id[target]
                    x = old["x"] - size(old)[0] / 2 - GAP_X - size(node)[0] / 2
                    return x - offset_x, old["y"] - offset_y
        for old in by_id.values():
            if any(node["id"] in (port or []) for port in old.get("wires") or []):  # existing → new: right of it
                x = old["x"] + size(old)[0] / 2 + GAP_X + size(node)[0] / 2
                return x - offset_x, old["y"] - offset_y
    if not others:
        return (flow[0]["x"], flow[0]["y"]) if all(_placed(n) for n in flow) else (160, 80)
    left = min(old["x"] - size(old)[0] / 2 for old in others)
    bottom = max(old["y"] + size(old)[1] / 2 for old in others)
    min_x = min(relative[n["id"]][0] - size(n)[0] / 2 for n in flow)
    min_y = min(relative[n["id"]][1] - size(n)[1] / 2 for n in flow)
    return left - min_x, bottom + 2 * GAP_Y - min_y
