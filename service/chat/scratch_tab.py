"""A temporary test tab for a plan's check (issue 34): when a step's check needs an inject the flow does not have,
the plan says so (``check.test_inject``: the node the test message goes into, and its payload) and the service adds
the inject on a tab of its own for the round of checks, then removes it.

The test tab is marked as one (its env ``AI_SIDEBAR_TEST_TAB`` = true, :data:`service.nodered.write_plans.
TEST_TAB_VARIABLE`) and holds, per such check, an inject wired to a ``link out``; a ``link in`` beside the node under
test (on that node's tab, wired to it) receives the message. The node under test itself is not changed (a wire
belongs to the node it leaves), so once the round is over and the link in and the test tab are removed, every tab is
byte-identical to before. Adding and removing are deploys of the plan's approved test, each audited as decided by
``policy`` with the plan's test message (the user approved the plan, with its test inject shown on the plan card).
Removal runs whatever the round's outcome, also when the run is stopped (``finally``).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from service.nodered.client import NodeRedError
from service.nodered.tooling import ToolContext
from service.nodered.write_plans import TEST_TAB_VARIABLE

ADD_TEST_TAB = "add_test_tab"  # the audited tool names of the two deploys
REMOVE_TEST_TAB = "remove_test_tab"
LINK_X = 60  # how far left of the node under test its link in is drawn, in editor pixels


def test_nodes(run_id: str, checks: list[dict[str, Any]], flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes a round adds for ``checks`` with a ``test_inject`` (``{to, payload, payloadType}``; ``to``: the id
    or name of the deployed node the message goes into): the test tab, and per check an inject, a link out and, on
    the target's tab, a link in wired to the target. ``[]`` when no check needs one, or when a target is not one
    deployed node (the check then fails as missing: see :func:`checks_with_injects`)."""
    wanted = [(i, c["test_inject"]) for i, c in enumerate(checks) if isinstance(c.get("test_inject"), dict)]
    if not wanted:
        return []
    tab_id = f"ai-test-{run_id[:12]}"
    nodes: list[dict[str, Any]] = [{"id": tab_id, "type": "tab", "label": f"AI test {run_id[:8]}", "disabled": False,
                                    "info": "Added for the assistant's check; removed when the check is over.",
                                    "env": [{"name": TEST_TAB_VARIABLE, "value": "true", "type": "bool"}]}]
    for index, inject in wanted:
        target = _one(flows, str(inject.get("to") or ""))
        if target is None:
            continue
        ids = {kind: f"{tab_id}-{kind}-{index}" for kind in ("inject", "out", "in")}
        nodes += [
            {"id": ids["inject"], "type": "inject", "z": tab_id, "name": f"test {index + 1}",
             "props": [{"p": "payload"}], "payload": _text(inject.get("payload")),
             "payloadType": inject.get("payloadType") or "str", "repeat": "", "once": False, "onceDelay": 0.1,
             "topic": "", "x": 140, "y": 60 + 60 * index, "wires": [[ids["out"]]]},
            {"id": ids["out"], "type": "link out", "z": tab_id, "name": "", "mode": "link", "links": [ids["in"]],
             "x": 320, "y": 60 + 60 * index, "wires": []},
            {"id": ids["in"], "type": "link in", "z": target.get("z"), "name": f"AI test {index + 1}",
             "links": [ids["out"]], "x": max(40, int(target.get("x") or 100) - LINK_X),
             "y": int(target.get("y") or 60) + 40, "wires": [[target["id"]]]}]
    return nodes if len(nodes) > 1 else []


def checks_with_injects(checks: list[dict[str, Any]], added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``checks`` with each ``test_inject`` check's ``inject`` set to the id of the inject added for it (a check
    whose target was not found keeps its ``to`` as ``inject``: it is then reported missing)."""
    by_id = {n["id"] for n in added}
    tab = next((n["id"] for n in added if n["type"] == "tab"), "")
    shown = []
    for index, check in enumerate(checks):
        if isinstance(check.get("test_inject"), dict):
            inject_id = f"{tab}-inject-{index}"
            check = {**check, "inject": inject_id if inject_id in by_id else str(check["test_inject"].get("to"))}
        shown.append(check)
    return shown


@contextlib.asynccontextmanager
async def scratch_tab(run_id: str, checks: list[dict[str, Any]], context: ToolContext,
                      record: Callable[[dict[str, Any]], Awaitable[None]]) -> AsyncIterator[list[dict[str, Any]]]:
    """Deploys the round's test nodes (:func:`test_nodes`) for the body, yielding the checks to run
    (:func:`checks_with_injects`), and removes them afterwards. ``record(action)`` audits each deploy before it
    happens (``{tool, args, summary}``).

    Raises:
        NodeRedError: the flows cannot be read or deployed (nothing was added then).
    """
    if not any(isinstance(c.get("test_inject"), dict) for c in checks):
        yield checks
        return
    current = await context.nodered.get_flows()
    added = test_nodes(run_id, checks, current["flows"])
    if not added:
        yield checks_with_injects(checks, added)
        return
    ids = [n["id"] for n in added]
    await record({"tool": ADD_TEST_TAB, "args": {"nodes": ids}, "summary": f"add the test tab {added[0]['label']}"})
    await context.nodered.post_flows(current["flows"] + copy.deepcopy(added), current.get("rev"))
    try:
        yield checks_with_injects(checks, added)
    finally:
        await _remove(set(ids), context, record, added[0]["label"])


async def _remove(ids: set[str], context: ToolContext, record: Callable[[dict[str, Any]], Awaitable[None]],
                  label: str) -> None:
    """Deploys the flows without ``ids``; Node-RED's flows changed meanwhile (409): read again and retry once."""
    await record({"tool": REMOVE_TEST_TAB, "args": {"nodes": sorted(ids)}, "summary": f"remove the test tab {label}"})
    for attempt in range(2):
        current = await context.nodered.get_flows()
        try:
            await context.nodered.post_flows([n for n in current["flows"] if n.get("id") not in ids],
                                             current.get("rev"))
            return
        except NodeRedError as err:
            if err.code != "flows_conflict" or attempt:
                raise


def _one(flows: list[dict[str, Any]], wanted: str) -> dict[str, Any] | None:
    nodes = [n for n in flows if n.get("z") and n.get("type") != "tab" and n.get("id") == wanted] or \
            [n for n in flows if n.get("z") and n.get("type") != "tab" and n.get("name") == wanted]
    return nodes[0] if len(nodes) == 1 else None


def _text(value: Any) -> str:
    """An inject's payload field is text (a number's too); JSON for anything else."""
    if isinstance(value, str):
        return value
    return json.dumps(value)
