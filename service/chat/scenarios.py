"""Scenario catalogs: the structure in ``locales/scenarios.json`` (scenario keys and order, tools, which scenario
each keyword group switches to and which tool it forces), the words per language in ``locales/<lang>/scenarios.json``
(names, descriptions, system prompts, quick starts, keyword phrases and their task text); schema, merging, language
fallback and keyword detection. The service is the single source of truth for scenarios, keywords and prompts."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from service.knowledge.phrases import gapped_pattern, normalize
from service.nodered.messages import match_language
from service.tools.registry import TOOL_NAMES, canonical_name

log = logging.getLogger(__name__)

DEFAULT_LANGUAGE = "en-US"
BASE_FILE = "scenarios.json"
PLACEHOLDERS = frozenset({"nodeRedVersion", "selectedFlow", "selectedNodes", "language"})
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# Tool names a scenario may list (the registry's); old hyphenated spellings are read as the registered names.
KNOWN_TOOLS = TOOL_NAMES
# Keys of the base file: a language file that holds one is changing behaviour per language, which it must not.
STRUCTURAL_KEYS = frozenset({"defaultScenario", "tools", "scenario", "tool"})


class CatalogError(ValueError):
    """A scenarios file is invalid; the message names the file and the path of the broken field."""


# --- The base file: structure, the same in every language -------------------------------------------------------

class KeywordRoute(BaseModel):
    """Where a keyword group leads: the scenario it switches to and, optionally, the tool it forces."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    tool: str | None = None

    @field_validator("tool")
    @classmethod
    def _registered_name(cls, value: str | None) -> str | None:
        return canonical_name(value) if value else value


class ScenarioStructure(BaseModel):
    """One scenario's language-independent part: the tools the agent may call in it."""

    model_config = ConfigDict(extra="forbid")
    tools: list[str] = Field(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, value: list[str]) -> list[str]:
        value = [canonical_name(name) for name in value]
        unknown = sorted(set(value) - KNOWN_TOOLS)
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}")
        return value


class BaseFile(BaseModel):
    """``locales/scenarios.json``: scenario keys in display order, the default one, and the keyword groups by id
    (in matching order)."""

    model_config = ConfigDict(extra="forbid")
    defaultScenario: str = "general"
    scenarios: dict[str, ScenarioStructure] = Field(min_length=1)
    keywords: dict[str, KeywordRoute] = Field(default_factory=dict)


# --- A language file: words only; anything missing falls back to en-US -----------------------------------------

class KeywordWords(BaseModel):
    """The phrases of one keyword group in one language, and the task text sent with the forced tool's result."""

    model_config = ConfigDict(extra="forbid")
    key: list[str] | None = Field(None, min_length=1)
    newHumanPrompt: str | None = None


class ScenarioWords(BaseModel):
    """One scenario's words in one language."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str | None = None
    systemPrompt: str | None = None
    prompts: list[str] | None = None

    @field_validator("systemPrompt")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        unknown = sorted(set(PLACEHOLDER.findall(value or "")) - PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder(s) {unknown}; known: {sorted(PLACEHOLDERS)}")
        return value


class PlaceholderWords(BaseModel):
    """The words the values of a system prompt's placeholders are written with, in one language (a German prompt
    says "Ausgewählte Nodes: keine", not "none"); a missing one falls back to en-US.

    ``none``: nothing selected; ``unknown``: stands for the Node-RED version when it could not be read; ``id``: the
    word before an id (``"Flow 1" (id 1a2b)``); ``more``: a shortened list, with ``{list}`` and ``{count}``;
    ``separator``: between the items of a list."""

    model_config = ConfigDict(extra="forbid")
    none: str | None = Field(None, min_length=1)
    unknown: str | None = Field(None, min_length=1)
    id: str | None = Field(None, min_length=1)
    more: str | None = None
    separator: str | None = Field(None, min_length=1)

    @field_validator("more")
    @classmethod
    def _a_list_and_a_count(cls, value: str | None) -> str | None:
        if value is not None and not ("{list}" in value and "{count}" in value):
            raise ValueError("must hold {list} and {count}")
        return value


class LanguageFile(BaseModel):
    """``locales/<lang>/scenarios.json``. ``languageName`` and ``answerInstruction`` are required: an English
    fallback would silently make the model answer in English."""

    model_config = ConfigDict(extra="forbid")
    languageName: str = Field(min_length=1)
    answerInstruction: str = Field(min_length=1)
    placeholderWords: PlaceholderWords = Field(default_factory=PlaceholderWords)
    scenarios: dict[str, ScenarioWords] = Field(default_factory=dict)
    keywords: dict[str, KeywordWords] = Field(default_factory=dict)


# --- The merged view the chat uses --------------------------------------------------------------------------------

class KeywordGroup(BaseModel):
    """Phrases that switch to ``scenario`` and, with ``tool``, force that tool; ``newHumanPrompt`` is the task."""

    id: str
    key: list[str]
    scenario: str
    tool: str | None = None
    newHumanPrompt: str = ""


class Scenario(BaseModel):
    """One scenario in one language, structure and words merged."""

    name: str
    description: str
    systemPrompt: str
    tools: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)
    keywords: list[KeywordGroup] = Field(default_factory=list)


class ScenarioFile(BaseModel):
    """One language's whole catalog, as the base file and the language file (with en-US fallback) make it."""

    language: str
    languageName: str
    answerInstruction: str
    defaultScenario: str
    scenarios: dict[str, Scenario]
    placeholderWords: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class KeywordMatch:
    """The keyword group that fired, and the phrase that matched in the user's message."""

    group: KeywordGroup
    phrase: str


