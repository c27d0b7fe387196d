"""Text that fits a budget: a flow's text as parts (:class:`Piece`, :class:`NodeText`) that can be shortened, and the
fitting of those parts into a character budget (code and long values shortened first, never the structure), with
a note of what was shortened (:mod:`service.nodered.compact` writes the parts)."""

from __future__ import annotations

import json
from collections.abc import Container
from dataclasses import dataclass, field

SHORTEST = 80              # a shortened code block or value keeps at least this many characters
DROPPED_MARK = " …"


@dataclass(eq=False)
class Piece:
    """A long string that may be cut: code (an indented block) or a value (bare when it has no spaces or quotes,
    else a JSON string). ``owner`` is the id of the node it belongs to."""

    owner: str
    text: str
    code: bool = False
    bare: bool = False
    full: int = 0

    def __post_init__(self) -> None:
        self.full = len(self.render(None))

    def render(self, cap: int | None) -> str:
        if cap is None or len(self.text) <= cap:
            if self.code:
                return "\n".join(f"    | {line}" for line in self.text.splitlines())
            return self.text if self.bare else json.dumps(self.text, ensure_ascii=False)
        if self.code:
            body = self.text[:cap]
            if body.rfind("\n") >= cap // 2:
                body = body[:body.rfind("\n")]  # a whole last line reads better than half of one
            lines = [f"    | {line}" for line in body.splitlines()]
            lines.append(f"    | …[+{len(self.text) - len(body)} chars]")
            return "\n".join(lines)
        return json.dumps(f"{self.text[:cap]}…[+{len(self.text) - cap} chars]", ensure_ascii=False)

    def size(self, cap: int | None) -> int:
        return self.full if cap is None or len(self.text) <= cap else len(self.render(cap))


Part = str | Piece


@dataclass(eq=False)
class NodeText:
    """One node: ``head`` (id, type, name, disabled, group, references, links) is structure and always shown;
    ``detail`` (other properties) and ``blocks`` (code) may be left out; ``wires`` ends the line."""

    node_id: str
    head: list[Part]
    detail: list[Part] = field(default_factory=list)
    wires: str = ""
    blocks: list[Part] = field(default_factory=list)

    def parts(self, dropped: bool) -> list[Part]:
        if dropped:
            return [*self.head, DROPPED_MARK if (self.detail or self.blocks) else "", self.wires, "\n"]
        return [*self.head, *self.detail, self.wires, *self.blocks, "\n"]


def _render(part: Part, cap: int | None) -> str:
    return part if isinstance(part, str) else part.render(cap)


def _fit(items: list[Part | NodeText | None], budget: int, limit: int | None) -> tuple[str | None, int]:
    """Render ``items`` within ``budget`` (see the module docstring); ``(None, size)`` when even the structure is
    longer than ``limit`` (``None``: no limit)."""
    nodes = [item for item in items if isinstance(item, NodeText)]
    plan = _Plan(items, nodes)
    cap: int | None = None
    dropped: set[str] = set()
    reserve = 0
    for _ in range(4):
        cap, dropped, size = plan.choose(budget - reserve)
        note = _shortened_note(plan, cap, dropped, budget, size)
        if len(note) <= reserve:
            break
        reserve = len(note)
    size = plan.size(cap, dropped) + len(note)
    if limit is not None and size > limit:
        return None, size
    out = []
    for item in items:
        if item is None:
            out.append(note)
        elif isinstance(item, NodeText):
            out.extend(_render(part, cap) for part in item.parts(item.node_id in dropped))
        else:
            out.append(_render(item, cap))
    return "".join(out).rstrip("\n"), size


class _Plan:
    """Sizes of the text for a common cut length ``cap`` of all pieces and a set of nodes without properties."""

    def __init__(self, items: list[Part | NodeText | None], nodes: list[NodeText]):
        self.nodes = nodes
        self.fixed = 0
        pieces: list[Piece] = []
        for item in items:
            for part in (item.parts(False) if isinstance(item, NodeText) else [item] if item is not None else []):
                if isinstance(part, Piece):
                    pieces.append(part)
                else:
                    self.fixed += len(part)
        self.pieces = sorted(pieces, key=lambda piece: len(piece.text), reverse=True)
        self.suffix = [0] * (len(self.pieces) + 1)
        for index in range(len(self.pieces) - 1, -1, -1):
            self.suffix[index] = self.suffix[index + 1] + self.pieces[index].full

    def size(self, cap: int | None, dropped: Container[str] = frozenset()) -> int:
        total = self.fixed
        for index, piece in enumerate(self.pieces):
            if cap is None or len(piece.text) <= cap:
                total += self.suffix[index]
                break
            total += piece.size(cap)
        for text in self.dropped_texts(dropped):
            total -= self._saving(text, cap)
        return total

    def dropped_texts(self, dropped: Container[str]) -> list[NodeText]:
        return [text for text in self.nodes if text.node_id in dropped] if dropped else []

    @staticmethod
    def _saving(text: NodeText, cap: int | None) -> int:
        detail = sum(len(part) if isinstance(part, str) else part.size(cap) for part in (*text.detail, *text.blocks))
        return detail - (len(DROPPED_MARK) if (text.detail or text.blocks) else 0)

    def choose(self, budget: int) -> tuple[int | None, set[str], int]:
        """``(cap, dropped node ids, size)``: no cut when it fits; else the longest cap that fits; else the
        shortest cap and the properties of the nodes with the most of them left out, as few as fit."""
        full = self.size(None)
        if full <= budget:
            return None, set(), full
        if self.pieces and self.size(SHORTEST) <= budget:
            low, high = SHORTEST, len(self.pieces[0].text)  # size(low) fits, size(high) does not
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if self.size(middle) <= budget else (low, middle)
            return low, set(), self.size(low)
        cap = SHORTEST if self.pieces else None
        size = self.size(cap)
        savings = sorted(((self._saving(text, cap), text.node_id) for text in self.nodes), reverse=True)
        dropped: set[str] = set()
        for saving, node_id in savings:
            if size <= budget or saving <= 0:
                break
            dropped.add(node_id)
            size -= saving
        return cap, dropped, size


def _shortened_note(plan: _Plan, cap: int | None, dropped: set[str], budget: int, size: int) -> str:
    """The line naming every node that was shortened, or ``""``."""
    if cap is None and not dropped:
        return ""
    cut = {piece.owner for piece in plan.pieces if cap is not None and len(piece.text) > cap} - dropped
    marks = ['"…[+N chars]" marks cut code or text'] if cut else []
    if dropped:
        marks.append('"…" after a node\'s name marks its properties left out')
    head = f"Shortened to fit {budget:,} characters ({'; '.join(marks)})"
    if size > budget:
        head = f"Too large for {budget:,} characters even shortened ({'; '.join(marks)})"
    with_detail = [text.node_id for text in plan.nodes if text.detail or text.blocks]
    if dropped and all(node_id in dropped for node_id in with_detail):
        return f"{head}. Every node's properties are left out: read the nodes in question with get_node_info\n"
    in_order = [text.node_id for text in plan.nodes if text.node_id in cut or text.node_id in dropped]
    others = sorted(cut - set(in_order))  # the tab's own info or env
    return f"{head}. Read these nodes in full with get_node_info: {','.join(others + in_order)}\n"


def bounded(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters at a line end, with a note of what was left out."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > limit // 2 else limit
    return f"{text[:cut]}\n… ({len(text) - cut} more characters not shown)"
