"""Keyword phrases as regular expressions, per script: what the router's phrases (``knowledge.json`` ``router``),
the concepts (``concepts``) and the scenarios' keywords (``scenarios.json`` ``keywords``) are matched with."""

from __future__ import annotations

import re
import unicodedata


def normalize(text: str) -> str:
    """NFKC-folded, casefolded text (full-width letters and case do not matter)."""
    return unicodedata.normalize("NFKC", text).casefold()


WORD_END = r"(?!\w)"


def phrase_pattern(phrase: str, word_end: str = WORD_END) -> str:
    """A keyword phrase as a regular expression over :func:`normalize`d text: Han and Kana anywhere (no spaces
    between words), Hangul at a word start with its particles open, other scripts as whole words (ending where
    ``word_end``, a lookahead, says)."""
    norm = re.escape(normalize(phrase).strip())
    names = [unicodedata.name(ch, "") for ch in phrase]
    if any(name.startswith(("CJK", "HIRAGANA", "KATAKANA")) for name in names):
        return norm
    if any(name.startswith("HANGUL") for name in names):
        return rf"(?<!\w){norm}"
    return rf"(?<!\w){norm}{word_end}"


# Between the parts of a phrase written with "…": any characters, at most this many (a few words: "add … node"
# matches "add a debug node" and "add two more debug nodes", not a node named three sentences later).
GAP_CHARS = 40
# Before a part that is one of the language's clause words (``router.clauseWords`` of ``knowledge.json``): the rest of
# the clause, up to this many characters and never across a sentence's end. German puts a separable verb's particle
# at the end of its clause ("Füge im Flow „Order webhook“ nach dem Node compute total einen delay-Node hinzu"), so
# the verb and its particle are parted by the whole object, however long.
CLAUSE_CHARS = 200
# A sentence ends at ". ", "! ", "? ", "; " (a dot inside a number or a name does not end it), an ideographic full
# stop or a line's end; "." does not cross a line's end anyway.
_CLAUSE_GAP = rf"(?:(?![.!?;](?:\s|$)|[。！？]).){{0,{CLAUSE_CHARS}}}?"


def gapped_pattern(phrase: str, word_end: str = WORD_END, clause_words: frozenset[str] = frozenset()) -> str:
    """A phrase whose parts are separated by ``…`` as a regular expression: each part as :func:`phrase_pattern`
    (with ``word_end``), in order, with up to :data:`GAP_CHARS` characters between two parts, or the rest of the
    clause (:data:`CLAUSE_CHARS`) before a part in ``clause_words`` (normalised: German's separable particles,
    ``hinzu``, ``um``, ``ab``, ...); a phrase without ``…`` is :func:`phrase_pattern` itself."""
    parts = [part for part in phrase.split("…") if part.strip()]
    pattern = phrase_pattern(parts[0], word_end) if parts else ""
    for part in parts[1:]:
        gap = _CLAUSE_GAP if normalize(part).strip() in clause_words else f".{{0,{GAP_CHARS}}}?"
        pattern += gap + phrase_pattern(part, word_end)
    return pattern
