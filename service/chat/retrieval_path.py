"""The retrieval path: routed retrieval from the installed nodes' help and the workspace, graded, with one
rewritten query when nothing relevant was found; with no model configured what was found is the answer."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable

from langchain_core.messages import HumanMessage, SystemMessage

from service.chat import events
from service.chat.context import ChatDeps, ChatResult, Turn
from service.chat.events import Emit
from service.chat.injection import DEFAULT_LANGUAGE, load_patterns
from service.chat.prompting import earlier_turns
from service.chat.thinking import without_thinking
from service.errors import ServiceError
from service.knowledge.grading import grade, rewrite
from service.knowledge.index import Hit
from service.knowledge.retrieval import (
    DEFAULT_LIMIT,
    DOCS_TOOL,
    DOCUMENTS,
    DOCUMENTS_TOOL,
    StoreResult,
    is_follow_up,
    retrieve,
    retrieve_store,
    sources,
    standalone_query,
    without_model,
)
from service.knowledge.router import Route
from service.llm.pii import mask
from service.llm.providers import ProviderConfig
from service.memory.db import MemoryUnavailable
from service.memory.documents import DocumentStore, search_terms
from service.requests import StreamChatRequest
from service.tracing.spans import search_span

log = logging.getLogger(__name__)


# English fallback of ``noModelNotice`` in locales/<lang>/knowledge.json.
NO_MODEL_NOTICE = ("A model is needed for a written answer: the text above is what was found in the installed "
                   "nodes' help or your workspace. Configure a provider (AI_PROVIDER and its key) in the assistant "
                   "service or in an ai-config node.")


ROUTER_PROMPT = ("Classify the user's message for a Node-RED assistant. Answer with one word: docs (about node "
                 "types, what a node does, how to do something with nodes), workspace (about the user's own flows, "
                 "tabs, nodes, counts, where something is used), both, or neither.")


REWRITE_PROMPT = ("The search query below found nothing relevant in Node-RED's node help or the user's flows. Rewrite "
                  "it as a short keyword query in the same language, using the words Node-RED's documentation would "
                  "use (node type names, properties). Answer with the query only.")


async def retrieve_knowledge(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                             emit: Emit) -> None:
    """The routed stores (node help, workspace: :func:`retrieve_stores`), then the caller's own documents
    (:func:`retrieve_documents`); what was found relevant is ``turn.retrieved``."""
    await retrieve_stores(request, deps, turn, result, emit)
    await retrieve_documents(request, deps, turn, result, emit)


async def retrieve_documents(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                             emit: Emit) -> None:
    """The user's own documents (issue 37), searched for every question whatever the router said (a device
    manual's words are no node help or workspace phrase): those the caller sees (shared ones and their own private
    ones, :class:`~service.memory.documents.DocumentStore`), graded like the other stores, shown as a
    ``search_documents`` tool call of origin ``router`` with the documents as ``sources``. Nothing happens when the
    caller sees no document, or the memory database is not open."""
    store = deps.ledger
    if store is None:
        return
    documents = DocumentStore(store.db)
    slot = deps.knowledge
    lexicon = slot.knowledge.lexicons.get(turn.catalog.language) if slot and slot.knowledge else None
    try:
        if not await documents.holds(deps.identity):
            return
        query = request.message
        if is_follow_up(request.message):
            if turn.history is None:
                turn.history = await earlier_turns(request, deps, result, turn)
            query = standalone_query(request.message, turn.history)
        terms = search_terms(query, lexicon.stopwords if lexicon else frozenset())
        with search_span(DOCUMENTS_TOOL) as traced:
            found = await documents.search(deps.identity, terms, DEFAULT_LIMIT)
            traced(len(found))
    except MemoryUnavailable as err:  # answer without them, as without memory
        log.warning("documents not searched: %s", err)
        return
    hits = [Hit(hit.chunk_id, DOCUMENTS, "", hit.name, str(hit.position), hit.section, hit.text,
                {"document": hit.name, "documentId": hit.document_id, "section": hit.section,
                 "scope": "shared" if hit.shared else "private"}, -hit.rank) for hit in found]
    if lexicon is not None:
        hits = grade(hits, query, lexicon, deps.settings.knowledge_min_relevance)
    if not hits:
        return
    retrieved = StoreResult(DOCUMENTS_TOOL, query, hits)
    await emit(events.tool_call(DOCUMENTS_TOOL, {"query": query}, "router"))
    await emit(events.tool_result(DOCUMENTS_TOOL, retrieved.text, ok=True, sources=sources(hits)))
    result.tools.append(DOCUMENTS_TOOL)
    turn.retrieved = [*turn.retrieved, retrieved]


async def retrieve_stores(request: StreamChatRequest, deps: ChatDeps, turn: Turn, result: ChatResult,
                          emit: Emit) -> None:
    """Routed retrieval: the router reads the latest user message alone (never the history); the stores it names
    are searched with a standalone query (a follow-up is joined to the previous question), each chunk is graded
    and dropped under ``AI_SIDEBAR_KNOWLEDGE_MIN_RELEVANCE``, and a store left with nothing is searched once more
    with a rewritten query (seed 002). Every search is shown as ``tool_call``/``tool_result`` events of origin
    ``router``. The workspace is searched only for a request that may use tools (an ``ai-chat`` node whose config
    withholds them gets the node help alone)."""
    slot = deps.knowledge
    if slot is None or slot.knowledge is None or slot.router is None or slot.refresher is None:
        return
    fallback = route_by_model(deps) if deps.settings.router_model else None
    route = await slot.router.route(request.message, turn.catalog.language, fallback,
                                    names=slot.knowledge.workspace.names)
    if route is Route.NEITHER:
        return
    if not deps.tools_enabled:
        route = Route.DOCS if route in (Route.DOCS, Route.BOTH) else Route.NEITHER
        if route is Route.NEITHER:
            return
    # Right after a start, before any help is indexed (an index kept from an earlier run answers at once): say that
    # the installed help is not in this answer yet.
    if slot.refresher.building and not await slot.knowledge.index.holds("docs", DEFAULT_LANGUAGE):
        await emit(events.notice("knowledge_index_building", load_patterns(deps.settings.locales_dir).notice(
            "knowledgeIndexBuilding", turn.catalog.language)))
    query = request.message
    if is_follow_up(request.message):
        turn.history = await earlier_turns(request, deps, result, turn)
        query = standalone_query(request.message, turn.history)
    language = await slot.refresher.docs_language(turn.catalog.language)
    lexicon = slot.knowledge.lexicons.get(turn.catalog.language)
    threshold = deps.settings.knowledge_min_relevance
    try:
        with search_span(route.value) as traced:
            found = await retrieve(slot.knowledge, route, query, language)
            traced(sum(len(store.hits) for store in found))
        for store in found:
            store.hits = grade(store.hits, query, lexicon, threshold)
        # Rewritten only when no store found anything relevant: with both routed, one store's relevant chunks answer
        # (a named tab found in the workspace needs no node help for the words around it). An index that holds
        # nothing yet (never refreshed) has nothing a rewrite could find.
        # A request that needs tools is not rewritten: the agent answers it and may search again itself.
        retry = [] if turn.needs_tools or any(store.hits for store in found) else [
            store for store in found if await slot.knowledge.index.holds(
                "docs" if store.tool == DOCS_TOOL else "workspace", language if store.tool == DOCS_TOOL else "")]
        rewritten = await rewrite(query, lexicon, rewrite_by_model(deps)) if retry else None
        retried = []
        if rewritten is not None:
            for store in retry:
                with search_span(store.tool) as traced:
                    again = await retrieve_store(slot.knowledge, store.tool, rewritten, language)
                    traced(len(again.hits))
                again.hits = grade(again.hits, rewritten, lexicon, threshold)
                retried.append(again)
    except sqlite3.Error as err:  # a locked or damaged index: answer without it, as without memory
        log.warning("knowledge not searched: %s", err)
        return
    # A store that found nothing is shown only when it was retried: the user sees the first query, then the
    # rewritten one.
    shown = [store for store in found if store.hits or retried] + retried
    for store in shown:
        await emit(events.tool_call(store.tool, {"query": store.query}, "router"))
        await emit(events.tool_result(store.tool, store.text, ok=True, sources=sources(store.hits)))
        result.tools.append(store.tool)
    turn.retrieved = [store for store in found + retried if store.hits]


def route_by_model(deps: ChatDeps) -> Callable[[str], Awaitable[Route | None]] | None:
    """The router's model fallback (``AI_SIDEBAR_ROUTER_MODEL``): the request's model classifies the one message
    it is given; ``None`` (undecided) when no model is configured or it fails or answers something else."""
    async def classify(message: str) -> Route | None:
        answer = await ask_model(deps, ROUTER_PROMPT, message)
        word = (answer or "").strip().strip(".").casefold()
        return next((route for route in Route if route.value == word), None)
    return classify


def rewrite_by_model(deps: ChatDeps) -> Callable[[str], Awaitable[str | None]] | None:
    """The rewrite of a query that found nothing, by the request's model (``None`` when none is configured)."""
    try:
        deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
    except ServiceError:
        return None

    async def rewrite_query(query: str) -> str | None:
        return await ask_model(deps, REWRITE_PROMPT, query)
    return rewrite_query


