"""The proposal in a model's answer: the fenced code blocks (CommonMark fences of three or more backticks) the
assist prompts ask for, read into the ``proposal`` event of contracts20. Pure functions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pydantic_core

from service.errors import ServiceError

FENCE = re.compile(r"^[ \t]*(`{3,})[ \t]*([^\n`]*)\n(.*?)^[ \t]*\1`*[ \t]*$", re.S | re.M)
SCRIPT_LANGUAGES = frozenset({"", "js", "javascript", "node", "nodejs", "mjs", "ecmascript"})
JSON_INDENT = 4  # as Node-RED's JSON editor formats (RED.editor.editJSON: JSON.stringify(value, null, 4))


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string's words (lower case) and its text."""

    words: tuple[str, ...]
    text: str

    @property
    def language(self) -> str:
        return self.words[0] if self.words else ""

    @property
    def label(self) -> str:
        """Letters of the info string: ``javascript on-start`` → ``javascriptonstart``."""
        return re.sub(r"[^a-z]", "", "".join(self.words))


def code_blocks(answer: str) -> list[Block]:
    """The fenced blocks of ``answer`` in order; a block the answer never closed (a cut answer) is not one."""
    return [Block(tuple(match.group(2).lower().split()), match.group(3).rstrip("\n"))
            for match in FENCE.finditer(answer)]


def _no_proposal(kind: str) -> ServiceError:
    return ServiceError("no_proposal", status=422, params={"kind": kind})


def function_proposal(answer: str, current_on_message: str = "") -> dict[str, Any]:
    """``{"onMessage", "onStart"?, "onStop"?}`` from the script blocks of ``answer``: a block labelled
    ``on-start`` / ``on-stop`` is that part, the first other one On Message. Only On Start or On Stop proposed:
    On Message stays ``current_on_message``.

    Raises:
        ServiceError: ``no_proposal`` when the answer has no script block.
    """
    code: dict[str, str] = {}
    for block in code_blocks(answer):
        label = block.label
        if block.language not in SCRIPT_LANGUAGES and "on" not in label:
            continue
        part = "onStart" if label.endswith("start") else "onStop" if label.endswith("stop") else "onMessage"
        code.setdefault(part, block.text)
    if not code:
        raise _no_proposal("function")
    code.setdefault("onMessage", current_on_message)
    return {"onMessage": code["onMessage"], **{part: code[part] for part in ("onStart", "onStop") if part in code}}


def jsonata_proposal(answer: str) -> str:
    """The expression of the ```jsonata block of ``answer`` (else of its first unlabelled block), trimmed.

    Raises:
        ServiceError: ``no_proposal`` when there is none or it is empty.
    """
    blocks = code_blocks(answer)
    chosen = next((b for b in blocks if b.language == "jsonata"), None) or \
        next((b for b in blocks if b.language in ("", "text")), None)
    if chosen is None or not chosen.text.strip():
        raise _no_proposal("jsonata")
    return chosen.text.strip()


def json_proposal(answer: str) -> tuple[Any, str]:
    """The value of the ```json block of ``answer`` (else of its first unlabelled block) and its text as Node-RED's
    JSON editor formats it.

    Raises:
        ServiceError: ``no_proposal`` when there is no such block; ``invalid_json`` (key ``invalid_json.proposal``,
            naming the parser's complaint) when it is not strict JSON (NaN and Infinity are not JSON either).
    """
    blocks = code_blocks(answer)
    chosen = next((b for b in blocks if b.language in ("json", "json5", "jsonc")), None) or \
        next((b for b in blocks if b.language == ""), None)
    if chosen is None or not chosen.text.strip():
        raise _no_proposal("json")
    try:
        value = pydantic_core.from_json(chosen.text, allow_inf_nan=False)
    except ValueError as err:
        raise ServiceError("invalid_json", status=422, key="invalid_json.proposal",
                           params={"detail": str(err)[:200]}) from None
    return value, json.dumps(value, ensure_ascii=False, indent=JSON_INDENT)


def proposal_event(kind: str, answer: str, current_on_message: str = "",
                   samples: list[Any] | None = None) -> dict[str, Any]:
    """The ``proposal`` event for ``kind`` read from the model's ``answer`` (contracts20); ``samples`` (function)
    are the node's recent input messages, redacted.

    Raises:
        ServiceError: ``no_proposal`` or ``invalid_json`` as the readers above.
    """
    if kind == "function":
        return {"type": "proposal", "kind": kind, "code": function_proposal(answer, current_on_message),
                "samples": list(samples or [])}
    if kind == "jsonata":
        return {"type": "proposal", "kind": kind, "expression": jsonata_proposal(answer)}
    value, text = json_proposal(answer)
    return {"type": "proposal", "kind": kind, "value": value, "text": text}
