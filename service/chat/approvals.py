"""Human approval of writes (issue 18): the policy that decides when a write tool asks, the agent middleware that
plans each write and lets LangChain's ``HumanInTheLoopMiddleware`` pause the run, resume tokens, and the gate that
refuses any write without an approval record.

An agent run that offers write tools runs with a LangGraph checkpointer (``AsyncSqliteSaver``, or
``AsyncPostgresSaver`` on PostgreSQL; its own tables in the memory database) under a thread id, its *run id*.
After the model asks for writes, :class:`ApprovalGate` plans each one on the live flows (its preview: summary and
diff) and applies the tool's policy; the calls that must ask make ``HumanInTheLoopMiddleware`` (batched: one
interrupt per model turn) interrupt the run, whose state the checkpointer keeps. The service then stores an
approval (the resume token hashed, bound to the identity that asked, with an expiry) and the stream says
``approval_required``. ``POST /ai-sidebar/resume`` records the user's
decisions in the audit and continues the same thread with ``Command(resume={"decisions": [...]})``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

import aiosqlite
from langchain.agents.middleware import AgentMiddleware, AgentState, HumanInTheLoopMiddleware
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from service.chat import events
from service.chat.events import Emit
from service.chat.pauses import OWN_TOOLS, planned_pause, waiting_event
from service.chat.plan import listed
from service.errors import ServiceError
from service.identity import Identity
from service.memory.approvals import ApprovalStore
from service.memory.db import BUSY_TIMEOUT_MS, MemoryUnavailable, driver_errors
from service.memory.migrations import POSTGRESQL
from service.nodered.change_parts import parts_of
from service.nodered.node_secrets import strip_secrets
from service.nodered.tooling import ToolContext, ToolFailure
from service.nodered.write_tools import approval_key
from service.settings import Settings

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from service.tools.registry import ToolRegistry

AWAITING = "awaiting_approval"  # the ``status`` of ``done`` when a run waits for the user
PLAN_KEY = "approval_plan"
LISTED_IN_PLAN = "listed in the approved plan"  # the audit message of a write the user approved with its plan


@dataclass
class Approvals:
    """A service's approval machinery: the approvals and audit store, the agent checkpointer and the settings
    (``AI_SIDEBAR_APPROVAL`` policies, ``AI_SIDEBAR_APPROVAL_TTL``)."""

    store: ApprovalStore
    saver: BaseCheckpointSaver
    settings: Settings

    def asks(self, tool: str, preview: dict[str, Any]) -> bool:
        """Whether a call of ``tool`` with this ``preview`` (its ``newTabOnly``/``testTabsOnly`` flags) needs the
        user's decision under the tool's policy."""
        policy = self.settings.approval_policy(tool)
        if policy == "never":
            return False
        if policy == "unless_new_tab_only":
            return not preview.get("newTabOnly")
        if policy == "never_on_test_tabs":
            return not preview.get("testTabsOnly")
        return True

    async def open(self, run_id: str, owner: Identity, kind: str, session_id: str | None,
                   actions: list[dict[str, Any]], context: dict[str, Any]) -> events.Event:
        """Store an approval ``run_id`` now waits for and return its ``approval_required`` event, which carries the
        only copy of the resume token (256 random bits; the store keeps its SHA-256).

        Raises:
            ServiceError: 429 ``too_many_pending_approvals`` when ``owner`` already leaves
                ``AI_SIDEBAR_MAX_PENDING_APPROVALS`` approvals waiting (an agent run's checkpoints are deleted).
        """
        if len(await self.store.pending_approvals(owner)) >= self.settings.max_pending_approvals:
            if kind == "agent":  # the paused run would wait for an approval that was never stored
                await self.saver.adelete_thread(run_id)
            raise ServiceError("too_many_pending_approvals", status=429,
                               params={"limit": self.settings.max_pending_approvals})
        token = secrets.token_urlsafe(32)
        await self.store.create_approval(uuid.uuid4().hex, run_id, token_hash(token), owner, kind, session_id,
                                         actions, context, time.time() + self.settings.approval_ttl)
        return waiting_event(events.approval_required(run_id, token, actions), actions)

    async def reissue(self, run_id: str, owner: Identity) -> dict[str, Any]:
        """A fresh resume token for the owner's run ``run_id`` that still waits, replacing the old one (which
        stops working): how a second browser, or one that lost the token, of the same Node-RED user answers it.
        Returns ``{runId, resumeToken, expiresAt}``; the expiry does not move.

        Raises:
            ServiceError: 404 ``approval_not_found`` (no such run of this owner), 409 ``approval_used``, 410
                ``approval_expired``.
        """
        approval = await self.store.latest_of_run(run_id, owner)
        if approval is None:
            raise ServiceError("approval_not_found", status=404)
        if approval["status"] != "pending":
            raise ServiceError("approval_used", status=409)
        if approval["expiresAt"] <= time.time():
            raise ServiceError("approval_expired", status=410, params={"seconds": self.settings.approval_ttl})
        token = secrets.token_urlsafe(32)
        if not await self.store.replace_token(approval["approvalId"], token_hash(token)):
            raise ServiceError("approval_used", status=409)
        return {"runId": run_id, "resumeToken": token, "expiresAt": approval["expiresAt"]}

    async def purge_expired(self, now: float | None = None) -> int:
        """Delete the approvals that expired while pending, with the checkpoints of their agent runs (their tokens
        keep getting 410 ``approval_expired``); returns how many were deleted.

        Raises:
            MemoryUnavailable: the memory database cannot be written (when it is the checkpoints that cannot be
                deleted, the approvals are gone already).
        """
        purged = await self.store.remove_expired(time.time() if now is None else now)
        for approval in purged:
            if approval["kind"] == "agent":
                await self.saver.adelete_thread(approval["runId"])
        return len(purged)

    async def record_policy(self, run_id: str, owner: Identity, action: dict[str, Any],
                            message: str | None = None) -> None:
        """The audit row of a write its policy (or, with ``message`` :data:`LISTED_IN_PLAN`, the approved plan)
        lets run without a card (decided by ``policy``)."""
        await self.store.record(owner, [audit_entry(run_id, action, "approve", "policy", message)])


async def open_approvals(store: ApprovalStore, settings: Settings) -> tuple[Approvals, Callable[[], Any]]:
    """The approval machinery over the store's database. Returns it and the coroutine function that closes what
    it opened.

    On SQLite the checkpointer gets its own connection to the file (LangGraph's ``AsyncSqliteSaver`` commits on its
    own; sharing the store's connection would mix its statements into the store's transactions). On PostgreSQL,
    ``AsyncPostgresSaver`` takes connections from the store's pool; its table setup runs under an advisory lock,
    as replicas may start together. Its tables (``checkpoints``, ``writes``; PostgreSQL: ``checkpoint_*``) are its
    own.

    Raises:
        OSError, sqlite3.Error, psycopg.Error: the checkpointer's tables cannot be set up.
    """
    db = store.database
    if db.dialect == POSTGRESQL:  # by its dialect: an isinstance check would import psycopg on SQLite too
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from service.memory.postgres import PostgresDatabase

        assert isinstance(db, PostgresDatabase)

        saver = _without_errors(AsyncPostgresSaver)(db.pool)
        async with db.pool.connection() as conn:
            await _take_setup_lock(conn)
            # The setup runs on this connection, with a lock timeout of its own: its CREATE INDEX CONCURRENTLY waits
            # for every transaction of the database that is older than it, on any table (another replica's, this
            # service's own), which on a loaded machine outlasts the pool's 5 s.
            await conn.execute(f"SET lock_timeout = {SETUP_LOCK_TIMEOUT_MS}", prepare=False)
            try:
                await AsyncPostgresSaver(conn).setup()  # type: ignore[arg-type]  # dict rows: the pool's kwargs
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINT_LOCK,))
                await conn.execute(f"SET lock_timeout = {BUSY_TIMEOUT_MS}", prepare=False)  # back to the pool's

        async def nothing() -> None:  # the pool is the store's to close
            return None
        return Approvals(store, saver, settings), nothing
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    connection = await aiosqlite.connect(db.path)  # type: ignore[attr-defined]  # an SqliteDatabase
    try:
        await connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        saver = _without_errors(AsyncSqliteSaver)(connection)
        await saver.setup()
    except BaseException:
        # Left open, its worker thread (not a daemon) would keep the process from exiting.
        await connection.close()
        raise
    return Approvals(store, saver, settings), connection.close


# pg_advisory_lock key of the checkpointer's table setup (the ASCII bytes of "aisdckpt").
CHECKPOINT_LOCK = 0x61697364636B7074

# How often a replica asks again for the setup's lock while another sets up, s: from the first to the last.
SETUP_LOCK_POLL = (0.02, 0.5)


async def _take_setup_lock(conn: Any) -> None:
    """Take the session advisory lock :data:`CHECKPOINT_LOCK` on ``conn`` (autocommit, the pool's), waiting for as
    long as another replica holds it, however long its setup takes.

    Never by waiting inside a statement (``pg_advisory_lock``): a waiting statement holds a snapshot, and the holder's
    ``CREATE INDEX CONCURRENTLY`` waits for every older snapshot of the database
    (https://www.postgresql.org/docs/current/sql-createindex.html#SQL-CREATEINDEX-CONCURRENTLY), so each would wait
    for the other and PostgreSQL's deadlock detector aborts one (seen with two replicas starting together). Here
    each ask is ``pg_try_advisory_lock``, which answers at once, and between asks this connection has no
    transaction."""
    pause, longest = SETUP_LOCK_POLL
    while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS taken",
                                         (CHECKPOINT_LOCK,))).fetchone())["taken"]:
        await asyncio.sleep(pause)
        pause = min(pause * 2, longest)

# The lock timeout of the checkpointer's table setup on PostgreSQL, ms. LangGraph's migrations build indexes with
# CREATE INDEX CONCURRENTLY, which waits until every transaction older than it has ended, whatever table it touches
# (https://www.postgresql.org/docs/current/sql-createindex.html#SQL-CREATEINDEX-CONCURRENTLY); generous, since a
# setup that gives up leaves the service without approvals (no write tools) until it restarts.
SETUP_LOCK_TIMEOUT_MS = 120_000


# The channel under which LangGraph's runner stores the exception of a failed task (langgraph/pregel/_runner.py,
# ``task.writes.append((ERROR, exception))``; the constant itself is private since LangGraph 1.0).
_ERROR_CHANNEL = "__error__"


def _without_errors(saver_class: type) -> type:
    """``saver_class`` (LangGraph's ``AsyncSqliteSaver`` or ``AsyncPostgresSaver``) with two changes:

    - ``aput_writes`` stores a failed task's exception as a bare sentence: a provider's exception text may echo the
      request's API key (``received Authorization: Bearer ...``), and nothing may keep a secret in the database.
      The run's own error handling got the original exception already.
    - the driver's errors (``sqlite3.Error``, ``psycopg.Error``, the pool's included) from its reads and writes
      (``aget_tuple``, ``alist``, ``aput``, ``aput_writes``, ``adelete_thread``, ``aget_delta_channel_history``:
      langgraph-checkpoint 4.x, langgraph-checkpoint-sqlite 3.x, -postgres 3.x) raise
      :class:`MemoryUnavailable` instead: a locked, broken or unreachable memory database is the memory's fault,
      whoever called (the agent's run, the purge, a resume). On SQLite the transaction the failed statement left
      open on the saver's connection (``aput`` begins one before its cached statement fails) is rolled back first:
      it would keep the database's write lock, and every other write would wait and fail.
    """

    class WithoutErrors(saver_class):
        async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            kept = [(channel, RuntimeError("the step failed; its error is not stored") if channel == _ERROR_CHANNEL
                     else value) for channel, value in writes]
            async with self._memory_faults():
                await super().aput_writes(config, kept, task_id, task_path)

        async def aput(self, *args: Any, **kwargs: Any) -> Any:
            async with self._memory_faults():
                return await super().aput(*args, **kwargs)

        async def aget_tuple(self, *args: Any, **kwargs: Any) -> Any:
            async with self._memory_faults():
                return await super().aget_tuple(*args, **kwargs)

        async def alist(self, *args: Any, **kwargs: Any) -> Any:
            async with self._memory_faults():
                async for item in super().alist(*args, **kwargs):
                    yield item

        async def adelete_thread(self, *args: Any, **kwargs: Any) -> None:
            async with self._memory_faults():
                await super().adelete_thread(*args, **kwargs)

        async def aget_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
            async with self._memory_faults():
                return await super().aget_delta_channel_history(*args, **kwargs)

        @contextlib.asynccontextmanager
        async def _memory_faults(self) -> AsyncIterator[None]:
            try:
                yield
            except driver_errors() as err:
                if isinstance(self.conn, aiosqlite.Connection):  # PostgreSQL: the pool rolls back what it gets back
                    async with self.lock:
                        if self.conn.in_transaction:
                            with contextlib.suppress(sqlite3.Error):
                                await self.conn.rollback()
                raise MemoryUnavailable(str(err)) from None

    return WithoutErrors


def token_hash(token: str) -> str:
    """The SHA-256 (hex) under which a resume token is stored and looked up."""
    return hashlib.sha256(token.encode()).hexdigest()


def audit_entry(run_id: str, action: dict[str, Any], decision: str, decided_by: str,
                message: str | None = None, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """An audit row for one action (arguments redacted of secrets, like previews)."""
    return {"runId": run_id, "toolCallId": action.get("toolCallId"), "tool": action["tool"],
            "args": strip_secrets(args if args is not None else action["args"]), "summary": action.get("summary", ""),
            "decision": decision, "decidedBy": decided_by, "message": message}


async def plan_action(registry: ToolRegistry, approvals: Approvals, context: ToolContext, tool: str,
                      args: Any) -> dict[str, Any]:
    """One write call planned: ``{tool, args, plannedAt, summary, sentence, diff, parts, warning, ask}`` (``parts``:
    the diff's parts the user may untick, :func:`~service.nodered.change_parts.parts_of`; ``ask``: its
    policy wants a card; ``sentence``: the summary's ``{key, params}``, to word it in another language;
    ``warning``: the ``{key, params}`` naming new values that look like secrets, shown in full, or ``None``), or
    ``{tool, args, plannedAt, refused, code, sentence}`` with the failure's sentence, code and ``{key, params}``
    (:meth:`CodedError.sentence_args`, to word it in another language) when its arguments or its target are wrong,
    or when its card (arguments and diff, UTF-8 JSON) would exceed ``AI_SIDEBAR_APPROVAL_MAX_BYTES``
    (``approval_too_large``: a person cannot review it; the model is told to split it) (it will not run)."""
    action: dict[str, Any] = {"tool": tool, "args": args, "plannedAt": time.time()}
    try:
        shown = await registry.preview(tool, await registry.parse(tool, args), context)
    except ToolFailure as failure:
        return {**action, "refused": failure.message, "code": failure.code, "sentence": failure.sentence_args()}
    size = len(json.dumps({"args": args, "diff": shown["diff"]}, ensure_ascii=False, default=str).encode())
    if size > approvals.settings.approval_max_bytes:
        too_large = ToolFailure("approval_too_large", params={"tool": tool, "size": size,
                                                            "limit": approvals.settings.approval_max_bytes})
        return {**action, "refused": too_large.message, "code": too_large.code, "sentence": too_large.sentence_args()}
    return {**action, "summary": shown["summary"], "sentence": shown.get("sentence"), "diff": shown["diff"],
            "parts": parts_of(shown["diff"]), "warning": shown.get("warning"), "ask": approvals.asks(tool, shown)}


def refusal(action: dict[str, Any]) -> ToolFailure:
    """The failure of a refused :func:`plan_action`, worded again from its key and parameters when it has them."""
    return ToolFailure(action["code"], **(action.get("sentence") or {"message": action["refused"]}))


async def approved_as_shown(registry: ToolRegistry, context: ToolContext, action: dict[str, Any], args: Any) -> None:
    """Note in ``context`` that write ``action`` (as :func:`plan_action` planned it) runs with the ``args`` it was
    planned with, so that it deploys only if it still makes the diff that was shown
    (:func:`service.nodered.write_tools.apply`). Edited arguments were never previewed: nothing is noted."""
    if action.get("diff") is None or args != action["args"]:
        return
    parsed = await registry.parse(action["tool"], args)
    context.approved[approval_key(action["tool"], parsed)] = action["diff"]


class _PlanState(AgentState):
    approval_plan: NotRequired[Annotated[dict[str, dict[str, Any]], PrivateStateAttr]]


@dataclass
class AgentApproval:
    """What an agent run with write tools needs: the machinery, the run id (LangGraph thread id), who runs it, the
    tools' context and the stream; ``resume`` is the decisions to continue with (``None``: a new run); ``called``
    gets the name of each write call refused here (the turn's tool list: ``ChatResult.tools``)."""

    approvals: Approvals
    run_id: str
    owner: Identity
    registry: ToolRegistry
    context: ToolContext
    emit: Emit
    writes: list[str] = field(default_factory=list)
    resume: list[dict[str, Any]] | None = None
    called: list[str] = field(default_factory=list)
    plan: dict[str, Any] | None = None  # an approved plan whose listed writes need no card (service.chat.plan)

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.run_id}}

    def input(self, messages: list[Any]) -> Any:
        """The agent's input: the messages of a new run, or the decisions that resume an interrupted one."""
        if self.resume is not None:
            return Command(resume={"decisions": self.resume})
        return {"messages": messages}

    def middleware(self) -> list[AgentMiddleware]:
        """``HumanInTheLoopMiddleware`` then :class:`ApprovalGate`, in this order: the gate's planning runs before
        the interrupt (LangChain runs ``after_model`` hooks last to first) and its check inside it, after an edit
        replaced the arguments (``wrap_tool_call`` hooks nest first to last)."""
        def asks(request: Any) -> bool:
            planned = (request.state.get(PLAN_KEY) or {}).get(request.tool_call.get("id") or "")
            return planned is None or bool(planned.get("ask"))

        interrupt_on = {name: {"allowed_decisions": ["approve", "edit", "reject"], "when": asks}
                        for name in self.writes}
        return [HumanInTheLoopMiddleware(interrupt_on=interrupt_on),  # type: ignore[arg-type]
                ApprovalGate(self)]

    async def pending(self, agent: Any) -> list[dict[str, Any]] | None:
        """The actions the interrupted run waits for, in the order its decisions are expected, or ``None`` when the
        run ended (its checkpoints are then deleted)."""
        snapshot = await agent.aget_state(self.config)
        if not snapshot.interrupts:
            await self.approvals.saver.adelete_thread(self.run_id)
            return None
        plan = snapshot.values.get(PLAN_KEY) or {}
        last = next((m for m in reversed(snapshot.values["messages"]) if isinstance(m, AIMessage)), None)
        calls = last.tool_calls if last is not None else []
        return [{**plan[call_id], "toolCallId": call_id} for call_id in (call.get("id") or "" for call in calls)
                if call_id in plan and plan[call_id].get("ask")]


class ApprovalGate(AgentMiddleware):
    """Plans the model's write calls after each model turn (preview on the live flows, policy; a call let through by
    policy gets its audit row at once) and, around each write tool call, refuses to run one without an approval
    record made for it: a refused plan, or no decision at all, answers the model instead of writing."""

    state_schema = _PlanState

    def __init__(self, run: AgentApproval):
        super().__init__()
        self._run = run

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        run = self._run
        calls = [c for c in (last.tool_calls if last is not None else []) if c["name"] in run.writes and c.get("id")]
        if not calls:
            return None
        plan: dict[str, dict[str, Any]] = {}
        alone = last is not None and len(last.tool_calls) == 1  # a question or a plan waits for the user alone
        for call in calls:
            call_id = call.get("id") or ""
            action = (planned_pause(call["name"], call["args"], alone)
                      if call["name"] in OWN_TOOLS
                      else await plan_action(run.registry, run.approvals, run.context, call["name"], call["args"]))
            if action.get("ask") and call["name"] not in OWN_TOOLS and \
                    listed(run.plan, call["name"], call["args"], run.context.flow_id):
                action["ask"] = False
                await run.approvals.record_policy(run.run_id, run.owner, {**action, "toolCallId": call_id},
                                                  LISTED_IN_PLAN)
            elif action.get("ask") is False:
                await run.approvals.record_policy(run.run_id, run.owner, {**action, "toolCallId": call_id})
            plan[call_id] = action
        return {PLAN_KEY: plan}

    async def awrap_tool_call(self, request: Any, handler: Callable) -> Any:
        call = request.tool_call
        run = self._run
        if call["name"] not in run.writes:
            return await handler(request)
        planned = (request.state.get(PLAN_KEY) or {}).get(call.get("id") or "")
        problem = None
        failure = None
        if planned is None:
            problem = "it was not planned"
        elif planned.get("refused"):
            problem = planned["refused"]
            failure = refusal(planned)
        elif await run.approvals.store.decision(run.run_id, call["id"], planned["plannedAt"]) is None:
            problem = "nobody approved it"
        if problem is None:
            assert planned is not None
            await approved_as_shown(run.registry, run.context, planned, call["args"])
            return await handler(request)
        message = f"The tool {call['name']} did not run: {problem}"
        run.called.append(call["name"])
        await run.emit(events.tool_call(call["name"], call["args"], "agent"))
        await run.emit(events.tool_result(call["name"], message, ok=False, failure=failure))
        return ToolMessage(content=message, name=call["name"], tool_call_id=call["id"], status="error")


def decisions_for(actions: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user's decisions (``{type: approve}``, ``{type: edit, args}``, ``{type: reject, message}``) in
    LangChain's form (``edit`` becomes ``edited_action``, and so does any decision with ``args``: an answered
    question or plan, see :mod:`service.chat.pauses`), one per action.

    Raises:
        ServiceError: 400 ``invalid_request`` when the counts differ.
    """
    if len(decisions) != len(actions):
        raise ServiceError("invalid_request", key="invalid_request.decisions",
                           params={"given": len(decisions), "expected": len(actions)})
    converted = []
    for action, decision in zip(actions, decisions, strict=True):
        if decision["type"] == "edit" or "args" in decision:  # a plan's approval runs it with the decision
            converted.append({"type": "edit", "edited_action": {"name": action["tool"], "args": decision["args"]}})
        elif decision["type"] == "reject":
            converted.append({"type": "reject", **({"message": decision["message"]} if decision.get("message")
                                                    else {})})
        else:
            converted.append({"type": "approve"})
    return converted
