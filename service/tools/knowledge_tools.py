"""The knowledge tools, declared once: ``search_node_docs`` (the installed nodes' help) and ``search_workspace``
(the user's tabs, subflows, config nodes, code, comments and the workspace summary).

Both read the knowledge index the service keeps fresh with its own Node-RED credentials (see
:mod:`service.knowledge.refresher`); their text cites each hit's source: node type with module@version, or tab
name and node id.
"""

from __future__ import annotations

from dataclasses import asdict

from pydantic import BaseModel, ConfigDict, Field

from service.knowledge.base import Knowledge
from service.knowledge.index import Hit
from service.knowledge.refresher import KnowledgeRefresher
from service.knowledge.retrieval import DOCS_TOOL, WORKSPACE_TOOL, cite, hits_text, sources
from service.nodered.tooling import Tool, ToolFailure, ToolOutput
from service.tools.context import ServiceToolContext as ToolContext


def _open(ctx: ToolContext) -> tuple[Knowledge, KnowledgeRefresher]:
    slot = ctx.knowledge
    if slot is None or slot.knowledge is None or slot.refresher is None:
        raise ToolFailure("memory_unavailable", key="memory_unavailable.not_opened")
    return slot.knowledge, slot.refresher


def _data(hits: list[Hit]) -> dict:
    return {"results": [{**{k: v for k, v in asdict(hit).items() if k != "id"}, "citation": cite(hit)}
                        for hit in hits]}


async def search_node_docs(ctx: ToolContext, query: str, type: str | None = None, module: str | None = None,
                           limit: int = 5) -> ToolOutput:
    """BM25-ranked help sections of the installed node types, optionally of one node type or module."""
    knowledge, refresher = _open(ctx)
    language = await refresher.docs_language(ctx.language)
    wanted = f"{query} {type}" if type else query
    pool = limit * 8 if type or module else limit
    hits = [hit for hit in await knowledge.docs.search(wanted, language, pool)
            if (not type or hit.metadata.get("type") == type) and (not module or hit.metadata.get("module") == module)]
    return ToolOutput(data=_data(hits[:limit]), text=hits_text(hits[:limit]), sources=sources(hits[:limit]))


async def search_workspace(ctx: ToolContext, query: str, limit: int = 5) -> ToolOutput:
    """BM25-ranked chunks of the user's workspace: tabs, subflows, groups, config nodes, code, comments, info
    texts and the summary's exact counts."""
    hits = await _open(ctx)[0].workspace.search(query, ctx.language, limit)
    return ToolOutput(data=_data(hits), text=hits_text(hits), sources=sources(hits))


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


KNOWLEDGE_TOOLS: tuple[Tool, ...] = (
    Tool(name=DOCS_TOOL, title="Search node help", args=DocsArgs, run=search_node_docs,
         description="Search the help of the node types installed in this Node-RED, at their installed version "
                     "(core and contributed modules). Use it to find which node does something, or what a node's "
                     "properties and inputs mean. Each result names its node type and module@version."),
    Tool(name=WORKSPACE_TOOL, title="Search workspace", args=WorkspaceArgs, run=search_workspace,
         description="Search the user's whole workspace: tabs, subflows, groups, config nodes and who uses them, "
                     "function code, comments, info texts, and a summary with exact counts of nodes per type and "
                     "per tab. Use it for 'how many', 'where is ... used' and 'which tab ...' questions. Each "
                     "result names its tab and node id."),
)