# A keyword's last word must not run on into a longer name: "current node" never fires inside "current Node-RED
# version" or "Node.js".
KEYWORD_END = r"(?!\w|[-.]\w)"


def keyword_pattern(phrase: str) -> str:
    """The regular expression (over :func:`normalize`d text) for one keyword phrase; a phrase with ``…`` matches
    its parts in order with a few words in between, as the knowledge router's phrases ("¿Por qué el nodo X da
    error?" against "por qué … da error"; :func:`service.knowledge.phrases.gapped_pattern`).

    Han and Kana are written without spaces: substring. Korean separates words with spaces but attaches particles
    (현재 노드**가**): a word must start where the phrase starts ("이 노드" not inside "파이 노드"), the end is open.
    Other scripts match whole words (:data:`KEYWORD_END`).
    """
    return gapped_pattern(phrase, KEYWORD_END)


def literal(phrase: str) -> str:
    """The normalised text that must occur for ``phrase`` to match: the phrase, or its longest ``…`` part."""
    return max((normalize(part).strip() for part in phrase.split("…")), key=len)


class Catalog:
    """One validated language: its scenarios and compiled keyword patterns.

    A phrase's pattern can only match where its normalised text occurs literally; that substring test (C speed,
    no regular-expression machinery) rules out nearly every phrase of nearly every message, and only the phrases
    that pass it are matched with their pattern (word boundaries). Same results as matching every pattern.
    """

    def __init__(self, data: ScenarioFile):
        self.data = data
        self._patterns: list[tuple[str, re.Pattern, KeywordGroup, str]] = []
        for scenario in data.scenarios.values():
            for group in scenario.keywords:
                for phrase in group.key:
                    self._patterns.append((literal(phrase), re.compile(keyword_pattern(phrase)), group, phrase))

    @property
    def language(self) -> str:
        return self.data.language

    def scenario(self, key: str | None) -> tuple[str, Scenario]:
        """The scenario ``key`` or the default one; returns ``(key, scenario)``."""
        if key and key in self.data.scenarios:
            return key, self.data.scenarios[key]
        return self.data.defaultScenario, self.data.scenarios[self.data.defaultScenario]

    def match_keywords(self, message: str, normalized: str | None = None) -> KeywordMatch | None:
        """The keyword group whose phrase occurs in ``message``; the longest phrase wins, tool groups first.
        ``normalized``: :func:`normalize` of ``message`` when the caller has it already."""
        text = normalize(message) if normalized is None else normalized
        best: tuple[int, int, KeywordMatch] | None = None
        for literal, pattern, group, phrase in self._patterns:
            if literal in text and pattern.search(text):
                rank = (1 if group.tool else 0, len(phrase))
                if best is None or rank > best[:2]:
                    best = (*rank, KeywordMatch(group, phrase))
        return best[2] if best else None

    def public(self) -> dict[str, Any]:
        """What the editor needs: names, descriptions, quick starts, keywords, tools; no system prompts."""
        return {
            "language": self.language,
            "languageName": self.data.languageName,
            "defaultScenario": self.data.defaultScenario,
            "scenarios": {
                key: {"name": s.name, "description": s.description, "tools": s.tools, "prompts": s.prompts,
                      "keywords": [g.model_dump() for g in s.keywords]}
                for key, s in self.data.scenarios.items()
            },
        }


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CatalogError(f"{path}: cannot be read as JSON: {err}") from None


