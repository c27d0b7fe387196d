"""Seed 002's corrective loop for retrieved chunks: each chunk graded for relevance to the query and dropped under
a threshold; when nothing relevant remains, the query is rewritten once (by a model when one is given, else with
the lexicon's synonyms) and searched again.

The grade is deterministic: the share of the query's terms (after the lexicon's normalisation: stopwords out, CJK
as bigrams, see :func:`service.knowledge.text.query_terms`) that the chunk's title or text holds, a term counting
when a word of the chunk starts with its first :data:`~service.knowledge.text.PREFIX_CHARS` characters, as the
full-text query matches it. A vector neighbour that shares no word with the query grades 0 and is dropped: a
threshold of 0 keeps everything retrieved.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Iterable

from service.knowledge.concepts import meanings
from service.knowledge.index import Hit
from service.knowledge.lexicon import Lexicon
from service.knowledge.text import PREFIX_CHARS, is_phrase, query_terms, search_text

DEFAULT_THRESHOLD = 0.25
# A help chunk holding at least this share of the query's terms is relevant although none is in its title.
STRONG = 0.5
_WORD = re.compile(r"\w+", re.UNICODE)

Rewriter = Callable[[str], Awaitable[str | None]]


def _stem(term: str) -> str:
    return term if len(term) < 4 else term[:min(PREFIX_CHARS, len(term) - 1)]


@functools.lru_cache(maxsize=4096)
def _vocabulary(title: str, text: str) -> tuple[frozenset[str], frozenset[str]]:
    """A chunk's words, and every prefix of them up to :data:`PREFIX_CHARS` characters (a stem is at most that
    long, so "a word starts with the stem" is "the stem is one of the prefixes"). Cached: the same chunks come
    back for many questions."""
    words = frozenset(word.casefold() for word in _WORD.findall(search_text(f"{title}\n{text}")))
    prefixes = frozenset(word[:length] for word in words for length in range(1, min(PREFIX_CHARS, len(word)) + 1))
    return words, prefixes


@functools.lru_cache(maxsize=4096)
def _holds_phrase(title: str, text: str, phrase: str) -> bool:
    """Whether the chunk's title or text holds the words of ``phrase`` in a row (as FTS5 matches a phrase)."""
    pattern = r"(?<!\w)" + r"\W+".join(re.escape(word) for word in phrase.split()) + r"(?!\w)"
    return re.search(pattern, search_text(f"{title}\n{text}").casefold()) is not None


def relevance(query: str, hit: Hit, stopwords: Iterable[str] = (), kept: Iterable[str] = ()) -> float:
    """The share (0..1) of ``query``'s terms found in ``hit``'s title or text; 0 for a query of stopwords only
    (``kept``: words kept though written in Hiragana, see :func:`query_terms`)."""
    terms = query_terms(query, stopwords, kept)
    if not terms:
        return 0.0
    words, prefixes = _vocabulary(hit.title, hit.text)
    # A word's stem is one of its prefixes, so "the stem of a word equals the term's" is covered by the prefix test.
    found = sum(1 for term in terms if (_holds_phrase(hit.title, hit.text, term) if is_phrase(term)
                                        else term in words or _stem(term) in prefixes))
    return found / len(terms)


def grade(hits: list[Hit], query: str, lexicon: Lexicon, threshold: float = DEFAULT_THRESHOLD) -> list[Hit]:
    """The hits relevant to ``query``, in their order: a hit's grade is its :func:`relevance` to the query, or to
    the help's words for what the query asks (the lexicon's ``concepts``,
    :func:`~service.knowledge.concepts.meanings`) when that is higher; a hit is kept at ``threshold`` or above.

    Node help must match for real (issue 30: a paraphrased question passed on unrelated help holding a few of its
    common words, so it was never searched again): a help chunk is kept only when the query's words or the
    concept's name its node type or appear in its title (the type and what the node is for), or when it holds at
    least :data:`STRONG` of them. Nothing kept is what makes a knowledge answer search again with a rewritten
    query."""
    if threshold <= 0:
        return hits
    meant = " ".join(meanings(query, lexicon.concepts))
    kept = []
    for hit in hits:
        score = relevance(query, hit, lexicon.stopwords, lexicon.kept)
        titled = _in_title(query, hit, lexicon)
        if meant:
            score = max(score, relevance(meant, hit))
            titled = titled or _in_title(meant, hit, lexicon)
        if score >= threshold and (hit.store != "docs" or titled or score >= STRONG):
            kept.append(hit)
    return kept


def _in_title(query: str, hit: Hit, lexicon: Lexicon) -> bool:
    """Whether one of ``query``'s terms is in ``hit``'s title (for node help: its type and first sentence)."""
    title = Hit(**{**hit.__dict__, "text": ""})
    return relevance(query, title, lexicon.stopwords, lexicon.kept) > 0


def synonym_rewrite(query: str, lexicon: Lexicon) -> str | None:
    """``query`` with the lexicon's synonyms of its words added (``knowledge.json`` ``synonyms``: a word → the
    words the help uses for it), or ``None`` when no word has one."""
    folded = search_text(query).casefold()
    added: list[str] = []
    for word, alternatives in lexicon.synonyms.items():
        if re.search(rf"(?<!\w){re.escape(word)}", folded):
            added += [alt for alt in alternatives if alt not in folded and alt not in added]
    return f"{query} {' '.join(added)}" if added else None


async def rewrite(query: str, lexicon: Lexicon, model: Rewriter | None = None) -> str | None:
    """One rewrite of a query that found nothing relevant: the model's (when given and it answers something
    new), else :func:`synonym_rewrite`; ``None`` when neither has one."""
    if model is not None:
        rewritten = (await model(query) or "").strip()
        if rewritten and rewritten.casefold() != query.strip().casefold():
            return rewritten[:500]
    return synonym_rewrite(query, lexicon)
