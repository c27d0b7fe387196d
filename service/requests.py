"""Request bodies (pydantic), shared by the web layer that parses them and the chat and assist code that reads them.
Field names follow DESIGN.md's HTTP API, which uses the editor's camelCase. Parsing a body off a request (size, JSON
depth, timeout) is :func:`service.web.schemas.parse_body`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import httpx
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, SecretStr, field_validator, model_validator

from service.settings import McpServerConfig, Provider

ID_PATTERN = r"^[A-Za-z0-9._:\-]{1,128}$"
MAX_FLOW_ITEMS = 20_000      # objects in flowData


def _flow_items(value: Any) -> list[dict[str, Any]] | None:
    """flowData: a list of at most :data:`MAX_FLOW_ITEMS` objects, kept as they are. Checked here in Python rather
    than by pydantic-core, whose one long call would hold the GIL (and so the event loop) on a large flowData."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError("must be an array of node objects")
    if len(value) > MAX_FLOW_ITEMS:
        raise ValueError(f"has {len(value)} items, more than {MAX_FLOW_ITEMS}")
    if not all(isinstance(item, dict) for item in value):
        raise ValueError("must hold node objects only")
    return value


class SelectedFlow(BaseModel):
    """The tab (or subflow) the user has open in the editor."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=ID_PATTERN)
    label: str | None = Field(None, max_length=500)


class SelectedNode(BaseModel):
    """A node selected in the editor."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=ID_PATTERN)
    type: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=500)


MAX_MENTIONS = 20  # @-mentions one question may carry
# A node type as the palette names it ("function", "mqtt in", "node-red-dashboard/ui_button" is not one: the module
# is not part of the type).
TYPE_PATTERN = r"^[^\x00-\x1f<>]{1,200}$"


class _Mentioned(BaseModel):
    model_config = ConfigDict(extra="ignore")
    label: str | None = Field(None, max_length=200)


class IdMention(_Mentioned):
    """A node or config node, a tab or subflow, or one of the user's earlier conversations, by its id."""

    kind: Literal["node", "config", "tab", "subflow", "conversation"]
    id: str = Field(pattern=ID_PATTERN, max_length=200)


class TypeMention(_Mentioned):
    """An installed node type (``id`` is the type's name)."""

    kind: Literal["type"]
    id: str = Field(pattern=TYPE_PATTERN, max_length=200)


# Something the user pointed at with ``@`` in the sidebar's input (issue 37): a node or config node, a tab or
# subflow (by id), a node type (``id`` is the type) or one of the user's earlier conversations (``id`` its session
# id). The service adds its compact configuration (secrets redacted), or the conversation's summary and last turns,
# to the question: :mod:`service.chat.mentions`. ``label`` is how the chip named it (kept with the question so a
# reload can show it). Which pattern ``id`` must match depends on ``kind``: a union the request schema shows
# (``oneOf`` by ``kind``), so that clients (and schemathesis) see the whole rule.
Mention = Annotated[IdMention | TypeMention, Field(discriminator="kind")]


MAX_ATTACHMENTS = 4                 # files one question may carry (images included)
MAX_IMAGE_BYTES = 3 * 1024 * 1024   # bytes of one image or PDF, decoded (the 4 MB body limit bounds them together)
MAX_ATTACHED_CHARS = 100_000        # characters of one text attachment
# Standard padded base64 of at most MAX_IMAGE_BYTES bytes, said in the schema (pattern, maxLength) so that clients
# and schemathesis see the whole rule: 4 characters per 3 bytes, and MAX_IMAGE_BYTES is a multiple of 3.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
BASE64_LIMIT = MAX_IMAGE_BYTES // 3 * 4


class ImageAttachment(BaseModel):
    """An image pasted or dropped into the sidebar's input (issue 37): sent to an image-capable model as an image
    part of the question, never stored (the turn keeps its ``name``)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["image"]
    mediaType: Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
    data: str = Field(min_length=4, max_length=BASE64_LIMIT, pattern=BASE64_PATTERN,
                      description=f"base64, at most {MAX_IMAGE_BYTES} bytes decoded")
    name: str | None = Field(None, max_length=200)


class TextAttachment(BaseModel):
    """A text file pasted or dropped into the input: its content goes to the model as data, secrets redacted."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["text"]
    name: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=MAX_ATTACHED_CHARS)


