"""The context an assist request adds itself, never taken from the client: the node's wired neighbours in the
deployed flows, recent messages at its input from the runtime evidence buffer, and the Node-RED version.

Neighbours come from ``wires`` (Node-RED's flow format: ``wires[i]`` lists the ids output ``i`` is wired to);
link nodes are shown as ordinary neighbours, not followed. Input messages are known when a ``debug`` node is wired
to the same output that feeds the node: what that debug node showed is what arrived at the node's input.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service.nodered.client import NodeRedClient, NodeRedError
from service.nodered.evidence import Evidence, redact_value
from service.nodered.flows import FlowIndex, index_flows
from service.nodered.redaction import redact_text

if TYPE_CHECKING:
    from service.nodered.evidence import EvidenceBuffer

log = logging.getLogger(__name__)

FIRST_LINES = 6     # lines of a neighbouring function node's code shown to the model
LINE_LIMIT = 200    # characters of one such line
MAX_NEIGHBOURS = 20  # per direction
MAX_SAMPLES = 3     # recent input messages in the context and the proposal event


@dataclass
class Neighbour:
    """A node wired to the assisted node: ``port`` is the output (0-based) that carries the wire, of the
    neighbour for an upstream node, of the assisted node for a downstream one. ``head``: a function node's first
    lines, redacted."""

    id: str
    type: str
    name: str
    port: int
    head: str | None = None

    def describe(self) -> str:
        """``function "parse" (id 3c4d)``."""
        name = f' "{redact_text(self.name)}"' if self.name else ""
        return f"{self.type}{name} (id {self.id})"


@dataclass
class NodeContext:
    """What the service found about the assisted node.

    Attributes:
        deployed: the node is in the deployed flows (a new, undeployed node has no neighbours yet).
        readable: the flows could be read (``False``: Node-RED unreachable or the user may not read them).
        upstream, downstream: the wired neighbours, at most :data:`MAX_NEIGHBOURS` each.
        samples: up to :data:`MAX_SAMPLES` recent input messages, newest first, redacted.
        sample_sources: the debug nodes the samples were seen at (described).
        version: the Node-RED version (``"unknown"`` when unreadable).
    """

    deployed: bool = False
    readable: bool = True
    upstream: list[Neighbour] = field(default_factory=list)
    downstream: list[Neighbour] = field(default_factory=list)
    samples: list[Any] = field(default_factory=list)
    sample_sources: list[str] = field(default_factory=list)
    version: str = "unknown"


def _neighbour(node: dict[str, Any], port: int) -> Neighbour:
    head = None
    if node.get("type") == "function" and isinstance(node.get("func"), str):
        lines = [line[:LINE_LIMIT] for line in node["func"].splitlines()[:FIRST_LINES]]
        head = redact_text("\n".join(lines), code=True)
    return Neighbour(id=node["id"], type=str(node.get("type") or "node"), name=str(node.get("name") or ""),
                     port=port, head=head)


def _outputs(node: dict[str, Any]) -> list[list[str]]:
    wires = node.get("wires")
    if not isinstance(wires, list):
        return []
    return [[target for target in port if isinstance(target, str)] if isinstance(port, list) else []
            for port in wires]


def wired_neighbours(index: FlowIndex, node_id: str) -> tuple[list[Neighbour], list[Neighbour]]:
    """The nodes wired into ``node_id`` (upstream) and out of it (downstream), in flow order, at most
    :data:`MAX_NEIGHBOURS` each; both empty when the node is not in ``index``."""
    node = index.by_id.get(node_id)
    if node is None:
        return [], []
    upstream = []
    tab = node.get("z")
    for candidate in index.by_z.get(tab, []) if isinstance(tab, str) else []:
        for port, targets in enumerate(_outputs(candidate)):
            if node_id in targets:
                upstream.append(_neighbour(candidate, port))
    downstream = [_neighbour(index.by_id[target], port) for port, targets in enumerate(_outputs(node))
                  for target in targets if target in index.by_id]
    return upstream[:MAX_NEIGHBOURS], downstream[:MAX_NEIGHBOURS]


def input_debug_nodes(index: FlowIndex, node_id: str) -> list[dict[str, Any]]:
    """The ``debug`` nodes wired to an output that also feeds ``node_id``: they show what arrives at its input."""
    node = index.by_id.get(node_id)
    if node is None or not isinstance(node.get("z"), str):
        return []
    found: dict[str, dict[str, Any]] = {}
    for candidate in index.by_z.get(node["z"], []):
        for targets in _outputs(candidate):
            if node_id not in targets:
                continue
            for target in targets:
                other = index.by_id.get(target)
                if other is not None and other.get("type") == "debug" and target != node_id:
                    found[target] = other
    return list(found.values())


def as_message(debug_node: dict[str, Any], entry: Evidence) -> dict[str, Any] | None:
    """What a debug node showed, as the message it saw: the whole message for ``complete: "true"``, otherwise
    the shown property put back at its path (``payload.reading`` → ``{"payload": {"reading": …}}``). ``None`` when
    the shown value is no message part (a JSONata expression's result, a whole message that is not an object)."""
    complete = debug_node.get("complete")
    if debug_node.get("targetType") == "jsonata":
        return None
    if complete in (True, "true"):
        return entry.value if isinstance(entry.value, dict) else None
    path = str(complete) if complete not in (None, "", False, "false") else "payload"
    if not all(part.isidentifier() for part in path.split(".")):
        return None
    message: Any = entry.value
    for part in reversed(path.split(".")):
        message = {part: message}
    return message


def recent_inputs(index: FlowIndex, node_id: str, evidence: EvidenceBuffer | None,
                  limit: int = MAX_SAMPLES) -> tuple[list[Any], list[str]]:
    """Up to ``limit`` messages recently seen at the input of ``node_id`` (newest first, secrets redacted) and the
    debug nodes they were seen at; nothing without an evidence buffer or a debug node on an input wire."""
    if evidence is None:
        return [], []
    debug_nodes = {node["id"]: node for node in input_debug_nodes(index, node_id)}
    if not debug_nodes:
        return [], []
    entries = [entry for entry in evidence.select(node_ids=list(debug_nodes)) if entry.kind == "debug"]
    entries.sort(key=lambda entry: -entry.seq)
    samples, sources = [], []
    for entry in entries:
        message = as_message(debug_nodes[entry.node_id], entry)
        if message is None:
            continue
        samples.append(redact_value(message))
        source = _neighbour(debug_nodes[entry.node_id], 0).describe()
        if source not in sources:
            sources.append(source)
        if len(samples) >= limit:
            break
    return samples, sources


async def node_context(nodered: NodeRedClient, evidence: EvidenceBuffer | None,
                       node_id: str | None, flows_max_age: float = 0.0) -> NodeContext:
    """Read what the service adds to an assist request: the Node-RED version always, and for a ``node_id`` its
    neighbours and recent inputs from the deployed flows (``GET /flows`` with the caller's rights; with
    ``flows_max_age`` seconds, the caller's flows read that recently are reused, see
    :meth:`NodeRedClient.recent_flows`). A Node-RED that cannot be read leaves ``readable`` false and the rest
    empty; this never raises."""
    context = NodeContext(version=await nodered.version())
    if not node_id:
        return context
    try:
        answer = await (nodered.recent_flows(flows_max_age) if flows_max_age else nodered.get_flows())
        flows = answer.get("flows") or []
    except NodeRedError as err:
        log.info("assist context without flows: %s", err.code)
        context.readable = False
        return context
    index = index_flows(flows)
    context.deployed = node_id in index.by_id
    context.upstream, context.downstream = wired_neighbours(index, node_id)
    context.samples, context.sample_sources = recent_inputs(index, node_id, evidence)
    return context
