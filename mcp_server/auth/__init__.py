"""MCP sign-in (``MCP_AUTH=oauth``): OAuth 2.1 with PKCE and dynamic client registration on the streamable HTTP
transport, served by the MCP SDK's authorization support, with Node-RED's own adminAuth users signing in
(:mod:`.provider`, :mod:`.login`, :mod:`.store`). A tool call then acts with that user's Node-RED token, and the
write tools need the ``write`` scope. Nothing here is used when sign-in is off."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .login import login
from .provider import READ_SCOPE, SCOPES, Endpoint, EndpointVerifier, GrantAccessToken, NodeRedAuthProvider
from .settings import McpAuthSettings


def _settings(base: str, resource: str) -> AuthSettings:
    # No required_scopes: the SDK would publish them as the protected resource's scopes_supported, and a client
    # following the MCP spec's scope selection would then ask for "read" only, never offering the person the
    # write scope. Every token we issue carries "read"; the registration options publish both scopes.
    return AuthSettings(
        issuer_url=base, resource_server_url=resource, validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES),
                                                              default_scopes=[READ_SCOPE]),
        revocation_options=RevocationOptions(enabled=True))


@dataclass
class SignIn:
    """What :func:`mcp_server.server.build_server` needs to serve sign-in on one MCP endpoint: the SDK's settings
    and our provider; with ``verifier`` (one endpoint of several, :func:`SignIn.for_instances`) the endpoint only
    checks tokens with it, and the authorization server's routes (:meth:`routes`) are served once beside them."""

    settings: AuthSettings
    provider: NodeRedAuthProvider
    verifier: EndpointVerifier | None = None

    @classmethod
    def of(cls, auth: McpAuthSettings, host: str, port: int, nodered_url: str,
           shared_token: str | None = None) -> SignIn:
        """Sign-in for a server listening on ``host``:``port`` (or reached at ``MCP_PUBLIC_URL``) in front of the
        Node-RED at ``nodered_url``; ``shared_token``: the ``MCP_HTTP_TOKEN`` scripts may still send."""
        assert auth.db is not None, "McpAuthSettings requires MCP_AUTH_DB with MCP_AUTH=oauth"
        base = auth.base_url(host, port)
        resource = f"{base}/mcp"
        provider = NodeRedAuthProvider(auth.db, base, [Endpoint(resource, nodered_url)], auth.token_ttl,
                                       shared_token)
        return cls(_settings(base, resource), provider)

    @classmethod
    def for_instances(cls, auth: McpAuthSettings, host: str, port: int, instances: dict[str, str],
                      shared_token: str | None = None) -> dict[str, SignIn]:
        """Sign-in for several Node-RED instances (name → admin root) behind one server: one authorization server
        (issuer ``<base>``, one sign-in page, one database) and one protected resource per instance
        (``<base>/<name>/mcp``); a grant is for the instance its client named as ``resource``."""
        assert auth.db is not None, "McpAuthSettings requires MCP_AUTH_DB with MCP_AUTH=oauth"
        base = auth.base_url(host, port)
        endpoints = [Endpoint(f"{base}/{name}/mcp", url, name) for name, url in instances.items()]
        provider = NodeRedAuthProvider(auth.db, base, endpoints, auth.token_ttl, shared_token)
        return {endpoint.instance: cls(_settings(base, endpoint.resource_url), provider,
                                       EndpointVerifier(provider, endpoint.resource_url)) for endpoint in endpoints}

    def login_route(self) -> Route:
        """The sign-in page (``/login``), where ``/authorize`` sends the person."""

        async def login_route(request: Request) -> Response:
            return await login(request, self.provider)

        return Route("/login", login_route, methods=["GET", "POST"])

    def add_routes(self, mcp: FastMCP) -> None:
        """Add the sign-in page (``/login``) to ``mcp``'s HTTP routes (the SDK adds the OAuth endpoints)."""
        route = self.login_route()
        mcp.custom_route("/login", methods=["GET", "POST"])(route.endpoint)

    def routes(self) -> list[Route]:
        """The authorization server's routes, served once for every endpoint: the SDK's (metadata, registration,
        ``/authorize``, ``/token``, ``/revoke``) and the sign-in page."""
        auth = self.settings
        return [*create_auth_routes(self.provider, auth.issuer_url, auth.service_documentation_url,
                                    auth.client_registration_options, auth.revocation_options), self.login_route()]


def caller_grant(request: Any) -> GrantAccessToken | None:
    """The access token of the HTTP request behind a tool call (``RequestContext.request``), as the SDK's bearer
    middleware put it in the ASGI scope; ``None`` without sign-in (stdio, or sign-in off)."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    token = getattr(user, "access_token", None)
    return token if isinstance(token, GrantAccessToken) else None


__all__ = ["McpAuthSettings", "SignIn", "caller_grant"]
