"""Both stores kept fresh together: one ``refresh()`` reads ``GET /nodes`` (JSON) and ``GET /flows`` once, then
reindexes only what changed (see :mod:`service.knowledge.docs` and :mod:`service.knowledge.workspace`). Meant to
run on a timer or after a deploy / palette change, never per question."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from service.knowledge.docs import DocsStore
from service.knowledge.index import KnowledgeIndex, RefreshReport
from service.knowledge.lexicon import Lexicons
from service.knowledge.vectors import Embedder
from service.knowledge.workspace import WorkspaceStore
from service.nodered.client import NodeRedClient


class Knowledge:
    """The docs and workspace stores over one :class:`KnowledgeIndex`.

    Use ``await Knowledge.open(db_path, locales_dir)``; ``await close()`` is idempotent.
    """

    def __init__(self, index: KnowledgeIndex, lexicons: Lexicons):
        self.index = index
        self.lexicons = lexicons
        self.docs = DocsStore(index, lexicons)
        self.workspace = WorkspaceStore(index, lexicons)
        self.node_sets: list[dict[str, Any]] | None = None  # GET /nodes (JSON) of the last refresh
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, db_path: str | Path, locales_dir: Path, embedder: Embedder | None = None,
                   embedding_model: str | None = None) -> Knowledge:
        """Open the knowledge tables in the memory database at ``db_path`` (``MEMORY_DB_PATH``); with an
        ``embedder`` (a LangChain embeddings client for ``embedding_model``) vector similarity joins the ranking."""
        return cls(await KnowledgeIndex.open(db_path, embedder, embedding_model), Lexicons(locales_dir))

    async def refresh(self, client: NodeRedClient, language: str = "en-US") -> list[RefreshReport]:
        """Bring the docs of ``language`` and the workspace up to the running Node-RED; concurrent calls queue.

        Raises:
            NodeRedError: the Admin API could not be read (nothing indexed is removed then).
        """
        async with self._lock:
            node_sets = await client.get_nodes()
            flows = await client.get_flows()
            self.node_sets = node_sets
            return [await self.docs.refresh(client, node_sets, self.lexicons.resolve(language)),
                    await self.workspace.refresh(flows, node_sets)]

    async def close(self) -> None:
        await self.index.close()
