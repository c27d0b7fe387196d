"""The shared vocabulary of a chat turn: what it may use (:class:`ChatDeps`), what it produced
(:class:`ChatResult`), what its steps decided (:class:`Turn`, :class:`ToolRun`) and a paused run to continue
(:class:`Resume`). Every path of the chat imports these; this module imports none of them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service.chat.approvals import Approvals
from service.chat.events import Emit, Origin
from service.chat.scenarios import Catalog, Scenario, ScenarioCatalog
from service.chat.thinking import ThinkSplitter
from service.chat.view import stored_events
from service.identity import ANONYMOUS, Identity
from service.knowledge.refresher import KnowledgeSlot
from service.knowledge.retrieval import StoreResult
from service.llm.providers import ChatModelFactory, ProviderConfig
from service.nodered.client import NodeRedClient
from service.nodered.tooling import ToolFailure, ToolOutput
from service.requests import ProviderOverride, StreamChatRequest
from service.settings import Settings
from service.tools.context import ServiceToolContext
from service.tools.registry import Permission, ToolRegistry

if TYPE_CHECKING:
    from service.llm.usage import TurnUsage
    from service.memory.store import MemoryStore
    from service.nodered.evidence import EvidenceBuffer

# Tool failures after which answering makes no sense: the user must change the request.
FATAL_TOOL_CODES = frozenset({"flow_not_found", "node_not_found", "flow_not_selected", "node_not_selected",
                              "invalid_params", "unknown_tool"})


@dataclass
class ChatDeps:
    """What one chat run uses; built per request by the route."""

    settings: Settings
    nodered: NodeRedClient
    models: ChatModelFactory
    scenarios: ScenarioCatalog
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    user_token: str | None = field(default=None, repr=False)
    identity: Identity = ANONYMOUS
    memory: MemoryStore | None = None
    knowledge: KnowledgeSlot | None = None
    evidence: EvidenceBuffer | None = None
    provider: ProviderOverride | None = field(default=None, repr=False)
    may_write: bool = True       # write permission: needed to run a tool by name (@tools:)
    granted_tools: bool = True   # an ai-chat node's own config may withhold tools (X-AI-Sidebar-Flow-Grants)
    approvals: Approvals | None = None  # None: no approval store, so write tools are not offered
    offer_writes: bool = True  # False in the sidebar's Ask mode: the model is offered no write tool (issue 31)
    planning: bool = False  # plan mode before the plan's approval: no write tool, propose_plan (issue 34)
    build_plan: dict[str, Any] | None = None  # the approved plan whose listed writes need no card (service.chat.plan)
    # Where turn usage is recorded and budgets are read: the memory database, also when this caller has no memory.
    ledger: MemoryStore | None = None

    @property
    def permission(self) -> Permission:
        return "write" if self.may_write else "read"

    @property
    def model_calls_tools(self) -> bool:
        """Whether the request's model may be offered tools (:meth:`ChatModelFactory.calls_tools`): not one
        configured without tool calling nor one whose server refused tools."""
        return self.models.calls_tools(ProviderConfig.from_settings(self.settings, self.provider))

    @property
    def tools_enabled(self) -> bool:
        """Tools run only when the caller has them (an ``ai-chat`` node's grants) and the ``ai-config`` node, if
        any, has not turned them off; the environment's provider always has them."""
        return self.granted_tools and (self.provider is None or self.provider.tools)

    def allowed(self, scenario: str | None) -> bool:
        """Whether the ``ai-config`` node allows ``scenario`` (all are allowed without a list)."""
        return self.provider is None or not self.provider.scenarios or scenario in self.provider.scenarios


@dataclass
class ToolRun:
    """One tool call of the pipeline; ``origin`` is ``direct`` (the user's ``@tools:``), ``keyword`` (forced by a
    scenario keyword) or ``error`` (the node that raised the caught error an ``ai-chat`` node asks about); the
    agent's own calls are ``agent`` (agent.py)."""

    name: str
    params: dict[str, Any]
    origin: Origin = "direct"
    output: ToolOutput | None = None
    failure: ToolFailure | None = None


@dataclass
class ChatResult:
    """What a run produced so far: answer text, tools used, faults, token usage (for memory and ``done``).

    The caller creates it, so that what was already said survives a client that goes away mid-answer.
    """

    session_id: str
    answer: str = ""
    tools: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: TurnUsage | None = None  # every model call of the run, summed (service.llm.usage.counted)
    scenario: str | None = None
    language: str | None = None
    stopped: bool = False  # the client went away (Stop, tab closed, service shutting down) before the end
    session_existed: bool = False  # the session was already stored when the request came in
    status: str | None = None  # "awaiting_approval": the run waits for the user's decisions on writes
    view: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # shown besides text: (at, event)
    suggestions: list[dict[str, str]] = field(default_factory=list)  # follow-ups for done (service.chat.followups)
    think: ThinkSplitter = field(default_factory=ThinkSplitter)  # <think> parts kept off the answer's text

    def shown(self) -> list[dict[str, Any]]:
        """What the sidebar showed of the answer besides its text, to store with it: the recorded events, then the
        turn's usage as the ``done`` event carried it (``[]``: nothing but text)."""
        if self.usage is None:
            return stored_events(self.view)
        return [*stored_events(self.view), {"type": "done", "usage": self.usage.event(), "at": len(self.answer)}]

    def metadata(self, request: StreamChatRequest) -> dict[str, Any]:
        """What is stored with the turn: scenario, selected flow id, tools used, language, error codes, and the
        context the question went out with (``context``: the open tab's id and label, how many nodes were selected
        and debug messages attached, the @-mentions as ``{kind, id, label}``, the attachments as ``{kind, name}``:
        never their content), which the sidebar shows under a
        reloaded question."""
        flow = request.selectedFlow
        meta: dict[str, Any] = {"scenario": self.scenario, "flowId": request.flow_id, "tools": self.tools,
                                "language": self.language,
                                "context": {"flow": {"id": flow.id, "label": flow.label} if flow else None,
                                            "nodes": len(request.selectedNodes),
                                            "debug": len(request.debugMessages),
                                            "mentions": [{"kind": m.kind, "id": m.id, "label": m.label}
                                                         for m in request.mentions],
                                            "attachments": [{"kind": a.kind, "name": a.name}
                                                            for a in request.attachments]}}
        if self.errors:
            meta["errors"] = self.errors
        if self.stopped:
            meta["stopped"] = True
        return meta


def new_result(request: StreamChatRequest) -> ChatResult:
    """The result object of a run: the request's session id, or a new one."""
    return ChatResult(session_id=request.sessionId or uuid.uuid4().hex)


@dataclass
class Turn:
    """What the steps of one run decide: the language's catalog, the scenario, the tools' context, the keyword's
    task for the model and the tool to run before answering (``None``: none)."""

    catalog: Catalog
    scenario_key: str
    scenario: Scenario
    context: ServiceToolContext
    task: str = ""
    tool_run: ToolRun | None = None
    history: list[dict[str, Any]] | None = None  # read once, by the first step that needs it
    summary: str | None = None  # the stored summary of the turns before ``history`` (issue 22)
    retrieved: list[StoreResult] = field(default_factory=list)
    needs_tools: bool = False  # the message asks for a change or for runtime facts: the agent answers (issue 30)


@dataclass
class Resume:
    """A paused agent run to continue: its run id (thread id) and the decisions in LangChain's form."""

    run_id: str
    decisions: list[dict[str, Any]]


def recording_errors(emit: Emit, result: ChatResult) -> Emit:
    """``emit`` that also notes the code of every ``error`` event in ``result.errors``."""
    async def recording(event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            result.errors.append(event.get("code", "error"))
        await emit(event)
    return recording
