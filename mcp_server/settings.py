"""The MCP server's own settings: how its streamable HTTP transport listens. How it reaches Node-RED is the core
model :class:`service.nodered.settings.NodeRedSettings`, shared with the service."""

from __future__ import annotations

from pydantic import Field, SecretStr

from service.nodered.settings import EnvSettings, SettingsError, is_loopback


class McpHttpSettings(EnvSettings):
    """``MCP_HTTP_TOKEN`` (or ``--token``): the bearer token HTTP clients must send; ``host`` and ``port``: the
    ``--host`` / ``--port`` flags. Only the HTTP transport reads them."""

    token: SecretStr | None = Field(None, validation_alias="MCP_HTTP_TOKEN")
    host: str = "127.0.0.1"
    port: int = Field(8766, ge=0, le=65535)

    def check_bind(self) -> None:
        """Refuse a non-loopback bind without a token: anyone reaching the port could read Node-RED.

        Raises:
            SettingsError: ``host`` is not a loopback address and no token is set.
        """
        if self.token is None and not is_loopback(self.host):
            raise SettingsError(f"--host {self.host} is not a loopback address: set MCP_HTTP_TOKEN (or --token) so "
                                "that only your MCP clients can read Node-RED.")
