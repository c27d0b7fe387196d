"""The OAuth authorization server behind MCP sign-in: the MCP SDK's ``OAuthAuthorizationServerProvider`` over the
:class:`~mcp_server.auth.store.GrantStore`. The SDK serves the protocol (metadata, registration, ``/authorize``,
``/token``, ``/revoke``, PKCE checks, the 401 with protected-resource metadata); this class decides who is who.

``/authorize`` sends the person to the login page (:mod:`mcp_server.auth.login`), which checks their Node-RED
user name and password with Node-RED and calls :meth:`NodeRedAuthProvider.signed_in`; the code it issues is
exchanged for an access token (``MCP_AUTH_TOKEN_TTL`` seconds) and a refresh token (as long as the Node-RED token
behind the grant). Every tool call with such a token acts with that user's Node-RED token.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from dataclasses import dataclass

import aiohttp
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import SecretStr

from .store import Grant, GrantStore, TokenKind

log = logging.getLogger(__name__)

READ_SCOPE = "read"
WRITE_SCOPE = "write"
SCOPES = (READ_SCOPE, WRITE_SCOPE)
SCRIPT_CLIENT = "shared-token"  # client id of a request carrying the shared MCP_HTTP_TOKEN
PENDING_TTL = 600.0  # seconds a person has to sign in after /authorize
CODE_TTL = 300.0  # seconds an authorization code may wait for its exchange
MAX_PENDING = 1000  # sign-ins waiting at once; /authorize is refused beyond (memory is not filled by a script)


class GrantAccessToken(AccessToken):
    """An access token as the bearer middleware hands it to a tool call: ``subject`` is the Node-RED user,
    ``nodered_token`` the Node-RED token to act with (``None``: the server's own credentials, the shared token)."""

    grant_id: int | None = None
    nodered_token: SecretStr | None = None


class GrantRefreshToken(RefreshToken):
    grant_id: int


class EndpointVerifier:
    """The SDK's ``TokenVerifier`` of one endpoint among several (``MCP_NODERED_INSTANCES``): the provider's tokens,
    the shared token answered as issued for this endpoint."""

    def __init__(self, provider: NodeRedAuthProvider, resource_url: str):
        self._provider, self._resource_url = provider, resource_url

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self._provider.load_access_token(token, self._resource_url)


@dataclass(frozen=True)
class Endpoint:
    """One MCP endpoint tokens are issued for (an OAuth protected resource): its URL (``resource_url``), the admin
    root of the Node-RED behind it (``nodered_url``), where people sign in, and its ``instance`` name (``""`` for a
    server in front of one Node-RED, else the name in ``MCP_NODERED_INSTANCES``)."""

    resource_url: str
    nodered_url: str
    instance: str = ""


@dataclass
class PendingSignIn:
    """An ``/authorize`` request waiting for the person to sign in at ``endpoint``'s Node-RED."""

    client_id: str
    params: AuthorizationParams
    scopes: list[str]
    expires_at: float
    endpoint: Endpoint


@dataclass
class IssuedCode:
    code: AuthorizationCode
    grant: Grant
    nodered_token: str


class NodeRedAuthProvider:
    """Implements the SDK's ``OAuthAuthorizationServerProvider`` protocol.

    Args:
        db_path: the sign-in database (``MCP_AUTH_DB``), opened at first use (in the server's event loop).
        base_url: the server's public URL (issuer; the login page is ``<base_url>/login``).
        endpoints: the MCP endpoints tokens are issued for, one per Node-RED instance (``<base_url>/mcp`` for a
            server in front of one; ``<base_url>/<instance>/mcp`` each with ``MCP_NODERED_INSTANCES``); a token is
            issued for one of them, named by the client's RFC 8707 ``resource`` (needed when there are several).
        token_ttl: seconds an access token lives.
        shared_token: the ``MCP_HTTP_TOKEN`` scripts send, accepted with every scope and the server's own
            Node-RED credentials; ``None``: none.
    """

    def __init__(self, db_path: str, base_url: str, endpoints: list[Endpoint], token_ttl: int,
                 shared_token: str | None = None):
        assert endpoints, "sign-in needs at least one MCP endpoint"
        self._db_path = db_path
        self._store: GrantStore | None = None
        self._opening = asyncio.Lock()
        self.base_url = base_url
        self.endpoints = {endpoint.resource_url.rstrip("/"): endpoint for endpoint in endpoints}
        self._instances = {endpoint.instance: endpoint for endpoint in endpoints}
        self.token_ttl = token_ttl
        self._shared_token = shared_token
        self._pending: dict[str, PendingSignIn] = {}
        self._codes: dict[str, IssuedCode] = {}

    async def _open(self) -> GrantStore:
        """The sign-in database, opened on first use."""
        async with self._opening:
            if self._store is None:
                self._store = await GrantStore.open(self._db_path)
        return self._store

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()
            self._store = None

    # -- clients ---------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        store = await self._open()
        info = await store.client(client_id)
        return OAuthClientInformationFull.model_validate(info) if info is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None, "the SDK assigns the client id"
        store = await self._open()
        await store.save_client(client_info.client_id, client_info.model_dump(mode="json", exclude_none=True))

    # -- sign-in ---------------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The login page's URL for this request (``<base_url>/login?request=<id>``).

        Raises:
            AuthorizeError: ``invalid_request`` when the client asks a token for another resource, or names none
                while the server fronts several Node-RED instances.
        """
        endpoint = self._endpoint(params.resource)
        registered = (client.scope or "").split()
        wanted = params.scopes if params.scopes is not None else [s for s in registered if s in SCOPES]
        scopes = [scope for scope in SCOPES if scope in wanted] or [READ_SCOPE]
        self._expire()
        if len(self._pending) >= MAX_PENDING:
            raise AuthorizeError("temporarily_unavailable", "too many sign-ins waiting; try again in a few minutes")
        request_id = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self._pending[request_id] = PendingSignIn(client.client_id, params, scopes, time.time() + PENDING_TTL,
                                                  endpoint)
        return f"{self.base_url}/login?request={request_id}"

    def _endpoint(self, resource: str | None) -> Endpoint:
        """The endpoint an ``/authorize`` request's ``resource`` names (the only one when it names none)."""
        if resource is None and len(self.endpoints) == 1:
            return next(iter(self.endpoints.values()))
        found = self.endpoints.get((resource or "").rstrip("/"))
        if found is None:
            raise AuthorizeError("invalid_request", "this server issues tokens for " + ", ".join(self.endpoints)
                                 + " only (the resource parameter names one)")
        return found

    def endpoint_of(self, grant: Grant) -> Endpoint | None:
        """The endpoint of ``grant``'s Node-RED instance (``None``: an instance no longer configured)."""
        return self._instances.get(grant.instance)

    def pending(self, request_id: str) -> PendingSignIn | None:
        """The waiting ``/authorize`` request ``request_id``, ``None`` when unknown or too old."""
        self._expire()
        return self._pending.get(request_id)

    async def signed_in(self, request_id: str, user: str, scopes: list[str], nodered_token: str,
                        nodered_expires_in: float) -> str:
        """Record the grant of a successful sign-in and return where the browser goes next: the client's
        ``redirect_uri`` with the authorization code and ``state``.

        Args:
            request_id: the pending request (:meth:`pending` must have found it).
            user: the Node-RED user name; scopes: the scopes granted (a subset of the requested ones).
            nodered_token: the user's Node-RED access token; nodered_expires_in: its lifetime in seconds.
        """
        pending = self._pending.pop(request_id)
        store = await self._open()
        grant = await store.create_grant(user, pending.client_id, scopes, time.time() + nodered_expires_in,
                                         pending.endpoint.instance)
        code = secrets.token_urlsafe(32)
        params = pending.params
        self._codes[code] = IssuedCode(AuthorizationCode(
            code=code, scopes=scopes, expires_at=time.time() + CODE_TTL, client_id=pending.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=pending.endpoint.resource_url, subject=user), grant, nodered_token)
        log.info("MCP sign-in: Node-RED user %s%s granted %s to client %s (grant %d)", user,
                 f" of instance {grant.instance}" if grant.instance else "", " ".join(scopes), pending.client_id,
                 grant.id)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    def _expire(self) -> None:
        now = time.time()
        self._pending = {key: value for key, value in self._pending.items() if value.expires_at > now}
        self._codes = {key: value for key, value in self._codes.items() if value.code.expires_at > now}

    # -- tokens ----------------------------------------------------------------------------------

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        issued = self._codes.get(authorization_code)
        return issued.code if issued is not None and issued.code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        issued = self._codes.pop(authorization_code.code, None)
        if issued is None:
            raise TokenError("invalid_grant", "authorization code already used")
        return await self._issue(issued.grant, issued.nodered_token)

    async def _issue(self, grant: Grant, nodered_token: str) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        access_expires = min(time.time() + self.token_ttl, grant.expires_at)
        endpoint = self.endpoint_of(grant)
        if endpoint is None:
            raise TokenError("invalid_grant", f"Node-RED instance {grant.instance!r} is no longer served here")
        store = await self._open()
        await store.add_token(grant, "access", access, access_expires, nodered_token, endpoint.resource_url)
        await store.add_token(grant, "refresh", refresh, grant.expires_at, nodered_token, endpoint.resource_url)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=int(access_expires - time.time()),
                          scope=" ".join(grant.scopes), refresh_token=refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> GrantRefreshToken | None:
        store = await self._open()
        issued = await store.find_token(refresh_token, "refresh")
        if issued is None or issued.grant.client_id != client.client_id:
            return None
        return GrantRefreshToken(token=refresh_token, client_id=issued.grant.client_id, scopes=issued.grant.scopes,
                                 expires_at=int(issued.expires_at), resource=issued.resource,
                                 subject=issued.grant.user, grant_id=issued.grant.id)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: GrantRefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        """A new token pair for the same grant (the used refresh token is dropped); the grant's scopes are kept."""
        store = await self._open()
        issued = await store.find_token(refresh_token.token, "refresh")
        if issued is None:
            raise TokenError("invalid_grant", "refresh token expired or revoked")
        await store.drop_token(refresh_token.token)
        return await self._issue(issued.grant, issued.nodered_token)

    async def load_access_token(self, token: str, resource: str | None = None) -> GrantAccessToken | None:
        """The grant behind a bearer token, or the shared token's script access (for ``resource``, the endpoint
        asking; default the only one); ``None`` when neither. A grant's token names the one endpoint it was issued
        for, which the SDK's bearer check compares with the endpoint asking."""
        if self._shared_token is not None and hmac.compare_digest(token.encode(), self._shared_token.encode()):
            return GrantAccessToken(token=token, client_id=SCRIPT_CLIENT, scopes=list(SCOPES),
                                    resource=resource or next(iter(self.endpoints)))
        store = await self._open()
        issued = await store.find_token(token, "access")
        if issued is None:
            return None
        return GrantAccessToken(token=token, client_id=issued.grant.client_id, scopes=issued.grant.scopes,
                                expires_at=int(issued.expires_at), resource=issued.resource,
                                subject=issued.grant.user, grant_id=issued.grant.id,
                                nodered_token=SecretStr(issued.nodered_token))

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """End the whole grant behind ``token`` (its access and refresh tokens), and log its Node-RED token out."""
        grant_id = getattr(token, "grant_id", None)
        if grant_id is None:
            return
        kind: TokenKind = "refresh" if isinstance(token, RefreshToken) else "access"
        store = await self._open()
        issued = await store.find_token(token.token, kind)
        await store.revoke(grant_id)
        log.info("MCP sign-in: grant %d revoked", grant_id)
        endpoint = self.endpoint_of(issued.grant) if issued is not None else None
        if issued is not None and endpoint is not None:
            await self._nodered_logout(endpoint.nodered_url, issued.nodered_token)

    async def _nodered_logout(self, nodered_url: str, nodered_token: str) -> None:
        """``POST <admin root>/auth/revoke`` (Node-RED's own logout), best effort: a failure is logged only."""
        try:
            async with aiohttp.ClientSession() as http, http.post(
                    f"{nodered_url.rstrip('/')}/auth/revoke", json={"token": nodered_token},
                    headers={"Authorization": f"Bearer {nodered_token}"},
                    timeout=aiohttp.ClientTimeout(total=10)) as resp:
                if resp.status >= 400:
                    log.warning("MCP sign-in: Node-RED answered %d to revoking a grant's token", resp.status)
        except (aiohttp.ClientError, TimeoutError) as err:
            log.warning("MCP sign-in: could not revoke a grant's token at Node-RED: %s", type(err).__name__)
