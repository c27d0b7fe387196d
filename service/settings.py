"""Service configuration: environment variables (DESIGN.md, "Processes, ports, configuration"), an optional YAML
file named by ``AI_SIDEBAR_CONFIG`` holding the same names, environment winning over the file."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

# The one list of providers: the ai-config node's editor reads it from GET /ai-sidebar/scenarios (``providers``).
Provider = Literal["openai", "deepseek", "google", "anthropic", "openai-compatible"]
PROVIDERS: tuple[str, ...] = get_args(Provider)
REPO_ROOT = Path(__file__).resolve().parent.parent


def bundled(name: str) -> Path:
    """The ``locales`` or ``examples`` folder: inside the installed package (a wheel ships them as
    ``service/locales``, ``service/examples``; see pyproject.toml), else the checkout's top-level folder."""
    packaged = Path(__file__).resolve().parent / name
    return packaged if packaged.is_dir() else REPO_ROOT / name


# Environment name → Settings field.
ENV_FIELDS: dict[str, str] = {
    "AI_SIDEBAR_HOST": "host",
    "AI_SIDEBAR_PORT": "port",
    "AI_SIDEBAR_TOKEN": "token",
    "NODE_RED_URL": "nodered_url",
    "NODE_RED_TOKEN": "nodered_token",
    "NODE_RED_USERNAME": "nodered_username",
    "NODE_RED_PASSWORD": "nodered_password",
    "NODE_RED_TIMEOUT": "nodered_timeout",
    "AI_PROVIDER": "provider",
    "AI_MODEL": "model",
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "DEEPSEEK_API_KEY": "deepseek_api_key",
    "DEEPSEEK_API_BASE": "deepseek_api_base",
    "GOOGLE_API_KEY": "google_api_key",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "MEMORY_DB_PATH": "memory_db_path",
    "MEMORY_RETENTION_DAYS": "memory_retention_days",
    "MCP_TOOLS_ENABLED": "mcp_tools_enabled",
    "MCP_SERVER_PATH": "mcp_server_path",
    "AI_SIDEBAR_LOCALES_DIR": "locales_dir",
    "AI_LLM_TIMEOUT": "llm_timeout",
    "AI_SIDEBAR_MAX_STREAMS_PER_USER": "max_streams_per_user",
    "AI_AGENT_MAX_MODEL_CALLS": "agent_max_model_calls",
    "AI_AGENT_MAX_TOOL_CALLS": "agent_max_tool_calls",
    "AI_AGENT_TIME_LIMIT": "agent_time_limit",
    "AI_SIDEBAR_READ_TIMEOUT": "read_timeout",
}


class SettingsError(ValueError):
    """The configuration is unusable; the message names the variable to fix."""


class Settings(BaseModel):
    """Everything the service reads from its environment. Secrets are ``SecretStr``: never log the model whole."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    token: SecretStr | None = None

    nodered_url: str = "http://127.0.0.1:1880"
    nodered_token: SecretStr | None = None
    nodered_username: str | None = None
    nodered_password: SecretStr | None = None
    nodered_timeout: float = Field(10.0, gt=0, description="seconds for one Admin API request")

    provider: Provider = "openai"
    model: str | None = None
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    deepseek_api_key: SecretStr | None = None
    deepseek_api_base: str | None = None
    google_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    llm_timeout: float = Field(60.0, gt=0, description="seconds a model call may take to start answering, "
                                                       "its client's retries included")
    agent_max_model_calls: int = Field(8, ge=1, le=100)
    agent_max_tool_calls: int = Field(12, ge=1, le=200)
    agent_time_limit: float = Field(120.0, gt=0, description="seconds for one whole agent run")

    memory_db_path: Path = Path("./data/memory.db")
    memory_retention_days: int = Field(30, ge=0)

    mcp_tools_enabled: bool = True
    mcp_server_path: str | None = None

    locales_dir: Path = bundled("locales")
    templates_path: Path = bundled("examples") / "flows.json"
    max_message_chars: int = 10_000
    max_streams_per_user: int = Field(4, ge=1, le=1000)
    max_body_bytes: int = 4 * 1024 * 1024
    read_timeout: float = Field(30.0, gt=0, description="seconds a client has to send a request's headers (from "
                                                        "connecting, or after the previous answer), and again its body")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``env`` (default ``os.environ``) over the YAML file ``AI_SIDEBAR_CONFIG``.

        Raises:
            SettingsError: the file is unreadable or a value is invalid (the message names the variable).
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        config_path = env.get("AI_SIDEBAR_CONFIG")
        if config_path:
            try:
                loaded = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError) as err:
                raise SettingsError(f"AI_SIDEBAR_CONFIG={config_path} cannot be read: {err}") from None
            if not isinstance(loaded, dict):
                raise SettingsError(f"AI_SIDEBAR_CONFIG={config_path} must hold a mapping of setting names")
            for name, value in loaded.items():
                if str(name).upper() not in ENV_FIELDS:
                    raise SettingsError(f"AI_SIDEBAR_CONFIG: unknown setting {name!r}")
                values[ENV_FIELDS[str(name).upper()]] = value
        for name, field_name in ENV_FIELDS.items():
            if env.get(name, "") != "":
                values[field_name] = env[name]
        try:
            return cls(**values)
        except ValidationError as err:
            first = err.errors()[0]
            field_name = str(first["loc"][0]) if first["loc"] else "?"
            env_name = next((k for k, v in ENV_FIELDS.items() if v == field_name), field_name)
            raise SettingsError(f"{env_name}: {first['msg']}") from None

    def check_bind(self) -> None:
        """Refuse a non-loopback bind without ``AI_SIDEBAR_TOKEN`` (DESIGN.md).

        Raises:
            SettingsError: host is not a loopback address and no token is set.
        """
        if self.token is None and not is_loopback(self.host):
            raise SettingsError(f"AI_SIDEBAR_HOST={self.host} is not a loopback address: set AI_SIDEBAR_TOKEN "
                                "so that only the Node-RED plugin can call the service.")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IPs (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
