"""Which store answers a message (seed 003's router): ``docs``, ``workspace``, ``both`` or ``neither``.

It reads ONE message, the latest user message, never the conversation: a follow-up is contextualised into a
standalone question before it gets here. Deterministic first: the keyword phrases of the message's language and of
English (node type names and "how many" are often written in English) from ``locales/<lang>/knowledge.json``, and
the labels of the workspace's tabs and subflows (a message that names one is about the workspace, whatever else it
asks: "What does Flow 2 do?" holds the docs phrase "what does"); when nothing decides, an optional model fallback
may, else ``neither``.

Apart from where to retrieve from, :meth:`Router.needs_tools` tells whether the message asks for something only
tools can do (a change to the flows, what the running flow showed): such a request keeps its tools whatever was
retrieved (issue 30: the router saves model calls for knowledge questions, it never takes tools away).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Collection, Iterable
from enum import StrEnum

from service.knowledge.lexicon import DEFAULT_LANGUAGE, Lexicons
from service.knowledge.phrases import gapped_pattern, normalize, phrase_pattern


class Route(StrEnum):
    """Where to retrieve from."""

    DOCS = "docs"
    WORKSPACE = "workspace"
    BOTH = "both"
    NEITHER = "neither"


Fallback = Callable[[str], Awaitable[Route | None]]


def _compile(phrases: Iterable[tuple[str, frozenset[str]]]) -> re.Pattern | None:
    """One pattern of ``(phrase, its language's clause words)`` pairs (:func:`gapped_pattern`)."""
    parts = [gapped_pattern(p, clause_words=words) for p, words in phrases if p.strip()]
    return re.compile("|".join(parts)) if parts else None


@functools.lru_cache(maxsize=8)
def _names(names: tuple[str, ...]) -> re.Pattern | None:
    """The workspace's labels as one pattern, any run of spaces in a label matching any run in the message (none
    needed next to Han or Kana: "フロー 3" is also written "フロー3"); a label of one character would match too much
    and is left out."""
    parts = []
    for name in names:
        if len(name.strip()) > 1:
            pattern = phrase_pattern(" ".join(name.split()))
            parts.append(pattern.replace(r"\ ", r"\s+" if pattern.startswith("(?<!") else r"\s*"))
    return re.compile("|".join(parts)) if parts else None


class Router:
    """Classifies the latest user message.

    Args:
        lexicons: the keyword phrases per language.
        fallback: an async callable asked when no phrase decides (a model classifier); it gets the same single
            message and answers a :class:`Route` or ``None`` (undecided: ``neither``).
    """

    def __init__(self, lexicons: Lexicons, fallback: Fallback | None = None):
        self._lexicons = lexicons
        self._fallback = fallback
        self._patterns: dict[str, tuple[re.Pattern | None, re.Pattern | None]] = {}
        self._acts: dict[tuple[str, str], re.Pattern | None] = {}

    def _for(self, language: str) -> tuple[re.Pattern | None, re.Pattern | None]:
        if language not in self._patterns:
            languages = dict.fromkeys((language, DEFAULT_LANGUAGE))
            lexicons = [self._lexicons.get(name) for name in languages]
            self._patterns[language] = (_compile((p, lex.clause_words) for lex in lexicons for p in lex.docs),
                                        _compile((p, lex.clause_words) for lex in lexicons for p in lex.workspace))
        return self._patterns[language]

    def needs_tools(self, message: str, language: str | None = None) -> bool:
        """Whether ``message`` (the latest user message alone) asks for what only tools can do: one of the
        ``router.acts`` phrases of its language or of English matches ("add a debug node for the alarms",
        "what did the debug node show last?", "デバッグノードを追加して"). Such a request must reach the agent (or a
        forced tool and then the agent) with its tools, even where the knowledge router also found help.

        Raises:
            TypeError: ``message`` is not a string.
        """
        return self._matches("acts", message, language)

    def asks_change(self, message: str, language: str | None = None) -> bool:
        """Whether ``message`` asks to change the flows: one of the ``router.acts.changes`` phrases of its language
        or of English matches ("add a debug node"), not only a runtime one ("what did the debug show"), which the
        read tools of Ask mode answer (issue 31: those got the ``change_needs_agent`` notice).

        Raises:
            TypeError: ``message`` is not a string.
        """
        return self._matches("changes", message, language)

    def _matches(self, group: str, message: str, language: str | None) -> bool:
        """Whether a phrase of the lexicons' ``group`` (``acts``: all, ``changes``) matches ``message``."""
        if not isinstance(message, str):
            raise TypeError("the router reads the latest user message only, as a string")
        resolved = self._lexicons.resolve(language)
        if (group, resolved) not in self._acts:
            languages = dict.fromkeys((resolved, DEFAULT_LANGUAGE))
            lexicons = [self._lexicons.get(name) for name in languages]
            self._acts[group, resolved] = _compile((p, lex.clause_words) for lex in lexicons
                                                   for p in getattr(lex, group))
        pattern = self._acts[group, resolved]
        return bool(pattern and pattern.search(normalize(message)))

    def classify(self, message: str, language: str | None = None, names: Collection[str] = ()) -> Route | None:
        """The keyword decision for ``message`` (a string: the latest user message alone), ``None`` when no phrase
        matched. ``names``: the labels of the workspace's tabs and subflows
        (:attr:`~service.knowledge.workspace.WorkspaceStore.names`: one sorted tuple per refresh, so its pattern is
        compiled once); one named in the message (a whole word or words, case and width ignored) makes it a
        workspace question too.

        Raises:
            TypeError: ``message`` is not a string (a history must never be passed).
        """
        if not isinstance(message, str):
            raise TypeError("the router reads the latest user message only, as a string")
        docs, workspace = self._for(self._lexicons.resolve(language))
        text = normalize(message)
        named = _names(tuple(names)) if names else None
        is_docs = bool(docs and docs.search(text))
        is_workspace = bool(workspace and workspace.search(text) or named and named.search(text))
        if is_docs and is_workspace:
            return Route.BOTH
        if is_docs:
            return Route.DOCS
        if is_workspace:
            return Route.WORKSPACE
        return None

    async def route(self, message: str, language: str | None = None, fallback: Fallback | None = None,
                    names: Collection[str] = ()) -> Route:
        """:meth:`classify` (with the workspace's tab and subflow labels ``names``), then the fallback when
        undecided (``fallback``, e.g. the request's model, else the router's own), then ``neither``. The fallback
        gets ``message`` alone."""
        decided = self.classify(message, language, names)
        fallback = fallback or self._fallback
        if decided is None and fallback is not None:
            decided = await fallback(message)
        return decided or Route.NEITHER
