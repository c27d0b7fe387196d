"""A write tool call over MCP: plan it on the live flows, ask the client's user through MCP elicitation with the
preview, record the decision in the audit, and apply only an explicit approval.

The plan and its preview are the service's own (:mod:`service.nodered.write_tools`: summary, diff with secrets
redacted). An approved change is deployed exactly as it was shown, over the flows revision it was planned on: when
someone deployed while the user was deciding, Node-RED answers 409 and the call fails with ``flows_conflict``,
overwriting nothing. A declined or cancelled request, a client without the elicitation capability, or an unusable
answer writes nothing and fails with a sentence saying so.

A client that can show a multi-select (:mod:`mcp_server.approval_parts`) may untick parts: exactly the ticked ones
are applied, re-validated as the sidebar's are (:func:`~service.nodered.change_parts.select_parts`); when leaving
some out changes others (a wire whose end is left out, a link's other end), the adjusted change is shown again and
applied only once approved as shown.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mcp.server.fastmcp import Context
from mcp.shared.exceptions import McpError
from mcp.types import ClientCapabilities, ElicitationCapability
from pydantic import ValidationError

from service.nodered import write_tools
from service.nodered.change_parts import select_parts, unknown_parts
from service.nodered.client import NodeRedClient
from service.nodered.messages import english
from service.nodered.tooling import Tool, ToolContext, ToolFailure, ToolOutput

from .approval_parts import ApprovalAnswer, offered_parts, parts_form
from .audit import Caller, McpAudit
from .auth import caller_grant

# Characters of an approval request: a larger change is refused rather than shown in part (what a person approves
# is what is written; the service's AI_SIDEBAR_APPROVAL_MAX_BYTES default).
PREVIEW_LIMIT = 262_144


PARTS_NOTE = ("\n\nparts lists each part of this change, all ticked; untick the ones to leave out. Exactly the "
              "ticked parts are applied (when leaving some out changes others, you are asked again).")
ADJUSTED_NOTE = ("Leaving out the parts you unticked changes others (a wire whose end is left out, a link's other "
                 "end, a config node nobody uses any more): this is the change that would be made.\n\n")


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
    parts = offered_parts(ctx, preview["diff"])
    try:
        message = approval_message(tool.name, preview) + (PARTS_NOTE if parts else "")
    except ToolFailure as failure:
        await audit.record(caller, tool.name, args, summary, "refused", failure.code, run_id=run_id)
        raise

    async def ask(text: str, form: type[ApprovalAnswer]) -> ApprovalAnswer:
        try:
            answer = await ctx.elicit(text, form)
        except (McpError, ValidationError, ValueError) as err:
            await audit.record(caller, tool.name, args, summary, "refused",
                               f"unusable answer: {type(err).__name__}", run_id=run_id)
            raise ToolFailure("approval_unsupported", (
                "The MCP client's answer to the approval request was not usable, so nothing was changed: "
                f"{summary}")) from None
        if answer.action == "cancel":
            await audit.record(caller, tool.name, args, summary, "cancel", run_id=run_id)
            raise ToolFailure("approval_cancelled", f"The user dismissed the approval request; nothing was "
                                                    f"changed: {summary}")
        ticked = getattr(answer.data, "parts", None) if answer.action == "accept" else None
        if answer.action == "decline" or not answer.data.approve or ticked == []:
            await audit.record(caller, tool.name, args, summary, "decline", run_id=run_id)
            raise ToolFailure("approval_declined", f"The user declined this change; nothing was changed: {summary}")
        if ticked is not None and unknown_parts(change.diff, ticked):
            await audit.record(caller, tool.name, args, summary, "refused", "unusable answer: unknown parts",
                               run_id=run_id)
            raise ToolFailure("approval_unsupported", (
                f"The MCP client's answer named parts the change does not have, so nothing was changed: {summary}"))
        return answer.data

    answer = await ask(message, parts_form(parts, change.diff, change.base) if parts else ApprovalAnswer)
    ticked = getattr(answer, "parts", None)
    chosen: list[str] | None = None
    if ticked is not None and set(ticked) != {part["id"] for part in parts}:
        assert change.base is not None and change.flows is not None  # a flow change (it has parts)
        selection = select_parts(change.base, change.diff, ticked)
        if selection.adjusted:
            # Leaving those parts out changed others: show the change as it would be, and apply only that.
            change = dataclasses.replace(change, diff=selection.diff, flows=selection.flows, parts=selection.parts)
            await ask(ADJUSTED_NOTE + approval_message(tool.name, change.preview()), ApprovalAnswer)
        else:
            chosen = list(ticked)
    partly = None if change.parts is None and chosen is None else \
        f"{len(chosen if chosen is not None else change.parts or [])} of {len(parts)} parts"
    row = await audit.record(caller, tool.name, args, summary, "approve", partly, run_id=run_id)
    try:
        output = await write_tools.commit(context, change, rev, chosen)
    except ToolFailure as failure:
        await audit.settle(row, failure.code)
        raise
    await audit.settle(row, output.data["status"])
    return output