def _invalid(path: Path, err: ValidationError) -> CatalogError:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden" and first["loc"] and first["loc"][-1] in STRUCTURAL_KEYS:
        return CatalogError(f"{path}: {where}: is structure, the same in every language; set it once in "
                            f"{path.parent.parent / BASE_FILE} (a language file holds words only)")
    return CatalogError(f"{path}: {where}: {first['msg']}")


def load_base(path: Path) -> BaseFile:
    """Parse and validate the base file ``locales/scenarios.json``.

    Raises:
        CatalogError: naming ``path`` and the dotted path of the first broken field (an unknown tool, a keyword
            group or default leading to no scenario).
    """
    try:
        base = BaseFile.model_validate(_read_json(path))
    except ValidationError as err:
        raise _invalid(path, err) from None
    if base.defaultScenario not in base.scenarios:
        raise CatalogError(f"{path}: defaultScenario: {base.defaultScenario!r} is not a scenario")
    for group_id, route in base.keywords.items():
        if route.scenario not in base.scenarios:
            raise CatalogError(f"{path}: keywords.{group_id}.scenario: {route.scenario!r} is not a scenario")
        if route.tool is not None and route.tool not in KNOWN_TOOLS:
            raise CatalogError(f"{path}: keywords.{group_id}.tool: unknown tool {route.tool!r}")
    return base


def load_language(path: Path, base: BaseFile) -> LanguageFile:
    """Parse and validate one language file against the base file's scenario keys and keyword group ids.

    Raises:
        CatalogError: naming ``path`` and the key: a structural key (tools, scenario, tool, defaultScenario), a
            scenario or keyword group the base file does not have, or any other invalid field.
    """
    try:
        words = LanguageFile.model_validate(_read_json(path))
    except ValidationError as err:
        raise _invalid(path, err) from None
    for key in words.scenarios:
        if key not in base.scenarios:
            raise CatalogError(f"{path}: scenarios.{key}: not a scenario of {path.parent.parent / BASE_FILE} "
                               f"(known: {', '.join(base.scenarios)})")
    for group_id in words.keywords:
        if group_id not in base.keywords:
            raise CatalogError(f"{path}: keywords.{group_id}: not a keyword group of "
                               f"{path.parent.parent / BASE_FILE} (known: {', '.join(base.keywords)})")
    return words


def merge(language: str, base: BaseFile, words: LanguageFile, fallback: LanguageFile | None,
          path: Path) -> tuple[ScenarioFile, list[str]]:
    """One language's catalog: the base file's structure with ``words``, each missing word taken from
    ``fallback`` (en-US).

    Returns:
        The merged catalog, and the dotted paths of the words that came from ``fallback``.

    Raises:
        CatalogError: a word is missing from both (``fallback`` is None for en-US itself, which must be complete).
    """
    fell_back: list[str] = []

    def word(section: str, key: str, field: str) -> Any:
        for source in (words, fallback):
            entry = getattr(source, section).get(key) if source is not None else None
            value = getattr(entry, field) if entry is not None else None
            if value is not None:
                if source is not words:
                    fell_back.append(f"{section}.{key}.{field}")
                return value
        raise CatalogError(f"{path}: {section}.{key}.{field}: missing, and {DEFAULT_LANGUAGE} (the fallback of "
                           f"every language) has no word for it either")

    groups: dict[str, list[KeywordGroup]] = {key: [] for key in base.scenarios}
    for group_id, route in base.keywords.items():
        groups[route.scenario].append(KeywordGroup(
            id=group_id, scenario=route.scenario, tool=route.tool, key=word("keywords", group_id, "key"),
            newHumanPrompt=word("keywords", group_id, "newHumanPrompt")))
    scenarios = {
        key: Scenario(name=word("scenarios", key, "name"), description=word("scenarios", key, "description"),
                      systemPrompt=word("scenarios", key, "systemPrompt"), prompts=word("scenarios", key, "prompts"),
                      tools=structure.tools, keywords=groups[key])
        for key, structure in base.scenarios.items()
    }
    placeholder_words = {}
    for name in PlaceholderWords.model_fields:
        for source in (words, fallback):
            value = getattr(source.placeholderWords, name) if source is not None else None
            if value is not None:
                if source is not words:
                    fell_back.append(f"placeholderWords.{name}")
                placeholder_words[name] = value
                break
        else:
            raise CatalogError(f"{path}: placeholderWords.{name}: missing, and {DEFAULT_LANGUAGE} (the fallback of "
                               f"every language) has no word for it either")
    data = ScenarioFile(language=language, languageName=words.languageName,
                        answerInstruction=words.answerInstruction, defaultScenario=base.defaultScenario,
                        scenarios=scenarios, placeholderWords=placeholder_words)
    _check_claims(path, data)
    return data, fell_back