class PdfAttachment(BaseModel):
    """A PDF file: the service extracts its text (pypdf) and gives it to the model as a text attachment."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["pdf"]
    name: str = Field(min_length=1, max_length=200)
    data: str = Field(min_length=4, max_length=BASE64_LIMIT, pattern=BASE64_PATTERN,
                      description=f"base64, at most {MAX_IMAGE_BYTES} bytes decoded")


Attachment = Annotated[ImageAttachment | TextAttachment | PdfAttachment, Field(discriminator="kind")]


DOCUMENT_MEDIA_TYPES = ("text/markdown", "text/plain", "text/html", "application/pdf")


class DocumentUpload(BaseModel):
    """A document added to the Knowledge panel's library (issue 37), or replacing the one of the same name in the
    same scope: shared (needs write permission) or private to the caller."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f/\\]+$",
                      description="the file's name (no folder); its ending gives the type when mediaType is absent")
    data: str = Field(min_length=4, max_length=BASE64_LIMIT, pattern=BASE64_PATTERN,
                      description="the file, base64 (at most AI_SIDEBAR_DOCUMENT_MAX_BYTES decoded)")
    mediaType: Literal["text/markdown", "text/plain", "text/html", "application/pdf"] | None = None
    shared: bool = Field(False, description="true: every user sees it (write permission); false: only the caller")


class HistoryTurn(BaseModel):
    """An earlier turn the client sends along (the service's own memory comes later and wins)."""

    model_config = ConfigDict(extra="ignore")
    role: Literal["user", "assistant"]
    content: str = Field(max_length=50_000)


class DebugMessage(BaseModel):
    """A Debug sidebar message the user attached to a question: its source node, topic, property, format and the
    message as the Debug sidebar received it (Node-RED's encoded text, cut to 4,000 characters by the editor)."""

    model_config = ConfigDict(extra="ignore")
    nodeId: str | None = Field(None, pattern=ID_PATTERN)
    name: str | None = Field(None, max_length=500)
    topic: str | None = Field(None, max_length=500)
    property: str | None = Field(None, max_length=200)
    format: str | None = Field(None, max_length=100)
    msg: str = Field("", max_length=5000)


class ErrorSource(BaseModel):
    """The node that raised a caught error (Node-RED's ``msg.error.source``: ``id``, ``type``, ``name``)."""

    model_config = ConfigDict(extra="ignore")
    id: str | None = Field(None, pattern=ID_PATTERN)
    type: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=500)


class CaughtError(BaseModel):
    """An error a ``catch`` node caught, sent by an ``ai-chat`` node in the catch path (Node-RED's ``msg.error``:
    ``message``, ``source``, ``stack`` when the error had one, ``code`` when it had one). The node cuts message and
    stack to fit; secrets in them are redacted before the model sees them (:mod:`service.chat.prompts`)."""

    model_config = ConfigDict(extra="ignore")
    message: str = Field(max_length=5000)
    code: str | None = Field(None, max_length=200)
    source: ErrorSource | None = None
    stack: str | None = Field(None, max_length=10_000)


class DynamicData(BaseModel):
    model_config = ConfigDict(extra="ignore")
    flowId: str | None = Field(None, pattern=ID_PATTERN)


