"""Automatic graders of one eval answer: computed from the answer's text and the stream's events only.

Each grader returns ``(passed, detail)``; :func:`grade` runs those that apply to the task. The checks:

- ``language``: the answer is in the language asked (:func:`detect_language`: Japanese has kana, Chinese has Han
  characters and no kana, English/German/Spanish by their commonest function words);
- ``required``: every required fact is in the answer (case-insensitive; a number only as a whole number);
- ``forbidden``: no forbidden fact (planted secrets, a wrong node) is in it;
- ``runs``: the answer's code, run with ``node`` as a function node's body (``msg``, ``node``), turns each test's
  input payload into its expected payload;
- ``evaluates``: the answer's JSONata expression, evaluated by Node-RED's own JSONata (``@node-red/util``'s
  ``prepareJSONataExpression`` and ``evaluateJSONataExpression``, as a change node sets a property to one) against
  each test's input message, gives its expected result;
- ``change``: an ``approval_required`` event proposes adding the node asked for (its ``diff.added`` holds that type
  and name): the write was validated by the service before it asked;
- ``no_error``: the stream had no ``error`` event.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from typing import Any

from tests.eval.tasks import Task
from tests.support.nodered import NODERED_HOME

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


# Node-RED's JSONata, found from the node-red package under test (NODE_RED_HOME) as its runtime finds it: the same
# version and the same extra functions ($env, $moment, $clone, ...) as a change node's. Reads
# [{"msg": message}, ...] as JSON on stdin, writes [{"value": result} or {"error": message}, ...]; a result that is
# undefined (nothing matched) is written as null.
JSONATA_RUNNER = """
const {createRequire} = require("module");
const {util} = createRequire(process.argv[1] + "/package.json")("@node-red/util");
const [expression, cases] = [process.argv[2], JSON.parse(require("fs").readFileSync(0, "utf8"))];
let prepared;
try { prepared = util.prepareJSONataExpression(expression, null); } catch (err) {
    process.stdout.write(JSON.stringify(cases.map(() => ({error: err.message})))); process.exit(0);
}
Promise.all(cases.map(({msg}) => new Promise(resolve => util.evaluateJSONataExpression(prepared, msg,
    (err, value) => resolve(err ? {error: err.message} : {value: value === undefined ? null : value})))))
    .then(results => process.stdout.write(JSON.stringify(results)));
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
    return json.loads(_ran(code, json.dumps(payload), timeout))


@functools.lru_cache(maxsize=256)  # as _evaluated: one answer's code on one payload runs node once
def _ran(code: str, payload: str, timeout: float) -> str:
    node = os.environ.get("NODE_RED_NODE", "node")
    done = subprocess.run([node, "-e", NODE_RUNNER, code, payload], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise ValueError(next((line for line in lines if re.match(r"\w*Error\b", line)), lines[-1] if lines else
                              f"exit status {done.returncode}"))
    return done.stdout


def evaluate_jsonata(expression: str, messages: list[dict[str, Any]], timeout: float = 20) -> list[dict[str, Any]]:
    """``expression`` evaluated by the Node-RED under test's JSONata against each of ``messages`` (the whole
    ``msg``, as a change node evaluates it), in one ``node`` process: per message ``{"value": result}`` (``None``
    when undefined) or ``{"error": text}`` (a syntax error or a failed evaluation). ``$NODE_RED_HOME`` (default
    ``.nodered/node_modules/node-red``) and ``$NODE_RED_NODE`` choose the Node-RED and the ``node``.

    Raises:
        ValueError: ``node`` failed or printed no JSON (Node-RED not installed); subprocess.TimeoutExpired.
    """
    results: list[dict[str, Any]] = json.loads(_evaluated(expression, json.dumps([{"msg": m} for m in messages]),
                                                          timeout))
    return results


# One answer is graded against several tasks (tests/test_eval_graders.py grades each answer against every task of
# its kind): the same expression on the same messages runs node once.
@functools.lru_cache(maxsize=256)
def _evaluated(expression: str, cases: str, timeout: float) -> str:
    node = os.environ.get("NODE_RED_NODE", "node")
    done = subprocess.run([node, "-e", JSONATA_RUNNER, str(NODERED_HOME), expression], input=cases,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not done.stdout:
        raise ValueError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                         f"exit status {done.returncode}")
    return done.stdout


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


def check_evaluates(task: Task, answer: str) -> tuple[bool, str]:
    expression = code_of(answer)
    try:
        results = evaluate_jsonata(expression, [case["in"] for case in task.evaluate])
    except (ValueError, subprocess.TimeoutExpired, json.JSONDecodeError) as err:
        return False, f"not evaluated: {err}"
    for case, result in zip(task.evaluate, results, strict=True):
        if "error" in result:
            return False, f"error: {result['error']}"
        if not _same(result["value"], case["out"]):
            return False, (f"{json.dumps(case['in'])} → {json.dumps(result['value'])}, expected "
                           f"{json.dumps(case['out'])}")
    return True, f"{len(task.evaluate)} tests"


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
    if task.evaluate:
        checks["evaluates"] = check_evaluates(task, answer)
    if task.change:
        checks["change"] = check_change(task, events)
    return checks


def passed(checks: dict[str, tuple[bool, str]]) -> bool:
    """Whether every check passed."""
    return all(ok for ok, _ in checks.values())
