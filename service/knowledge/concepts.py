"""What a node does, in the user's words: ``knowledge.json`` ``concepts`` map everyday phrasings ("more than 10
times a minute", "dice roll", "gone quiet for 30 seconds") to the words the installed nodes' help uses for them
(``delay``, ``rate``; ``random``; ``trigger``, ``timeout``), so that a "which node" question written without the
help's vocabulary still finds the node (issue 30: retrieval returned unrelated help for a paraphrased question).

A concept is ``{"say": [phrases], "means": [words]}``. A phrase is matched over the NFKC-folded, casefolded
message as the router's keyword phrases are (:func:`service.knowledge.router.gapped_pattern`: ``…`` between two
parts allows a few words in between), except that the last word of each part may go on (``averag`` matches
"average", "averaging", "averages"), since users inflect. The words of ``means`` are searched for as a query of
their own, before the message's own words (:meth:`service.knowledge.docs.DocsStore.search`), and a hit that holds
them is relevant (:func:`service.knowledge.grading.grade`). Node type names (``delay``, ``trigger``) are the same
in every language's help titles, so a concept of any language can name them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from service.knowledge.phrases import gapped_pattern, normalize


@dataclass(frozen=True)
class Concept:
    """One thing a node does: the user's phrasings of it (``say``) and the help's words for it (``means``)."""

    say: tuple[str, ...]
    means: tuple[str, ...]


def concept_pattern(phrase: str) -> str:
    """``phrase`` as :func:`gapped_pattern`, the last word of each part open to the end of a word (a stem)."""
    return gapped_pattern(phrase).replace(r"(?!\w)", "")


@functools.lru_cache(maxsize=64)
def _compiled(concepts: tuple[Concept, ...]) -> tuple[tuple[re.Pattern, tuple[str, ...]], ...]:
    return tuple((re.compile("|".join(concept_pattern(p) for p in concept.say if p.strip())), concept.means)
                 for concept in concepts if any(p.strip() for p in concept.say))


def meanings(message: str, concepts: Iterable[Concept]) -> list[str]:
    """The ``means`` words of every concept one of whose phrases ``message`` holds, each once, in the concepts'
    order; ``[]`` when none matches."""
    text = normalize(message)
    found: list[str] = []
    for pattern, means in _compiled(tuple(concepts)):
        if pattern.search(text):
            found += [word for word in means if word not in found]
    return found


def parse(value: object, where: str) -> tuple[Concept, ...]:
    """``knowledge.json``'s ``concepts`` (a list of ``{"say": [str], "means": [str]}``) as :class:`Concept`\\ s.

    Raises:
        ValueError: ``value`` is not of that shape (``where`` names the file).
    """
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected concepts as a list of {{say: [phrases], means: [words]}}")
    concepts = []
    for entry in value:
        say, means = (entry.get("say"), entry.get("means")) if isinstance(entry, dict) else (None, None)
        if not (isinstance(say, list) and isinstance(means, list) and say and means
                and all(isinstance(word, str) for word in say + means)):
            raise ValueError(f"{where}: expected each concept as {{say: [phrases], means: [words]}}, got {entry!r}")
        concepts.append(Concept(tuple(say), tuple(word.casefold() for word in means)))
    return tuple(concepts)
