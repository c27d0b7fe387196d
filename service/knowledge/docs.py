"""The docs store: the help of every installed node type, at its installed version, per editor language.

A source is one npm module in one language (``node-red``, ``node-red-contrib-foo``); its fingerprint is the
module's version and node sets (ids, types, enabled) from ``GET /nodes`` (JSON), so installing, removing,
updating, enabling or disabling a module reindexes that module alone, and a refresh with nothing changed costs one
``GET /nodes``. The help itself comes from ``GET /nodes`` as HTML (see :mod:`service.knowledge.helpdoc`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from service.knowledge.concepts import meanings
from service.knowledge.helpdoc import HelpSection, parse_node_configs
from service.knowledge.index import Chunk, Hit, KnowledgeIndex, RefreshReport, fingerprint
from service.knowledge.lexicon import Lexicons
from service.nodered.client import NodeRedClient

STORE = "docs"


def module_fingerprints(node_sets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per module of a ``GET /nodes`` JSON answer: ``{"version", "fingerprint"}``."""
    modules: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for node_set in node_sets:
        if isinstance(node_set, dict) and node_set.get("module"):
            modules[node_set["module"]].append(node_set)
    result = {}
    for module, sets in modules.items():
        version = next((s.get("version") for s in sets if s.get("version")), "")
        shape = sorted((s.get("id", ""), bool(s.get("enabled", True)), sorted(s.get("types") or [])) for s in sets)
        result[module] = {"version": version, "fingerprint": fingerprint([version, shape])}
    return result


def help_chunks(sections: list[HelpSection], version: str, language: str) -> list[Chunk]:
    """One chunk per help section; the title names the node type and section (the type is weighted in
    ranking), the metadata carries type, module, version, section, category and language for citations."""
    chunks = []
    for section in sections:
        heading = section.section or "overview"
        title = section.node_type + (f": {section.section}" if section.section else "")
        if not section.section and section.part == 0:
            # The help's first sentence says what the node is for, in the help's language: weighted like the type,
            # it ranks "how do I delay messages?" (in any language) on the node whose purpose that is.
            title += " — " + _first_sentence(section.text)
        chunks.append(Chunk(
            key=f"{section.node_type}#{heading}#{section.part}", title=title, text=section.text,
            metadata={"type": section.node_type, "module": section.module, "version": version,
                      "nodeSet": section.node_set, "section": section.section, "part": section.part,
                      "category": section.category, "language": language}))
    return chunks


class DocsStore:
    """Node help in the knowledge index, kept equal to what the running Node-RED has installed.

    Args:
        index: the open :class:`KnowledgeIndex`.
        lexicons: the stopwords of each language, left out of queries.
    """

    def __init__(self, index: KnowledgeIndex, lexicons: Lexicons | None = None):
        self.index = index
        self.lexicons = lexicons

    async def refresh(self, client: NodeRedClient, node_sets: list[dict[str, Any]],
                      language: str = "en-US") -> RefreshReport:
        """Reindex the modules of ``language`` whose fingerprint changed and drop the modules no longer installed.

        Args:
            client: reads the help HTML (only when something changed).
            node_sets: the ``GET /nodes`` JSON answer just read.
            language: the editor language (``en-US``, ``de``, ``zh-CN``, ...).

        Raises:
            NodeRedError: the help could not be read.
        """
        report = RefreshReport(STORE, language)
        current = module_fingerprints(node_sets)
        indexed = await self.index.sources(STORE, language)
        changed = [m for m, info in current.items()
                   if m not in indexed or indexed[m].fingerprint != info["fingerprint"]]
        removed = [m for m in indexed if m not in current]
        report.unchanged = len(current) - len(changed)
        if changed:
            html = await client.get_node_help(language)
            by_module: dict[str, list[HelpSection]] = defaultdict(list)
            for section in parse_node_configs(html):
                by_module[section.module].append(section)
            for module in changed:
                info = current[module]
                await self.index.replace_source(
                    STORE, language, module, info["fingerprint"],
                    help_chunks(by_module.get(module, []), info["version"], language),
                    {"module": module, "version": info["version"]})
                report.reindexed.append(module)
        for module in removed:
            await self.index.delete_source(STORE, language, module)
            report.removed.append(module)
        return report

    async def search(self, query: str, language: str = "en-US", limit: int = 5) -> list[Hit]:
        """The help chunks best matching ``query`` in ``language``, best first: when the query says what a node
        does in words of the lexicon's ``concepts`` (:func:`~service.knowledge.concepts.meanings`), the help
        found by the help's own words for it comes first (``limit - 1`` chunks at most), then what the query's own
        words find. The help of this project's own nodes (:data:`OWN_MODULE`) comes after all others unless the
        query names the module or one of its node types (issue 31: its ``ai-chat`` help answered generic "node"
        questions)."""
        lexicon = self.lexicons.get(language) if self.lexicons is not None else None
        words = (lexicon.stopwords, lexicon.kept) if lexicon is not None else ()

        async def found(count: int) -> list[Hit]:
            return await self.index.search(query, STORE, language, count, *words)

        # Full-text search alone ranks the same whatever the limit (a larger one only reads further), so it reads
        # the spare hits at once; a fused (vector) search ranks differently with a larger limit, so it reads more
        # only when this project's help is among the hits and will move last.
        if self.index.vectors is None:
            own = await found(limit + OWN_SPARE)
        else:
            own = await found(limit)
            if own_help_last(query, own) != own:
                own = await found(limit + OWN_SPARE)
        if lexicon is None:
            return own_help_last(query, own)[:limit]
        meant = meanings(query, lexicon.concepts)
        if not meant:
            return own_help_last(query, own)[:limit]
        # The concept's help first, but the best hit of the query's own words keeps a place (a concept may be
        # the user's side remark, the words the question itself).
        hits = (await self.index.search(" ".join(meant), STORE, language, limit))[:max(1, limit - 1)]
        ids = {hit.id for hit in hits}
        return own_help_last(query, hits + [hit for hit in own if hit.id not in ids])[:limit]


# The npm module of this project's palette nodes (ai-config, ai-chat), and how many more hits a search reads so that
# moving their help last still fills the limit with others.
OWN_MODULE = "node-red-contrib-ai-sidebar"
OWN_SPARE = 3


def own_help_last(query: str, hits: list[Hit]) -> list[Hit]:
    """``hits`` with the help of :data:`OWN_MODULE` moved after the others (each part in its order), unless ``query``
    names that module or the node type of one of those hits (``ai-chat``, ``ai-config``; case-insensitive)."""
    lowered = query.lower()
    own = [hit for hit in hits if hit.source == OWN_MODULE or hit.metadata.get("module") == OWN_MODULE]
    named = OWN_MODULE in lowered or any(str(hit.metadata.get("type") or "").lower() in lowered
                                         for hit in own if hit.metadata.get("type"))
    if not own or named:
        return hits
    own_ids = {hit.id for hit in own}
    return [hit for hit in hits if hit.id not in own_ids] + own


def _first_sentence(text: str, limit: int = 200) -> str:
    """The text up to its first sentence end (``.``, ``!`` or ``?`` before a space; ``。``, ``！``, ``？``), at most
    ``limit`` characters."""
    match = re.search(r"[.!?](\s|$)|[。！？]", text)
    end = match.end() if match else len(text)
    return text[:min(end, limit)].strip()