class ProviderOverride(BaseModel):
    """Settings of the ``ai-config`` node chosen in the editor or used by an ``ai-chat`` node. The Node-RED
    plugin runtime adds them (key included) on the token-protected link; the editor never sees the key.
    They win over the service's environment for this request."""

    # The provider's temperature range, said in the schema too (JSON Schema if/then, OpenAPI 3.1) so that clients
    # and schemathesis see that anthropic takes 0..1: the validator below is the rule, this its description.
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"properties": {"provider": {"const": "anthropic"}}, "required": ["provider"]},
        "then": {"properties": {"temperature": {"anyOf": [{"type": "number", "maximum": 1}, {"type": "null"}]}}},
    })
    provider: Provider
    model: str | None = Field(None, max_length=200)
    baseUrl: str | None = Field(None, max_length=500, pattern=r"^https?://")
    temperature: float | None = Field(None, ge=0, le=2)
    maxTokens: int | None = Field(None, ge=1, le=1_000_000)
    apiKey: SecretStr | None = Field(None, max_length=1000)
    deployment: str | None = Field(None, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                                   description="azure-openai: the deployment that answers (baseUrl: the resource)")
    apiVersion: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}(-preview)?$",
                                   description="azure-openai: the inference API version (unset: 2024-10-21)")
    memory: bool = True
    tools: bool = True
    toolCalling: bool = Field(True, description=(
        "false: the model cannot call tools (function calling): no agent; tools the service runs itself (from the "
        "question's words, @tools:) and retrieval still answer, and the sidebar says what the model cannot do"))
    images: bool | None = Field(None, description=(
        "whether the model takes images; unset: openai, google, anthropic and azure-openai do, the others not"))
    scenarios: list[str] | None = Field(None, max_length=20, description="allowed scenario keys; None: all")
    completionModel: str | None = Field(None, min_length=1, max_length=200, description=(
        "the model of this provider that answers inline completions (POST /ai-sidebar/complete); unset: model"))
    completionFim: Literal["auto", "on", "off"] = Field("auto", description=(
        "inline completion through the provider's fill-in-the-middle endpoint, as AI_COMPLETION_FIM says"))
    mcpServers: list[McpServerConfig] = Field(default_factory=list, max_length=10, description=(
        "the node's external MCP servers, for this request besides the service's own: streamable HTTP (url, "
        "headers) on a public address, or on one AI_SIDEBAR_MCP_ALLOWED_HOSTS allows, else 400 mcp_url_not_allowed; "
        "stdio (command, args, env) only with AI_SIDEBAR_MCP_REQUEST_STDIO=true, else 403 mcp_stdio_not_allowed; a "
        "name the service's own servers use is 400 invalid_request"))

    @field_validator("baseUrl")
    @classmethod
    def _base_url_parses(cls, value: str | None) -> str | None:
        """The model clients (OpenAI's, Gemini's) send through httpx: a URL httpx cannot parse (a control character,
        a host that is no IDNA name) or without a host would fail only at the first model call, as a 502."""
        if value is None:
            return value
        try:
            host = httpx.URL(value).host
        except httpx.InvalidURL as err:
            raise ValueError(f"baseUrl is not a usable URL: {err}") from None
        if not host:
            raise ValueError("baseUrl names no host")
        if any(char.isspace() for char in value):  # httpx quotes a space in a host; no server has one
            raise ValueError("baseUrl holds a space")
        return value

    @model_validator(mode="after")
    def _temperature_in_the_providers_range(self) -> ProviderOverride:
        """Anthropic's Messages API takes a temperature of 0 to 1 only (docs.anthropic.com, Messages API
        ``temperature``); the others 0 to 2."""
        if self.provider == "anthropic" and self.temperature is not None and self.temperature > 1:
            raise ValueError(f"temperature must be between 0 and 1 for anthropic; got {self.temperature}")
        return self


class StreamChatRequest(BaseModel):
    """Body of ``POST /ai-sidebar/stream-chat``.

    ``message`` length is checked by the handler against ``Settings.max_message_chars`` (413 ``message_too_long``),
    everything else here (400 ``invalid_request``).
    """

    model_config = ConfigDict(extra="ignore")
    message: str = Field(min_length=1)
    scenario: str | None = Field(None, max_length=64)
    sessionId: str | None = Field(None, pattern=ID_PATTERN)
    nodeId: str | None = Field(None, pattern=ID_PATTERN)
    selectedFlow: SelectedFlow | None = None
    selectedNodes: list[SelectedNode] = Field(default_factory=list, max_length=1000)
    debugMessages: list[DebugMessage] = Field(default_factory=list, max_length=5)
    error: CaughtError | None = Field(None, description=(
        "the caught msg.error an ai-chat node in a catch path asks about; with tools on, the service also reads "
        "the configuration of the node that raised it (get_node_info)"))
    flowData: Annotated[list[dict[str, Any]] | None,
                        PlainValidator(_flow_items, json_schema_input_type=list[dict[str, Any]] | None),
                        Field(json_schema_extra={"maxItems": MAX_FLOW_ITEMS})] = None
    lockedFlows: list[Annotated[str, Field(pattern=ID_PATTERN)]] | None = Field(
        None, max_length=MAX_FLOW_ITEMS, description=(
            "the ids of the tabs and subflows locked in the editor now, deployed or not (the sidebar sends it); "
            "with it every other tab and subflow counts as unlocked when a write is planned; without it the "
            "deployed flows' locked decides, but for the tabs in flowData"))
    mentions: list[Mention] = Field(default_factory=list, max_length=MAX_MENTIONS, description=(
        "what the user pointed at with @ in the sidebar (chips they did not remove): each one's compact "
        "configuration, secrets redacted, is added to the question (with tools on, like the named nodes)"))
    attachments: list[Attachment] = Field(default_factory=list, max_length=MAX_ATTACHMENTS, description=(
        "images (for an image-capable model, else an images_not_supported error), text files and PDFs (their "
        "text, secrets redacted) pasted or dropped into the sidebar's input; never stored but their names"))
    history: list[HistoryTurn] = Field(default_factory=list, max_length=50)
    display: str | None = Field(None, min_length=1, max_length=500, description=(
        "what the user sees of a direct trigger ('@tools:<name>|...') a button sends, e.g. 'Restore tab Alpha to "
        "10:42': stored as the question (a reload shows it) and names a new conversation; ignored with any other "
        "message"))
    silent: bool = False
    dynamicData: DynamicData | None = None
    language: str | None = Field(None, max_length=35)
    provider: ProviderOverride | None = None
    apply: Literal["deploy", "editor"] = Field("deploy", description=(
        "where an approved write lands: deploy (the Admin API, flows revision checked) or editor (a flow_change "
        "event for the sidebar to apply undeployed, as one undoable edit); the sidebar sends editor"))
    mode: Literal["ask", "agent", "plan"] | None = Field(None, description=(
        "the sidebar's mode: ask offers the model no write tools (read tools and knowledge stay; a request to "
        "change gets a change_needs_agent notice), agent (or none) offers what the caller may use, plan (or a "
        "message starting with '/plan ') reads and proposes a plan before any write"))

    @property
    def flow_id(self) -> str | None:
        """The flow the request is about: ``selectedFlow.id``, else ``dynamicData.flowId``."""
        if self.selectedFlow is not None:
            return self.selectedFlow.id
        if self.dynamicData is not None:
            return self.dynamicData.flowId
        return None