def _check_claims(path: Path, data: ScenarioFile) -> None:
    claimed: dict[str, str] = {}
    for scenario in data.scenarios.values():
        for group in scenario.keywords:
            if not group.tool:
                continue
            for phrase in group.key:
                norm = normalize(phrase).strip()
                if claimed.get(norm, group.tool) != group.tool:
                    raise CatalogError(f"{path}: keywords.{group.id}.key: {phrase!r} is claimed by tools "
                                       f"{claimed[norm]} and {group.tool}")
                claimed[norm] = group.tool


class ScenarioCatalog:
    """Every shipped language, loaded, merged with the base file and validated once at start.

    Args:
        locales_dir: folder holding the base file ``scenarios.json`` and ``<lang>/scenarios.json``; only names
            found there are ever read.

    Raises:
        CatalogError: a file is invalid, or the base file or ``en-US`` (the fallback) is missing.
    """

    def __init__(self, locales_dir: Path):
        locales_dir = Path(locales_dir)
        base_path = locales_dir / BASE_FILE
        if not base_path.is_file():
            raise CatalogError(f"{base_path}: missing; it holds the scenario structure every language shares")
        self.structure = load_base(base_path)
        paths = {path.parent.name: path for path in sorted(locales_dir.glob(f"*/{BASE_FILE}"))}
        if DEFAULT_LANGUAGE not in paths:
            raise CatalogError(f"{locales_dir}: {DEFAULT_LANGUAGE}/{BASE_FILE} is missing")
        english = load_language(paths[DEFAULT_LANGUAGE], self.structure)
        self.catalogs: dict[str, Catalog] = {}
        self.fallbacks: dict[str, list[str]] = {}
        for language, path in paths.items():
            words = english if language == DEFAULT_LANGUAGE else load_language(path, self.structure)
            fallback = None if language == DEFAULT_LANGUAGE else english
            data, fell_back = merge(language, self.structure, words, fallback, path)
            if fell_back:
                log.warning("%s: %d word(s) missing, shown in %s: %s", path, len(fell_back), DEFAULT_LANGUAGE,
                            ", ".join(fell_back))
            self.catalogs[language] = Catalog(data)
            self.fallbacks[language] = fell_back

    @property
    def scenario_keys(self) -> list[str]:
        """The scenario keys of the base file, in display order."""
        return list(self.structure.scenarios)

    @property
    def languages(self) -> list[str]:
        return sorted(self.catalogs)

    def resolve(self, lang: str | None) -> str:
        """The shipped language for a requested tag: exact, then traditional/simplified Chinese by region, then
        same primary subtag, else ``en-US``. Anything that is not a language tag gives ``en-US``."""
        return match_language(lang, self.catalogs) or DEFAULT_LANGUAGE

    def match_any(self, message: str, language: str) -> tuple[KeywordMatch | None, Catalog | None]:
        """Keyword match for ``message``: in ``language`` first, then English (many users write "current flow"
        whatever their editor's language), then every other shipped language. Returns the match and the catalog
        it came from, or ``(None, None)``."""
        order = [language, DEFAULT_LANGUAGE] + [name for name in self.languages if name not in (language,
                                                                                               DEFAULT_LANGUAGE)]
        text = normalize(message)
        for name in order:
            match = self.catalogs[name].match_keywords(message, text)
            if match is not None:
                return match, self.catalogs[name]
        return None, None

    def get(self, lang: str | None) -> Catalog:
        """The catalog for ``lang`` after :meth:`resolve`."""
        return self.catalogs[self.resolve(lang)]


def fill_placeholders(template: str, values: dict[str, str], none: str = "none") -> str:
    """Replace ``{{name}}`` with readable text; unknown names were rejected at load, missing values read ``none``
    (the prompt language's word, :class:`PlaceholderWords`)."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1)) or none, template)
