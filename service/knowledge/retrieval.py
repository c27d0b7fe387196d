"""Retrieval for a chat turn: the two stores searched (concurrently for ``both``), the hits as text that cites its
sources (node type with module@version; tab name and node id), and the follow-up rule that turns a short question
with pronouns into a standalone query.

What is retrieved is the user's data and third-party help text: it is handed to a model inside ``<tool_result>``
blocks, as tool results are, never as instructions.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from service.knowledge.base import Knowledge
from service.knowledge.documents import cite_document
from service.knowledge.index import Hit
from service.knowledge.router import Route, normalize
from service.nodered.text_budget import bounded

DOCS_TOOL, WORKSPACE_TOOL = "search_node_docs", "search_workspace"
DOCUMENTS_TOOL = "search_documents"  # the user's own documents (issue 37): shown under this name, not a model tool
DOCUMENTS = "documents"  # the store name of their hits
DEFAULT_LIMIT = 4          # chunks per store given to a model with a question
STORE_TEXT_LIMIT = 6_000   # characters of one store's hits given to a model
FOLLOW_UP_WORDS = 8        # a message of at most this many words may be a follow-up
# Words that point back into the conversation ("and what does its second node do?"). English and the other
# shipped languages' most common forms; a message with one of them and few words is contextualised.
FOLLOW_UP_MARKERS = frozenset({
    "it", "its", "it's", "that", "this", "those", "these", "they", "them", "their", "same",
    "er", "sie", "es", "dieser", "diese", "dieses", "davon", "dessen",
    "él", "ella", "ellos", "eso", "esto", "ese", "esa", "su", "sus",
    "il", "elle", "ils", "ça", "cela", "ce", "cet", "cette", "ces", "son", "sa", "ses",
    "ele", "ela", "eles", "isso", "isto", "esse", "essa", "seu", "sua",
    "он", "она", "оно", "они", "его", "её", "их", "это", "этот", "эта", "эти",
})
FOLLOW_UP_CJK = ("它", "那个", "這個", "那個", "这个", "それ", "その", "これ", "この", "그것", "그거", "이것", "이거")


def is_follow_up(message: str) -> bool:
    """A short message (≤ :data:`FOLLOW_UP_WORDS` words) that points back with a pronoun or demonstrative."""
    text = normalize(message)
    words = re.findall(r"[\w'’]+", text)
    if any(marker in text for marker in FOLLOW_UP_CJK):
        return len(text) <= 40
    return 0 < len(words) <= FOLLOW_UP_WORDS and any(word in FOLLOW_UP_MARKERS for word in words)


def standalone_query(message: str, history: list[dict[str, str]]) -> str:
    """The search query for ``message``: the message itself, or for a follow-up the previous user message
    followed by it (deterministic; the nouns the pronouns stand for are in the previous question)."""
    if not is_follow_up(message):
        return message
    previous = next((turn.get("content", "") for turn in reversed(history) if turn.get("role") == "user"), "")
    return f"{previous[:500]} {message}".strip() if previous else message


def cite(hit: Hit) -> str:
    """Where a hit comes from: ``csv (node-red@4.1.0), Inputs`` or ``tab "Area 3" (w3), node f1 (function)``."""
    meta = hit.metadata
    if hit.store == DOCUMENTS:
        return cite_document(meta.get("document", hit.source), meta.get("section", ""))
    if hit.store == "docs":
        where = f'{meta.get("type")} ({meta.get("module")}@{meta.get("version")})'
        return where + (f', {meta["section"]}' if meta.get("section") else "")
    parts = []
    if meta.get("flowId"):
        parts.append(f'{meta.get("flowType", "tab")} "{meta.get("flowLabel", "")}" ({meta["flowId"]})')
    if meta.get("nodeId"):
        parts.append(f'node {meta["nodeId"]} ({meta.get("type")})')
    if meta.get("section"):
        parts.append(f'workspace summary, {meta["section"]}')
    return ", ".join(parts) or hit.source


def source(hit: Hit) -> dict[str, Any] | None:
    """A hit as a link target for the sidebar (contracts16 A): ``{"kind": "node-help", "type", "module",
    "version", "section"?}``, ``{"kind": "workspace", "id", "tab", "name", "nodeType"}`` or ``{"kind": "document",
    "id", "name", "section"}`` (issue 37); ``None`` for a chunk of the workspace summary (it is about no one node)."""
    meta = hit.metadata
    if hit.store == DOCUMENTS:
        return {"kind": "document", "id": meta.get("documentId"), "name": meta.get("document", hit.source),
                "section": meta.get("section", "")}
    if hit.store == "docs":
        found = {"kind": "node-help", "type": meta.get("type"), "module": meta.get("module"),
                 "version": meta.get("version")}
        return found | ({"section": meta["section"]} if meta.get("section") else {})
    if meta.get("nodeId"):
        return {"kind": "workspace", "id": meta["nodeId"], "tab": meta.get("flowLabel"), "name": meta.get("name"),
                "nodeType": meta.get("type")}
    if meta.get("flowId"):
        return {"kind": "workspace", "id": meta["flowId"], "tab": meta.get("flowLabel"),
                "name": meta.get("flowLabel"), "nodeType": meta.get("flowType", "tab")}
    return None


def sources(hits: list[Hit]) -> list[dict[str, Any]]:
    """The distinct :func:`source` of each hit, in rank order."""
    found: list[dict[str, Any]] = []
    for hit in hits:
        entry = source(hit)
        if entry is not None and entry not in found:
            found.append(entry)
    return found


def hits_text(hits: list[Hit], limit: int = STORE_TEXT_LIMIT) -> str:
    """Hits as text, each headed by its source, bounded to ``limit`` characters; ``No match.`` for none."""
    if not hits:
        return "No match."
    return bounded("\n\n".join(f"[source: {cite(hit)}]\n{hit.title}\n{hit.text}" for hit in hits), limit)


@dataclass
class StoreResult:
    """One store's retrieval: the tool name it is shown under, the query, the hits."""

    tool: str
    query: str
    hits: list[Hit] = field(default_factory=list)

    @property
    def text(self) -> str:
        return hits_text(self.hits)