CODE_LIMIT = 100_000  # characters of one code part, expression or JSON text the assist request may carry


class FunctionCode(BaseModel):
    """The three code parts of a function node's edit dialog (Node-RED's ``func``, ``initialize``, ``finalize``)."""

    model_config = ConfigDict(extra="forbid")
    onMessage: str = Field("", max_length=CODE_LIMIT)
    onStart: str = Field("", max_length=CODE_LIMIT)
    onStop: str = Field("", max_length=CODE_LIMIT)


class FunctionLib(BaseModel):
    """A module of the function node's Setup tab: the variable it is bound to and the npm module."""

    model_config = ConfigDict(extra="forbid")
    var: str = Field(max_length=200)
    module: str = Field(max_length=300)


class AssistContext(BaseModel):
    """What the edit dialog knows (contracts20): the node, and per kind the current code, expression or JSON. The
    wired neighbours, recent input messages and the Node-RED version are added by the service, never taken from
    here."""

    model_config = ConfigDict(extra="forbid")
    nodeId: str | None = Field(None, pattern=ID_PATTERN)
    nodeType: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=500)
    tabId: str | None = Field(None, pattern=ID_PATTERN)
    code: FunctionCode | None = None
    outputs: int | None = Field(None, ge=0, le=100)
    libs: list[FunctionLib] = Field(default_factory=list, max_length=50)
    expression: str | None = Field(None, max_length=CODE_LIMIT)
    testMessage: Any = None
    value: str | None = Field(None, max_length=CODE_LIMIT)


