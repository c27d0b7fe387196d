"""The eval's task set: ``tasks.yaml`` (templates × instances × languages) expanded into :class:`Task` objects.

A count task's expected number is computed from the deployed workspace (:func:`tests.eval.workspace.count_of`),
so it is right for whatever example flows the installed Node-RED ships.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.eval.workspace import count_of

TASKS_FILE = Path(__file__).with_name("tasks.yaml")


@dataclass(frozen=True)
class Task:
    """One question and what its answer is graded on.

    Attributes:
        id: ``<kind>-<instance number>-<language key>``, e.g. ``explain-0-de``.
        kind: the template it came from (``explain``, ``counts``, ...).
        language: the key in ``tasks.yaml`` (``en``, ``de``, ``ja``, ``zh-CN``, ``es``); ``service_language`` the
            code sent to the service (``en-US``, ``es-ES``, ...).
        question: what is asked; ``reference``: the scripted model's right answer (never shown to a real model).
        require / forbid: facts that must / must not be in the answer (case-insensitive).
        run: function-node tests ``[{"in": payload, "out": expected payload}]``; ``evaluate``: JSONata tests
            ``[{"in": message, "out": expected result}]`` (the whole ``msg``, as a change node evaluates an
            expression; ``null`` for undefined); ``change``: ``{"type", "name"}`` an approved action must add, with
            ``flow_id`` the tab it goes to (the scripted model's tool call).
    """

    id: str
    kind: str
    language: str
    service_language: str
    question: str
    reference: str
    require: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    run: tuple[dict[str, Any], ...] = ()
    evaluate: tuple[dict[str, Any], ...] = ()
    change: dict[str, str] = field(default_factory=dict)


def _fill(template: str, values: dict[str, Any], language: str) -> str:
    local = {k: (v.get(language, v.get("en")) if isinstance(v, dict) else v) for k, v in values.items()}
    return template.format(**local)


def load_tasks(flows: list[dict[str, Any]], path: Path = TASKS_FILE) -> list[Task]:
    """Every task of ``path`` for the workspace ``flows`` (its tabs name the change's target; counts come from it).

    Raises KeyError when a template names a field an instance lacks, or a change names a tab ``flows`` lacks.
    """
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    secrets = tuple(data["secrets"])
    tabs = {node.get("label"): node["id"] for node in flows if node.get("type") == "tab"}
    tasks = []
    for kind, instances in data["instances"].items():
        templates = data["kinds"][kind]
        for number, instance in enumerate(instances):
            values = dict(instance)
            require = [str(f) for f in instance.get("require", [])]
            if kind == "counts":
                values["count"] = count_of(flows, instance["type"])
                require = [str(values["count"]), instance["type"]]
            if kind == "change":
                require = [instance["name"]]
            values["facts"] = ", ".join(require)
            for language, code in data["languages"].items():
                tasks.append(Task(
                    id=f"{kind}-{number}-{language}", kind=kind, language=language, service_language=code,
                    question=_fill(templates["question"][language], values, language),
                    reference=_fill(templates["answer"][language], values, language),
                    require=tuple(require), forbid=(*secrets, *map(str, instance.get("forbid", []))),
                    run=tuple(instance.get("run", [])), evaluate=tuple(instance.get("evaluate", [])),
                    change=({"type": instance["type"], "name": instance["name"], "flow_id": tabs[instance["tab"]]}
                            if kind == "change" else {})))
    return tasks
