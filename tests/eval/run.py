"""``make eval``: run the task set through the real service and print a score table per task kind.

    python -m tests.eval.run                     # offline, the scripted model (proves the harness end to end)
    python -m tests.eval.run --provider env      # the provider the environment configures (AI_PROVIDER, keys)
    python -m tests.eval.run --kind counts --language de
    python -m tests.eval.run --compare eval-results/a.json eval-results/b.json

Writes ``eval-results/eval-<model>-<UTC time>.json`` (per task: checks, answer, usage, time to first token; the
summary table) and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from tests.eval.harness import EvalStack, run_tasks, summary
from tests.eval.tasks import TASKS_FILE, load_tasks
from tests.support.nodered import REPO

RESULTS = REPO / "eval-results"
COLUMNS = ("tasks", "passed", "score", "input_tokens", "output_tokens", "cost", "ttft_ms")


def table(model: str, rows: dict[str, dict[str, Any]]) -> str:
    """The summary as a fixed-width text table, one row per task kind and ``all`` last."""
    lines = [f"model: {model}", f"{'kind':<12}" + "".join(f"{c:>14}" for c in COLUMNS)]
    for kind, row in rows.items():
        cells = ["-" if row[c] is None else f"{row[c]:.0%}" if c == "score" else f"{row[c]:.4f}" if c == "cost"
                 else str(row[c]) for c in COLUMNS]
        lines.append(f"{kind:<12}" + "".join(f"{cell:>14}" for cell in cells))
    return "\n".join(lines)


def compare(paths: list[Path]) -> str:
    """Runs side by side: per task kind, each run's score, tokens, cost and time to first token."""
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    kinds = list(dict.fromkeys(kind for run in runs for kind in run["summary"]))
    width = max(18, *(len(run["model"]) + 2 for run in runs))
    lines = [f"{'kind':<12}" + "".join(f"{run['model']:>{width}}" for run in runs)]
    for kind in kinds:
        cells = []
        for run in runs:
            row = run["summary"].get(kind)
            cells.append("-" if row is None else f"{row['score']:.0%} {row['input_tokens'] + row['output_tokens']}t "
                         f"${row['cost']:.3f} {row['ttft_ms'] if row['ttft_ms'] is not None else '-'}ms")
        lines.append(f"{kind:<12}" + "".join(f"{cell:>{width}}" for cell in cells))
    return "\n".join(lines)


async def evaluate(real: bool, kind: str | None, language: str | None) -> dict[str, Any]:
    secrets = yaml.safe_load(TASKS_FILE.read_text(encoding="utf-8"))["secrets"]
    with tempfile.TemporaryDirectory(prefix="eval-") as workdir:
        stack = EvalStack(Path(workdir), secrets, real=real).start()
        try:
            tasks = [t for t in load_tasks(stack.flows) if kind in (None, t.kind) and language in (None, t.language)]
            outcomes = await run_tasks(stack, tasks)
        finally:
            stack.stop()
    return {"model": stack.model_name, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "summary": summary(outcomes), "tasks": [o.as_json() for o in outcomes]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.eval.run", description=__doc__.split("\n")[0])
    parser.add_argument("--provider", choices=("scripted", "env"), default="scripted",
                        help="scripted: the offline scripted model; env: the provider AI_PROVIDER etc. configure")
    parser.add_argument("--kind", help="only tasks of this kind")
    parser.add_argument("--language", help="only tasks in this language (en, de, ja, zh-CN, es)")
    parser.add_argument("--compare", nargs="+", type=Path, metavar="RUN.json", help="print runs side by side")
    args = parser.parse_args(argv)
    if args.compare:
        print(compare(args.compare))
        return 0
    result = asyncio.run(evaluate(args.provider == "env", args.kind, args.language))
    RESULTS.mkdir(exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", result["model"])
    path = RESULTS / f"eval-{name}-{result['started'].replace(':', '')}.json"
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    print(table(result["model"], result["summary"]))
    failed = [t for t in result["tasks"] if not t["passed"]]
    for task in failed[:20]:
        reasons = "; ".join(f"{k}: {c['detail']}" for k, c in task["checks"].items() if not c["ok"])
        print(f"  failed {task['id']}: {reasons}")
    print(f"written: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