class AssistRequest(BaseModel):
    """Body of ``POST /ai-sidebar/assist``: a one-shot proposal for a node edit dialog (contracts20).

    ``description`` length is checked by the handler against ``Settings.max_message_chars`` (413
    ``message_too_long``); everything else here (400 ``invalid_request``).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["function", "jsonata", "json"]
    description: str = Field(min_length=1)
    language: str | None = Field(None, max_length=35)
    provider: ProviderOverride | None = None
    context: AssistContext = Field(default_factory=AssistContext)


class TestProviderRequest(BaseModel):
    """Body of ``POST /ai-sidebar/test-provider``: the provider to try (an ``ai-config`` node's settings, put in by
    the plugin from ``configId``; none: the service's own) and the language of an error's sentence."""

    model_config = ConfigDict(extra="ignore")
    provider: ProviderOverride | None = None
    language: str | None = Field(None, max_length=35)


class ExecuteToolRequest(BaseModel):
    """Body of ``POST /ai-sidebar/execute-tool``: a tool name and its parameters (an object, or a list of
    positional values as in ``@tools:name|[...]``)."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    params: dict[str, Any] | list[Any] | None = None


class ApproveDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["approve"]
    planChanges: bool | None = Field(None, description="a plan only: its listed writes then run without a card")
    parts: list[Annotated[str, Field(min_length=1, max_length=300)]] | None = Field(
        None, min_length=1, max_length=2000, description=(
            "a write: the ids of the card's parts the user ticked (its action's parts); only those are applied. "
            "Absent: all of them"))


class EditDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["edit"]
    args: dict[str, Any] | None = Field(None, description="a write: the arguments to run the tool with instead "
                                                          "(checked like the model's: 400 invalid_params when wrong)")
    message: str | None = Field(None, min_length=1, max_length=2000,
                                description="a plan: what to change in it, told to the model")


class RejectDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["reject"]
    message: str | None = Field(None, max_length=2000, description="why: the model is told")


class AnswerChoice(BaseModel):
    """The ``answer`` of a resume that picks one of the question's ``choices``."""

    model_config = ConfigDict(extra="forbid")
    choice: str = Field(min_length=1, max_length=200)


class AnswerText(BaseModel):
    """The ``answer`` of a resume in the user's own words (a question with ``free: true``)."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=2000)


Answer = AnswerChoice | AnswerText


class ResumeRequest(BaseModel):
    """Body of ``POST /ai-sidebar/resume``: the resume token of an ``approval_required`` event and one decision
    per action, in the event's order. ``provider`` and ``language`` are as in stream-chat (an ``ai-config`` node's
    key is never stored with a paused run, so the plugin sends it again)."""

    model_config = ConfigDict(extra="forbid")
    resumeToken: str = Field(min_length=20, max_length=200, pattern=r"^[A-Za-z0-9_\-]+$")
    decisions: list[Annotated[ApproveDecision | EditDecision | RejectDecision, Field(discriminator="type")]] = \
        Field(default_factory=list, max_length=50)
    answer: Answer | None = Field(None, description="the answer to a ``question`` event, instead of decisions")
    provider: ProviderOverride | None = None
    language: str | None = Field(None, max_length=35)


class EmptyBody(BaseModel):
    """Body of ``POST /ai-sidebar/approvals/{runId}/token`` and ``POST /ai-sidebar/mcp-grants/{grantId}/revoke``: an
    empty JSON object (a JSON body, so that a web page cannot send it cross-site)."""

    model_config = ConfigDict(extra="forbid")


class AppliedProblem(BaseModel):
    """Why the editor applied nothing (resources/flow-change.js ``problemWith``)."""

    model_config = ConfigDict(extra="forbid")
    reason: Literal["missing", "locked", "applied", "failed"]
    ids: list[Annotated[str, Field(max_length=128)]] = Field(default_factory=list, max_length=100)
    message: str | None = Field(None, max_length=500)


class AppliedOutcome(BaseModel):
    """What the editor made of a ``flow_change``: the counts it applied, or its ``problem``."""

    model_config = ConfigDict(extra="forbid")
    added: int = Field(0, ge=0, le=100_000)
    tabs: int = Field(0, ge=0, le=100_000)
    changed: int = Field(0, ge=0, le=100_000)
    removed: int = Field(0, ge=0, le=100_000)
    tab: str | None = Field(None, max_length=128)
    problem: AppliedProblem | None = None


class AppliedRequest(BaseModel):
    """Body of ``POST /ai-sidebar/approvals/{runId}/applied``: the write tool whose ``flow_change`` the editor
    applied, and its outcome, kept so that the reopened conversation says the same."""

    model_config = ConfigDict(extra="forbid")
    tool: str = Field(min_length=1, max_length=128)
    outcome: AppliedOutcome
    # What the editor made of the applied change since (resources/approval/applied-watch.js): given, it updates the
    # newest report of ``tool`` instead of adding one ("applied" again after a Redo clears it).
    later: Literal["applied", "undone", "changed"] | None = None


MAX_JSON_DEPTH = 200  # jiter's recursion limit (pydantic-core's JSON parser): deeper nesting is refused


def load_json(raw: bytes | str) -> Any:
    """Parse JSON text with nesting bounded, so nothing recursive later (validation, redaction, ``json.dumps``)
    can meet a structure deep enough to exhaust the stack.

    pydantic-core's ``from_json`` (Rust, jiter) refuses nesting deeper than about :data:`MAX_JSON_DEPTH` levels
    without recursing in Python; it is as fast as ``json.loads``. It is stricter in one way: a lone UTF-16
    surrogate escape (``"\\ud800"``) is refused.

    Raises:
        ValueError: not JSON, or nested too deeply (the message says which and where).
    """
    return pydantic_core.from_json(raw)
