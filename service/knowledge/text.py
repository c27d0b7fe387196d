"""Search text for the FTS5 index and safe FTS5 queries, for every shipped language.

The index uses SQLite's ``unicode61`` tokenizer (https://sqlite.org/fts5.html#unicode61_tokenizer), which splits on
spaces and punctuation: right for languages written with spaces, useless for Chinese and Japanese, which are not,
and weak for Korean, whose words carry attached particles (노드를). Runs of Han, Kana and Hangul are therefore
rewritten as overlapping character bigrams on both sides (index and query), the classic CJK strategy of search
engines (Lucene's ``CJKBigramFilter``). Measured on the labelled question set of tests/test_knowledge_docs.py
against FTS5's ``trigram`` tokenizer, which cannot match the two-character words that most Chinese and Japanese
questions are made of (see :data:`TOKENIZER`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# ``remove_diacritics 2`` folds accents (nœud/noeud, sélectionné/selectionne); ``porter`` stems English suffixes
# (parse/parsing/parses), harmless elsewhere because the same stemmer runs on the query.
TOKENIZER = "porter unicode61 remove_diacritics 2"

# Han (with the compatibility and extension blocks), Hiragana, Katakana (and its phonetic extensions), Hangul.
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
                      r"\u1100-\u11ff\u3130-\u318f]+")
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


def query_terms(text: str, stopwords: Iterable[str] = ()) -> list[str]:
    """The distinct terms of a free-text query after :func:`search_text`, without ``stopwords`` (casefolded), at
    most :data:`MAX_QUERY_TERMS` of them, in order."""
    skip = {unicodedata.normalize("NFKC", word).casefold() for word in stopwords}
    terms: list[str] = []
    for word in _WORD.findall(search_text(text)):
        folded = word.casefold()
        if folded in skip or folded in terms or folded.isdigit() and len(folded) < 2:
            continue
        terms.append(folded)
    return terms[:MAX_QUERY_TERMS]


def fts_query(text: str, stopwords: Iterable[str] = ()) -> str | None:
    """An FTS5 ``MATCH`` expression: every term of ``text`` quoted (FTS5 operators in a question stay inert) and
    joined with ``OR``, so BM25 ranks by how many rare terms a chunk holds. ``None`` when no term is left."""
    terms = query_terms(text, stopwords)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
