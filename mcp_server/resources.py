"""MCP resources of the Node-RED server: each tab, subflow and config node, the installed nodes' help per type and
the workspace summary, with completions for their ids.

URIs (``nodered://`` is ours; ids as Node-RED writes them, a node type percent-encoded: ``mqtt%20in``):

* ``nodered://flows/{flow_id}``: one tab or subflow in the compact, redacted form ``get_flow`` answers;
* ``nodered://config/{node_id}``: one config node as ``get_node_info`` answers it (secrets redacted);
* ``nodered://node-help/{node_type}``: the help of an installed node type (Node-RED's own help text, from
  ``GET /nodes`` as HTML, :mod:`service.knowledge.helpdoc`), with its module and version;
* ``nodered://workspace/summary``: counts per type, tabs, subflows, config nodes, modules, environment names
  (:mod:`service.knowledge.summary`).

``resources/list`` names every tab, subflow and config node of the deployed flows, read with the caller's rights
(:func:`mcp_server.server.client_of`); the templates let a client read any id and complete one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    Resource,
    ResourceTemplateReference,
)

from service.knowledge.helpdoc import parse_node_configs
from service.knowledge.summary import facts, summary_chunks
from service.nodered.client import NodeRedClient, NodeRedError
from service.nodered.flows import index_flows, is_config
from service.nodered.tooling import Tool, ToolContext, ToolFailure
from service.nodered.tools import READ_TOOLS

FLOW_URI = "nodered://flows/{flow_id}"
CONFIG_URI = "nodered://config/{node_id}"
HELP_URI = "nodered://node-help/{node_type}"
SUMMARY_URI = "nodered://workspace/summary"
MAX_COMPLETIONS = 100  # the most values one completion answers (the MCP specification's limit)

ClientOf = Callable[[Context[Any, Any, Any]], NodeRedClient]
READ_TOOL_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in READ_TOOLS}


def flow_uri(flow_id: str) -> str:
    """The resource URI of a tab or subflow."""
    return FLOW_URI.replace("{flow_id}", quote(flow_id, safe=""))


def config_uri(node_id: str) -> str:
    """The resource URI of a config node."""
    return CONFIG_URI.replace("{node_id}", quote(node_id, safe=""))


async def read_flows(client: NodeRedClient) -> list[dict[str, Any]]:
    """The deployed flows (``GET /flows``'s ``flows``).

    Raises:
        ToolFailure: Node-RED could not be read, with its code (``nodered_unreachable``, ``nodered_unauthorized``).
    """
    try:
        return (await client.get_flows())["flows"]
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None


async def listed_resources(client: NodeRedClient) -> list[Resource]:
    """A resource for each tab, subflow and config node of the deployed flows, and the workspace summary."""
    resources = [Resource(uri=SUMMARY_URI, name="workspace-summary", title="Workspace summary",
                          mimeType="text/plain",
                          description="Counts per node type, tabs, subflows, config nodes, modules, env names")]
    for node in await read_flows(client):
        kind = node.get("type")
        label = str(node.get("label") or node.get("name") or node["id"])
        if kind in ("tab", "subflow"):
            resources.append(Resource(uri=flow_uri(node["id"]), name=f"{kind}:{node['id']}", title=f"{kind} {label}",
                                      mimeType="text/plain", description=f'The {kind} "{label}", compact and '
                                      "redacted (as get_flow answers)"))
        elif is_config(node):
            resources.append(Resource(uri=config_uri(node["id"]), name=f"config:{node['id']}",
                                      title=f"{kind} {label}", mimeType="text/plain",
                                      description=f"The config node {kind} {label}, secrets redacted"))
    return resources


def register_resources(mcp: FastMCP, client_of: ClientOf) -> None:
    """Add the resource templates, the summary and the completion handler to ``mcp``; every read uses the caller's
    client (``client_of(mcp.get_context())``: a ``Context`` parameter of a template function would pass through
    pydantic's ``validate_call``, which copies it without its request). A failure reading Node-RED answers as the
    request's error (its sentence)."""

    def context() -> ToolContext:
        return ToolContext(nodered=client_of(mcp.get_context()))

    @mcp.resource(FLOW_URI, name="flow", title="A tab or subflow", mime_type="text/plain",
                  description="One tab or subflow with its nodes, the config nodes they use and the subflows they "
                              "instantiate, compact and with secrets redacted (as get_flow answers).")
    async def flow(flow_id: str) -> str:
        output = await READ_TOOL_BY_NAME["get_flow"].run(context(), flow_id=unquote(flow_id))
        return output.text

    @mcp.resource(CONFIG_URI, name="config-node", title="A config node", mime_type="text/plain",
                  description="One config node (broker, server, ...) with its settings, secrets redacted.")
    async def config(node_id: str) -> str:
        output = await READ_TOOL_BY_NAME["get_node_info"].run(context(), node_ids=[unquote(node_id)])
        return output.text

    @mcp.resource(HELP_URI, name="node-help", title="Help of a node type", mime_type="text/plain",
                  description="The help of one installed node type, from Node-RED (its module and version first).")
    async def node_help(node_type: str) -> str:
        return await help_text(client_of(mcp.get_context()), unquote(node_type))

    @mcp.resource(SUMMARY_URI, name="workspace-summary", title="Workspace summary", mime_type="text/plain",
                  description="Counts per node type, tabs, subflows, config nodes (where used), node modules in "
                              "use with versions, environment variable names (values not shown).")
    async def summary() -> str:
        return await summary_text(client_of(mcp.get_context()))

    @mcp.completion()
    async def complete(ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument,
                       context: CompletionContext | None) -> Completion | None:
        return await completions(client_of(mcp.get_context()), argument.name, argument.value,
                                 (context.arguments or {}) if context is not None else {})


async def help_text(client: NodeRedClient, node_type: str) -> str:
    """The help of ``node_type`` as plain text: ``<type> (<module> <version>)``, then each section.

    Raises:
        ToolFailure: ``node_type_not_found`` (not installed, or installed without help), or a Node-RED error.
    """
    try:
        node_sets = await client.get_nodes()
        sections = [s for s in parse_node_configs(await client.get_node_help()) if s.node_type == node_type]
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    if not sections:
        raise ToolFailure("node_type_not_found", f"No installed node type {node_type!r} has help in this Node-RED; "
                          "list_node_types names the installed types.")
    module = sections[0].module
    version = next((str(s.get("version") or "") for s in node_sets if s.get("module") == module), "")
    lines = [f"{node_type} ({module} {version})".replace(" )", ")")]
    for section in sections:
        lines.append(f"\n## {section.section}\n{section.text}" if section.section and not section.part
                     else section.text)
    return "\n".join(lines)


async def summary_text(client: NodeRedClient) -> str:
    """The workspace summary's sections as plain text (each under its title).

    Raises:
        ToolFailure: Node-RED could not be read.
    """
    flows = await read_flows(client)
    try:
        node_sets = await client.get_nodes()
    except NodeRedError as err:
        raise ToolFailure(err.code, **err.sentence_args()) from None
    chunks = summary_chunks(facts(index_flows(flows)), node_sets)
    return "\n\n".join(f"# {chunk.title}\n{chunk.text}" for chunk in chunks)


async def completions(client: NodeRedClient, name: str, prefix: str, known: dict[str, str]) -> Completion | None:
    """Ids (or node types) starting with ``prefix`` for the argument ``name``: ``flow_id`` (tabs and subflows),
    ``node_id`` (flow nodes, on the tab named by a resolved ``flow_id`` when there is one; config nodes too),
    ``node_type`` (installed types). Labels match too (``Area`` completes to the id of tab "Area 1"). ``None``
    for any other argument; an unreadable Node-RED completes nothing."""
    if name not in ("flow_id", "node_id", "node_type"):
        return None
    try:
        if name == "node_type":
            types = [t for s in await client.get_nodes() for t in s.get("types") or ()]
            candidates = [(quote(t, safe=""), t) for t in sorted(set(types))]
        else:
            candidates = _id_candidates(await read_flows(client), name, known.get("flow_id"))
    except (NodeRedError, ToolFailure):
        return Completion(values=[])
    wanted = prefix.lower()
    values = [value for value, label in candidates
              if value.lower().startswith(wanted) or label.lower().startswith(wanted)]
    return Completion(values=values[:MAX_COMPLETIONS], total=len(values), hasMore=len(values) > MAX_COMPLETIONS)


def _id_candidates(flows: list[dict[str, Any]], name: str, flow_id: str | None) -> list[tuple[str, str]]:
    if name == "flow_id":
        return [(n["id"], str(n.get("label") or n.get("name") or "")) for n in flows
                if n.get("type") in ("tab", "subflow")]
    return [(n["id"], str(n.get("name") or n.get("type") or "")) for n in flows
            if n.get("type") not in ("tab", "subflow") and (not flow_id or n.get("z") == flow_id)]
