"""The history's cut of a deploy (service/history/snapshot.py) remembers each object's kept form: a capture after a
deploy that changed a few nodes scans only those for secrets, and an object whose strings became ids of the flows
is kept again (a reference is never a secret)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from service.history import snapshot
from service.nodered.redaction import REDACTED
from tests.support.workspaces import workspace

SECRET_NAMED = "token"  # a property so named holds a secret, unless its value is the id of a node of the flows


@pytest.fixture
def scans(monkeypatch) -> list[str]:
    """The ids of the objects the memo sends to strip_secrets, with a fresh memo."""
    monkeypatch.setattr(snapshot, "_MEMO", snapshot._Memo())
    seen: list[str] = []
    real = snapshot.strip_secrets

    def counting(node: dict[str, Any], references: Any = frozenset()) -> dict[str, Any]:
        seen.append(node.get("id"))
        return real(node, references)
    monkeypatch.setattr(snapshot, "strip_secrets", counting)
    return seen


def test_a_second_cut_scans_only_the_objects_that_changed(scans):
    flows = workspace()
    first = snapshot.split(copy.deepcopy(flows))
    assert len(scans) == len(flows)
    changed = copy.deepcopy(flows)
    function = next(node for node in changed if node["type"] == "function")
    function["func"] += "\n// changed"
    scans.clear()
    second = snapshot.split(changed)
    assert scans == [function["id"]]
    assert second.manifests != first.manifests
    # The same parts as a cut without the memo would give.
    fresh = snapshot._Memo()
    expected = [fresh.part(node, frozenset(n["id"] for n in changed)).text for node in changed]
    assert [second.parts[key] for key in second.keys] == expected


def test_kept_objects_are_new_each_time(scans):
    flows = workspace()
    once, again = snapshot.kept(flows), snapshot.kept(flows)
    assert once == again
    once[0]["label"] = "changed by a caller"
    assert snapshot.kept(flows)[0] != once[0]


def test_a_string_that_became_an_id_is_kept_as_a_reference(scans):
    user = {"id": "n1", "type": "http request", "z": "t1", "name": "uses", SECRET_NAMED: "cfg1", "wires": []}
    tab = {"id": "t1", "type": "tab", "label": "Flow"}
    assert snapshot.kept([tab, user])[1][SECRET_NAMED] == REDACTED
    config = {"id": "cfg1", "type": "tls-config", "name": "certificates"}
    assert snapshot.kept([tab, user, config])[1][SECRET_NAMED] == "cfg1"
    # and back: the node with that id removed, the value is a secret again
    assert snapshot.kept([tab, user])[1][SECRET_NAMED] == REDACTED
    assert scans.count("n1") == 3


def test_a_full_memo_starts_over(scans, monkeypatch):
    monkeypatch.setattr(snapshot, "_MEMO", snapshot._Memo(limit=2_000))
    flows = workspace()
    cut = snapshot.split(flows)
    assert snapshot._MEMO._chars <= 2_000
    assert cut.kept() == snapshot.kept(flows)
