"""Runs waiting for a person to approve a write, and the audit of every decision on a write (issue 18), in the
memory database (tables of migrations 3 and 6 in :mod:`service.memory.migrations`), SQLite or PostgreSQL through
the store's :class:`~service.memory.db.Database`.

A resume token is stored only as its SHA-256 (``token_hash``); owners are the three identity columns, so an owner
never reads another owner's approvals or audit.
"""

from __future__ import annotations

import json
import time
from typing import Any

from service.identity import Identity
from service.memory.db import Database, Row
from service.memory.store import _OWNED, MemoryStore

# Seconds the hash of a purged approval's token is kept (its token answers approval_expired meanwhile, then
# approval_not_found).
EXPIRED_TOKENS_KEPT = 30 * 86_400.0
# Outcomes kept per approval: one per write it approved (an agent's batch), with room for a few reports again.
MAX_APPLIED = 20


class ApprovalStore:
    """Approval runs and the audit, over an open :class:`MemoryStore` (its database)."""

    def __init__(self, store: MemoryStore):
        self._store = store

    @property
    def database(self) -> Database:
        """The memory database it reads and writes (the checkpointer goes beside it)."""
        return self._store.db

    @property
    def _db(self) -> Database:
        return self._store.db

    async def create_approval(self, approval_id: str, run_id: str, token_hash: str, owner: Identity, kind: str,
                              session_id: str | None, actions: list[dict[str, Any]], context: dict[str, Any],
                              expires_at: float) -> None:
        """Store an approval run ``run_id`` waits for (``kind``: ``agent``, ``direct`` for ``@tools:``,
        ``execute`` for execute-tool; ``token_hash``: the resume token's SHA-256, never the token).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        scope = _approval_scope(owner)
        statements = [(
            "INSERT INTO approval_runs(approval_id, run_id, token_hash, owner_kind, owner, conversation, kind, "
            "session_id, actions, context, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (approval_id, run_id, token_hash, *scope, kind, session_id, json.dumps(actions, ensure_ascii=False),
             json.dumps(context, ensure_ascii=False), time.time(), expires_at))]
        await self._db.write(statements)

    async def remove_expired(self, now: float, keep_expired_tokens: float = EXPIRED_TOKENS_KEPT
                             ) -> list[dict[str, str]]:
        """Delete the approvals still pending at their expiry (``expires_at <= now``), in one transaction, keeping
        each one's token hash in ``approval_expired`` (for ``keep_expired_tokens`` seconds, then dropped too) so that
        its token is still answered as expired. Returns ``[{runId, kind}]`` of the deleted approvals (their runs'
        checkpoints are the caller's to delete).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        async with self._db.transaction() as tx:
            # One statement picks and deletes them: another replica purging at the same moment gets the others.
            rows = await tx.fetchall("DELETE FROM approval_runs WHERE status = 'pending' AND expires_at <= ? "
                                     "RETURNING run_id, kind, token_hash, expires_at", (now,))
            for row in rows:
                await tx.execute("INSERT INTO approval_expired(token_hash, expired_at) VALUES (?, ?) "
                                 "ON CONFLICT(token_hash) DO UPDATE SET expired_at = excluded.expired_at",
                                 (row["token_hash"], row["expires_at"]))
            await tx.execute("DELETE FROM approval_expired WHERE expired_at <= ?", (now - keep_expired_tokens,))
        return [{"runId": row["run_id"], "kind": row["kind"]} for row in rows]

    async def any_expired(self, now: float) -> bool:
        """Whether an approval is still pending at its expiry (``expires_at <= now``): one that
        :meth:`remove_expired` would delete."""
        return await self._db.fetchone("SELECT 1 AS found FROM approval_runs WHERE status = 'pending' "
                                       "AND expires_at <= ? LIMIT 1", (now,)) is not None

    async def expired_token(self, token_hash: str) -> bool:
        """Whether a resume token's hash is one of a purged approval (:meth:`remove_expired`)."""
        row = await self._db.fetchone("SELECT 1 AS found FROM approval_expired WHERE token_hash = ?", (token_hash,))
        return row is not None

    async def approval(self, token_hash: str) -> dict[str, Any] | None:
        """The approval a resume token's hash names (any owner, any status), or ``None``."""
        row = await self._db.fetchone("SELECT * FROM approval_runs WHERE token_hash = ?", (token_hash,))
        if row is None:
            return None
        owner = Identity(row["owner_kind"], row["owner"], row["conversation"] or None)
        return {"approvalId": row["approval_id"], "runId": row["run_id"], "owner": owner,
                "kind": row["kind"], "sessionId": row["session_id"], "actions": json.loads(row["actions"]),
                "context": json.loads(row["context"]), "status": row["status"], "createdAt": row["created_at"],
                "expiresAt": row["expires_at"]}

    async def latest_of_run(self, run_id: str, owner: Identity) -> dict[str, Any] | None:
        """The owner's newest approval of run ``run_id`` (a run may pause again after a resume), or ``None``."""
        row = await self._db.fetchone(
            f"SELECT approval_id, status, expires_at FROM approval_runs WHERE run_id = ? AND {_OWNED} "
            "ORDER BY created_at DESC LIMIT 1", (run_id, *_approval_scope(owner)))
        if row is None:
            return None
        return {"approvalId": row["approval_id"], "status": row["status"], "expiresAt": row["expires_at"]}

    async def replace_token(self, approval_id: str, token_hash: str) -> bool:
        """Store a new resume token's hash for a pending approval (the old token stops working); ``False`` when
        it is no longer pending.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE approval_runs SET token_hash = ? WHERE approval_id = ? AND status = 'pending'",
                (token_hash, approval_id))
        return changed == 1

    async def claim_approval(self, approval_id: str, owner: Identity, audit: list[dict[str, Any]]) -> bool:
        """Mark a pending approval as answered and record the person's decisions (``audit``), in one transaction;
        ``False`` (nothing written) when the run was already resumed: a resume token works once, also against two
        requests at the same moment.

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        async with self._db.transaction() as tx:
            # The row lock of this UPDATE makes a second claim wait and then find the approval answered.
            claimed = await tx.execute(
                "UPDATE approval_runs SET status = 'resumed', resumed_at = ? WHERE approval_id = ? AND "
                "status = 'pending'", (time.time(), approval_id))
            if claimed != 1:
                return False  # nothing was written: the empty transaction commits
            for sql, params in (_audit_statement(owner, entry) for entry in audit):
                await tx.execute(sql, params)
        return True

    async def record(self, owner: Identity, audit: list[dict[str, Any]]) -> None:
        """Add audit rows: each ``{"runId", "toolCallId", "tool", "args", "summary", "decision" (approve, edit,
        reject), "decidedBy" (user, policy), "message"?}``."""
        await self._db.write([_audit_statement(owner, entry) for entry in audit])

    async def decision(self, run_id: str, tool_call_id: str, since: float = 0.0) -> dict[str, Any] | None:
        """The latest audit row of one tool call of a run made at or after ``since`` (Unix seconds: when the call
        was planned, so that a decision on an earlier call of the same id never counts), or ``None``: no write
        runs without one."""
        row = await self._db.fetchone(
            "SELECT * FROM approval_audit WHERE run_id = ? AND tool_call_id = ? AND created_at >= ? "
            "ORDER BY id DESC LIMIT 1", (run_id, tool_call_id, since))
        return _audit_dict(row) if row is not None else None

    async def audit(self, owner: Identity, limit: int = 50) -> list[dict[str, Any]]:
        """The owner's newest decisions on writes, newest first."""
        rows = await self._db.fetchall(f"SELECT * FROM approval_audit WHERE {_OWNED} ORDER BY id DESC LIMIT ?",
                                       (*_approval_scope(owner), limit))
        return [_audit_dict(row) for row in rows]

    async def outcomes(self, owner: Identity, run_ids: list[str], now: float | None = None
                       ) -> dict[str, list[dict[str, Any]]]:
        """What became of the owner's approvals of runs ``run_ids`` (another owner's are left out), per run id the
        approvals in the order the run asked them (a run may ask again after a resume): ``{status: "pending" |
        "answered" | "expired", createdAt, decisions: [{type, message?}] (the person's, one per action, in order;
        empty while pending), applied: [{tool, outcome}] (what the editor reported of the changes it applied, see
        :meth:`record_applied`)}``. A run whose approvals were purged after they expired is missing."""
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        scope = _approval_scope(owner)
        runs = await self._db.fetchall(
            "SELECT run_id, actions, status, created_at, expires_at, applied FROM approval_runs "
            f"WHERE run_id IN ({marks}) AND {_OWNED} ORDER BY created_at, approval_id", (*run_ids, *scope))
        audit = await self._db.fetchall(
            f"SELECT run_id, decision, message FROM approval_audit WHERE run_id IN ({marks}) AND {_OWNED} AND "
            "decided_by = 'user' ORDER BY id", (*run_ids, *scope))
        decided: dict[str, list[dict[str, Any]]] = {}
        for row in audit:
            decided.setdefault(row["run_id"], []).append(
                {"type": row["decision"], **({"message": row["message"]} if row["message"] else {})})
        shown: dict[str, list[dict[str, Any]]] = {}
        now = time.time() if now is None else now
        for row in runs:
            entry: dict[str, Any] = {"decisions": [], "applied": json.loads(row["applied"] or "[]"),
                                     "createdAt": row["created_at"]}
            if row["status"] == "resumed":
                # The audit holds the decisions of each answered approval of the run, in the order they were made.
                count = len(json.loads(row["actions"]))
                taken = decided.get(row["run_id"], [])
                entry["decisions"], decided[row["run_id"]] = taken[:count], taken[count:]
                entry["status"] = "answered"
            else:
                entry["status"] = "pending" if row["expires_at"] > now else "expired"
            shown.setdefault(row["run_id"], []).append(entry)
        return shown

    async def record_applied(self, run_id: str, owner: Identity, tool: str, outcome: dict[str, Any],
                             later: str | None = None) -> bool:
        """Keep what the editor made of an approved change it applied (``outcome``: flow-change.js's counts, or its
        ``problem``) with the owner's newest answered approval of run ``run_id``; ``False`` when the owner has none.
        ``later`` ("undone", "changed" or "applied": resources/approval/applied-watch.js) is what became of it in the
        editor since: it is set as ``outcome["later"]`` of the newest report of ``tool`` ("applied" removes it; no
        report of ``tool``: ``outcome`` is added with it).

        Raises:
            MemoryUnavailable: the database cannot be written.
        """
        async with self._db.transaction() as tx:
            rows = await tx.fetchall(
                f"SELECT approval_id, applied FROM approval_runs WHERE run_id = ? AND {_OWNED} AND "
                "status = 'resumed' ORDER BY created_at DESC LIMIT 1", (run_id, *_approval_scope(owner)))
            if not rows:
                return False
            applied = json.loads(rows[0]["applied"] or "[]")
            if later is None:
                applied = [*applied, {"tool": tool, "outcome": outcome}][-MAX_APPLIED:]
            else:
                later_state(applied, tool, outcome, later)
            await tx.execute("UPDATE approval_runs SET applied = ? WHERE approval_id = ?",
                             (json.dumps(applied, ensure_ascii=False), rows[0]["approval_id"]))
        return True

    async def pending_approvals(self, owner: Identity, now: float | None = None) -> list[dict[str, Any]]:
        """The owner's runs still waiting for a decision and not expired, newest first (without tokens)."""
        rows = await self._db.fetchall(
            f"SELECT * FROM approval_runs WHERE {_OWNED} AND status = 'pending' AND expires_at > ? "
            "ORDER BY created_at DESC", (*_approval_scope(owner), now or time.time()))
        return [{"runId": r["run_id"], "approvalId": r["approval_id"], "sessionId": r["session_id"],
                 "actions": json.loads(r["actions"]),
                 "createdAt": r["created_at"], "expiresAt": r["expires_at"]} for r in rows]


def later_state(applied: list[dict[str, Any]], tool: str, outcome: dict[str, Any], later: str) -> None:
    """Set what became of ``tool``'s newest report in ``applied`` (changed in place): ``outcome["later"]`` is
    ``later``, or absent for "applied"; without a report of ``tool``, ``outcome`` is added with it."""
    report = next((entry for entry in reversed(applied) if entry.get("tool") == tool), None)
    if report is None:
        report = {"tool": tool, "outcome": dict(outcome)}
        applied.append(report)
        del applied[:-MAX_APPLIED]
    report["outcome"].pop("later", None)
    if later != "applied":
        report["outcome"]["later"] = later


def _approval_scope(owner: Identity) -> tuple[str, str, str]:
    """The identity columns of an approval's owner (a flow node without a conversation included)."""
    return owner.kind, owner.name, owner.conversation or ""


def _audit_statement(owner: Identity, entry: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    return ("INSERT INTO approval_audit(run_id, tool_call_id, tool, args, summary, decision, decided_by, owner_kind, "
            "owner, conversation, message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (entry["runId"], entry.get("toolCallId") or "", entry["tool"],
             json.dumps(entry.get("args") or {}, ensure_ascii=False), entry.get("summary", ""), entry["decision"],
             entry["decidedBy"], *_approval_scope(owner), entry.get("message"), time.time()))


def _audit_dict(row: Row) -> dict[str, Any]:
    return {"runId": row["run_id"], "toolCallId": row["tool_call_id"] or None, "tool": row["tool"],
            "args": json.loads(row["args"]), "summary": row["summary"], "decision": row["decision"],
            "decidedBy": row["decided_by"], "user": row["owner"] if row["owner_kind"] == "user" else None,
            "message": row["message"], "createdAt": row["created_at"]}