async def retrieve(knowledge: Knowledge, route: Route, query: str, language: str,
                   limit: int = DEFAULT_LIMIT) -> list[StoreResult]:
    """Search the stores ``route`` names (both concurrently for ``both``; none for ``neither``).

    Args:
        knowledge: the open stores.
        route: the router's decision on the latest user message.
        query: the standalone query.
        language: the docs language to read (an indexed one, see :meth:`KnowledgeRefresher.docs_language`).
        limit: chunks per store.
    """
    searches: list[tuple[str, asyncio.Future | asyncio.Task]] = []
    if route in (Route.DOCS, Route.BOTH):
        searches.append((DOCS_TOOL, asyncio.ensure_future(knowledge.docs.search(query, language, limit))))
    if route in (Route.WORKSPACE, Route.BOTH):
        searches.append((WORKSPACE_TOOL, asyncio.ensure_future(knowledge.workspace.search(query, language, limit))))
    found = await asyncio.gather(*(task for _, task in searches))
    return [StoreResult(tool, query, hits) for (tool, _), hits in zip(searches, found)]


async def retrieve_store(knowledge: Knowledge, tool: str, query: str, language: str,
                         limit: int = DEFAULT_LIMIT) -> StoreResult:
    """One store's search, named by its tool (:data:`DOCS_TOOL` or :data:`WORKSPACE_TOOL`)."""
    store = knowledge.docs if tool == DOCS_TOOL else knowledge.workspace
    return StoreResult(tool, query, await store.search(query, language, limit))


def context_message(question: str, results: list[StoreResult]) -> str:
    """The user's turn with what was retrieved for it: the question verbatim, then each store's hits in a
    ``<tool_result>`` block (data, never instructions, as every tool result), then how to use them."""
    blocks = [f'<tool_result tool="{r.tool}" query="{r.query[:200]}">\n{r.text}\n</tool_result>'
              for r in results]
    return "\n\n".join([question, "Retrieved for this question (cite the sources you use: node type with "
                                  "module@version, tab name and node id, or document name and section):", *blocks])


def without_model(results: list[StoreResult], notice: str) -> str:
    """The answer when no model is configured: the retrieved facts with their sources, then ``notice``."""
    names = {DOCS_TOOL: "Node help", WORKSPACE_TOOL: "Your workspace", DOCUMENTS_TOOL: "Your documents"}
    parts = [f"{names.get(r.tool, r.tool)} (search: {r.query}):\n\n{r.text}" for r in results]
    return "\n\n".join([*parts, notice])