async def ask_model(deps: ChatDeps, instruction: str, text: str) -> str | None:
    """One short model call (``instruction`` as system prompt, ``text`` as the one user message) within
    ``AI_LLM_TIMEOUT``; ``None`` when no model is configured or the call fails (the caller has a fallback)."""
    try:
        model = deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
        async with asyncio.timeout(deps.settings.llm_timeout):
            question = HumanMessage(mask(text, deps.settings.pii_types))
            answer = await model.ainvoke([SystemMessage(instruction), question])
    except Exception as err:  # noqa: BLE001 - any provider fault: the deterministic path decides
        log.info("knowledge model step skipped (%s)", type(err).__name__)
        return None
    return without_thinking(answer.text if isinstance(answer.text, str) else answer.text())


async def answer_without_model(deps: ChatDeps, turn: Turn, emit: Emit, result: ChatResult) -> bool:
    """With no model configured, a question that retrieved something is answered with what was retrieved and a
    notice that a model is needed for a written answer (``True``); otherwise ``False`` and the run goes on (and
    ends in the usual ``provider_not_configured`` error)."""
    try:
        deps.models.get(ProviderConfig.from_settings(deps.settings, deps.provider))
    except ServiceError as err:
        if err.code != "provider_not_configured":
            return False
        notice = NO_MODEL_NOTICE
        if deps.knowledge is not None and deps.knowledge.knowledge is not None:
            notice = deps.knowledge.knowledge.lexicons.get(turn.catalog.language).no_model_notice or notice
        text = without_model(turn.retrieved, notice)
        result.answer += text
        await emit(events.token(text))
        return True
    return False
