"""Service configuration: environment variables (DESIGN.md, "Processes, ports, configuration"), an optional YAML
file named by ``AI_SIDEBAR_CONFIG`` holding the same names, environment winning over the file."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from service.mcp_addresses import AddressPolicy
from service.nodered.settings import (
    CONFIG_FILE_VARIABLE,
    EvidenceSettings,
    HostGuarded,
    NodeRedSettings,
    SettingsError,
    is_loopback,
)
from service.nodered.write_tools import WRITE_TOOL_NAMES

# The kinds of personal data AI_SIDEBAR_PII may mask (service.llm.pii holds a detector for each), in checking order.
PII_TYPES: tuple[str, ...] = ("iban", "credit_card", "email", "ip", "phone")


def parse_types(setting: str) -> tuple[str, ...]:
    """``AI_SIDEBAR_PII``'s value as the types to mask, in checking order: a comma-separated list of
    :data:`PII_TYPES`, ``all`` (or empty) for all, ``off`` for none.

    Raises:
        ValueError: an unknown type (the message lists the known ones).
    """
    words = {word.strip().lower() for word in setting.split(",") if word.strip()}
    if words == {"off"}:
        return ()
    if not words or words == {"all"}:
        return PII_TYPES
    unknown = sorted(words - set(PII_TYPES))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} is not a PII type; use {', '.join(PII_TYPES)}, all or off")
    return tuple(kind for kind in PII_TYPES if kind in words)


class ModelPrice(BaseModel):
    """One model's price: ``input`` and ``output`` in USD per 1 million tokens, ``source`` the page they come from
    and ``checked`` the date they were taken (both optional in an operator's own entries). ``cache_read`` and
    ``cache_write``: USD per 1 million input tokens read from or written to the provider's prompt cache (Anthropic's
    prompt caching); unset, those tokens cost ``input``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(None, ge=0)
    cache_write: float | None = Field(None, ge=0)
    source: str | None = None
    checked: date | None = None


__all__ = ["ENV_FIELDS", "PII_TYPES", "EvidenceSettings", "ModelPrice", "NodeRedSettings", "Settings", "SettingsError",
           "bundled", "is_loopback", "parse_types"]

# The providers a setting may name; those this installation can answer with are
# service.llm.providers.SUPPORTED_PROVIDERS (what the ai-config dialog offers, from GET /ai-sidebar/scenarios).
Provider = Literal["openai", "deepseek", "google", "anthropic", "azure-openai", "openai-compatible"]
PROVIDERS: tuple[str, ...] = get_args(Provider)
REPO_ROOT = Path(__file__).resolve().parent.parent
# When a write tool asks the user before it runs (AI_SIDEBAR_APPROVAL, per tool; a tool not named: "always").
# "unless_new_tab_only": no card when the change only adds a new tab (create_tab, add_nodes onto a new tab);
# "never_on_test_tabs": no card when every tab it touches is a test tab (env AI_SIDEBAR_TEST_TAB=true);
# "never": no card. A call without a card still leaves an approval record (decided by "policy").
ApprovalPolicy = Literal["always", "never", "unless_new_tab_only", "never_on_test_tabs"]


def bundled(name: str) -> Path:
    """The ``locales`` or ``examples`` folder: inside the installed package (a wheel ships them as
    ``service/locales``, ``service/examples``; see pyproject.toml), else the checkout's top-level folder."""
    packaged = Path(__file__).resolve().parent / name
    return packaged if packaged.is_dir() else REPO_ROOT / name


def _one_of_schema(schema: dict[str, Any]) -> None:
    """``McpServerConfig``'s JSON Schema: ``command`` and ``url`` are strings (not null), and exactly one is given."""
    properties = schema["properties"]
    for key in ("command", "url"):
        properties[key] = next(option for option in properties[key]["anyOf"] if option.get("type") == "string")
    schema["oneOf"] = [{"required": ["command"], "not": {"required": ["url"]}},
                       {"required": ["url"], "not": {"required": ["command"]}}]


