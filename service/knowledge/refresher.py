"""The knowledge kept fresh in the background: a refresh when the service starts, then every
``AI_SIDEBAR_KNOWLEDGE_REFRESH`` seconds, never per question.

A refresh is cheap when nothing changed (one ``GET /nodes`` and one ``GET /flows``: the stores compare the module
fingerprints and the flows revision). It reads with the service's own Node-RED credentials (``NODE_RED_TOKEN`` or
``NODE_RED_USERNAME``/``NODE_RED_PASSWORD``), so the workspace store holds what the service's account may read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from service.knowledge.base import Knowledge
from service.knowledge.index import RefreshReport
from service.knowledge.lexicon import DEFAULT_LANGUAGE
from service.knowledge.router import Router
from service.nodered.client import NodeRedClient

log = logging.getLogger(__name__)


class KnowledgeRefresher:
    """Refreshes ``knowledge`` from ``client`` for every docs language asked for so far (``en-US`` always).

    Args:
        knowledge: the open stores.
        client: the service's own Admin API client.
        interval: seconds between refreshes; ``0`` turns the automatic refresh off (then only :meth:`refresh`,
            the reindex route, fills the index).
    """

    def __init__(self, knowledge: Knowledge, client: NodeRedClient, interval: float):
        self.knowledge = knowledge
        self.client = client
        self.interval = interval
        self.languages: list[str] = [DEFAULT_LANGUAGE]
        self.refreshed_at: float | None = None  # Unix seconds of the last complete refresh
        self.last_error: str | None = None      # the last refresh's failure code, None after a success

    @property
    def building(self) -> bool:
        """Whether the first index of this process is still being built: the automatic refresh is on, no refresh
        has completed yet, and none failed but for Node-RED not being reachable yet (a refresh refused for good —
        ``nodered_unauthorized`` under adminAuth without the service's own account — builds nothing to wait for)."""
        return self.interval > 0 and self.refreshed_at is None and self.last_error in (None, "nodered_unreachable")

    def want(self, language: str | None) -> None:
        """Index the docs of ``language`` (resolved to a shipped one) from the next refresh on."""
        resolved = self.knowledge.lexicons.resolve(language)
        if resolved not in self.languages:
            self.languages.append(resolved)

    async def docs_language(self, language: str | None) -> str:
        """The docs language to search for ``language``: itself once indexed, ``en-US`` until then (and it is
        asked for, see :meth:`want`)."""
        resolved = self.knowledge.lexicons.resolve(language)
        if resolved == DEFAULT_LANGUAGE or await self.knowledge.index.sources("docs", resolved):
            return resolved
        self.want(resolved)
        return DEFAULT_LANGUAGE

    async def node_sets(self) -> list[dict[str, Any]]:
        """The installed node sets (``GET /nodes`` JSON) as the last refresh read them; read once now when no
        refresh has run yet.

        Raises:
            NodeRedError: the Admin API could not be read.
        """
        if self.knowledge.node_sets is None:
            self.knowledge.node_sets = await self.client.get_nodes()
        return self.knowledge.node_sets

    async def refresh(self) -> list[RefreshReport]:
        """One refresh of every wanted language and the workspace.

        Raises:
            NodeRedError: the Admin API could not be read (nothing indexed is removed then).
        """
        reports: list[RefreshReport] = []
        for language in list(self.languages):
            reports += await self.knowledge.refresh(self.client, language)
        self.refreshed_at, self.last_error = time.time(), None
        changed = [f"{r.store}{'/' + r.language if r.language else ''}" for r in reports if r.changed]
        if changed:
            log.info("knowledge refreshed: %s", ", ".join(changed))
        return reports

    async def run(self) -> None:
        """Refresh now, then every :attr:`interval` seconds, until cancelled (returns at once when it is 0).

        Until a first refresh succeeds, a Node-RED that is not reachable yet (``make run`` starts the service
        before Node-RED) is asked again sooner: after 1, 2, 4 ... seconds up to :attr:`interval`, logged once at
        info level, so the index is filled as soon as Node-RED answers rather than one interval later."""
        retry = 1.0
        waiting_told = False
        while self.interval > 0:
            delay = self.interval
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a Node-RED that is down or restarting must not end the loop
                self.last_error = getattr(err, "code", type(err).__name__)
                if self.refreshed_at is None and self.last_error == "nodered_unreachable":
                    if not waiting_told:
                        log.info("Node-RED is not reachable yet at %s; the knowledge index is filled once it answers",
                                 self.client.base_url)
                        waiting_told = True
                    delay, retry = min(retry, self.interval), retry * 2
                else:
                    log.warning("knowledge refresh failed (%s); answers use what was indexed before",
                                self.last_error)
            await asyncio.sleep(delay)


@dataclass
class KnowledgeSlot:
    """The knowledge of a running service; every field is ``None`` while (or when) its database is not open."""

    knowledge: Knowledge | None = None
    router: Router | None = None
    refresher: KnowledgeRefresher | None = field(default=None)
