"""Tidy a tab's layout (issue 36): the write tool ``tidy_layout`` lays out the nodes of a tab, or some of them (the
nodes just added), in layers along their wires, left to right, with grandalf's Sugiyama layout (a maintained,
pure-Python implementation of Sugiyama's layered drawing: layers, crossing reduction, Brandes-Köpf placement;
https://github.com/bdcht/grandalf). Groups are respected: a grouped node is not moved on its own, and the
moved nodes are kept off every group's box and every node that is not moved. A pure planner: its change only moves
nodes (``x``/``y`` properties), shown on an approval card like every write.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from service.nodered.messages import Sentence
from service.nodered.placement import GAP_X, GRID, overlaps, size

LAYER_GAP = GAP_X  # px between the boxes of two layers (left to right)
ROW_GAP = 20  # px between two nodes of one layer
COMPONENT_GAP = 40  # px between two unconnected parts


class _View:
    """grandalf's view of a vertex: its size, turned a quarter (grandalf layers top-down, Node-RED left to right)."""

    def __init__(self, width: int, height: int):
        self.w, self.h = height, width
        self.xy = (0.0, 0.0)


def layered(nodes: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Centres (px, relative to the first part's top left) for ``nodes`` laid out in layers along the wires among
    them: each connected part by grandalf's ``SugiyamaLayout`` (cycles broken at its feedback edges), the parts
    stacked top to bottom in the order of their first node."""
    # Imported here: grandalf brings numpy, which a service that never lays out a tab should not load (issue 33,
    # tests/test_optional_imports.py).
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    vertices = {node["id"]: Vertex(node["id"]) for node in nodes}
    for node in nodes:
        vertices[node["id"]].view = _View(*size(node))
    edges = [Edge(vertices[node["id"]], vertices[target]) for node in nodes
             for port in node.get("wires") or [] for target in port or []
             if target in vertices and target != node["id"]]
    graph = Graph(list(vertices.values()), edges)
    placed: dict[str, tuple[float, float]] = {}
    top = 0.0
    for part in graph.C:
        layout = SugiyamaLayout(part)
        layout.xspace, layout.yspace = ROW_GAP, LAYER_GAP
        layout.init_all()
        layout.draw()
        part_vertices = list(part.sV)
        # grandalf's x runs along a layer (Node-RED's y), its y across layers (Node-RED's x); centres.
        min_across = min(v.view.xy[1] - v.view.h / 2 for v in part_vertices)
        min_along = min(v.view.xy[0] - v.view.w / 2 for v in part_vertices)
        bottom = 0.0
        for vertex in part_vertices:
            x = vertex.view.xy[1] - min_across
            y = vertex.view.xy[0] - min_along + top
            placed[vertex.data] = (x, y)
            bottom = max(bottom, y + vertex.view.w / 2)
        top = bottom + COMPONENT_GAP
    return placed


def plan_tidy(flows: list[dict[str, Any]], tab_id: str, node_ids: Collection[str] | None) -> tuple[
        dict[str, Any], Sentence]:
    """The diff (``changed`` entries of ``x``/``y`` only) that lays out the ungrouped flow nodes of tab ``tab_id``
    (all, or those of ``node_ids``) in layers, their box's top left where theirs was, moved down the 20 px grid off
    the nodes and groups that stay; and the card's sentence. Nodes already where the layout puts them are no
    change."""
    on_tab = [n for n in flows if n.get("z") == tab_id and "x" in n and "y" in n and n.get("type") != "group"]
    movable = [n for n in on_tab if not n.get("g") and "wires" in n and (node_ids is None or n["id"] in node_ids)]
    moving = {n["id"] for n in movable}
    fixed = [n for n in on_tab if n["id"] not in moving] + [_group_box(g) for g in flows
                                                            if g.get("type") == "group" and g.get("z") == tab_id]
    diff: dict[str, Any] = {"added": [], "removed": [], "changed": [], "wires": {"added": [], "removed": []}}
    if not movable:
        return diff, Sentence("change.tidy_layout", count=0)
    relative = layered(movable)
    left = min(n["x"] - size(n)[0] / 2 for n in movable)
    top = min(n["y"] - size(n)[1] / 2 for n in movable)
    positions = {}
    for node in movable:
        x, y = relative[node["id"]]
        positions[node["id"]] = (GRID * round((left + x) / GRID), GRID * round((top + y) / GRID))
    for _ in range(2000):
        shifted = [{**node, "x": positions[node["id"]][0], "y": positions[node["id"]][1]} for node in movable]
        if not any(overlaps(new, old, 10) for new in shifted for old in fixed):
            break
        positions = {node_id: (x, y + GRID) for node_id, (x, y) in positions.items()}
    for node in movable:
        x, y = positions[node["id"]]
        properties = {name: {"before": node.get(name), "after": value} for name, value in (("x", x), ("y", y))
                      if node.get(name) != value}
        if properties:
            diff["changed"].append({"id": node["id"], "type": node.get("type"), "name": node.get("name"),
                                    "properties": properties})
    return diff, Sentence("change.tidy_layout", count=len(diff["changed"]))


def _group_box(group: dict[str, Any]) -> dict[str, Any]:
    """A group as a box to keep off (its ``x``/``y`` are its top left, ``w``/``h`` its size)."""
    width, height = int(group.get("w") or 0), int(group.get("h") or 0)
    return {"id": group["id"], "x": (group.get("x") or 0) + width / 2, "y": (group.get("y") or 0) + height / 2,
            "w": width, "h": height}
