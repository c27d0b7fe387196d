"""The workspace store: the user's tabs, subflows, groups, link nodes, config nodes, function code, comments and
``info`` texts, plus the synthetic summary (:mod:`service.knowledge.summary`), in the knowledge index.

Sources are ``tab:<id>``, ``subflow:<id>``, ``configs`` and ``summary``; each is fingerprinted by the chunks it
produces, so a deploy reindexes only the tabs it changed (and the summary or config list when their facts changed).
A refresh whose flows revision (``GET /flows`` ``rev``) and node-set list are unchanged writes nothing. Every
object goes through :func:`~service.nodered.node_secrets.strip_secrets` before any text is taken from it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from service.knowledge.docs import module_fingerprints
from service.knowledge.index import Chunk, Hit, KnowledgeIndex, RefreshReport, fingerprint
from service.knowledge.lexicon import Lexicons
from service.knowledge.phrases import normalize, phrase_pattern
from service.knowledge.summary import WorkspaceFacts, facts, label, summary_chunks
from service.nodered.flows import LAYOUT_KEYS, index_flows, is_config
from service.nodered.node_secrets import strip_secrets

STORE = "workspace"
LANGUAGE = ""  # workspace text is whatever language the user wrote it in
STATE_SOURCE = "summary"
LINK_TYPES = frozenset({"link in", "link out", "link call"})
_CODE = (("func", "code"), ("initialize", "on start"), ("finalize", "on stop"))


def _settings(node: dict[str, Any]) -> str:
    """The node's behaviour properties as compact JSON (layout and code left out), for config node chunks."""
    kept = {k: v for k, v in node.items() if k not in LAYOUT_KEYS and k not in ("info", "func", "initialize",
                                                                                "finalize", "env")}
    return json.dumps(kept, ensure_ascii=False, sort_keys=True)[:600]


def _owner_chunks(ws: WorkspaceFacts, owner: dict[str, Any]) -> list[Chunk]:
    """Chunks of one tab or subflow definition: an overview, its groups, code, comments and info texts."""
    references = ws.index.references
    kind = owner["type"]
    name = owner.get("label") or owner.get("name") or ""
    place = {"flowId": owner["id"], "flowType": kind, "flowLabel": name}
    members = [strip_secrets(n, references) for n in ws.index.by_z.get(owner["id"], []) if not is_config(n)]
    states = [s for s, on in (("disabled", owner.get("disabled")), ("locked", owner.get("locked"))) if on]
    env = [e["name"] for e in owner.get("env") or [] if isinstance(e, dict) and e.get("name")]
    overview = [f'{kind} "{name}" ({owner["id"]})' + (f", {', '.join(states)}" if states else ""),
                f"{len(members)} nodes"]
    if env:
        overview.append("environment variables: " + ", ".join(env))
    if owner.get("info"):
        overview.append(str(strip_secrets({"info": owner["info"]}).get("info")))
    overview += [label(node) for node in members]
    chunks = [Chunk(f"{owner['id']}#overview", f'{kind} "{name}"', "\n".join(overview), place)]
    for node in members:
        meta = {**place, "nodeId": node["id"], "type": node.get("type"), "name": node.get("name") or None}
        if node.get("type") == "group":
            inside = [ws.index.by_id.get(i) for i in node.get("nodes") or [] if isinstance(i, str)]
            text = "\n".join(label(n) for n in inside if n)
            chunks.append(Chunk(f"{node['id']}#group", f'group "{node.get("name", "")}" on {kind} "{name}"',
                                text or "empty group", meta))
        if node.get("type") in LINK_TYPES:
            chunks.append(_link_chunk(ws, node, kind, name, meta))
        code = [f"// {title}\n{node[key]}" for key, title in _CODE if isinstance(node.get(key), str) and node[key]]
        if code:
            chunks.append(Chunk(f"{node['id']}#code", f'{label(node)} code on {kind} "{name}"', "\n".join(code),
                                meta))
        if isinstance(node.get("info"), str) and node["info"].strip():
            chunks.append(Chunk(f"{node['id']}#info", f'{label(node)} on {kind} "{name}"', node["info"], meta))
    return chunks


def _link_chunk(ws: WorkspaceFacts, node: dict[str, Any], kind: str, name: str, meta: dict[str, Any]) -> Chunk:
    """A link node's chunk: the link nodes it is joined to (by ``links``), each with where it is, so that "what
    does link call X call?" or "where does link out Y go?" finds the node and its other end (a link call's target
    named by ``msg.target`` at run time, ``linkType`` dynamic, has none)."""
    ends = [ws.index.by_id.get(i) for i in node.get("links") or [] if isinstance(i, str)]
    joined = [f"{label(end)} on {ws.where(end)}" for end in ends if end]
    text = "\n".join([f"{label(node)}" + (f", {node['linkType']}" if node.get("linkType") else ""),
                      "linked to: " + (", ".join(joined) if joined else "none")])
    return Chunk(f"{node['id']}#link", f'{label(node)} on {kind} "{name}"', text, meta)


def _config_chunks(ws: WorkspaceFacts) -> list[Chunk]:
    references = ws.index.references
    chunks = []
    for config in ws.configs:
        users = ws.users.get(config["id"], [])
        text = "\n".join([f"scope: {ws.where(config)}", "settings: " + _settings(strip_secrets(config, references)),
                          f"used by {len(users)} nodes:"] + [f"{label(u)} on {ws.where(u)}" for u in users])
        chunks.append(Chunk(f"{config['id']}#config", f"config node {label(config)}", text,
                            {"nodeId": config["id"], "type": config.get("type"),
                             "name": config.get("name") or None}))
    return chunks


