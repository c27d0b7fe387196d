"""The user's own documents as text (issue 37): Markdown, plain text, HTML and PDF files turned into sections, cut
into chunks of at most :data:`~service.knowledge.helpdoc.MAX_SECTION_CHARS` characters with their secrets redacted,
and cited as the sidebar shows them. Storing and searching them is the memory's
(:mod:`service.memory.documents`); this module knows files and text only.

HTML is read by Python's :class:`html.parser.HTMLParser` as node help is (:func:`~service.knowledge.helpdoc
.html_sections`); PDF by pypdf (https://pypdf.readthedocs.io), imported on first use only
(tests/test_optional_imports.py). Every function here is CPU-bound: run it off the event loop.
"""

from __future__ import annotations

import io
import re
from pathlib import PurePosixPath

from service.knowledge.helpdoc import html_sections, split_text
from service.nodered.redaction import redact_text

# File name endings → the media type stored with a document (what the Knowledge panel's picker accepts).
MEDIA_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain", ".text": "text/plain",
               ".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf"}
MAX_CHARACTERS = 4_000_000  # characters of text one document may hold once extracted (a PDF may expand; a text
# file within AI_SIDEBAR_DOCUMENT_MAX_BYTES always fits)
PDF_PAGES = 2_000           # pages of a PDF read at most
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


class DocumentUnreadable(ValueError):
    """The file's content is not what its type says (not UTF-8 text, not a readable PDF)."""


def media_type_of(name: str, given: str | None = None) -> str | None:
    """The media type of a document: ``given`` when it is one of :data:`MEDIA_TYPES`, else by ``name``'s ending;
    ``None`` for a type the store does not take."""
    if given in MEDIA_TYPES.values():
        return given
    return MEDIA_TYPES.get(PurePosixPath(name).suffix.casefold())


def pdf_text(data: bytes, max_chars: int, max_pages: int = PDF_PAGES) -> str:
    """The text of the PDF ``data`` page after page (at most ``max_pages`` pages), cut to ``max_chars``
    characters; ``""`` when it holds none.

    Raises:
        DocumentUnreadable: ``data`` is no readable PDF.
    """
    # Imported here: only a PDF needs pypdf (tests/test_optional_imports.py).
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages: list[str] = []
        size = 0
        for page in reader.pages[:max_pages]:
            text = page.extract_text() or ""
            pages.append(text)
            size += len(text)
            if size >= max_chars:
                break
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise DocumentUnreadable(f"not a readable PDF: {err}") from None
    return "\n\n".join(pages)[:max_chars]


def markdown_sections(text: str) -> list[tuple[str, str]]:
    """Markdown as ``(heading, text)`` pairs, cut at its ATX headings (``#`` to ``######``; a ``#`` line inside a
    fenced code block is code, not a heading); the heading's text is kept, its ``#`` marks are not."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            sections.append((heading.group(2), []))
        else:
            sections[-1][1].append(line)
    return [(heading, body) for heading, lines in sections if (body := "\n".join(lines).strip())]


def plain_sections(text: str) -> list[tuple[str, str]]:
    """Plain text as one untitled section (its lines kept; runs of blank lines made one)."""
    body = re.sub(r"\n{3,}", "\n\n", text).strip()
    return [("", body)] if body else []


def document_sections(data: bytes, media_type: str, max_chars: int = MAX_CHARACTERS) -> list[tuple[str, str]]:
    """The ``(heading, text)`` sections of a file of ``media_type`` (one of :data:`MEDIA_TYPES`' values).

    Raises:
        DocumentUnreadable: a text file that is not UTF-8, or a PDF pypdf cannot read.
        OverflowError: the text is longer than ``max_chars`` characters.
    """
    if media_type == "application/pdf":
        text = pdf_text(data, max_chars + 1)
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise DocumentUnreadable(f"not UTF-8 text: {err}") from None
    if len(text) > max_chars:
        raise OverflowError(f"{len(text)} characters")
    if media_type == "text/html":
        return html_sections(text)
    if media_type == "text/markdown":
        return markdown_sections(text)
    return plain_sections(text)


def document_chunks(name: str, sections: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(section, text)`` chunks of a document's sections: each section cut at line ends
    (:func:`~service.knowledge.helpdoc.split_text`), secrets redacted in both (what a document holds reaches a
    model, and the database keeps only what may: the workspace gets the same redaction); an untitled section is
    named by the document's ``name``."""
    chunks: list[tuple[str, str]] = []
    for heading, text in sections:
        title = redact_text(heading) if heading else name
        chunks.extend((title, redact_text(piece)) for piece in split_text(text) if piece.strip())
    return chunks


def cite_document(name: str, section: str) -> str:
    """Where a chunk of a document comes from, as answers cite it: ``document "Pump manual.pdf", Maintenance``."""
    where = f'document "{name}"'
    return where + (f", {section}" if section and section != name else "")
