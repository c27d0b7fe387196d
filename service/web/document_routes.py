"""The document library routes (issue 37): the team's and the user's own documents, the third knowledge store.

Listing, searching and adding or deleting a private document need only the read permission every editor user has;
adding, replacing or deleting a **shared** document needs write (``ai-sidebar.write`` in the editor). A caller sees
the shared documents and their own private ones, never another user's. A document is read (text, HTML through
Python's parser, PDF through pypdf), cut into chunks with secrets redacted and stored with them in one transaction
(:mod:`service.knowledge.documents`, :mod:`service.memory.documents`).
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from aiohttp import web

from service.errors import ServiceError
from service.identity import Identity, request_caller
from service.knowledge.documents import (
    DocumentUnreadable,
    cite_document,
    document_chunks,
    document_sections,
    media_type_of,
)
from service.memory.documents import DocumentChunk, DocumentStore, search_terms
from service.requests import DocumentUpload
from service.web.keys import MEMORY, SETTINGS
from service.web.schemas import parse_body

routes = web.RouteTableDef()
SEARCH_LIMIT = (5, 20)  # hits of a search: by default, at most


def _documents(request: web.Request) -> DocumentStore:
    """The documents over the memory database. Raises: ServiceError 503 ``memory_unavailable`` when it is not
    open (the documents live in it)."""
    store = request.app[MEMORY].store
    if store is None:
        raise ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")
    return DocumentStore(store.db)


async def _library(request: web.Request, who: Identity, may_write: bool) -> dict[str, Any]:
    documents = await _documents(request).documents(who)
    settings = request.app[SETTINGS]
    return {
        "documents": documents,
        "stats": {"documents": len(documents), "chunks": sum(d["chunks"] for d in documents),
                  "bytes": sum(d["bytes"] for d in documents), "characters": sum(d["characters"] for d in documents),
                  "shared": sum(d["scope"] == "shared" for d in documents),
                  "private": sum(d["scope"] == "private" for d in documents)},
        "limits": {"maxBytes": settings.document_max_bytes, "perUser": settings.documents_per_user},
        "mayWrite": may_write,
    }


@routes.get("/ai-sidebar/knowledge/documents")
async def list_documents(request: web.Request) -> web.Response:
    """The documents the caller sees (shared and their own private ones) with chunk counts, totals and limits:
    ``{documents: [{id, name, scope, mediaType, bytes, characters, chunks, createdAt, updatedAt}], stats:
    {documents, chunks, bytes, characters, shared, private}, limits: {maxBytes, perUser}, mayWrite}``."""
    caller = request_caller(request)
    return web.json_response(await _library(request, caller.identity, caller.may_write))


@routes.post("/ai-sidebar/knowledge/documents")
async def add_document(request: web.Request) -> web.Response:
    """Add a document, or replace the one of the same name in the same scope: 201 (added) or 200 (replaced)
    ``{document: {..., replaced}}``.

    Errors: 400 ``invalid_request`` (body), 403 ``forbidden`` (a shared one without write permission), 413
    ``document_too_large``, 415 ``document_type_unsupported``, 422 ``document_unreadable`` / ``document_empty``,
    409 ``document_limit``, 503 ``memory_unavailable``. Nothing is stored on any of them.
    """
    caller = request_caller(request)
    body = await parse_body(request, DocumentUpload)
    if body.shared:
        caller.require_write()
    documents = _documents(request)
    settings = request.app[SETTINGS]
    media_type = media_type_of(body.name, body.mediaType)
    if media_type is None:
        raise ServiceError("document_type_unsupported", status=415, params={"name": body.name})
    data = base64.b64decode(body.data)
    if len(data) > settings.document_max_bytes:
        raise ServiceError("document_too_large", status=413,
                           params={"size": len(data), "limit": settings.document_max_bytes})
    try:
        # Reading and redacting are CPU-bound (a PDF of a thousand pages): off the event loop.
        sections = await asyncio.to_thread(document_sections, data, media_type)
        chunks = await asyncio.to_thread(document_chunks, body.name, sections)
    except DocumentUnreadable as err:
        raise ServiceError("document_unreadable", status=422, params={"name": body.name, "detail": str(err)}) from None
    except OverflowError:
        raise ServiceError("document_too_large", status=413,
                           params={"size": len(data), "limit": settings.document_max_bytes}) from None
    if not chunks:
        raise ServiceError("document_empty", status=422, params={"name": body.name})
    stored = await documents.put(caller.identity, body.name, body.shared, media_type, len(data),
                                 [DocumentChunk(section, text) for section, text in chunks],
                                 settings.documents_per_user)
    return web.json_response({"document": stored}, status=200 if stored["replaced"] else 201)


@routes.delete(r"/ai-sidebar/knowledge/documents/{id:\d{1,18}}")
async def delete_document(request: web.Request) -> web.Response:
    """Delete a document and its chunks: ``{deleted: {id, name, scope, ...}}``; later answers no longer find it.

    Errors: 404 ``document_not_found`` (none the caller sees), 403 ``forbidden`` (a shared one without write)."""
    caller = request_caller(request)
    deleted = await _documents(request).delete(caller.identity, int(request.match_info["id"]), caller.may_write)
    return web.json_response({"deleted": deleted})


@routes.get("/ai-sidebar/knowledge/documents/search")
async def search_documents(request: web.Request) -> web.Response:
    """Search the caller's documents: ``?q=<words>&limit=<1..20>`` → ``{query, hits: [{documentId, name, scope,
    section, text, citation}]}``, best first (the same search answers use, before grading).

    Errors: 400 ``invalid_request`` for a missing ``q`` or a bad ``limit``."""
    caller = request_caller(request)
    query = request.query.get("q", "")
    default, most = SEARCH_LIMIT
    try:
        limit = int(request.query.get("limit", default))
    except ValueError:
        limit = 0
    if not query or len(query) > 500:
        raise ServiceError("invalid_request", status=400,
                           params={"field": "q", "detail": "give 1 to 500 characters to search for"})
    if not 1 <= limit <= most:
        raise ServiceError("invalid_request", status=400, key="invalid_request.limit", params={"maximum": most})
    hits = await _documents(request).search(caller.identity, search_terms(query), limit)
    return web.json_response({"query": query, "hits": [
        {"documentId": hit.document_id, "name": hit.name, "scope": "shared" if hit.shared else "private",
         "section": hit.section, "text": hit.text, "citation": cite_document(hit.name, hit.section)}
        for hit in hits]})