class McpServerConfig(BaseModel):
    """One external MCP server (``MCP_SERVERS``, in the YAML file ``mcpServers:``): ``name`` (its tools are offered
    as ``<name>__<tool>``), and either a stdio ``command`` with ``args`` and ``env`` or a streamable HTTP ``url``
    with ``headers``. ``env`` values and ``headers`` are secrets: never logged or returned. ``startTimeout`` and
    ``callTimeout`` are seconds."""

    # The JSON Schema says what the validator below checks: exactly one of command and url, as a string.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, json_schema_extra=_one_of_schema)

    name: str = Field(pattern=r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$", max_length=24)
    command: str | None = Field(None, min_length=1, max_length=1000)
    args: list[str] = Field(default_factory=list, max_length=100)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str | None = Field(None, pattern=r"^https?://", max_length=2000)
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    start_timeout: float = Field(15.0, gt=0, le=600, alias="startTimeout")
    call_timeout: float = Field(60.0, gt=0, le=3600, alias="callTimeout")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name}: give either command (stdio) or url (streamable HTTP)")
        return self


class Settings(HostGuarded):
    """Everything the service reads from its environment (each field's ``validation_alias`` is its variable); the
    Node-RED part is the core model :class:`NodeRedSettings`, the one the MCP server reads too. Secrets are
    ``SecretStr``: never log the model whole."""

    host: str = Field("127.0.0.1", validation_alias="AI_SIDEBAR_HOST")
    port: int = Field(8765, ge=0, le=65535, validation_alias="AI_SIDEBAR_PORT")
    token: SecretStr | None = Field(None, validation_alias="AI_SIDEBAR_TOKEN")
    allowed_hosts: str | None = Field(None, validation_alias="AI_SIDEBAR_ALLOWED_HOSTS",
                                           description="host names (comma-separated, any port) requests may name "
                                                       "in Host and Origin besides localhost, 127.0.0.1, [::1] and "
                                                       "AI_SIDEBAR_HOST; * allows any (DNS-rebinding guard)")

    nodered: NodeRedSettings = Field(default_factory=NodeRedSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)

    provider: Provider = Field("openai", validation_alias="AI_PROVIDER")
    model: str | None = Field(None, validation_alias="AI_MODEL")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    deepseek_api_key: SecretStr | None = Field(None, validation_alias="DEEPSEEK_API_KEY")
    deepseek_api_base: str | None = Field(None, validation_alias="DEEPSEEK_API_BASE")
    google_api_key: SecretStr | None = Field(None, validation_alias="GOOGLE_API_KEY")
    anthropic_api_key: SecretStr | None = Field(None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(None, validation_alias="ANTHROPIC_BASE_URL",
                                           description="a proxy or gateway in front of the Anthropic API (unset: "
                                                       "https://api.anthropic.com); the variable the anthropic SDK "
                                                       "reads itself")
    azure_openai_api_key: SecretStr | None = Field(None, validation_alias="AZURE_OPENAI_API_KEY")
    azure_openai_endpoint: str | None = Field(None, validation_alias="AZURE_OPENAI_ENDPOINT", pattern=r"^https?://",
                                              description="the Azure OpenAI resource, "
                                                          "https://<resource>.openai.azure.com")
    azure_openai_deployment: str | None = Field(None, validation_alias="AZURE_OPENAI_DEPLOYMENT",
                                                description="the deployment that answers (it picks the model)")
    azure_openai_api_version: str | None = Field(None, validation_alias="AZURE_OPENAI_API_VERSION",
                                                 pattern=r"^\d{4}-\d{2}-\d{2}(-preview)?$",
                                                 description="the inference API version (unset: 2024-10-21)")
    model_tool_calling: bool = Field(True, validation_alias="AI_MODEL_TOOL_CALLING",
                                     description="false: AI_MODEL cannot call tools (many local models): questions "
                                                 "go down the paths without the agent (tools the service runs, "
                                                 "retrieval) and the sidebar says so")
    model_images: bool | None = Field(None, validation_alias="AI_MODEL_IMAGES",
                                      description="whether AI_MODEL takes images (attachments); unset: openai, "
                                                  "google, anthropic and azure-openai do, the others not")
    llm_timeout: float = Field(60.0, gt=0, validation_alias="AI_LLM_TIMEOUT",
                               description="seconds a model call may take to start answering, its client's retries "
                                           "included")
    agent_max_model_calls: int = Field(8, ge=1, le=100, validation_alias="AI_AGENT_MAX_MODEL_CALLS")
    agent_max_tool_calls: int = Field(12, ge=1, le=200, validation_alias="AI_AGENT_MAX_TOOL_CALLS")
    agent_time_limit: float = Field(120.0, gt=0, validation_alias="AI_AGENT_TIME_LIMIT",
                                    description="seconds for one whole agent run")

    memory_db_path: Path = Field(Path("./data/memory.db"), validation_alias="MEMORY_DB_PATH")
    database_url: SecretStr | None = Field(
        None, validation_alias="DATABASE_URL",
        description="postgresql://user:password@host:port/database: memory, sessions, approvals, usage and the "
                    "open streams on that PostgreSQL server, shared by every replica; unset: SQLite at "
                    "MEMORY_DB_PATH (which holds each replica's knowledge index either way)")
    memory_retention_days: int = Field(30, ge=0, validation_alias="MEMORY_RETENTION_DAYS")
    flow_history: bool = Field(True, validation_alias="AI_SIDEBAR_FLOW_HISTORY",
                               description="keep every deploy's flows in the memory database (issue 35)")
    flow_history_keep: int = Field(1000, ge=1, validation_alias="AI_SIDEBAR_FLOW_HISTORY_KEEP",
                                    description="deploys kept at most (pinned ones besides)")
    flow_history_days: float = Field(90.0, ge=0, validation_alias="AI_SIDEBAR_FLOW_HISTORY_DAYS",
                                     description="days a deploy is kept (0: no age limit; pinned ones always)")
    knowledge_refresh: float = Field(30.0, ge=0, validation_alias="AI_SIDEBAR_KNOWLEDGE_REFRESH",
                                     description="seconds between refreshes of the knowledge index from Node-RED "
                                                 "(0: no automatic refresh, only POST /ai-sidebar/knowledge/reindex)")

    approval_ttl: int = Field(3600, ge=1, le=30 * 86_400, validation_alias="AI_SIDEBAR_APPROVAL_TTL",
                              description="seconds a resume token of a run waiting for approval stays valid")
    approval_max_bytes: int = Field(262_144, ge=4096, le=16 * 1024 * 1024,
                                    validation_alias="AI_SIDEBAR_APPROVAL_MAX_BYTES",
                                    description="bytes (UTF-8 JSON) of one approval card's arguments and diff; a "
                                                "larger write is refused with approval_too_large")
    build_max_rounds: int = Field(3, ge=1, le=20, validation_alias="AI_SIDEBAR_BUILD_MAX_ROUNDS",
                                  description="check rounds of a plan's build (the first check and its fixes) before "
                                              "the verdict is not_done")
    max_pending_approvals: int = Field(20, ge=1, le=10_000, validation_alias="AI_SIDEBAR_MAX_PENDING_APPROVALS",
                                       description="approvals one identity may leave waiting; one more is refused "
                                                   "with too_many_pending_approvals")
    approval: dict[str, ApprovalPolicy] = Field(default_factory=dict, validation_alias="AI_SIDEBAR_APPROVAL",
                                                description="write tool name → approval policy (default always)")
    knowledge_min_relevance: float = Field(0.25, ge=0, le=1, validation_alias="AI_SIDEBAR_KNOWLEDGE_MIN_RELEVANCE",
                                           description="share of a question's search terms a retrieved chunk must "
                                                       "hold to reach the model (0: keep every chunk)")
    document_max_bytes: int = Field(2_000_000, ge=1_000, le=3 * 1024 * 1024,
                                    validation_alias="AI_SIDEBAR_DOCUMENT_MAX_BYTES",
                                    description="bytes one document of the Knowledge panel may have (larger: 413 "
                                                "document_too_large; at most 3 MB, the request body bounds it)")
    documents_per_user: int = Field(50, ge=1, le=10_000, validation_alias="AI_SIDEBAR_DOCUMENTS_PER_USER",
                                    description="documents one user may add, shared and private together (more: "
                                                "409 document_limit; replacing one does not count)")
    router_model: bool = Field(False, validation_alias="AI_SIDEBAR_ROUTER_MODEL",
                               description="ask the model which knowledge store a message needs when no keyword "
                                           "phrase decides (one more model call before such an answer)")
    embedding_model: str | None = Field(None, validation_alias="AI_SIDEBAR_EMBEDDING_MODEL",
                                        description="embedding model of AI_PROVIDER for the knowledge index's "
                                                    "vector ranking (unset: full-text ranking alone)")

    prices: dict[Provider, dict[str, ModelPrice]] = Field(
        default_factory=dict, validation_alias="AI_SIDEBAR_PRICES",
        description="provider → model → {input, output} USD per 1 million tokens, over service/llm/prices.yaml")
    daily_token_budget: int = Field(0, ge=0, validation_alias="AI_SIDEBAR_DAILY_TOKEN_BUDGET",
                                    description="input plus output tokens each caller may use per UTC day "
                                                "(0: no budget)")
    user_token_budgets: dict[str, int] = Field(default_factory=dict, validation_alias="AI_SIDEBAR_USER_TOKEN_BUDGETS",
                                               description="Node-RED user name → daily token budget, replacing "
                                                           "AI_SIDEBAR_DAILY_TOKEN_BUDGET for that user (0: none)")

    context_tokens: int | None = Field(None, ge=512, validation_alias="AI_SIDEBAR_CONTEXT_TOKENS",
                                       description="input tokens one model request may hold (the history is "
                                                   "summarised to fit); unset: the model's window")
    answer_tokens: int | None = Field(None, ge=64, validation_alias="AI_SIDEBAR_ANSWER_TOKENS",
                                      description="tokens of each request's budget kept for the model's answer; "
                                                  "unset: an eighth of the budget, at most 1,024")
    tool_search_threshold: int = Field(20, ge=1, validation_alias="AI_SIDEBAR_TOOL_SEARCH_THRESHOLD",
                                       description="above this many tools the model picks at most 10 per request "
                                                   "(LangChain's LLMToolSelectorMiddleware)")

    mcp_servers: list[McpServerConfig] = Field(default_factory=list, validation_alias="MCP_SERVERS",
                                               description="external MCP servers whose tools join the agent's")
    mcp_request_stdio: bool = Field(False, validation_alias="AI_SIDEBAR_MCP_REQUEST_STDIO",
                                    description="accept stdio MCP servers an ai-config node sends with a request "
                                                "(each runs a command on the service's host, so only where every "
                                                "user who may edit flows may also run programs there); streamable "
                                                "HTTP servers of a request are accepted on public addresses")
    mcp_allowed_hosts: str = Field("", validation_alias="AI_SIDEBAR_MCP_ALLOWED_HOSTS",
                                   description="host names (*.domain for the names below it), addresses and CIDR "
                                               "ranges (comma-separated) on which an ai-config node's MCP servers "
                                               "may be although they are not public (loopback, private, link-local "
                                               "and the like, which are refused otherwise)")

    pii: str = Field("all", validation_alias="AI_SIDEBAR_PII",
                     description="PII types masked before text reaches a model: email, phone, iban, credit_card, ip "
                                 "(comma-separated), all, or off")
    trace_content: bool = Field(False, validation_alias="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                                description="record message text in model call spans (tracing: OTEL_* variables)")

    mcp_tools_enabled: bool = Field(True, validation_alias="MCP_TOOLS_ENABLED")
    mcp_server_path: str | None = Field(None, validation_alias="MCP_SERVER_PATH")
    mcp_transport: Literal["memory", "stdio"] | None = Field(
        None, validation_alias="MCP_TRANSPORT",
        description="how the service reaches its own MCP server: memory (in the service's process, the default) "
                    "or stdio (a child process; the default when MCP_SERVER_PATH is set)")

    mcp_auth_db: str | None = Field(
        None, validation_alias="AI_SIDEBAR_MCP_AUTH_DB",
        description="the MCP server's sign-in database (its MCP_AUTH_DB): the sidebar lists and revokes its user's "
                    "MCP grants there")
    mcp_instance: str = Field(
        "", validation_alias="AI_SIDEBAR_MCP_INSTANCE",
        description="this Node-RED's name in the MCP server's MCP_NODERED_INSTANCES (empty: the server fronts it "
                    "alone)")

    locales_dir: Path = Field(bundled("locales"), validation_alias="AI_SIDEBAR_LOCALES_DIR")
    templates_path: Path = bundled("examples") / "flows.json"
    max_message_chars: int = 10_000
    completion: bool = Field(True, validation_alias="AI_SIDEBAR_COMPLETION",
                             description="inline completion in the edit dialogs (false: 403 completion_disabled)")
    completion_model: str | None = Field(None, min_length=1, max_length=200, validation_alias="AI_COMPLETION_MODEL",
                                         description="a separate, usually smaller and faster model of AI_PROVIDER "
                                                     "for inline completion (default: AI_MODEL)")
    completion_fim: Literal["auto", "on", "off"] = Field(
        "auto", validation_alias="AI_COMPLETION_FIM",
        description="inline completion through the provider's fill-in-the-middle endpoint (prompt + suffix): auto "
                    "(DeepSeek's /beta/completions; others not), on (also openai and openai-compatible servers' "
                    "/v1/completions, e.g. Ollama with a code model), off (the chat model with a prefix/suffix "
                    "prompt); a model whose server refuses it answers with the chat prompt")
    max_streams_per_user: int = Field(4, ge=1, le=1000, validation_alias="AI_SIDEBAR_MAX_STREAMS_PER_USER")
    max_body_bytes: int = 4 * 1024 * 1024
    token_coalesce_ms: float = Field(15.0, ge=0, le=1000, validation_alias="AI_SIDEBAR_TOKEN_COALESCE_MS",
                                     description="milliseconds within which streamed tokens are joined into one "
                                                 "token event (0: one event per model chunk)")
    workers: int | None = Field(None, ge=1, le=256, validation_alias="AI_SIDEBAR_WORKERS",
                                description="service processes sharing the port (default 1: each one is about "
                                            "145 MB with its MCP server in-process)")
    read_timeout: float = Field(30.0, gt=0, validation_alias="AI_SIDEBAR_READ_TIMEOUT",
                                description="seconds a client has to send a request's headers (from connecting, or "
                                            "after the previous answer), and again its body")

    @field_validator("embedding_model")
    @classmethod
    def _numpy_installed(cls, value: str | None) -> str | None:
        # numpy is the extra "embeddings" (issue 33: 73 MB that a default install does not need); say how to get it
        # at start rather than when the first vectors are computed.
        if value and importlib.util.find_spec("numpy") is None:
            raise ValueError("needs numpy, which is not installed: pip install 'node-red-ai-sidebar[embeddings]'")
        return value

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("DATABASE_URL must start with postgresql://")
        return value

    def memory_target(self) -> str | Path:
        """Where the memory lives: ``DATABASE_URL`` when set, else the SQLite file ``MEMORY_DB_PATH``."""
        return self.database_url.get_secret_value() if self.database_url is not None else self.memory_db_path

    @field_validator("approval")
    @classmethod
    def _write_tools_only(cls, policies: dict[str, ApprovalPolicy]) -> dict[str, ApprovalPolicy]:
        unknown = sorted(set(policies) - set(WRITE_TOOL_NAMES))
        if unknown:
            raise ValueError(f"{', '.join(unknown)} is not a write tool; write tools: {', '.join(WRITE_TOOL_NAMES)}")
        return policies

    @field_validator("mcp_servers")
    @classmethod
    def _unique_servers(cls, servers: list[McpServerConfig]) -> list[McpServerConfig]:
        names = [server.name for server in servers]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"MCP server names must be unique: {', '.join(twice)}")
        return servers

    @field_validator("mcp_allowed_hosts")
    @classmethod
    def _allow_list(cls, setting: str) -> str:
        AddressPolicy.parse(setting)
        return setting

    @model_validator(mode="after")
    def _mcp_transport(self) -> Settings:
        if self.mcp_transport == "memory" and self.mcp_server_path:
            raise ValueError("MCP_SERVER_PATH names a program to run as a stdio child: unset it, or set "
                             "MCP_TRANSPORT=stdio (or leave MCP_TRANSPORT unset)")
        return self

    @property
    def mcp_in_process(self) -> bool:
        """Whether the service's own MCP server runs in its process over memory streams (``MCP_TRANSPORT``, by
        default yes unless ``MCP_SERVER_PATH`` names a program for a stdio child)."""
        return self.mcp_transport == "memory" or (self.mcp_transport is None and not self.mcp_server_path)

    @property
    def mcp_address_policy(self) -> AddressPolicy:
        """Where the MCP servers of requests may be (``AI_SIDEBAR_MCP_ALLOWED_HOSTS``, see
        :class:`~service.mcp_addresses.AddressPolicy`)."""
        return AddressPolicy.parse(self.mcp_allowed_hosts)

    @field_validator("pii")
    @classmethod
    def _known_pii_types(cls, setting: str) -> str:
        parse_types(setting)
        return setting

    @property
    def pii_types(self) -> tuple[str, ...]:
        """The PII types to mask, in checking order (empty: ``AI_SIDEBAR_PII=off``)."""
        return parse_types(self.pii)

    @field_validator("user_token_budgets")
    @classmethod
    def _budgets_not_negative(cls, budgets: dict[str, int]) -> dict[str, int]:
        negative = sorted(name for name, budget in budgets.items() if budget < 0)
        if negative:
            raise ValueError(f"the budget of {', '.join(negative)} is negative; use 0 for no budget")
        return budgets

    def token_budget(self, user: str | None) -> int:
        """The daily token budget (input plus output tokens per UTC day) of Node-RED user ``user`` (``None``: a
        caller that is not a named user: the anonymous editor, an ``ai-chat`` node); 0 means no budget."""
        if user is not None and user in self.user_token_budgets:
            return self.user_token_budgets[user]
        return self.daily_token_budget

    def approval_policy(self, tool: str) -> ApprovalPolicy:
        """The approval policy of write tool ``tool`` (``always`` unless configured)."""
        return self.approval.get(tool, "always")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default ``os.environ``; empty values ignored) over the YAML file
        ``AI_SIDEBAR_CONFIG``, whose keys are the same variable names.

        Raises:
            SettingsError: the file is unreadable or a value is invalid (the message names the variable).
        """
        env = os.environ if env is None else env
        config_file = env.get(CONFIG_FILE_VARIABLE) or None
        nodered = NodeRedSettings.load(env, config_file, accepted=ENV_FIELDS)
        evidence = EvidenceSettings.load(env, config_file, accepted=ENV_FIELDS)
        return cls.load(env, config_file, accepted=ENV_FIELDS, nodered=nodered, evidence=evidence)

    def check_bind(self) -> None:
        """Refuse a non-loopback bind without ``AI_SIDEBAR_TOKEN`` (DESIGN.md).

        Raises:
            SettingsError: host is not a loopback address and no token is set.
        """
        if self.token is None and not is_loopback(self.host):
            raise SettingsError(f"AI_SIDEBAR_HOST={self.host} is not a loopback address: set AI_SIDEBAR_TOKEN "
                                "so that only the Node-RED plugin can call the service.")


# Environment variable → field (``nodered.<field>`` for the Node-RED part): the names a YAML file may hold.
ENV_FIELDS: dict[str, str] = {
    **{name: f"nodered.{field}" for name, field in NodeRedSettings.env_fields().items()},
    **{name: f"evidence.{field}" for name, field in EvidenceSettings.env_fields().items()},
    **Settings.env_fields(),
}
