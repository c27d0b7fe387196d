"""Settings of MCP sign-in (``MCP_AUTH=oauth``): OAuth 2.1 on the streamable HTTP transport, signing in with
Node-RED's own adminAuth users. Off by default: then nothing of :mod:`mcp_server.auth` is used."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from service.nodered.settings import EnvSettings


class McpAuthSettings(EnvSettings):
    """``MCP_AUTH``: ``off`` (default; the shared ``MCP_HTTP_TOKEN`` only) or ``oauth`` (sign-in with Node-RED users,
    the shared token still accepted for scripts); ``MCP_AUTH_DB``: the SQLite file of registered clients and grants
    (needed with ``oauth``); ``MCP_PUBLIC_URL``: the server's URL as clients reach it (issuer and resource, default
    ``http://<host>:<port>``); ``MCP_AUTH_TOKEN_TTL``: seconds an access token lives (a refresh token lives as long
    as the Node-RED token behind the grant)."""

    mode: Literal["off", "oauth"] = Field("off", validation_alias="MCP_AUTH")
    db: str | None = Field(None, validation_alias="MCP_AUTH_DB")
    public_url: str | None = Field(None, validation_alias="MCP_PUBLIC_URL")
    token_ttl: int = Field(3600, ge=60, le=86400, validation_alias="MCP_AUTH_TOKEN_TTL")

    @model_validator(mode="after")
    def _db_needed(self) -> Self:
        if self.mode == "oauth" and not self.db:
            raise ValueError("MCP_AUTH=oauth needs MCP_AUTH_DB: the SQLite file where registered clients and "
                             "sign-in grants are kept")
        return self

    @property
    def enabled(self) -> bool:
        return self.mode == "oauth"

    def base_url(self, host: str, port: int) -> str:
        """The issuer URL: ``MCP_PUBLIC_URL`` without a trailing slash, else ``http://host:port``."""
        if self.public_url:
            return self.public_url.rstrip("/")
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"
