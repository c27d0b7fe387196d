"""The MCP server's own settings: how its streamable HTTP transport listens, and whether it offers the write tools.
How it reaches Node-RED is the core model :class:`service.nodered.settings.NodeRedSettings`, shared with the
service."""

from __future__ import annotations

from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator

from service.nodered.settings import EnvSettings, HostGuarded, SettingsError, is_loopback


class McpHttpSettings(HostGuarded):
    """``MCP_HTTP_TOKEN`` (or ``--token``): the bearer token HTTP clients must send; ``MCP_HTTP_ALLOWED_HOSTS``: host
    names (comma-separated, any port) requests may name in ``Host`` and ``Origin`` besides the loopback names and
    ``host`` (``*``: any); ``host`` and ``port``: the ``--host`` / ``--port`` flags. Only the HTTP transport reads
    them."""

    token: SecretStr | None = Field(None, validation_alias="MCP_HTTP_TOKEN")
    allowed_hosts: str | None = Field(None, validation_alias="MCP_HTTP_ALLOWED_HOSTS")
    host: str = "127.0.0.1"
    port: int = Field(8766, ge=0, le=65535)

    @field_validator("token", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        """A token of spaces is no token (``MCP_HTTP_TOKEN=" "`` let the write tools start)."""
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        return None if isinstance(text, str) and not text.strip() else value

    def check_bind(self, writes: bool = False, signin: bool = False) -> None:
        """Refuse a non-loopback bind without a token (anyone reaching the port could read Node-RED), and the write
        tools without a token: every local user could connect and answer the approval of a write itself. With
        ``signin`` (``MCP_AUTH=oauth``) every request needs a signed-in user's token, so neither is refused.

        Raises:
            SettingsError: ``host`` is not a loopback address, or ``writes`` is on, and no token is set.
        """
        if signin:
            return
        if self.token is None and writes:
            raise SettingsError("MCP_WRITE_TOOLS=true over streamable HTTP needs MCP_HTTP_TOKEN (or --token): "
                                "without it every local user could connect, call a write tool and approve it "
                                "themselves. Set a token and give it only to your MCP clients, or use stdio.")
        if self.token is None and not is_loopback(self.host):
            raise SettingsError(f"--host {self.host} is not a loopback address: set MCP_HTTP_TOKEN (or --token) so "
                                "that only your MCP clients can read Node-RED.")


class McpWriteSettings(EnvSettings):
    """``MCP_WRITE_TOOLS`` (default off): offer the write tools, each applied only after the client's user approves
    it through MCP elicitation; ``MCP_AUDIT_DB``: the SQLite file where every such decision is recorded (needed
    with the write tools on: an audit kept in memory would be lost with the process)."""

    enabled: bool = Field(False, validation_alias="MCP_WRITE_TOOLS")
    audit_db: str | None = Field(None, validation_alias="MCP_AUDIT_DB")

    @model_validator(mode="after")
    def _audit_needed(self) -> Self:
        if self.enabled and not self.audit_db:
            raise ValueError("MCP_WRITE_TOOLS=true needs MCP_AUDIT_DB: the SQLite file where every approval "
                             "decision on a write is recorded")
        return self
