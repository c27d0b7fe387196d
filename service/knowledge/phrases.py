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


def gapped_pattern(phrase: str, word_end: str = WORD_END) -> str:
    """A phrase whose parts are separated by ``…`` as a regular expression: each part as :func:`phrase_pattern`
    (with ``word_end``), in order, with up to :data:`GAP_CHARS` characters between two parts; a phrase without
    ``…`` is :func:`phrase_pattern` itself."""
    parts = [part for part in phrase.split("…") if part.strip()]
    return f".{{0,{GAP_CHARS}}}?".join(phrase_pattern(part, word_end) for part in parts)
