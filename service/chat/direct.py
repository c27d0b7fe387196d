"""The direct path: ``@tools:<name>`` runs a tool by name (a write tool asks first); also the run of any tool the
turn decided before answering (a keyword's, a caught error's source)."""

from __future__ import annotations

import ast
import re
import uuid
from typing import Any

from service.chat import events
from service.chat.agent import announce_change
from service.chat.approvals import AWAITING, plan_action, refusal
from service.chat.context import ChatDeps, ChatResult, ToolRun, Turn
from service.chat.events import Emit
from service.errors import ServiceError, error_event
from service.nodered.tooling import ToolFailure
from service.requests import StreamChatRequest, load_json
from service.tools.context import ServiceToolContext

DIRECT_TRIGGER = re.compile(r"^\s*@tools:([A-Za-z0-9_\-]+)\s*(?:\|(.*))?$", re.S)


def parse_direct_trigger(message: str) -> tuple[str, Any] | None:
    """``@tools:<name>`` or ``@tools:<name>|<params>`` → ``(name, params)``; params is a list/dict or ``None``.

    Params may be JSON or a Python literal (``['a','b']``), never evaluated as code.

    Raises:
        ServiceError: ``invalid_params`` when the part after ``|`` is not a list or object literal.
    """
    match = DIRECT_TRIGGER.match(message)
    if not match:
        return None
    name, raw = match.group(1), (match.group(2) or "").strip()
    if not raw:
        return name, None
    try:
        params = load_json(raw)
    except ValueError:
        try:
            params = ast.literal_eval(raw)
        # CPython's parser answers deep nesting with SyntaxError, RecursionError or MemoryError (its own stack,
        # not the process's memory): all mean "not a literal we take".
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raise ServiceError("invalid_params", key="invalid_params.trigger", params={"tool": name}) from None
    if not isinstance(params, (list, dict)):
        params = [params]
    return name, params


async def direct_trigger(request: StreamChatRequest, deps: ChatDeps, turn: Turn) -> bool:
    """``@tools:<name>``: the tool to run, its parameters validated; ``False`` when the message is no trigger.

    Raises:
        CodedError: ``forbidden`` (running a tool by name needs write permission), ``tools_disabled``,
            ``invalid_params``, ``unknown_tool``.
    """
    if not DIRECT_TRIGGER.match(request.message):
        return False
    # A flow node never runs a tool by name, even one allowed flow changes: its message comes from whoever
    # triggers the flow, and its write permission is only for write tools the agent offers (each approved).
    if not deps.may_write or deps.identity.kind == "flow":
        raise ServiceError("forbidden", status=403, key="forbidden.run_tool")
    trigger = parse_direct_trigger(request.message)
    assert trigger is not None  # the message matched DIRECT_TRIGGER above
    name, params = trigger
    if not deps.tools_enabled:
        raise ServiceError("tools_disabled")
    name = deps.tools.resolve(name) or name
    turn.tool_run = ToolRun(name, await deps.tools.parse(name, params))
    return True


async def run_tool(run: ToolRun, deps: ChatDeps, context: ServiceToolContext, emit: Emit) -> None:
    """Emit ``tool_call``, run the tool (in-process or through the MCP server), emit ``tool_result`` (and one
    ``error`` when it failed)."""
    shown = {k: v for k, v in run.params.items() if v is not None}
    if run.name == "get_flow" and not shown.get("flow_id") and context.flow_id:
        shown["flow_id"] = context.flow_id
    if run.name == "get_node_info" and not shown.get("node_ids") and context.node_ids:
        shown["node_ids"] = context.node_ids
    await emit(events.tool_call(run.name, shown, run.origin))
    try:
        run.output = await deps.tools.run(run.name, run.params, context, deps.permission)
    except ToolFailure as failure:
        run.failure = failure.detached()  # kept: its traceback would hold this frame, which holds ``run``
        await emit(events.tool_result(run.name, failure.message, ok=False, failure=failure))
        # The node behind a caught error may be gone or inside a subflow instance (an id no flow holds): the error
        # is still worth explaining, so that failure is no fault of the request.
        if run.origin != "error":
            await emit(error_event(failure))
        return
    await emit(events.tool_result(run.name, run.output.text, ok=True, sources=run.output.sources))
    await announce_change(deps.tools, run.name, run.output.data, emit)


async def ask_before_write(request: StreamChatRequest, deps: ChatDeps, turn: Turn, emit: Emit,
                            result: ChatResult) -> bool:
    """``@tools:`` naming a write tool: plan it; unless its policy lets it run, store an approval and emit
    ``approval_required`` (``True``: the run stops here and waits). A plan that fails is the tool's failure."""
    run = turn.tool_run
    assert run is not None
    if deps.approvals is None:  # no approval store, no record: the write cannot be asked for
        await emit(error_event(ServiceError("memory_unavailable", status=503, key="memory_unavailable.not_opened")))
        return True
    run_id = uuid.uuid4().hex
    action = await plan_action(deps.tools, deps.approvals, turn.context, run.name, run.params)
    if "refused" in action:
        failure = refusal(action)
        await emit(events.tool_call(run.name, run.params, run.origin))
        await emit(events.tool_result(run.name, action["refused"], ok=False, failure=failure))
        await emit(error_event(failure))
        result.tools.append(run.name)
        return True
    if not action["ask"]:
        await deps.approvals.record_policy(run_id, deps.identity, action)
        return False
    context = {"message": request.message, "scenario": turn.scenario_key, "language": turn.catalog.language,
               "apply": request.apply, "flowId": request.flow_id, "nodeIds": turn.context.node_ids,
               "remember": deps.memory is not None}
    if request.display:  # the words the user saw: the answer after the approval is asked with them
        context["display"] = request.display
    try:
        await emit(await deps.approvals.open(run_id, deps.identity, "direct", result.session_id, [action], context))
    except ServiceError as err:  # too many pending approvals: said, and nothing waits
        await emit(error_event(err))
        return True
    result.status = AWAITING
    return True
