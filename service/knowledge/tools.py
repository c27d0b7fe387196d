"""The knowledge tools, declared once for the service and the MCP server: ``search_node_docs`` (the installed
nodes' help) and ``search_workspace`` (tabs, subflows, groups, config nodes, code, comments and the summary).

Each runs over a :class:`Knowledge` its host finds for the call (:data:`Resolve`): the service's own index kept
fresh by its refresher, or the MCP server's. Their text cites each hit's source (node type with module@version,
or tab name and node id); their ``sources`` are the sidebar's links.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.knowledge.base import Knowledge
from service.knowledge.index import Hit
from service.knowledge.retrieval import DOCS_TOOL, WORKSPACE_TOOL, cite, hits_text, sources
from service.nodered.tooling import Tool, ToolContext, ToolOutput

# The knowledge for one call and the docs language to read: raises ToolFailure when there is none.
Resolve = Callable[[ToolContext], Awaitable[tuple[Knowledge, str]]]


def _output(hits: list[Hit]) -> ToolOutput:
    data = {"results": [{**{k: v for k, v in asdict(hit).items() if k != "id"}, "citation": cite(hit)}
                        for hit in hits]}
    return ToolOutput(data=data, text=hits_text(hits), sources=sources(hits))


async def search_node_docs(knowledge: Knowledge, language: str, query: str, type: str | None = None,
                           module: str | None = None, limit: int = 5) -> ToolOutput:
    """Ranked help sections of the installed node types in ``language``, optionally of one node type or module."""
    wanted = f"{query} {type}" if type else query
    pool = limit * 8 if type or module else limit
    hits = [hit for hit in await knowledge.docs.search(wanted, language, pool)
            if (not type or hit.metadata.get("type") == type) and (not module or hit.metadata.get("module") == module)]
    return _output(hits[:limit])


async def search_workspace(knowledge: Knowledge, language: str, query: str, limit: int = 5) -> ToolOutput:
    """Ranked chunks of the user's workspace: tabs, subflows, groups, config nodes, code, comments, info texts and
    the summary's exact counts."""
    return _output(await knowledge.workspace.search(query, language, limit))


class KnowledgeHit(BaseModel):
    """One search result: the chunk (title, text), where it came from and its rank score (higher is better)."""

    store: str
    language: str
    source: str
    key: str
    title: str
    text: str
    metadata: dict[str, Any]
    score: float
    citation: str


class KnowledgeResult(BaseModel):
    """The results of a knowledge search, best first."""

    results: list[KnowledgeHit]


class DocsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=500, description="what the node should do, or words of its help")
    type: str | None = Field(None, max_length=100, description="only this node type, e.g. 'csv' or 'mqtt in'")
    module: str | None = Field(None, max_length=214, description="only this npm module, e.g. 'node-red'")
    limit: int = Field(5, ge=1, le=20)


class WorkspaceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=500, description="words to look for in the user's flows")
    limit: int = Field(5, ge=1, le=20)


DOCS_DESCRIPTION = ("Search the help of the node types installed in this Node-RED, at their installed version "
                    "(core and contributed modules). Use it to find which node does something, or what a node's "
                    "properties and inputs mean. Each result names its node type and module@version.")
WORKSPACE_DESCRIPTION = ("Search the user's whole workspace: tabs, subflows, groups, config nodes and who uses them, "
                         "function code, comments, info texts, and a summary with exact counts of nodes per type and "
                         "per tab. Use it for 'how many', 'where is ... used' and 'which tab ...' questions. Each "
                         "result names its tab and node id.")


def knowledge_tools(resolve: Resolve) -> tuple[Tool, Tool]:
    """``search_node_docs`` and ``search_workspace`` over the knowledge ``resolve`` finds for each call."""

    async def docs(ctx: ToolContext, **arguments) -> ToolOutput:
        knowledge, language = await resolve(ctx)
        return await search_node_docs(knowledge, language, **arguments)

    async def workspace(ctx: ToolContext, **arguments) -> ToolOutput:
        knowledge, language = await resolve(ctx)
        return await search_workspace(knowledge, language, **arguments)

    return (Tool(name=DOCS_TOOL, title="Search node help", args=DocsArgs, run=docs, description=DOCS_DESCRIPTION,
                 result=KnowledgeResult),
            Tool(name=WORKSPACE_TOOL, title="Search workspace", args=WorkspaceArgs, run=workspace,
                 description=WORKSPACE_DESCRIPTION, result=KnowledgeResult))
