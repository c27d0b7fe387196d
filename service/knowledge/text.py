"""Search text for the FTS5 index and safe FTS5 queries, for every shipped language.

The index uses SQLite's ``unicode61`` tokenizer (https://sqlite.org/fts5.html#unicode61_tokenizer), which splits on
spaces and punctuation: right for languages written with spaces, useless for Chinese and Japanese, which are not,
and weak for Korean, whose words carry attached particles (노드를). Runs of Han, Kana and Hangul are therefore
rewritten as overlapping character bigrams on both sides (index and query), the classic CJK strategy of search
engines (Lucene's ``CJKBigramFilter``). Measured on the 68 labelled questions of
``tests/support/knowledge_questions.py`` (right node's help in the top 3, FTS alone): this scheme 65/68 (95.6 %);
FTS5's ``trigram`` tokenizer 42/68 (61.8 %; 0/20 in Chinese and Japanese, whose words are mostly two characters,
below the trigram's three). Trigram does better on German compounds (Systembefehl / Befehl).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

# ``remove_diacritics 2`` folds accents (nœud/noeud, sélectionné/selectionne).
TOKENIZER = "unicode61 remove_diacritics 2"
# Words of other scripts are matched by their first characters (a prefix query): "verzögern" finds "verzögert",
# "combine" finds "combines", "retarder" finds "retarde", with no stemmer per language.
PREFIX_CHARS = 5

# Han (with the compatibility and extension blocks), Hiragana, Katakana (and its phonetic extensions), Hangul.
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
                      r"\u1100-\u11ff\u3130-\u318f]+")
# Japanese writes content words in Kanji and Katakana; a query bigram with Hiragana in it is grammar (には, ます,
# する) or straddles a particle (のノ): left out of queries (still indexed), except the bigrams of the few content
# words written in Hiragana that a lexicon keeps (``keptWords``: いくつ, "how many").
_HIRAGANA = re.compile(r"[\u3040-\u309f]+")
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 48


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i:i + 2] for i in range(len(run) - 1))


def search_text(text: str) -> str:
    """``text`` as the index stores it: NFKC-folded, CJK runs as space-separated bigrams, other text unchanged
    (the tokenizer folds case and accents)."""
    text = unicodedata.normalize("NFKC", text)
    return _CJK_RUN.sub(lambda match: f" {_bigrams(match.group(0))} ", text)


def query_terms(text: str, stopwords: Iterable[str] = (), kept: Iterable[str] = ()) -> list[str]:
    """The distinct terms of a free-text query after :func:`search_text`, without ``stopwords`` (casefolded), at
    most :data:`MAX_QUERY_TERMS` of them, in order. Bigrams with Hiragana are left out as grammar, except those of
    the words in ``kept`` (:attr:`service.knowledge.lexicon.Lexicon.kept`: いくつ keeps いく and くつ).

    A single digit alone would match nearly everything and is left out, but after a word it is kept as a phrase of
    the two (``"flow 2"``, see :func:`is_phrase`): the editor names new tabs "Flow 1", "Flow 2" … and debug nodes
    "debug 1" …, so "what does Flow 2 do?" must find that tab and not every tab."""
    return list(_query_terms(text, _frozen(stopwords), _frozen(kept)))


def _frozen(words: Iterable[str]) -> frozenset[str]:
    return words if isinstance(words, frozenset) else frozenset(words)


@functools.lru_cache(maxsize=256)
def _as_indexed(words: frozenset[str]) -> frozenset[str]:
    """``words`` as the terms they are indexed as, casefolded (a CJK word as its bigrams); made once per word list
    (a language's stopwords: a few hundred words, asked for by every grade of every hit)."""
    return frozenset(term.casefold() for word in words for term in _WORD.findall(search_text(word)))


@functools.lru_cache(maxsize=1024)
def _query_terms(text: str, stopwords: frozenset[str], kept: frozenset[str]) -> tuple[str, ...]:
    # A CJK stopword is skipped as the bigrams it is indexed as.
    skip, keep = _as_indexed(stopwords), _as_indexed(kept)
    terms: list[str] = []
    previous = ""
    for word in _WORD.findall(search_text(text)):
        folded = word.casefold()
        grammar = bool(_HIRAGANA.search(folded)) and folded not in keep
        if folded.isdigit() and len(folded) < 2:
            term = f"{previous} {folded}" if previous else ""
        else:
            term = "" if folded in skip or grammar else folded
        previous = "" if folded.isdigit() or grammar else folded  # a stopword may still name a thing: "node 2"
        if term and term not in terms:
            terms.append(term)
    return tuple(terms[:MAX_QUERY_TERMS])


def is_phrase(term: str) -> bool:
    """Whether a query term is a phrase (a word and the digit after it, see :func:`query_terms`): matched as those
    two words in a row, never as a prefix."""
    return " " in term


def fts_query(text: str, stopwords: Iterable[str] = (), kept: Iterable[str] = ()) -> str | None:
    """An FTS5 ``MATCH`` expression: every term of ``text`` quoted (FTS5 operators in a question stay inert) and
    joined with ``OR``, so BM25 ranks by how many rare terms a chunk holds. ``None`` when no term is left."""
    terms = query_terms(text, stopwords, kept)
    if not terms:
        return None
    return " OR ".join(fts_term(term) for term in terms)


def is_prefix(term: str) -> bool:
    """Whether a query term is matched as a prefix (a word of 4 or more characters, not CJK)."""
    return not _CJK_RUN.match(term) and len(term) >= 4 and not is_phrase(term)


def term_key(term: str) -> str:
    """What a query term is matched by: the term itself, or for a prefix term its first characters."""
    return term[:min(PREFIX_CHARS, len(term) - 1)] if is_prefix(term) else term


def fts_term(term: str) -> str:
    """One query term as an FTS5 string (quoted: operators inert; a quoted phrase matches its words in a row,
    https://sqlite.org/fts5.html#fts5_phrases), with ``*`` when it is a prefix."""
    quoted = '"' + term_key(term).replace('"', '""') + '"'
    return quoted + "*" if is_prefix(term) else quoted


def folded(term: str) -> str:
    """``term`` as the tokenizer stores it (``remove_diacritics 2``: accents off; case is already folded), to look
    it up in the FTS5 vocabulary."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", term) if not unicodedata.combining(ch))

