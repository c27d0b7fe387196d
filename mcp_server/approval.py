"""A write tool call over MCP: plan it on the live flows, ask the client's user through MCP elicitation with the
preview, record the decision in the audit, and apply only an explicit approval.

The plan and its preview are the service's own (:mod:`service.nodered.write_tools`: summary, diff with secrets
redacted). An approved change is deployed exactly as it was shown, over the flows revision it was planned on: when
someone deployed while the user was deciding, Node-RED answers 409 and the call fails with ``flows_conflict``,
overwriting nothing. A declined or cancelled request, a client without the elicitation capability, or an unusable
answer writes nothing and fails with a sentence saying so.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.fastmcp import Context
from mcp.shared.exceptions import McpError
from mcp.types import ClientCapabilities, ElicitationCapability
from pydantic import BaseModel, Field, ValidationError

from service.nodered import write_tools
from service.nodered.client import NodeRedClient
from service.nodered.messages import english
from service.nodered.tooling import Tool, ToolContext, ToolFailure, ToolOutput

from .audit import Caller, McpAudit
from .auth import caller_grant

# Characters of an approval request: a larger change is refused rather than shown in part (what a person approves
# is what is written; the service's AI_SIDEBAR_APPROVAL_MAX_BYTES default).
PREVIEW_LIMIT = 262_144


class ApprovalAnswer(BaseModel):
    """The form the client shows its user (MCP elicitation allows flat primitive fields only)."""

    approve: bool = Field(description="true: make this change in Node-RED now; false: leave Node-RED as it is")


def caller_of(ctx: Context[Any, Any, Any]) -> Caller:
    """The MCP client as its ``initialize`` request named itself (``unknown`` before initialisation), with the
    signed-in Node-RED user and OAuth client id when the call carries a sign-in grant (:mod:`mcp_server.auth`)."""
    grant = caller_grant(ctx.request_context.request)
    user, oauth_client = (grant.subject, grant.client_id) if grant is not None else (None, None)
    params = ctx.session.client_params
    if params is None:
        return Caller("unknown", user=user, oauth_client=oauth_client)
    return Caller(params.clientInfo.name, params.clientInfo.version or "", user=user, oauth_client=oauth_client)


def approval_message(tool: str, preview: dict[str, Any]) -> str:
    """What the user reads before deciding: the summary, the warning when the change writes new values that look
    like secrets (shown in full), then the diff as JSON (secrets the flows held already masked).

    Raises:
        ToolFailure: ``approval_too_large`` beyond :data:`PREVIEW_LIMIT` characters (never shown in part).
    """
    diff = json.dumps(preview["diff"], ensure_ascii=False, indent=1)
    warning = f"\n\nWARNING: {english(preview['warning']['key'], preview['warning']['params'])}" \
        if preview.get("warning") else ""
    message = (f"Node-RED write tool {tool} asks for your approval.\n\n{preview['summary']}{warning}\n\n"
               "Changes (added nodes, removed node ids, changed properties before → after, wires added and "
               f"removed):\n{diff}")
    if len(message) > PREVIEW_LIMIT:
        raise ToolFailure("approval_too_large", params={"tool": tool, "size": len(message.encode()),
                                                        "limit": PREVIEW_LIMIT})
    return message


async def approved_write(ctx: Context[Any, Any, Any], nodered: NodeRedClient, tool: Tool, arguments: dict[str, Any],
                         audit: McpAudit, run_id: str | None = None) -> ToolOutput:
    """Run write ``tool`` with ``arguments`` only after the client's user approves its preview; every audit row of
    the call carries ``run_id`` (the build run it belongs to, or ``None``).

    Raises:
        ToolFailure: the plan's failure (``node_not_found``, ``invalid_params``, ..., nothing asked);
            ``approval_too_large`` (the request would exceed :data:`PREVIEW_LIMIT`, nothing asked),
            ``approval_unsupported`` (the client cannot ask its user), ``approval_declined``,
            ``approval_cancelled``; ``flows_conflict`` (the flows changed while the user decided) or another
            Node-RED error code from applying it.
    """
    caller = caller_of(ctx)
    args = tool.parse(arguments)
    context = ToolContext(nodered=nodered)
    change, rev = await write_tools.plan(context, tool.name, args)
    preview = change.preview()
    summary = preview["summary"]
    if not ctx.session.check_client_capability(ClientCapabilities(elicitation=ElicitationCapability())):
        await audit.record(caller, tool.name, args, summary, "refused", "the client has no elicitation capability",
                           run_id=run_id)
        raise ToolFailure("approval_unsupported", (
            f"{tool.name} changes Node-RED only after a person approves it, and this MCP client cannot ask (it does "
            "not support MCP elicitation). Nothing was changed. Use an MCP client with elicitation, or make the "
            f"change in the Node-RED editor: {summary}"))
    try:
        message = approval_message(tool.name, preview)
    except ToolFailure as failure:
        await audit.record(caller, tool.name, args, summary, "refused", failure.code, run_id=run_id)
        raise
    try:
        answer = await ctx.elicit(message, ApprovalAnswer)
    except (McpError, ValidationError, ValueError) as err:
        await audit.record(caller, tool.name, args, summary, "refused", f"unusable answer: {type(err).__name__}",
                           run_id=run_id)
        raise ToolFailure("approval_unsupported", (
            "The MCP client's answer to the approval request was not usable, so nothing was changed: "
            f"{summary}")) from None
    if answer.action == "cancel":
        await audit.record(caller, tool.name, args, summary, "cancel", run_id=run_id)
        raise ToolFailure("approval_cancelled", f"The user dismissed the approval request; nothing was changed: "
                                                f"{summary}")
    if answer.action == "decline" or not answer.data.approve:
        await audit.record(caller, tool.name, args, summary, "decline", run_id=run_id)
        raise ToolFailure("approval_declined", f"The user declined this change; nothing was changed: {summary}")
    row = await audit.record(caller, tool.name, args, summary, "approve", run_id=run_id)
    try:
        output = await write_tools.commit(context, change, rev)
    except ToolFailure as failure:
        await audit.settle(row, failure.code)
        raise
    await audit.settle(row, output.data["status"])
    return output
