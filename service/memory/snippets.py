"""The text shown for a conversation search hit: about a sentence around the first match, every match marked.

SQLite's FTS5 ``snippet()`` counts tokens, and the message index's tokens are trigrams (migrations.py:
``tokenize='trigram'``), so its 12 tokens were 14 characters (issue 31); it allows 64 at most. PostgreSQL's
``ts_headline`` counts words. Cutting the stored text here gives both the same length in characters.
"""

from __future__ import annotations

import re

SNIPPET_CHARS = 120
# How far a cut end may move to the next space so that it does not split a word.
_WORD_SLACK = 15


def snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around the first occurrence of any of ``words`` (case ignored), a
    third of them before it; ends cut at a space where one is near, marked ``…``; every occurrence of ``words`` in
    it marked ``[`` … ``]`` as FTS5's ``snippet()`` marks them; runs of whitespace as one space. ``text`` without a
    match gives its start."""
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE) \
        if words else None
    first = pattern.search(text) if pattern else None
    center = first.start() if first else 0
    end = min(len(text), max(0, center - width // 3) + width)
    start = max(0, end - width)
    if start > 0:
        space = text.rfind(" ", max(0, start - _WORD_SLACK), start)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.find(" ", end, end + _WORD_SLACK)
        end = space if space != -1 else end
    piece = text[start:end]
    if pattern:
        piece = pattern.sub(lambda match: f"[{match.group(0)}]", piece)
    return ("…" if start > 0 else "") + " ".join(piece.split()) + ("…" if end < len(text) else "")
