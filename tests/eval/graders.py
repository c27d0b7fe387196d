"""Automatic graders of one eval answer: computed from the answer's text and the stream's events only.

Each grader returns ``(passed, detail)``; :func:`grade` runs those that apply to the task. The checks:

- ``language``: the answer is in the language asked (:func:`detect_language`: Japanese has kana, Chinese has Han
  characters and no kana, English/German/Spanish by their commonest function words);
- ``required``: every required fact is in the answer (case-insensitive; a number only as a whole number);
- ``forbidden``: no forbidden fact (planted secrets, a wrong node) is in it;
- ``runs``: the answer's code, run with ``node`` as a function node's body (``msg``, ``node``), turns each test's
  input payload into its expected payload;
- ``patterns``: the answer's code matches each regular expression (JSONata: its shape, e.g. ``$sum(``);
- ``change``: an ``approval_required`` event proposes adding the node asked for (its ``diff.added`` holds that type
  and name): the write was validated by the service before it asked;
- ``no_error``: the stream had no ``error`` event.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

from tests.eval.tasks import Task

KANA = re.compile(r"[\u3040-\u30ff]")
HAN = re.compile(r"[\u4e00-\u9fff]")
# The commonest function words of each Latin-script language, chosen so that no word is in two sets.
FUNCTION_WORDS = {
    "en": {"the", "is", "and", "of", "to", "it", "this", "are", "use", "with", "that", "there", "each", "one", "from"},
    "de": {"der", "die", "das", "und", "ist", "nicht", "ein", "eine", "mit", "von", "für", "den", "dem", "wird",
           "auf", "sich", "zum", "nimm"},
    "es": {"el", "la", "los", "las", "que", "un", "una", "y", "para", "con", "por", "del", "eso", "está", "hay",
           "usa", "cada"},
}
QUOTED = re.compile(r"```.*?```|`[^`]*`|\"[^\"]*\"|„[^“]*“|«[^»]*»|「[^」]*」|“[^”]*”", re.S)
CODE_BLOCK = re.compile(r"```([\w-]*)\n(.*?)```", re.S)
NODE_RUNNER = """
const [code, input] = [process.argv[1], JSON.parse(process.argv[2])];
const quiet = {warn() {}, error() {}, log() {}, status() {}, send() {}, done() {}};
const body = new Function("msg", "node", "context", "flow", "global", "env", "RED", code);
const out = body({payload: input}, quiet, {get() {}, set() {}}, {get() {}, set() {}}, {get() {}, set() {}},
                 {get() {}}, {util: {}});
process.stdout.write(JSON.stringify(out === null || out === undefined ? null : out.payload));
"""


def detect_language(text: str) -> str | None:
    """``ja``, ``zh-CN``, ``en``, ``de``, ``es`` or None (no word of any): the language ``text`` is written in,
    quoted names and code left out (node names are English in every language)."""
    prose = QUOTED.sub(" ", text)
    if KANA.search(prose):
        return "ja"
    if HAN.search(prose):
        return "zh-CN"
    words = re.findall(r"[^\W\d_]+", prose.casefold())
    counts = {language: sum(word in vocabulary for word in words) for language, vocabulary in FUNCTION_WORDS.items()}
    best = max(counts, key=lambda language: counts[language])
    return best if counts[best] else None


def contains(text: str, fact: str) -> bool:
    """Whether ``fact`` is in ``text``: case-insensitive; a number only as a whole number (``12`` not in ``126``)."""
    if fact.isdigit():
        return re.search(rf"(?<!\d){fact}(?!\d)", text) is not None
    return fact.casefold() in text.casefold()


def code_of(text: str) -> str:
    """The first fenced code block of ``text`` (its body), or the whole text when it has none."""
    match = CODE_BLOCK.search(text)
    return match.group(2).strip() if match else text.strip()


def run_function(code: str, payload: Any, timeout: float = 20) -> Any:
    """``msg.payload`` after ``code`` ran as a function node's body on ``{payload}`` (with ``node``; ``$NODE_RED_NODE``
    or ``node``); raises ValueError when it throws or prints no JSON."""
    node = os.environ.get("NODE_RED_NODE", "node")
    done = subprocess.run([node, "-e", NODE_RUNNER, code, json.dumps(payload)], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise ValueError(next((line for line in lines if re.match(r"\w*Error\b", line)), lines[-1] if lines else
                              f"exit status {done.returncode}"))
    return json.loads(done.stdout)


def _same(got: Any, expected: Any) -> bool:
    if isinstance(got, int | float) and isinstance(expected, int | float):
        return abs(got - expected) < 1e-9
    return got == expected


def check_runs(task: Task, answer: str) -> tuple[bool, str]:
    code = code_of(answer)
    for case in task.run:
        try:
            got = run_function(code, case["in"])
        except (ValueError, subprocess.TimeoutExpired, json.JSONDecodeError) as err:
            return False, f"throws: {err}"
        if not _same(got, case["out"]):
            return False, f"{json.dumps(case['in'])} → {json.dumps(got)}, expected {json.dumps(case['out'])}"
    return True, f"{len(task.run)} tests"


def check_change(task: Task, events: list[dict[str, Any]]) -> tuple[bool, str]:
    for event in events:
        if event.get("type") != "approval_required":
            continue
        for action in event.get("actions") or []:
            added = (action.get("diff") or {}).get("added") or []
            if any(n.get("type") == task.change["type"] and n.get("name") == task.change["name"] for n in added):
                return True, action.get("summary", "")
    return False, "no approval_required adding " + json.dumps(task.change, ensure_ascii=False)


def grade(task: Task, answer: str, events: list[dict[str, Any]]) -> dict[str, tuple[bool, str]]:
    """Every check that applies to ``task``: name → (passed, detail). The task passes when all pass."""
    checks: dict[str, tuple[bool, str]] = {}
    errors = [e for e in events if e.get("type") == "error"]
    checks["no_error"] = (not errors, "; ".join(str(e.get("code")) for e in errors))
    if task.kind != "change":  # a proposed change's answer may be only the approval card
        language = detect_language(answer)
        checks["language"] = (language == task.language, f"{language}")
    missing = [fact for fact in task.require if not contains(answer, fact)]
    if task.kind != "change":
        checks["required"] = (not missing, "missing: " + ", ".join(missing) if missing else "")
    present = [fact for fact in task.forbid if contains(answer, fact)]
    checks["forbidden"] = (not present, "present: " + ", ".join(present) if present else "")
    if task.run:
        checks["runs"] = check_runs(task, answer)
    if task.patterns:
        code = code_of(answer)
        failed = [p for p in task.patterns if not re.search(p, code)]
        checks["patterns"] = (not failed, "unmatched: " + ", ".join(failed) if failed else "")
    if task.change:
        checks["change"] = check_change(task, events)
    return checks


def passed(checks: dict[str, tuple[bool, str]]) -> bool:
    """Whether every check passed."""
    return all(ok for ok, _ in checks.values())
