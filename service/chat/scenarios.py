"""Scenario catalogs per language (``locales/<lang>/scenarios.json``): schema, loading, language fallback and
keyword detection. The service is the single source of truth for scenarios, keywords and prompts."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from service.nodered.messages import match_language
from service.tools.registry import TOOL_NAMES, canonical_name

DEFAULT_LANGUAGE = "en-US"
PLACEHOLDERS = frozenset({"nodeRedVersion", "selectedFlow", "selectedNodes", "language"})
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# Tool names a scenario may list (the registry's); old hyphenated spellings are read as the registered names.
KNOWN_TOOLS = TOOL_NAMES
SCENARIO_KEYS = ("general", "learning", "solution", "integration", "development", "configuration", "management")


class CatalogError(ValueError):
    """A scenarios file is invalid; the message names the file and the path of the broken field."""


class KeywordGroup(BaseModel):
    """Phrases that switch to ``scenario`` and, with ``tool``, force that tool; ``newHumanPrompt`` is the task."""

    model_config = ConfigDict(extra="forbid")
    key: list[str] = Field(min_length=1)
    scenario: str
    tool: str | None = None
    newHumanPrompt: str = ""

    @field_validator("tool")
    @classmethod
    def _registered_name(cls, value: str | None) -> str | None:
        return canonical_name(value) if value else value


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    systemPrompt: str
    tools: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)
    keywords: list[KeywordGroup] = Field(default_factory=list)

    @field_validator("systemPrompt")
    @classmethod
    def _known_placeholders(cls, value: str) -> str:
        unknown = sorted(set(PLACEHOLDER.findall(value)) - PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder(s) {unknown}; known: {sorted(PLACEHOLDERS)}")
        return value

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, value: list[str]) -> list[str]:
        value = [canonical_name(name) for name in value]
        unknown = sorted(set(value) - KNOWN_TOOLS)
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}")
        return value


class ScenarioFile(BaseModel):
    """The whole ``scenarios.json`` of one language."""

    model_config = ConfigDict(extra="forbid")
    language: str
    languageName: str
    answerInstruction: str
    defaultScenario: str = "general"
    scenarios: dict[str, Scenario]


@dataclass(frozen=True)
class KeywordMatch:
    """The keyword group that fired, and the phrase that matched in the user's message."""

    group: KeywordGroup
    phrase: str


def normalize(text: str) -> str:
    """Case- and width-insensitive form: NFKC folds full-width letters, ``casefold`` folds case."""
    return unicodedata.normalize("NFKC", text).casefold()


def keyword_pattern(phrase: str) -> str:
    """The regular expression (over :func:`normalize`d text) for one keyword phrase.

    Han and Kana are written without spaces: substring. Korean separates words with spaces but attaches particles
    (현재 노드**가**): a word must start where the phrase starts ("이 노드" not inside "파이 노드"), the end is open.
    Other scripts match whole words; "current node" must not fire inside "current Node-RED version" or "Node.js".
    """
    norm = re.escape(normalize(phrase).strip())
    names = [unicodedata.name(ch, "") for ch in phrase]
    if any(name.startswith(("CJK", "HIRAGANA", "KATAKANA")) for name in names):
        return norm
    if any(name.startswith("HANGUL") for name in names):
        return rf"(?<!\w){norm}"
    return rf"(?<!\w){norm}(?!\w|[-.]\w)"


class Catalog:
    """One validated language: its scenarios and compiled keyword patterns."""

    def __init__(self, data: ScenarioFile):
        self.data = data
        self._patterns: list[tuple[re.Pattern, KeywordGroup, str]] = []
        for scenario in data.scenarios.values():
            for group in scenario.keywords:
                for phrase in group.key:
                    self._patterns.append((re.compile(keyword_pattern(phrase)), group, phrase))

    @property
    def language(self) -> str:
        return self.data.language

    def scenario(self, key: str | None) -> tuple[str, Scenario]:
        """The scenario ``key`` or the default one; returns ``(key, scenario)``."""
        if key and key in self.data.scenarios:
            return key, self.data.scenarios[key]
        return self.data.defaultScenario, self.data.scenarios[self.data.defaultScenario]

    def match_keywords(self, message: str) -> KeywordMatch | None:
        """The keyword group whose phrase occurs in ``message``; the longest phrase wins, tool groups first."""
        text = normalize(message)
        best: tuple[int, int, KeywordMatch] | None = None
        for pattern, group, phrase in self._patterns:
            if pattern.search(text):
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


def load_file(path: Path) -> ScenarioFile:
    """Parse and validate one scenarios file.

    Raises:
        CatalogError: naming ``path`` and the dotted path of the first broken field.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CatalogError(f"{path}: cannot be read as JSON: {err}") from None
    try:
        data = ScenarioFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"{path}: {where}: {first['msg']}") from None
    _check_consistency(path, data)
    return data


def _check_consistency(path: Path, data: ScenarioFile) -> None:
    if data.defaultScenario not in data.scenarios:
        raise CatalogError(f"{path}: defaultScenario: {data.defaultScenario!r} is not a scenario")
    claimed: dict[str, str] = {}
    for key, scenario in data.scenarios.items():
        for index, group in enumerate(scenario.keywords):
            where = f"scenarios.{key}.keywords.{index}"
            if group.scenario not in data.scenarios:
                raise CatalogError(f"{path}: {where}.scenario: {group.scenario!r} is not a scenario")
            if group.tool is not None and group.tool not in KNOWN_TOOLS:
                raise CatalogError(f"{path}: {where}.tool: unknown tool {group.tool!r}")
            for phrase in group.key:
                norm = normalize(phrase).strip()
                if group.tool and claimed.get(norm, group.tool) != group.tool:
                    raise CatalogError(f"{path}: {where}.key: {phrase!r} is claimed by tools "
                                       f"{claimed[norm]} and {group.tool}")
                if group.tool:
                    claimed[norm] = group.tool


class ScenarioCatalog:
    """Every shipped language, loaded and validated once at start.

    Args:
        locales_dir: folder holding ``<lang>/scenarios.json``; only names found there are ever read.

    Raises:
        CatalogError: a file is invalid, or ``en-US`` (the fallback) is missing.
    """

    def __init__(self, locales_dir: Path):
        self.catalogs: dict[str, Catalog] = {}
        for path in sorted(Path(locales_dir).glob("*/scenarios.json")):
            data = load_file(path)
            self.catalogs[path.parent.name] = Catalog(data)
        if DEFAULT_LANGUAGE not in self.catalogs:
            raise CatalogError(f"{locales_dir}: {DEFAULT_LANGUAGE}/scenarios.json is missing")

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
        for name in order:
            match = self.catalogs[name].match_keywords(message)
            if match is not None:
                return match, self.catalogs[name]
        return None, None

    def get(self, lang: str | None) -> Catalog:
        """The catalog for ``lang`` after :meth:`resolve`."""
        return self.catalogs[self.resolve(lang)]


def fill_placeholders(template: str, values: dict[str, str]) -> str:
    """Replace ``{{name}}`` with readable text; unknown names were rejected at load, missing values read "none"."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1)) or "none", template)
