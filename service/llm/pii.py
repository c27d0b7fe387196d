"""PII guardrail: e-mail addresses, phone numbers, IBANs, credit-card numbers and IP addresses are masked before
text reaches a model (``AI_SIDEBAR_PII``: which types, default all; ``off``: none).

One set of detectors serves every path: :func:`mask_messages` masks a prompt as the pipeline built it (system
prompt, history, the user's message, the flow and tool results it carries) before any model call of the direct,
keyword and plain-chat paths and before the agent starts; :func:`pii_middleware` hands the same detectors to
LangChain's ``PIIMiddleware`` so that results of the agent's own tool calls are masked before the next model call.
E-mail, credit-card (Luhn-checked) and IP detection are LangChain's own (``langchain.agents.middleware.pii``);
phone numbers and IBANs (ISO 13616, mod-97 checked) are detected here. Matches become ``[REDACTED_<TYPE>]``.

IP addresses inside node configuration (what get_flow, get_node_info and get_settings read, and the configuration
the runtime evidence adds of the nodes it names) are configuration, not personal data, and are kept: an MQTT node
stuck on "connecting" is explained by its broker's address. In payloads, history and the user's own text they are
masked as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import PIIMiddleware
from langchain.agents.middleware.pii import PIIMatch, detect_credit_card, detect_email, detect_ip
from langchain_core.messages import BaseMessage

from service.nodered.named_nodes import configuration_spans
from service.settings import PII_TYPES as PII_TYPES
from service.settings import parse_types as parse_types

Detector = Callable[[str], list[PIIMatch]]

# Checked in this order: an IBAN or a card number would otherwise be read as a phone number, an IP address too.

_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
# A phone number starts with a country code (+49), an area code in brackets ((030)) or a trunk prefix (0...), and
# has 8 to 15 digits (ITU-T E.164), in groups that separators may part: dates (2024-01-15), versions, times, ids
# and timestamps do not start that way. A group after a space never starts with 0 or +: that is the next number.
# The character before the first one is checked after the first one is read ("+" then "not after a word
# character"), so that the regular expression starts with a literal: the engine then skips to the next "+", "(" or
# "0" instead of trying its look-behind at every position of the text (about 2 ms per 10 KB before).
_NOT_AFTER = r"[\w+\-./:]"
_PHONE = re.compile(rf"(?:\+(?<!{_NOT_AFTER}\+)\d{{1,3}}|\((?<!{_NOT_AFTER}\()0?\d{{1,4}}\)"
                    rf"|0(?<!{_NOT_AFTER}0)\d{{1,4}})"
                    r"(?:(?:[.\-/]|\ (?=[1-9(]))?\(?\d{1,5}\)?){1,6}(?![\w])")
_PHONE_DIGITS = (8, 15)
# What the regular expression finds is then refused (google/libphonenumber's PhoneNumberMatcher decides the same way:
# a candidate that reads as something else is skipped before the number is parsed):
# - a date: day, month and year parted by one separator used twice (``03/10/2011``: libphonenumber's
#   SLASH_SEPARATED_DATES; the dotted and dashed forms too, ``01.12.2024`` being how German writes a date);
# - a national number whose subscriber part starts with 0 (``010.004.95``): in the numbering plans with a trunk
#   prefix 0 (ITU-T E.164 national plans: Germany, France, the UK, ...), a 0 after the area code would be read as a
#   new trunk prefix, so the number after ``0<area>`` or ``(<area>)`` never starts with one. Versions, codes and
#   amounts written with leading zeros do.
_DATE = re.compile(r"(?:[0-3]?\d([./\-])[01]?\d|[01]?\d([./\-])[0-3]?\d)(?:\1|\2)(?:[12]\d)?\d{2}")
_DIGIT_RUN = re.compile(r"\d+")


def _reads_as_phone(candidate: str) -> bool:
    """Whether a candidate of :data:`_PHONE` is a phone number: 8 to 15 digits, no date, and in national form no
    subscriber part starting with 0 (see above)."""
    low, high = _PHONE_DIGITS
    runs = _DIGIT_RUN.findall(candidate)
    if not low <= sum(map(len, runs)) <= high or _DATE.fullmatch(candidate):
        return False
    return candidate.startswith("+") or len(runs) < 2 or not runs[1].startswith("0")


def _iban_valid(candidate: str) -> bool:
    """ISO 13616's check: the country code and check digits moved to the end, letters as 10..35, mod 97 is 1."""
    text = candidate.replace(" ", "")
    if not 15 <= len(text) <= 34:
        return False
    moved = text[4:] + text[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


def detect_iban(content: str) -> list[PIIMatch]:
    """IBANs (with or without the spaces of the printed form) whose check digits hold."""
    return [PIIMatch(type="iban", value=m.group(), start=m.start(), end=m.end())
            for m in _IBAN.finditer(content) if _iban_valid(m.group())]


def detect_phone(content: str) -> list[PIIMatch]:
    """Phone numbers in international (``+49 30 1234567``) or national (``030 1234567``, ``(030) 123-4567``)
    form."""
    return [PIIMatch(type="phone", value=m.group(), start=m.start(), end=m.end())
            for m in _PHONE.finditer(content) if _reads_as_phone(m.group())]


# ASCII whitespace: no e-mail address or IPv4 address holds one (their patterns' characters are letters, digits and
# ``._%+-@``), and a word boundary (``\b``) next to it is one at either end of a run of text without it.
_GAPS = frozenset(" \t\n\r\f\v")
_RUN_END = re.compile(r"[^ \t\n\r\f\v]*")


def _run_around(text: str, position: int) -> tuple[int, int]:
    """Start and end of the run of ``text`` without ASCII whitespace that holds ``position`` (a run is a word or
    a URL: the steps back are few)."""
    start = position
    while start and text[start - 1] not in _GAPS:
        start -= 1
    return start, _RUN_END.match(text, position).end()  # type: ignore[union-attr]  # * matches the empty run


def within_runs(detector: Detector, marker: re.Pattern[str]) -> Detector:
    """``detector`` (whose matches never hold ASCII whitespace) run only on the runs of text without whitespace that
    hold a ``marker`` (e.g. the ``@`` of an e-mail address), with the same matches as on the whole text. LangChain's
    e-mail and IP patterns begin with ``\b`` and try every position of a text (about 2.5 ms per 10 KB of prompt
    together); a prompt has few such runs."""
    def detect(content: str) -> list[PIIMatch]:
        found: list[PIIMatch] = []
        done = -1
        for hit in marker.finditer(content):
            if hit.start() < done:
                continue
            start, done = _run_around(content, hit.start())
            found += [PIIMatch(type=match["type"], value=match["value"], start=match["start"] + start,
                               end=match["end"] + start) for match in detector(content[start:done])]
        return found
    return detect


def outside_configuration(detector: Detector) -> Detector:
    """``detector`` without its matches inside node configuration (the blocks of
    :func:`service.nodered.named_nodes.configuration_block`: flows, nodes and settings as tools read them): an
    MQTT broker's or a database's address there is configuration the answer turns on, not personal data."""
    def detect(content: str) -> list[PIIMatch]:
        spans = configuration_spans(content)
        found = detector(content)
        if not spans:
            return found
        return [match for match in found if not any(start <= match["start"] < end for start, end in spans)]
    return detect


# IP addresses are masked outside node configuration only; the other types everywhere (a phone number or an
# e-mail address in a node's properties is as personal as one in a payload).
DETECTORS: dict[str, Detector] = {"iban": detect_iban, "credit_card": detect_credit_card,
                                  "email": within_runs(detect_email, re.compile("@")),
                                  "ip": outside_configuration(within_runs(detect_ip, re.compile(r"[0-9]\.[0-9]"))),
                                  "phone": detect_phone}


def detectors(types: Sequence[str]) -> list[tuple[str, Detector]]:
    """The detector of each type (see :data:`DETECTORS`)."""
    return [(kind, DETECTORS[kind]) for kind in types]


def mask(text: str, types: Sequence[str]) -> str:
    """``text`` with every match of ``types`` replaced by ``[REDACTED_<TYPE>]`` (types checked in order, each on
    what the previous ones left)."""
    if not types:
        return text
    return _mask_once(text, tuple(types))


# The system prompt of a scenario and language is the same text on every request: scanned once, not per request.
@functools.lru_cache(maxsize=512)
def _mask_once(text: str, types: tuple[str, ...]) -> str:
    for kind, detector in detectors(types):
        # From the end, so that the earlier matches' offsets still hold; PIIMiddleware's "redact" does the same.
        for match in sorted(detector(text), key=lambda found: found["start"], reverse=True):
            text = f"{text[:match['start']]}[REDACTED_{kind.upper()}]{text[match['end']:]}"
    return text


def _mask_content(content: Any, types: Sequence[str]) -> Any:
    if isinstance(content, str):
        return mask(content, types)
    if isinstance(content, list):
        return [mask(block, types) if isinstance(block, str)
                else {**block, "text": mask(block["text"], types)}
                if isinstance(block, dict) and isinstance(block.get("text"), str) else block
                for block in content]
    return content


def mask_messages(messages: list[BaseMessage], types: Sequence[str]) -> list[BaseMessage]:
    """Copies of ``messages`` whose text is masked (see :func:`mask`); the same list when ``types`` is empty."""
    if not types:
        return messages
    return [message.model_copy(update={"content": _mask_content(message.content, types)}) for message in messages]


def pii_middleware(types: Sequence[str]) -> list[PIIMiddleware]:
    """LangChain ``PIIMiddleware`` per type, with this module's detectors, masking the user's message and the
    agent's tool results before each model call."""
    return [PIIMiddleware(kind, strategy="redact", detector=detector, apply_to_input=True, apply_to_tool_results=True)
            for kind, detector in detectors(types)]
