"""Injection warning: flow content that reads like instructions to the model ("ignore previous instructions",
"you are now", "delete all nodes", in any of the shipped languages) is named to the user in one ``notice``
(``possible_injection``) before ``done``. The content itself reaches the model as it always does, delimited as
data (``<tool_result>`` blocks, the system prompt's rule), never as instructions.

The patterns and the notice's sentence live in ``locales/<lang>/guardrails.json`` (``injectionPatterns``:
case-insensitive regular expressions; ``possibleInjection``: the sentence, ``{nodes}`` the nodes named). Flow text
may be written in any language, so every language's patterns are checked whatever the request's language.

The same files hold the sentences of the other guardrail notices, by key (``mcpServerUnavailable``: an external
MCP server left out, ``{server}`` and ``{reason}`` filled in; ``historyLeftOut``: earlier turns that not even the
summary could carry, ``{count}``; ``knowledgeIndexBuilding``: the installed help not indexed yet after a start);
:meth:`InjectionPatterns.notice` picks one in the request's language.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

FILE_NAME = "guardrails.json"
DEFAULT_LANGUAGE = "en-US"
# Node properties that carry free text an author (or an imported flow) wrote: names, descriptions, code, templates.
TEXT_PROPERTIES = ("name", "label", "info", "func", "initialize", "finalize", "template", "topic", "payload")
NAMED_LIMIT = 5  # nodes named in the sentence; the event's ``nodes`` lists them all (bounded below)
NODES_LIMIT = 50
# The other notices' sentence keys in guardrails.json.
NOTICE_KEYS = ("mcpServerUnavailable", "historyLeftOut", "knowledgeIndexBuilding", "changeNeedsAgent",
               "changeNeedsTools", "modelWithoutTools")


@dataclass(frozen=True)
class InjectionPatterns:
    """Every language's patterns as one expression, each language's notice sentence, and each language's other
    notice sentences by key (``notices[language][key]``)."""

    pattern: re.Pattern[str] | None
    sentences: dict[str, str]
    notices: dict[str, dict[str, str]] = field(default_factory=dict)

    def sentence(self, language: str) -> str:
        """The notice's sentence in ``language`` (else English)."""
        return self.sentences.get(language) or self.sentences.get(DEFAULT_LANGUAGE, "{nodes}")

    def notice(self, key: str, language: str, **values: str) -> str:
        """Notice sentence ``key`` (e.g. ``mcpServerUnavailable``) in ``language`` (else English) with its
        ``{placeholders}`` replaced by ``values``.

        Raises:
            KeyError: no shipped language has ``key``.
        """
        sentence = self.notices.get(language, {}).get(key) or self.notices[DEFAULT_LANGUAGE][key]
        for name, value in values.items():
            sentence = sentence.replace("{" + name + "}", value)
        return sentence


@lru_cache(maxsize=4)
def load_patterns(locales_dir: Path) -> InjectionPatterns:
    """Read every ``guardrails.json`` under ``locales_dir`` once.

    Raises:
        ValueError: a file is not JSON or holds a pattern that is not a regular expression (names the file).
    """
    patterns: list[str] = []
    sentences: dict[str, str] = {}
    notices: dict[str, dict[str, str]] = {}
    for path in sorted(locales_dir.glob(f"*/{FILE_NAME}")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for pattern in data.get("injectionPatterns", []):
                re.compile(pattern)
                patterns.append(pattern)
        except (ValueError, re.error) as err:
            raise ValueError(f"{path}: {err}") from None
        if data.get("possibleInjection"):
            sentences[path.parent.name] = data["possibleInjection"]
        notices[path.parent.name] = {key: text for key, text in data.items() if key in NOTICE_KEYS and text}
    joined = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None
    return InjectionPatterns(joined, sentences, notices)


def suspicious_nodes(nodes: list[dict[str, Any]] | None, patterns: InjectionPatterns) -> list[dict[str, str]]:
    """The nodes of ``nodes`` (a flow export) whose free text matches a pattern: ``[{id, type, name}]`` in flow
    order, at most :data:`NODES_LIMIT`."""
    if not nodes or patterns.pattern is None:
        return []
    found = []
    for node in nodes:
        if not isinstance(node, dict):
            continue
        texts = [node.get(key) for key in TEXT_PROPERTIES]
        if any(isinstance(text, str) and patterns.pattern.search(text) for text in texts):
            found.append({"id": str(node.get("id", "")), "type": str(node.get("type", "")),
                          "name": str(node.get("name") or node.get("label") or "")})
            if len(found) >= NODES_LIMIT:
                break
    return found


def notice_message(found: list[dict[str, str]], sentence: str) -> str:
    """The sentence with the first nodes named (``name`` (``type`` ``id``), or ``type`` ``id``)."""
    named = [f'"{n["name"]}" ({n["type"]} {n["id"]})' if n["name"] else f'{n["type"]} {n["id"]}'
             for n in found[:NAMED_LIMIT]]
    more = len(found) - len(named)
    return sentence.replace("{nodes}", ", ".join(named) + (f", +{more}" if more > 0 else ""))
