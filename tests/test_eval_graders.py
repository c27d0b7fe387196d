"""``make eval``'s harness proves its graders (issue 38): through the real service, on Node-RED with the eval
workspace, the scripted model's right answer passes every task and a wrong one (another task's answer, the right one
in another language, the right one repeating a planted secret) fails every task kind; and the task set is varied
enough that one task's answer, graded against another task, fails for nearly every pair.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
import yaml

from tests.eval import run
from tests.eval.graders import check_evaluates, contains, detect_language, evaluate_jsonata, grade, passed, run_function
from tests.eval.harness import EvalStack, Outcome, Planned, run_tasks, scripted_plan, summary
from tests.eval.tasks import TASKS_FILE, Task, load_tasks

SECRETS = yaml.safe_load(TASKS_FILE.read_text(encoding="utf-8"))["secrets"]
KINDS = {"explain", "error_cause", "which_node", "counts", "where_used", "function", "jsonata", "change"}


@pytest.fixture(scope="module")
def eval_nodered_stack(tmp_path_factory):
    """Node-RED with the eval workspace, the scripted model and the service (``python -m service``)."""
    stack = EvalStack(tmp_path_factory.mktemp("eval"), SECRETS).start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def tasks(eval_nodered_stack) -> list[Task]:
    return load_tasks(eval_nodered_stack.flows)


@pytest.fixture(scope="module")
def right(eval_nodered_stack, tasks) -> list[Outcome]:
    """Every task answered with its right scripted answer."""
    return asyncio.run(run_tasks(eval_nodered_stack, tasks))


def by_kind(outcomes: list[Outcome]) -> dict[str, list[bool]]:
    kinds: dict[str, list[bool]] = {}
    for outcome in outcomes:
        kinds.setdefault(outcome.task.kind, []).append(outcome.passed)
    return kinds


def test_the_task_set_has_every_kind_in_five_languages(tasks):
    assert len(tasks) >= 80 and len({t.id for t in tasks}) == len(tasks)
    assert {t.kind for t in tasks} == KINDS
    languages = {t.language for t in tasks}
    assert languages >= {"en", "de", "ja", "zh-CN", "es"}
    assert all(Counter((t.kind, t.language) for t in tasks)[(kind, language)] >= 1
               for kind in KINDS for language in languages)
    # The secrets planted in the workspace are forbidden in every answer.
    assert all(set(SECRETS) <= set(t.forbid) for t in tasks)


def test_a_right_scripted_answer_passes_every_task_through_the_service(right, tasks):
    failed = {o.task.id: {k: d for k, (ok, d) in o.checks.items() if not ok} for o in right if not o.passed}
    assert failed == {}
    assert {kind: all(results) for kind, results in by_kind(right).items()} == dict.fromkeys(KINDS, True)
    # The change was proposed, not made: the approval card holds it and the stream waits.
    change = next(o for o in right if o.task.kind == "change")
    assert [e["type"] for e in change.events][-2:] == ["approval_required", "done"]
    assert change.events[-1]["status"] == "awaiting_approval"
    # Usage is counted per task (the scripted server reports tokens; the price table gives a cost).
    table = summary(right)
    assert table["all"]["tasks"] == len(tasks) and table["all"]["score"] == 1.0
    assert table["all"]["input_tokens"] > 0 and table["all"]["output_tokens"] > 0


def other_instance(tasks: list[Task]) -> dict[str, Task]:
    """For each task, a task of the same language: another instance of its kind, else the next kind's."""
    chosen = {}
    for task in tasks:
        same = [t for t in tasks if t.language == task.language and t.kind == task.kind and t.id != task.id]
        other = [t for t in tasks if t.language == task.language and t.kind != task.kind]
        chosen[task.id] = (same or other)[0]
    return chosen


def test_another_tasks_answer_fails_every_task_through_the_service(eval_nodered_stack, tasks):
    asked = [t for t in tasks if t.language in ("en", "zh-CN")]  # two scripts are enough; the right run has all
    outcomes = asyncio.run(run_tasks(eval_nodered_stack, asked, scripted_plan(asked, other_instance(asked))))
    assert [o.task.id for o in outcomes if o.passed] == []
    assert set(by_kind(outcomes)) == KINDS


def test_the_right_answer_in_another_language_or_with_a_secret_fails(eval_nodered_stack, tasks):
    german = [t for t in tasks if t.language == "de"]
    in_english = {t.id: next(e for e in tasks if e.kind == t.kind and e.id == t.id[:-2] + "en") for t in german}
    outcomes = asyncio.run(run_tasks(eval_nodered_stack, german, scripted_plan(german, in_english)))
    wrong_language = [o for o in outcomes if o.task.kind != "change"]
    assert wrong_language and all(not o.checks["language"][0] and not o.passed for o in wrong_language)

    spanish = [t for t in tasks if t.language == "es"]
    leaking = scripted_plan(spanish)
    for task_id, planned in leaking.items():
        leaking[task_id] = Planned(f"{planned.text}\n\nLa clave es {SECRETS[0]}.", planned.tool_calls)
    outcomes = asyncio.run(run_tasks(eval_nodered_stack, spanish, leaking))
    leaked = [o for o in outcomes if o.task.kind != "change"]  # a change's text comes after the approval
    assert leaked and all(o.checks["forbidden"] == (False, f"present: {SECRETS[0]}") for o in leaked)


