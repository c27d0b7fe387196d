"""What a tool is: one declaration (:class:`Tool`) from which the service's registry, the agent's LangChain tools,
execute-tool, ``@tools:`` and the MCP server derive everything they show or check.

A tool is a plain async function of a :class:`ToolContext` and typed arguments, returning a :class:`ToolOutput`
(structured data for programs, compact text for a model), or raising :class:`ToolFailure`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from service.nodered.client import NodeRedClient
from service.nodered.compact import MODEL_TOOL_LIMIT
from service.nodered.evidence import EvidenceBuffer
from service.nodered.messages import CodedError
from service.nodered.named_nodes import configuration_block
from service.nodered.text_budget import bounded

TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class ToolFailure(CodedError):
    """A tool could not answer; ``code`` is a design error code, ``message`` tells the user what to do next
    (worded from ``locales/<lang>/errors.json`` when no free ``message`` is given, see :class:`CodedError`)."""


@dataclass
class ToolContext:
    """What a core tool may use: the Admin API client (with the editor user's rights), the request's selection
    (``flow_id``, ``node_ids``), the editor's copy of its flows (``flow_data``, may hold undeployed changes) and the
    editor user's own token (passed on to MCP tools, which must not read with more rights either), the runtime
    evidence collected from Node-RED's comms websocket (``None``: not collected), and ``apply``: where an approved
    write lands: ``deploy`` (the Admin API, revision checked) or ``editor`` (handed back to the editor undeployed,
    for a request from the sidebar). ``locked_flows``: the ids of the tabs and subflows locked in the editor (a
    request's ``lockedFlows``; every other one is unlocked there), ``None`` when the request did not say."""

    nodered: NodeRedClient
    flow_id: str | None = None
    node_ids: list[str] = field(default_factory=list)
    user_token: str | None = field(default=None, repr=False)
    flow_data: list[dict[str, Any]] | None = field(default=None, repr=False)
    locked_flows: frozenset[str] | None = None
    language: str | None = None  # the request's language (status texts, the knowledge tools' docs)
    apply: Literal["deploy", "editor"] = "deploy"
    evidence: EvidenceBuffer | None = field(default=None, repr=False)
    # The diffs of the writes a person approved as shown, by write_tools.approval_key(tool, args): such a write is
    # planned again on the live flows when it runs and deployed only if it still makes that diff.
    approved: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    # The parts a person ticked of such a write (service.nodered.change_parts), by the same key: only those are
    # applied. A write without an entry is applied whole ("Approve all").
    parts: dict[str, list[str]] = field(default_factory=dict, repr=False)


@dataclass
class ToolOutput:
    """``data``: JSON-able structured result; ``text``: the compact form sent to a model; ``sources``: where the
    result came from, for the user's links (the knowledge tools'; ``None`` for the others); ``config_at``: where in
    ``text`` node configuration starts and runs to the end (``None``: nowhere, unless the tool's whole text is
    configuration, :attr:`Tool.configuration`)."""

    data: dict[str, Any]
    text: str
    sources: list[dict[str, Any]] | None = None
    config_at: int | None = None


@dataclass(frozen=True)
class Tool:
    """One tool, declared once.

    Args:
        name: snake_case name models, users (tool cards, ``@tools:``) and MCP clients see.
        title: a few words for MCP ``title`` and tool cards.
        description: what it does, when to use it and its limits, written for a model.
        args: pydantic model of the arguments (``extra="forbid"``); its JSON Schema is what a model is shown.
        run: ``async run(ctx, **args) -> ToolOutput``; raises :class:`ToolFailure`.
        result: pydantic model of ``ToolOutput.data`` (the MCP output schema); ``None`` when unstructured.
        access: ``read`` (changes nothing) or ``write``.
        permission: the caller's permission it needs, ``read`` or ``write`` (``X-AI-Sidebar-Permission``,
            :mod:`service.identity`).
        text_limit: characters of its text handed to a model, on every path (agent, keyword, ``@tools:``).
        preview: write tools: ``async preview(ctx, args) -> {"summary", "diff"}``, what it would change, judged on
            the live flows with secrets redacted (shown to the user before approving); raises
            :class:`ToolFailure`.
        destructive: write tools: it may change or remove what exists, or set off effects (MCP
            ``destructiveHint``); ``False``: it only adds.
        configuration: its whole text is node or runtime configuration (flows, nodes, settings): a model gets it
            inside :func:`~service.nodered.named_nodes.configuration_block`, exempt from IP masking (README,
            Guardrails).
    """

    name: str
    title: str
    description: str
    args: type[BaseModel]
    run: Callable[..., Awaitable[ToolOutput]]
    result: type[BaseModel] | None = None
    access: Literal["read", "write"] = "read"
    permission: Literal["read", "write"] = "read"
    text_limit: int = MODEL_TOOL_LIMIT
    preview: Callable[[ToolContext, dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    destructive: bool = False
    configuration: bool = False

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} is not snake_case")
        if self.access == "write" and self.permission != "write":
            raise ValueError(f"tool {self.name} writes: it must need the write permission")

    def parse(self, params: Any) -> dict[str, Any]:
        """Validate ``params``: a dict of named arguments, or a list of positional ones (``@tools:``; a single
        list-typed argument takes the whole list).

        Raises:
            ToolFailure: ``invalid_params`` naming the field that is wrong.
        """
        if isinstance(params, list):
            field_names = list(self.args.model_fields)
            list_field = field_names[0] if field_names else None
            annotation = str(self.args.model_fields[list_field].annotation) if list_field else ""
            if "list" in annotation:
                params = {list_field: params}
            elif len(params) > len(field_names):
                raise ToolFailure("invalid_params", key="invalid_params.count",
                                  params={"tool": self.name, "expected": len(field_names),
                                          "parameters": ", ".join(field_names) or "none", "given": len(params)})
            else:
                params = dict(zip(field_names, params))
        try:
            return self.args.model_validate(params or {}).model_dump()
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "params"
            raise ToolFailure("invalid_params", params={"tool": self.name, "parameter": where,
                                                        "detail": first["msg"]}) from None

    def for_model(self, text: str, config_at: int | None = None) -> str:
        """``text`` bounded to :attr:`text_limit` characters, cut at a line end with a note (never mid-line); its
        configuration (all of it for a :attr:`configuration` tool, else from ``config_at`` on, see
        :class:`ToolOutput`) inside a configuration block."""
        return configured(bounded(text, self.text_limit), 0 if self.configuration else config_at)


def configured(text: str, config_at: int | None) -> str:
    """``text`` with its part from ``config_at`` on inside a configuration block (``None``: as it is)."""
    if config_at is None or config_at >= len(text):
        return text
    return text[:config_at] + configuration_block(text[config_at:])
