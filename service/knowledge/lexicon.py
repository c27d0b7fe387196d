"""The words of the knowledge layer per language: ``locales/<lang>/knowledge.json`` holds the router's keyword phrases
(``router.docs``, ``router.workspace``; ``router.acts``: what a request that needs tools says, in two groups:
``changes`` to the flows and ``runtime``, questions about what the running flow did — with ``…`` for words in
between; a plain list is read as changes; ``router.clauseWords``: the words before which a ``…`` spans the rest of
the clause, German's separable particles, see :func:`service.knowledge.phrases.gapped_pattern`; optional), the
stopwords left out of
search queries, the ``synonyms`` a query that found nothing is retried with (a word → the words node help uses for
it; optional), ``countsTitle`` (what the workspace summary's counts answer, in the language's words, so that a
counting question finds them), ``usedTitle`` (the same for the summary's where-used sections of subflows and
config nodes; optional), ``keptWords`` (words a query keeps although its rules would leave them out: Japanese
content words written in Hiragana, such as いくつ "how many"; optional), ``concepts`` (what a node does in the
user's words → the help's words for it, see :mod:`service.knowledge.concepts`; optional, and every language also
reads English's), the ``noModelNotice`` sentence shown when no
model is configured and the ``unknownNodeTypes`` sentences of a generated flow's check (``message`` with
``{types}``, and per type ``closest``, ``module``, ``unknown``) (optional; English otherwise)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from service.knowledge.concepts import Concept, parse
from service.knowledge.phrases import normalize

DEFAULT_LANGUAGE = "en-US"


def bundled_locales() -> Path:
    """The ``locales`` folder inside the installed package (``service/locales`` in a wheel), else the checkout's
    (as :func:`service.settings.bundled`, which the MCP server may not import)."""
    package = Path(__file__).resolve().parents[1]
    return package / "locales" if (package / "locales").is_dir() else package.parent / "locales"


@dataclass(frozen=True)
class Lexicon:
    """One language's words: router phrases for each store, the search stopwords, synonyms for a retry
    (casefolded), the title of the workspace summary's counts, the no-model notice (``""``: none in this language),
    the unknown node types' sentences (``{}``: none in this language), the words queries keep
    (:func:`service.knowledge.text.query_terms`), the phrases of requests that need tools and the concepts
    (this language's, then English's)."""

    language: str
    docs: tuple[str, ...]
    workspace: tuple[str, ...]
    stopwords: frozenset[str]
    synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    no_model_notice: str = ""
    unknown_node_types: dict[str, str] = field(default_factory=dict)
    counts_title: str = ""
    kept: frozenset[str] = frozenset()
    acts: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    concepts: tuple[Concept, ...] = ()
    used_title: str = ""
    clause_words: frozenset[str] = frozenset()


class Lexicons:
    """Every ``knowledge.json`` under ``locales_dir``, read once.

    Raises:
        FileNotFoundError: ``en-US/knowledge.json`` (the fallback language) is missing.
        ValueError: a file is not valid JSON of the expected shape.
    """

    def __init__(self, locales_dir: Path):
        self._by_language: dict[str, Lexicon] = {}
        for path in sorted(Path(locales_dir).glob("*/knowledge.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            router = data.get("router")
            if not isinstance(router, dict) or not isinstance(data.get("stopwords"), list):
                raise ValueError(f"{path}: expected {{router: {{docs, workspace}}, stopwords}}")
            language = path.parent.name
            synonyms = data.get("synonyms", {})
            if not isinstance(synonyms, dict) or not all(isinstance(v, list) for v in synonyms.values()):
                raise ValueError(f"{path}: expected synonyms as {{word: [words]}}")
            unknown = data.get("unknownNodeTypes", {})
            if not isinstance(unknown, dict) or not all(isinstance(v, str) for v in unknown.values()):
                raise ValueError(f"{path}: expected unknownNodeTypes as {{message, closest, module, unknown}}")
            kept = data.get("keptWords", [])
            if not isinstance(kept, list) or not all(isinstance(word, str) for word in kept):
                raise ValueError(f"{path}: expected keptWords as a list of words")
            clause = router.get("clauseWords", [])
            if not isinstance(clause, list) or not all(isinstance(word, str) for word in clause):
                raise ValueError(f"{path}: expected router.clauseWords as a list of words")
            self._by_language[language] = Lexicon(
                language, tuple(router.get("docs", ())), tuple(router.get("workspace", ())),
                frozenset(word.casefold() for word in data["stopwords"]),
                {word.casefold(): tuple(alt.casefold() for alt in alts) for word, alts in synonyms.items()},
                str(data.get("noModelNotice", "")), dict(unknown), str(data.get("countsTitle", "")),
                frozenset(word.casefold() for word in kept), *_acts(router.get("acts", ()), path),
                parse(data.get("concepts", []), str(path)), str(data.get("usedTitle", "")),
                frozenset(normalize(word).strip() for word in clause))
        if DEFAULT_LANGUAGE not in self._by_language:
            raise FileNotFoundError(f"{locales_dir}/{DEFAULT_LANGUAGE}/knowledge.json is missing")
        # English phrasings are read in every language (API, CSV, "rate limit" are written in English anywhere).
        english = self._by_language[DEFAULT_LANGUAGE].concepts
        for language, lexicon in self._by_language.items():
            if language != DEFAULT_LANGUAGE:
                self._by_language[language] = dataclasses.replace(lexicon, concepts=lexicon.concepts + english)

    @property
    def languages(self) -> list[str]:
        return sorted(self._by_language)

    def counts_titles(self) -> tuple[str, ...]:
        """Every language's ``countsTitle``, English first: the workspace is indexed once for all languages, so its
        counts carry the words a counting question uses in each of them (without them, a question in another
        language than English matches only the node type's name, shared by every node of that type)."""
        titles = [self._by_language[DEFAULT_LANGUAGE].counts_title]
        titles += [self._by_language[name].counts_title for name in self.languages if name != DEFAULT_LANGUAGE]
        return tuple(dict.fromkeys(title for title in titles if title))

    def used_titles(self) -> tuple[str, ...]:
        """Every language's ``usedTitle`` but English's (the summary's where-used sections are titled in English
        already), so that "where is X used?" in any language finds them by its own words (issue 30: a Japanese,
        Chinese or Korean where-used question found only code chunks naming X)."""
        return tuple(dict.fromkeys(self._by_language[name].used_title for name in self.languages
                                   if name != DEFAULT_LANGUAGE and self._by_language[name].used_title))

    def resolve(self, language: str | None) -> str:
        """The shipped language for ``language`` (``de-AT`` → ``de``, ``es`` → ``es-ES``), else ``en-US``."""
        if not language:
            return DEFAULT_LANGUAGE
        folded = {name.casefold(): name for name in self._by_language}
        wanted = language.casefold()
        if wanted in folded:
            return folded[wanted]
        base = wanted.split("-")[0]
        return next((name for key, name in sorted(folded.items()) if key.split("-")[0] == base), DEFAULT_LANGUAGE)

    def get(self, language: str | None) -> Lexicon:
        return self._by_language[self.resolve(language)]


def _acts(acts: object, path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(all phrases, change phrases)`` of ``router.acts``: ``{changes: [...], runtime: [...]}``, or a list (all
    of them changes).

    Raises:
        ValueError: another shape.
    """
    if isinstance(acts, (list, tuple)):
        return tuple(acts), tuple(acts)
    if isinstance(acts, dict) and all(isinstance(acts.get(key, []), list) for key in ("changes", "runtime")):
        changes = tuple(acts.get("changes", ()))
        return changes + tuple(acts.get("runtime", ())), changes
    raise ValueError(f"{path}: expected router.acts as {{changes: [phrases], runtime: [phrases]}}")
