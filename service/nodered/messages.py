"""Sentences per language: ``locales/<lang>/errors.json``, keyed by error code, and ``locales/<lang>/approvals.json``,
the one-line summaries of planned changes shown on approval cards (keys ``change.<tool>[.<variant>]``).

Each file maps a message key to one sentence with named placeholders (``{tool}``). The key is the error code
(``flow_not_found``) or, where one code has several sentences, the code and a variant (``agent_limit.tool_calls``).
Code that raises an error passes the code, the key and the placeholder values; the English sentence is rendered
here, and the sentence in the request's language is rendered where the error leaves the service (the JSON error
middleware, the stream's error events). A language without the key, or a value missing, falls back to English.

This module reads only JSON files and imports nothing else from the service, so every part (the Admin API
client, the MCP server) can use it.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

log = logging.getLogger(__name__)

DEFAULT_LANGUAGE = "en-US"
# The installed package ships locales/ as ``service/locales`` (pyproject.toml); a checkout has it at the top level.
_PACKAGED_LOCALES = Path(__file__).resolve().parent.parent / "locales"
LOCALES_DIR = _PACKAGED_LOCALES if _PACKAGED_LOCALES.is_dir() else Path(__file__).resolve().parents[2] / "locales"
# The files of a language's sentences, one key space: a key in two of them is refused.
SENTENCE_FILES = ("errors.json", "approvals.json")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$")
# Region variants whose base is not "same primary subtag, first shipped": traditional script regions.
TRADITIONAL_CHINESE = frozenset({"zh-tw", "zh-hk", "zh-mo", "zh-hant"})


def placeholders(sentence: str) -> set[str]:
    """Names of the ``{name}`` placeholders in ``sentence``."""
    return set(PLACEHOLDER.findall(sentence))


def fill(sentence: str, params: Mapping[str, Any]) -> str | None:
    """``sentence`` with each ``{name}`` replaced by ``params[name]``; ``None`` when a value is missing.

    Values are inserted as text and never parsed again, so braces inside them are harmless.
    """
    missing = placeholders(sentence) - set(params)
    if missing:
        return None
    return PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), sentence)


def match_language(tag: str | None, shipped: Iterable[str]) -> str | None:
    """The shipped language for a BCP 47 tag: exact (case-insensitive), then traditional or simplified Chinese by
    region or script, then the first shipped language with the same primary subtag (``es-MX`` → ``es-ES``);
    ``None`` when nothing matches or ``tag`` is not a language tag. ``pt_BR`` (POSIX style) is read as ``pt-BR``."""
    tag = (tag or "").strip().replace("_", "-")
    if not LANGUAGE_TAG.match(tag):
        return None
    names = sorted(shipped)
    by_lower = {name.lower(): name for name in names}
    lower = tag.lower()
    if lower in by_lower:
        return by_lower[lower]
    primary = lower.split("-")[0]
    if primary == "zh":
        wanted = "zh-tw" if (lower in TRADITIONAL_CHINESE or "hant" in lower) else "zh-cn"
        if wanted in by_lower:
            return by_lower[wanted]
    for name in names:
        if name.lower().split("-")[0] == primary:
            return name
    return None


def accept_languages(header: str | None) -> list[str]:
    """Language tags of an ``Accept-Language`` header, most preferred first (RFC 9110, section 12.5.4).

    ``de-CH, fr;q=0.8, *;q=0.1`` → ``["de-CH", "fr"]``: the wildcard and ``q=0`` entries are left out, equal
    weights keep the header's order.
    """
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((header or "").split(",")):
        tag, *options = [piece.strip() for piece in part.split(";")]
        weight = 1.0
        for option in options:
            name, _, value = option.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if tag and tag != "*" and weight > 0:
            ranked.append((-weight, index, tag))
    return [tag for _, _, tag in sorted(ranked)]


class MessageCatalog:
    """The sentences (:data:`SENTENCE_FILES`) of every language that has a ``<lang>/errors.json`` under
    ``locales_dir``: error sentences and the summaries of planned changes.

    Raises:
        ValueError: a file is not a JSON object of strings, or holds a key another of the language's files holds
            (the message names the file).
    """

    def __init__(self, locales_dir: Path = LOCALES_DIR):
        self.sentences: dict[str, dict[str, str]] = {}
        for path in sorted(Path(locales_dir).glob("*/errors.json")):
            sentences: dict[str, str] = {}
            for name in SENTENCE_FILES:
                found = path.parent / name
                if not found.is_file():
                    continue
                data = json.loads(found.read_text(encoding="utf-8"))
                if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                    raise ValueError(f"{found}: must be a JSON object of message key → sentence")
                twice = sorted(set(data) & set(sentences))
                if twice:
                    raise ValueError(f"{found}: key(s) {twice} are already in another of {list(SENTENCE_FILES)}")
                sentences.update(data)
            self.sentences[path.parent.name] = sentences

    @property
    def languages(self) -> list[str]:
        return sorted(self.sentences)

    def negotiate(self, language: str | None, accept_language: str | None = None) -> str:
        """The language to word errors in: the request's ``language`` when given (a tag no language matches
        gives English), else the first ``Accept-Language`` entry a shipped language matches, else English."""
        if language:
            return match_language(language, self.languages) or DEFAULT_LANGUAGE
        for tag in accept_languages(accept_language):
            found = match_language(tag, self.languages)
            if found:
                return found
        return DEFAULT_LANGUAGE

    def render(self, key: str, params: Mapping[str, Any], language: str) -> str | None:
        """The sentence ``key`` in ``language`` with ``params`` filled in; ``None`` when that language has no such
        key or a placeholder has no value."""
        sentence = self.sentences.get(language, {}).get(key)
        return fill(sentence, params) if sentence is not None else None


@functools.cache
def english_catalog() -> MessageCatalog:
    """The shipped English sentences (read once); raising code words its errors with them."""
    return MessageCatalog(LOCALES_DIR)


def english(key: str, params: Mapping[str, Any] | None = None) -> str:
    """The English sentence ``key`` with ``params`` filled in.

    A key the shipped catalog lacks is a programming error; it is logged and the key itself is returned, so a
    fault is still reported with its code rather than replaced by another one.
    """
    text = english_catalog().render(key, params or {}, DEFAULT_LANGUAGE)
    if text is None:
        log.error("no English sentence for error key %r with values %s", key, sorted(params or {}))
        return key
    return text


class Sentence(dict):
    """A catalog sentence to word in any language: ``{"key", "params"}`` (JSON as it is, so it can be stored with
    what it describes), e.g. ``Sentence("change.create_tab", tab="Scratch")``.

    ``english`` is the English text (:func:`english`); :meth:`translated` words it in another language.
    """

    def __init__(self, key: str, **params: Any):
        super().__init__(key=key, params=params)

    @property
    def english(self) -> str:
        return english(self["key"], self["params"])

    @staticmethod
    def translated(sentence: Mapping[str, Any] | None, catalog: MessageCatalog, language: str,
                   fallback: str) -> str:
        """``sentence`` (a :class:`Sentence` or its JSON) in ``language``; ``fallback`` (the text as shown in
        English) when there is no sentence, English is asked, or the language lacks the key or a value."""
        if not isinstance(sentence, Mapping) or not isinstance(sentence.get("key"), str) \
                or not isinstance(sentence.get("params"), Mapping) or language == DEFAULT_LANGUAGE:
            return fallback
        return catalog.render(sentence["key"], sentence["params"], language) or fallback


class CodedError(Exception):
    """An error with a stable ``code`` whose sentence can be worded in another language.

    Args:
        code: the stable snake_case code (DESIGN.md, README error table).
        message: a free English sentence; leave it out to word the error from the catalog with ``key`` and
            ``params`` (only catalog-worded errors are translated).
        key: the catalog key; default ``code``.
        params: placeholder values of the sentence.
    """

    def __init__(self, code: str, message: str | None = None, *, key: str | None = None,
                 params: Mapping[str, Any] | None = None):
        self.code = code
        self.key = key or code
        if message is None:
            self.params: dict[str, Any] | None = dict(params or {})
            message = english(self.key, self.params)
        else:
            self.params = None
        super().__init__(message)
        self.message = message

    def sentence_args(self) -> dict[str, Any]:
        """Keyword arguments that give another :class:`CodedError` the same sentence (and translation): the free
        ``message``, or ``key`` and ``params``."""
        if self.params is None:
            return {"message": self.message}
        return {"key": self.key, "params": self.params}

    def translated(self, catalog: MessageCatalog, language: str) -> str:
        """The sentence in ``language``; the English one when the error was raised with a free sentence or
        ``language`` lacks it."""
        if self.params is None or language == DEFAULT_LANGUAGE:
            return self.message
        return catalog.render(self.key, self.params, language) or self.message

    def detached(self) -> Self:
        """This error without its traceback and without the errors it was raised from (``__context__``,
        ``__cause__``), for an error kept beyond its ``except`` block or raised again later; returns it.

        The traceback holds every frame between the raise and the catch, the catching one included: kept in that
        frame, or in an object it holds, the error makes a reference cycle that only the garbage collector frees,
        with those frames' locals (a request's flows may be megabytes; issue 33). A stored error raised again gains
        the frames of each raise."""
        self.__traceback__ = None
        self.__context__ = None
        self.__cause__ = None
        return self
