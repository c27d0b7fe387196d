"""How to reach Node-RED (``NODE_RED_*``, DESIGN.md "Processes, ports, configuration"), and the settings machinery
the service and the MCP server share: models built with pydantic-settings from an environment mapping and an
optional YAML file, every field named by its environment variable, errors naming that variable.

This module imports nothing from ``service`` outside ``service/nodered/``: the MCP server uses it alone.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Collection, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from .client import NodeRedCredentials
from .hosts import HostAllowList, parse_hosts

CONFIG_FILE_VARIABLE = "AI_SIDEBAR_CONFIG"


class SettingsError(ValueError):
    """The configuration is unusable; the message names the variable to fix and never holds a secret."""


class _MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of ``os.environ`` (the way its own
    ``DotEnvSettingsSource`` swaps the mapping in), limited to the model's variables: a field without one (a
    constant, a nested model) is never read from an environment variable named like the field."""

    def __init__(self, settings_cls: type[EnvSettings], environ: Mapping[str, str]):
        self._environ, self._names = environ, settings_cls.env_fields()
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {name: value for name, value in self._environ.items() if value != "" and name in self._names}


class _YamlFileSource(YamlConfigSettingsSource):
    """pydantic-settings' YAML source for the file named by ``AI_SIDEBAR_CONFIG``: keys are environment variable
    names (any case); a missing or malformed file, or a key outside ``accepted``, is a :class:`SettingsError`;
    accepted keys of another model are left to that model."""

    def __init__(self, settings_cls: type[EnvSettings], path: str, accepted: Collection[str]):
        self._path, self._accepted, self._own = path, accepted, settings_cls.env_fields()
        try:  # the base class skips a missing file; here it is a mistake to report
            Path(path).open(encoding="utf-8").close()
        except OSError as err:
            raise SettingsError(f"{CONFIG_FILE_VARIABLE}={path} cannot be read: {err}") from None
        super().__init__(settings_cls, yaml_file=path)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            loaded = yaml.safe_load(Path(file_path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise SettingsError(f"{CONFIG_FILE_VARIABLE}={self._path} cannot be read: {err}") from None
        if not isinstance(loaded, dict):
            raise SettingsError(f"{CONFIG_FILE_VARIABLE}={self._path} must hold a mapping of setting names")
        loaded = {_variable(name): value for name, value in loaded.items()}
        for name in loaded:
            if name not in self._accepted:
                raise SettingsError(f"{CONFIG_FILE_VARIABLE}: unknown setting {name!r}")
        return {name: value for name, value in loaded.items() if name in self._own}


def _variable(key: Any) -> str:
    """A YAML key as its variable name: ``node_red_url`` and ``mcpServers`` (camel case) are ``NODE_RED_URL`` and
    ``MCP_SERVERS``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key)).upper()


# The sources ``EnvSettings.load`` chose for one construction, with the class they were built for; unset, a model
# is built from its arguments only (tests build settings by hand, whatever the developer's environment holds).
_SOURCES: ContextVar[tuple[type, tuple[PydanticBaseSettingsSource, ...]] | None] = ContextVar("settings_sources",
                                                                                             default=None)


class EnvSettings(BaseSettings):
    """Base of the settings models: each field read from the environment variable named by its
    ``validation_alias`` (exact case), constructible by field name too. Frozen; secrets are ``SecretStr``."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True,
                                      case_sensitive=True, env_ignore_empty=True)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the sources :meth:`load` chose (environment, then YAML file); no others."""
        chosen = _SOURCES.get()
        return (init_settings, *chosen[1]) if chosen is not None and chosen[0] is settings_cls else (init_settings,)

    @classmethod
    def env_fields(cls) -> dict[str, str]:
        """Environment variable name → field name, for the fields read from the environment."""
        return {field.validation_alias: name for name, field in cls.model_fields.items()
                if isinstance(field.validation_alias, str)}

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, config_file: str | None = None,
             accepted: Collection[str] | None = None, **given: Any) -> Self:
        """Build the model from ``given`` (field names) over ``env`` (default ``os.environ``; empty values ignored)
        over the YAML file ``config_file``, whose keys must be in ``accepted`` (default: this model's variables).

        Raises:
            SettingsError: the file is unreadable or a value is invalid (the message names the variable).
        """
        env = os.environ if env is None else env
        sources: list[PydanticBaseSettingsSource] = [_MappingEnvSource(cls, env)]
        if config_file:
            sources.append(_YamlFileSource(cls, config_file, cls.env_fields() if accepted is None else accepted))
        chosen = _SOURCES.set((cls, tuple(sources)))
        try:
            return cls(**given)
        except ValidationError as err:
            raise SettingsError(cls.describe(err)) from None
        finally:
            _SOURCES.reset(chosen)

    @classmethod
    def describe(cls, err: ValidationError) -> str:
        """The first error of ``err`` as ``VARIABLE: problem``; never the rejected value (it may be a secret)."""
        first = err.errors(include_input=False, include_url=False)[0]
        message = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        if not first["loc"]:
            return message
        name = str(first["loc"][0])
        by_field = {field: variable for variable, field in cls.env_fields().items()}
        return f"{by_field.get(name, name)}: {message}"


class HostGuarded(EnvSettings):
    """Settings of a server guarded against DNS rebinding: its ``allowed_hosts`` (a comma-separated
    ``*_ALLOWED_HOSTS`` value, checked with :func:`~service.nodered.hosts.parse_hosts` at load) and the ``host`` it
    listens on, both fields of the subclass (the service's ``AI_SIDEBAR_ALLOWED_HOSTS``, the MCP server's
    ``MCP_HTTP_ALLOWED_HOSTS``)."""

    if TYPE_CHECKING:
        allowed_hosts: str | None
        host: str

    @field_validator("allowed_hosts", check_fields=False)
    @classmethod
    def _host_names(cls, value: str | None) -> str | None:
        parse_hosts(value)
        return value

    @property
    def host_allow_list(self) -> HostAllowList:
        """The hosts a request may name in ``Host`` and ``Origin`` (:mod:`service.nodered.hosts`)."""
        return HostAllowList.of(parse_hosts(self.allowed_hosts), self.host)


class NodeRedSettings(EnvSettings):
    """How the service and the MCP server reach Node-RED's Admin API (DESIGN.md): ``NODE_RED_URL`` (the admin
    root, including ``httpAdminRoot``), ``NODE_RED_TOKEN`` or ``NODE_RED_USERNAME`` + ``NODE_RED_PASSWORD``,
    ``NODE_RED_TIMEOUT`` seconds per request."""

    url: str = Field("http://127.0.0.1:1880", validation_alias="NODE_RED_URL",
                     description="Node-RED admin root, including httpAdminRoot")
    token: SecretStr | None = Field(None, validation_alias="NODE_RED_TOKEN")
    username: str | None = Field(None, validation_alias="NODE_RED_USERNAME")
    password: SecretStr | None = Field(None, validation_alias="NODE_RED_PASSWORD")
    timeout: float = Field(10.0, gt=0, validation_alias="NODE_RED_TIMEOUT",
                           description="seconds for one Admin API request")

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        # The value is not echoed: a URL may carry user:password.
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL of the Node-RED admin root, including "
                             "httpAdminRoot (e.g. http://127.0.0.1:1880 or http://host:1880/admin)")
        return url

    @model_validator(mode="after")
    def _login_needs_both(self) -> Self:
        if self.username and self.password is None:
            raise ValueError("NODE_RED_USERNAME is set without NODE_RED_PASSWORD: set both for the password "
                             "grant, or NODE_RED_TOKEN instead")
        return self

    @property
    def credentials(self) -> NodeRedCredentials:
        """The Admin API credentials for :class:`~service.nodered.client.NodeRedClient` of a reader (a password
        login asks for the ``read`` scope)."""
        return self.credentials_for(writes=False)

    def credentials_for(self, writes: bool) -> NodeRedCredentials:
        """The Admin API credentials for a client whose tools deploy (``writes``: a password login asks for the
        ``*`` scope, falling back to ``read`` with a warning) or only read."""
        return NodeRedCredentials(token=self.token, username=self.username, password=self.password,
                                  scope="*" if writes else "read")



class EvidenceSettings(EnvSettings):
    """Runtime evidence (debug messages, node status, node errors from Node-RED's comms websocket), read by the
    service and the MCP server: ``AI_SIDEBAR_EVIDENCE`` turns the subscriber on (default) or off, and the buffer
    keeps per node the last ``AI_SIDEBAR_EVIDENCE_PER_NODE`` messages of the last ``AI_SIDEBAR_EVIDENCE_WINDOW``
    seconds, at most ``AI_SIDEBAR_EVIDENCE_MAX`` in all (oldest dropped first)."""

    enabled: bool = Field(True, validation_alias="AI_SIDEBAR_EVIDENCE")
    per_node: int = Field(20, ge=1, le=1000, validation_alias="AI_SIDEBAR_EVIDENCE_PER_NODE",
                          description="debug messages kept per node (and as many errors and warnings)")
    window: float = Field(900.0, gt=0, le=86_400, validation_alias="AI_SIDEBAR_EVIDENCE_WINDOW",
                          description="seconds a message is kept")
    max_entries: int = Field(2000, ge=1, le=100_000, validation_alias="AI_SIDEBAR_EVIDENCE_MAX",
                             description="messages kept in all, whatever the rate")

def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IPs (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