def workspace_sources(flows: list[dict[str, Any]], node_sets: list[dict[str, Any]],
                      counts_titles: Sequence[str] = (), used_titles: Sequence[str] = ()) -> dict[str, list[Chunk]]:
    """Every source's chunks for a flow configuration (``GET /flows``' ``flows``) and the installed node sets; the
    summary's counts are titled in English and in ``counts_titles`` (:meth:`Lexicons.counts_titles`), its
    where-used sections also in ``used_titles`` (:meth:`Lexicons.used_titles`)."""
    ws = facts(index_flows(flows))
    sources: dict[str, list[Chunk]] = {}
    for owner in ws.tabs + ws.subflows:
        sources[f"{owner['type']}:{owner['id']}"] = _owner_chunks(ws, owner)
    sources["configs"] = _config_chunks(ws)
    sources[STATE_SOURCE] = summary_chunks(ws, node_sets, counts_titles, used_titles)
    return sources


@functools.lru_cache(maxsize=4)
def _label_patterns(names: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each label of ``names`` (longer than one character) normalized, with its compiled whole-word pattern: compiled
    once per refresh's tuple, not once per label and search (a workspace has hundreds of tabs and subflows, more than
    the ``re`` module's own cache holds)."""
    return tuple((normalize(name), re.compile(phrase_pattern(" ".join(name.split()))))
                 for name in names if len(name.strip()) > 1)


class WorkspaceStore:
    """The user's workspace in the knowledge index.

    Args:
        index: the open :class:`KnowledgeIndex`.
        lexicons: stopwords per language, left out of queries.
    """

    def __init__(self, index: KnowledgeIndex, lexicons: Lexicons | None = None):
        self.index = index
        self.lexicons = lexicons
        # The labels of the tabs and subflows of the last refresh (the router's workspace names); none before it.
        self.names: tuple[str, ...] = ()

    async def refresh(self, flows_answer: dict[str, Any], node_sets: list[dict[str, Any]]) -> RefreshReport:
        """Bring the store up to the given flows (``GET /flows`` v2 answer ``{rev, flows}``) and node sets.

        Returns:
            What was reindexed and removed; nothing when the revision and the node sets are those indexed.
        """
        report = RefreshReport(STORE)
        self.names = tuple(sorted({str(node.get("label") or node.get("name") or "").strip()
                                   for node in flows_answer.get("flows") or []
                                   if node.get("type") in ("tab", "subflow")} - {""}))
        state = {"rev": flows_answer.get("rev"),
                 "modules": fingerprint({m: i["fingerprint"] for m, i in module_fingerprints(node_sets).items()})}
        indexed = await self.index.sources(STORE, LANGUAGE)
        summary = indexed.get(STATE_SOURCE)
        if summary is not None and state["rev"] is not None and summary.metadata.get("state") == state:
            report.unchanged = len(indexed)
            return report
        sources = workspace_sources(flows_answer.get("flows") or [], node_sets,
                                    self.lexicons.counts_titles() if self.lexicons else (),
                                    self.lexicons.used_titles() if self.lexicons else ())
        for source, chunks in sources.items():
            digest = fingerprint([(c.key, c.title, c.text, c.metadata) for c in chunks])
            if source == STATE_SOURCE or source not in indexed or indexed[source].fingerprint != digest:
                if source != STATE_SOURCE:
                    await self.index.replace_source(STORE, LANGUAGE, source, digest, chunks)
                    report.reindexed.append(source)
                elif summary is None or summary.fingerprint != digest:
                    report.reindexed.append(source)
                    await self.index.replace_source(STORE, LANGUAGE, source, digest, chunks, {"state": state})
                else:
                    # The same facts under a new revision: keep the chunks, remember the revision.
                    await self.index.replace_source(STORE, LANGUAGE, source, digest, chunks, {"state": state})
            else:
                report.unchanged += 1
        for source in indexed:
            if source not in sources:
                await self.index.delete_source(STORE, LANGUAGE, source)
                report.removed.append(source)
        return report

    async def search(self, query: str, language: str | None = None, limit: int = 5) -> list[Hit]:
        """The workspace chunks best matching ``query``, best first (``language`` picks the stopwords). When the
        query names tabs or subflows (:attr:`names`, whole words, case and width ignored), the chunks on them come
        first, in their order ("What is in my flow Area 3?" is about Area 3, not about the link out of Area 2 named
        "to area 3")."""
        named = self._named(query)
        wanted = limit * 2 if named else limit
        if self.lexicons is None:
            hits = await self.index.search(query, STORE, LANGUAGE, wanted)
        else:
            lexicon = self.lexicons.get(language)
            hits = await self.index.search(query, STORE, LANGUAGE, wanted, lexicon.stopwords, lexicon.kept)
        if named:
            hits.sort(key=lambda hit: normalize(str(hit.metadata.get("flowLabel") or "")) not in named)
        return hits[:limit]

    def _named(self, query: str) -> set[str]:
        """The labels of :attr:`names` that ``query`` names, normalized."""
        text = normalize(query)
        return {label for label, pattern in _label_patterns(self.names) if pattern.search(text)}

    async def summary(self) -> list[Hit]:
        """The summary's chunks (counts, tabs, subflows, config nodes, modules, environment names)."""
        return await self.index.chunks(STORE, LANGUAGE, STATE_SOURCE)