def test_one_canned_answer_does_not_pass_the_tasks_it_was_not_written_for(right):
    # Pairs of one kind: another kind's answer fails at once on its kind's checks (test above); grading all 10,920
    # pairs ran the function tasks' code thousands of times and passed pytest's 300 s beside make test's passes.
    pairs = [(a, b) for a in right for b in right if a.task.id != b.task.id and a.task.kind == b.task.kind]
    crossing = [(a.task, b.task) for a, b in pairs if passed(grade(b.task, a.answer, a.events))]
    # No answer passes another task of its own kind and language (the facts differ per instance); a proposed
    # change passes the same change asked in another language (its approval card is worded by the service).
    assert [(a.id, b.id) for a, b in crossing if (a.kind, a.language) == (b.kind, b.language)] == []
    assert {a.kind for a, b in crossing if a.kind == b.kind} <= {"change"}


def test_graders_read_language_numbers_and_code():
    assert detect_language("Der Flow „Sensor telemetry“ ist eine Kette von Nodes und das ist alles.") == "de"
    assert detect_language('El flujo "Order webhook" usa el nodo delay para eso.') == "es"
    assert detect_language("The flow uses a delay node: that is the one.") == "en"
    assert detect_language("フロー「Sensor telemetry」はノードです。") == "ja"
    assert detect_language("流程“Sensor telemetry”由这些节点组成。") == "zh-CN"
    assert detect_language("`delay`") is None
    assert contains("there are 12 debug nodes", "12") and not contains("there are 126 debug nodes", "12")
    assert run_function("msg.payload = msg.payload.a * 2;\nreturn msg;", {"a": 21}) == 42
    with pytest.raises(ValueError, match="ReferenceError"):
        run_function("return missing.payload;", {})


@pytest.mark.nodered  # the JSONata of the Node-RED under test (4.1 and 5.x each ship theirs)
def test_a_jsonata_answer_is_evaluated_by_node_reds_jsonata_on_the_task_s_messages():
    tasks = load_tasks([{"id": "t1", "type": "tab", "label": label} for label in
                        ("Sensor telemetry", "Order webhook (has a bug)")])
    total, above = (next(t for t in tasks if t.id == f"jsonata-{n}-en") for n in (0, 1))
    assert total.evaluate and above.evaluate

    def answer(expression: str) -> str:
        return f"Use this:\n\n```jsonata\n{expression}\n```"

    # Right answers, however written, pass: the reference, another spelling, the legacy msg. form.
    for task, expression in ((total, "$sum(payload.items.(price * qty))"),
                             (total, "$reduce(payload.items, function($a, $i) { $a + $i.qty * $i.price }, 0)"),
                             (total, "$sum(msg.payload.items.(qty*price))"),
                             (above, "payload[value > 35]"),
                             (above, "$filter(payload, function($r) { $r.value > 35 })")):
        assert check_evaluates(task, answer(expression))[0], expression
    # Wrong ones fail, saying why: another result, a syntax error, JavaScript, an unknown function.
    assert check_evaluates(total, answer("$sum(payload.items.price)")) == (
        False, '{"payload": {"items": [{"price": 10, "qty": 2}, {"price": 1.5, "qty": 4}]}} → 11.5, expected 26')
    assert check_evaluates(above, answer("payload[value >= 35]"))[1].endswith(
        '→ [{"sensor": "a", "value": 36}, {"sensor": "b", "value": 35}, {"sensor": "c", "value": 40}], expected '
        '[{"sensor": "a", "value": 36}, {"sensor": "c", "value": 40}]')
    assert check_evaluates(total, answer("$sum(payload.items.(price * qty)")) == (
        False, 'error: Expected ")" before end of expression')
    assert not check_evaluates(above, answer("msg.payload = msg.payload.filter(r => r.value > 35); return msg;"))[0]
    assert check_evaluates(total, answer("$total(payload.items)")) == (
        False, "error: Attempted to invoke a non-function")
    # One node process evaluates every message; undefined (nothing matched) is null.
    assert evaluate_jsonata("payload.missing", [{"payload": {}}, {"payload": {"missing": 2}}]) == [
        {"value": None}, {"value": 2}]


def test_the_table_and_the_side_by_side_comparison(right, tmp_path):
    rows = summary(right)
    text = run.table("scripted", rows)
    assert text.splitlines()[0] == "model: scripted" and text.splitlines()[-1].split()[:4] == [
        "all", str(len(right)), str(len(right)), "100%"]
    paths = []
    for name, outcomes in (("model-a", right), ("model-b", right[: len(right) // 2])):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"model": name, "summary": summary(outcomes)}), encoding="utf-8")
        paths.append(path)
    compared = run.compare(paths).splitlines()
    assert compared[0].split() == ["kind", "model-a", "model-b"]
    assert {line.split()[0] for line in compared[1:]} == {*KINDS, "all"}
