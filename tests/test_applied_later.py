"""Issue 31, finding 4: what the editor made of an applied change since (undone with Ctrl-Z, changed by the user,
applied again with Redo) is kept with the approval on each memory backend, so that a reopened conversation's card
says the same (``GET /ai-sidebar/history``'s ``approvals``)."""

from __future__ import annotations

import time

from service.identity import Identity
from service.memory.approvals import ApprovalStore
from service.memory.store import MemoryStore

alice, bob = Identity("user", "alice"), Identity("user", "bob")
ADDED = {"added": 2, "tabs": 0, "changed": 0, "removed": 0}
CHANGED = {"added": 0, "tabs": 0, "changed": 1, "removed": 0}


async def answered_run(approvals: ApprovalStore, run_id: str) -> None:
    await approvals.create_approval("approval-" + run_id, run_id, "hash-" + run_id, alice, "agent", "s1",
                                    [{"tool": "add_nodes", "args": {}}], {}, time.time() + 600)
    assert await approvals.claim_approval("approval-" + run_id, alice, [])


async def test_undone_and_changed_since_update_the_newest_report_of_the_tool_and_redo_clears_it(memory_target):
    store = await MemoryStore.open(memory_target)
    try:
        approvals = ApprovalStore(store)
        await answered_run(approvals, "run-1")
        assert await approvals.record_applied("run-1", alice, "add_nodes", ADDED)
        assert await approvals.record_applied("run-1", alice, "update_node", CHANGED)
        assert await approvals.record_applied("run-1", alice, "add_nodes", ADDED, "undone")
        assert await approvals.record_applied("run-1", alice, "update_node", CHANGED, "changed")
        assert not await approvals.record_applied("run-1", bob, "add_nodes", ADDED, "undone")

        outcomes = await approvals.outcomes(alice, ["run-1"])
        assert outcomes["run-1"][0]["applied"] == [
            {"tool": "add_nodes", "outcome": {**ADDED, "later": "undone"}},
            {"tool": "update_node", "outcome": {**CHANGED, "later": "changed"}}]

        # Redo (Ctrl-Y) applies it again: the card says applied, as it did before the undo.
        assert await approvals.record_applied("run-1", alice, "add_nodes", ADDED, "applied")
        outcomes = await approvals.outcomes(alice, ["run-1"])
        assert outcomes["run-1"][0]["applied"][0] == {"tool": "add_nodes", "outcome": ADDED}
    finally:
        await store.close()
