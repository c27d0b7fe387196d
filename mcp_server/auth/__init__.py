"""MCP sign-in (``MCP_AUTH=oauth``): OAuth 2.1 with PKCE and dynamic client registration on the streamable HTTP
transport, served by the MCP SDK's authorization support, with Node-RED's own adminAuth users signing in
(:mod:`.provider`, :mod:`.login`, :mod:`.store`). A tool call then acts with that user's Node-RED token, and the
write tools need the ``write`` scope. Nothing here is used when sign-in is off."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import Response

from .login import login
from .provider import READ_SCOPE, SCOPES, GrantAccessToken, NodeRedAuthProvider
from .settings import McpAuthSettings


@dataclass
class SignIn:
    """What :func:`mcp_server.server.build_server` needs to serve sign-in: the SDK's settings and our provider."""

    settings: AuthSettings
    provider: NodeRedAuthProvider

    @classmethod
    def of(cls, auth: McpAuthSettings, host: str, port: int, nodered_url: str,
           shared_token: str | None = None) -> SignIn:
        """Sign-in for a server listening on ``host``:``port`` (or reached at ``MCP_PUBLIC_URL``) in front of the
        Node-RED at ``nodered_url``; ``shared_token``: the ``MCP_HTTP_TOKEN`` scripts may still send."""
        assert auth.db is not None, "McpAuthSettings requires MCP_AUTH_DB with MCP_AUTH=oauth"
        base = auth.base_url(host, port)
        resource = f"{base}/mcp"
        # No required_scopes: the SDK would publish them as the protected resource's scopes_supported, and a client
        # following the MCP spec's scope selection would then ask for "read" only, never offering the person the
        # write scope. Every token we issue carries "read"; the registration options publish both scopes.
        settings = AuthSettings(
            issuer_url=base, resource_server_url=resource, validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES),
                                                                  default_scopes=[READ_SCOPE]),
            revocation_options=RevocationOptions(enabled=True))
        provider = NodeRedAuthProvider(auth.db, base, resource, nodered_url, auth.token_ttl, shared_token)
        return cls(settings, provider)

    def add_routes(self, mcp: FastMCP) -> None:
        """Add the sign-in page (``/login``) to ``mcp``'s HTTP routes (the SDK adds the OAuth endpoints)."""

        async def login_route(request: Request) -> Response:
            return await login(request, self.provider)

        mcp.custom_route("/login", methods=["GET", "POST"])(login_route)


def caller_grant(request: Any) -> GrantAccessToken | None:
    """The access token of the HTTP request behind a tool call (``RequestContext.request``), as the SDK's bearer
    middleware put it in the ASGI scope; ``None`` without sign-in (stdio, or sign-in off)."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    token = getattr(user, "access_token", None)
    return token if isinstance(token, GrantAccessToken) else None


__all__ = ["McpAuthSettings", "SignIn", "caller_grant"]
