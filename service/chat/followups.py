"""Follow-up suggestions after an answer (issue 31, the chat habit of Copilot users): up to three next questions the
sidebar shows as buttons under the answer, one click asking them.

They are chosen by rules from what the turn did — the tools that ran, whether the user brought an error or debug
messages, whether a change was written — and worded from ``locales/<lang>/followups.json`` (English for a key a
language lacks); the rest is filled with the scenario's own quick-start questions not yet asked in the request. No
model call is made for them: they cost no tokens and no time to first token, and they are the same for the same
turn. In Ask mode nothing is suggested that only Agent mode could do (a change, a test run).

They travel on the stream's last event: ``done`` gets ``suggestions: [{"text", "kind"}]`` when an answer ended
normally (not stopped, not failed, not waiting for an approval or an answer); ``kind`` is the key of the rule
(``fixError``, ``testChange``, …) or ``scenario`` for a quick-start question.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE_NAME = "followups.json"
DEFAULT_LANGUAGE = "en-US"
LIMIT = 3  # suggestions shown under one answer
# Tools whose use makes a suggestion apt (service.nodered.tools, service.tools.knowledge_tools).
FLOW_READS = frozenset({"get_flow", "get_flows"})
NODE_READS = frozenset({"get_node_info"})
DOC_READS = frozenset({"search_node_docs", "list_node_types"})
RUNTIME_READS = frozenset({"get_debug_messages", "get_node_status"})
CHANGES = frozenset({"add_nodes", "update_node", "delete_nodes", "create_tab", "restore_flows"})
# Suggestions that ask for a change or a test run: only Agent (or Plan) mode can act on them.
ACTING = frozenset({"testChange", "addErrorHandling"})


@lru_cache(maxsize=4)
def load_sentences(locales_dir: Path) -> dict[str, dict[str, str]]:
    """Every language's follow-up sentences by key (``{"de": {"fixError": "…"}}``), read once.

    Raises:
        ValueError: a file is not a JSON object of strings (names the file).
    """
    sentences: dict[str, dict[str, str]] = {}
    for path in sorted(Path(locales_dir).glob(f"*/{FILE_NAME}")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not all(isinstance(v, str) and v for v in data.values()):
            raise ValueError(f"{path}: must be a JSON object of key → non-empty sentence")
        sentences[path.parent.name] = data
    return sentences


def kinds(tools: Iterable[str], *, brought_error: bool, selected_nodes: bool, deployed: bool = True) -> list[str]:
    """The rule keys that fit a turn, most apt first (duplicates removed).

    ``tools``: the names of the tools that ran (``ChatResult.tools``); ``brought_error``: the request carried a
    caught error or debug messages; ``selected_nodes``: nodes were selected; ``deployed``: a change is written
    through the Admin API (``apply: deploy``), not handed to the editor undeployed, so it can be tested now.
    """
    used = set(tools)
    found: list[str] = []
    if brought_error or used & RUNTIME_READS:
        found.append("fixError")
    if used & CHANGES:
        found += ["testChange", "whatChanged"] if deployed else ["whatChanged"]
    if used & FLOW_READS:
        found += ["checkFlow", "improveFlow", "addErrorHandling"]
    if used & NODE_READS or used & DOC_READS:
        found.append("exampleFlow")
    if selected_nodes and not used & NODE_READS:
        found.append("explainSelected")
    return list(dict.fromkeys(found))


def suggestions(found: Sequence[str], sentences: dict[str, dict[str, str]], language: str | None,
                quick_prompts: Sequence[str], asked: Iterable[str], *, may_act: bool) -> list[dict[str, str]]:
    """Up to :data:`LIMIT` items ``{text, kind}``: the rules' ``found`` keys worded in ``language`` (else English),
    then ``quick_prompts``; never one already ``asked`` (compared case- and space-insensitively), never an
    :data:`ACTING` one unless ``may_act``."""
    words = {**sentences.get(DEFAULT_LANGUAGE, {}), **sentences.get(language or DEFAULT_LANGUAGE, {})}
    seen = {_same(text) for text in asked}
    items: list[dict[str, str]] = []
    candidates = [(key, words.get(key)) for key in found if may_act or key not in ACTING]
    candidates += [("scenario", prompt) for prompt in quick_prompts]
    for kind, text in candidates:
        if not text or _same(text) in seen:
            continue
        seen.add(_same(text))
        items.append({"text": text, "kind": kind})
        if len(items) == LIMIT:
            break
    return items


def _same(text: str) -> str:
    return " ".join(text.casefold().split())


def suggest(result: Any, *, locales_dir: Path, scenarios: Any, message: str | None,
            history: Iterable[str] = (), mode: str | None = None, brought_error: bool = False,
            selected_nodes: bool = False, deployed: bool = True) -> None:
    """Set ``result.suggestions`` for a finished turn (``[]``: none), which ``done`` carries.

    ``result`` is the turn's :class:`~service.chat.context.ChatResult` (its ``answer``, ``tools``, ``errors``,
    ``status``, ``stopped``, ``scenario``, ``language``); ``scenarios`` the
    :class:`~service.chat.scenarios.ScenarioCatalog` (for the scenario's quick-start questions in the turn's
    language); ``history`` the user's earlier questions. A locale file that cannot be read is logged and nothing is
    suggested: a suggestion is never worth a failed answer.
    """
    if result.stopped or result.errors or result.status or not result.answer.strip():
        return
    try:
        sentences = load_sentences(locales_dir)
    except (OSError, ValueError):
        log.exception("follow-up suggestions left out")
        return
    catalog = scenarios.get(result.language)
    scenario = catalog.data.scenarios.get(result.scenario or catalog.data.defaultScenario)
    found = kinds(result.tools, brought_error=brought_error, selected_nodes=selected_nodes, deployed=deployed)
    result.suggestions = suggestions(found, sentences, catalog.data.language, scenario.prompts if scenario else [],
                                     [*history, message or ""], may_act=mode != "ask")
