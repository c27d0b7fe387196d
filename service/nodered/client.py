"""Client for the Node-RED Admin HTTP API, shared by the service and the MCP server.

Facts this module relies on (Node-RED docs, "Admin HTTP API", https://nodered.org/docs/api/admin/):

* Every route lives under ``httpAdminRoot``; ``base_url`` must include it (``http://host:1880/admin``).
* ``Node-RED-API-Version: v2`` makes ``GET /flows`` answer ``{"rev", "flows": [...]}``.
* ``GET /nodes`` answers JSON only when ``Accept`` is exactly ``application/json`` (HTML otherwise).
* With ``adminAuth`` on, ``GET /auth/login`` tells the login scheme, ``POST /auth/token`` with
  ``client_id=node-red-admin``, ``grant_type=password`` and ``scope`` (``*`` or ``read``, the two scopes the docs
  name) returns a bearer token of that scope; wrong credentials, and a scope the user's permissions do not hold,
  both answer 403 ``invalid_grant`` (``@node-red/editor-api`` ``auth/strategies.js`` ``passwordTokenExchange``);
  a missing or insufficient token answers 401 (never 403). Deploying (``POST /flows``) needs ``flows.write``,
  which ``read`` lacks.
* ``GET /diagnostics`` exists from Node-RED 3.0 (404 before) and answers 403 ``diagnostics.disabled`` when
  turned off in settings.
* ``POST /flows`` (v2) takes ``{"flows": [...], "rev"}`` and answers ``{"rev"}``; a ``rev`` that is no longer the
  deployed one answers 409 ``{"code": "version_mismatch"}`` and changes nothing. ``Node-RED-Deployment-Type:
  nodes`` restarts only the nodes that changed. Nodes sent without ``credentials`` keep their stored ones.
* ``POST /ai-sidebar/context`` is no Node-RED route: the palette plugin's (``node-red-contrib-ai-sidebar``,
  permission ``context.write``), which sets one context value; its errors are ``{"error": {"code", "message"}}``.
* ``POST /inject/:id`` (the inject node's own admin route, permission ``inject.write``) triggers an inject node;
  404 when the id is not a deployed inject node.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import aiohttp
from pydantic import SecretStr

from service.nodered.messages import CodedError

log = logging.getLogger(__name__)

API_VERSION = "v2"
# Node.js's http.Server closes a kept-alive connection after ``keepAliveTimeout`` idle, 5 s by default
# (https://nodejs.org/api/http.html#serverkeepalivetimeout; Node-RED keeps the default). A request sent on a
# connection the server has closed while the event loop was too busy to notice fails with "Server disconnected",
# and aiohttp retries that only for idempotent methods, never for a deploy. So our side drops an idle connection
# to Node-RED after 3 s: aiohttp checks the idle time itself when it picks a pooled connection.
KEEPALIVE = 3.0  # seconds


def admin_session() -> aiohttp.ClientSession:
    """A new :class:`aiohttp.ClientSession` for the Admin API (and the comms websocket): pooled connections are
    reused for at most :data:`KEEPALIVE` seconds of idle time, below Node.js's own 5 s. The caller closes it."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(keepalive_timeout=KEEPALIVE))
VERSION_TTL = 60.0  # seconds the Node-RED version is reused
LOGIN_RETRY_AFTER = 300  # seconds before trying a refused password login again
CLIENT_ID = "node-red-admin"


class NodeRedError(CodedError):
    """A failed Admin API call.

    Attributes:
        status: HTTP status from Node-RED, or ``None`` when it could not be reached.
        code: stable snake_case code: ``nodered_unreachable``, ``nodered_timeout``, ``nodered_unauthorized``
            (401: no or insufficient token), ``nodered_login_failed`` (403 ``invalid_grant``),
            ``diagnostics_disabled``, ``not_found``, ``flow_not_found``, ``node_not_found``, ``nodered_error``.
        message: a sentence for a user, naming what to check next (worded from ``locales/<lang>/errors.json``
            by ``key`` and ``params`` when not given, see :class:`service.nodered.messages.CodedError`).
    """

    def __init__(self, status: int | None, code: str, message: str | None = None, *, key: str | None = None,
                 params: dict[str, Any] | None = None):
        super().__init__(code, message, key=key, params=params)
        self.status = status


@dataclass
class NodeRedCredentials:
    """How to authenticate against the Admin API; secrets never appear in ``repr``.

    Precedence (DESIGN.md): a token forwarded from the editor user, else ``token`` (``NODE_RED_TOKEN``),
    else ``username`` + ``password`` through the password grant, asking for ``scope``: ``*`` when the caller's
    tools write (deploy), ``read`` otherwise. A user refused ``*`` is logged in with ``read`` (and a warning says
    that writes will fail).
    """

    token: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = field(default=None, repr=False)
    scope: Literal["*", "read"] = "read"

    @property
    def can_login(self) -> bool:
        return bool(self.username and self.password)


UNKNOWN_VERSION = "unknown"  # what :meth:`NodeRedClient.version` answers when the version cannot be read


class NodeRedClient:
    """One method per Admin API endpoint; raises :class:`NodeRedError` on every failure.

    Args:
        base_url: Node-RED admin root, including ``httpAdminRoot`` (``http://127.0.0.1:1880`` or ``.../admin``).
        session: an open ``aiohttp.ClientSession`` owned by the caller.
        credentials: see :class:`NodeRedCredentials`.
        timeout: seconds for one request, connection included.
    """

    def __init__(
        self,
        base_url: str,
        session: aiohttp.ClientSession,
        credentials: NodeRedCredentials | None = None,
        timeout: float = 10.0,
    ):
        self.base_url = base_url.rstrip("/")
        self._session = session
        self._credentials = credentials or NodeRedCredentials()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._login_token: str | None = None
        self._login_lock = asyncio.Lock()
        self._login_refused: tuple[float, NodeRedError] | None = None
        # Facts about the runtime that do not depend on who asks, shared with the per-user clients.
        self._shared: dict[str, tuple[float, Any]] = {}

    def __repr__(self) -> str:
        return f"NodeRedClient(base_url={self.base_url!r})"

    def for_user(self, user_token: str | None) -> NodeRedClient:
        """A client that reads with the editor user's own token (never widened to the service's rights).

        Returns ``self`` when ``user_token`` is empty, so the configured credentials apply.
        """
        if not user_token:
            return self
        client = NodeRedClient(
            self.base_url,
            self._session,
            NodeRedCredentials(token=SecretStr(user_token)),
            timeout=self._timeout.total or 10.0,
        )
        client._shared = self._shared
        return client

    # -- endpoints -------------------------------------------------------------------------------

    async def get_flows(self) -> dict[str, Any]:
        """``GET /flows`` (v2): ``{"rev": str, "flows": [node, ...]}`` with every tab, subflow and node."""
        data = await self._request("GET", "/flows")
        if isinstance(data, list):  # a v1 answer from an old runtime
            return {"rev": None, "flows": data}
        return data

    async def recent_flows(self, max_age: float) -> dict[str, Any]:
        """:meth:`get_flows`, the same answer reused for ``max_age`` seconds per caller (the user's token, as a
        SHA-256 digest, or the service's own credentials): for requests that come many a minute and may see a deploy
        that much later (inline completion's context of a node), not for anything that writes."""
        token = self._credentials.token
        key = "flows:" + (hashlib.sha256(token.get_secret_value().encode()).hexdigest() if token else "service")
        now = time.monotonic()
        cached = self._shared.get(key)
        if cached is not None and now - cached[0] < max_age:
            return cached[1]
        flows = await self.get_flows()
        for stale in [k for k, (read, _) in self._shared.items() if k.startswith("flows:") and now - read >= max_age]:
            del self._shared[stale]
        self._shared[key] = (now, flows)
        return flows

    async def post_flows(self, flows: list[dict[str, Any]], rev: str | None,
                         deployment_type: str = "nodes") -> str | None:
        """``POST /flows`` (v2) with ``rev`` checked: deploys the whole configuration ``flows`` and returns the new
        ``rev``. ``deployment_type`` is ``Node-RED-Deployment-Type`` (``nodes``: only changed nodes restart).

        Raises:
            NodeRedError: ``flows_conflict`` (409) when the flows changed since ``rev`` was read (nothing is
                overwritten), or any other Admin API failure.
        """
        body: dict[str, Any] = {"flows": flows}
        if rev is not None:
            body["rev"] = rev
        answer = await self._request("POST", "/flows", body=body,
                                     headers={"Node-RED-Deployment-Type": deployment_type})
        return answer.get("rev") if isinstance(answer, dict) else None

    async def inject(self, node_id: str) -> None:
        """``POST /inject/:id``: trigger a deployed inject node once.

        Raises:
            NodeRedError: ``not_found`` (404) when ``node_id`` is no deployed inject node, or another failure.
        """
        await self._request("POST", f"/inject/{quote(node_id, safe='')}", accept="text/plain")

    async def set_context(self, context: dict[str, Any]) -> None:
        """``POST /ai-sidebar/context`` (the palette plugin's route): set ``context["key"]`` to ``context["value"]``
        in ``context["scope"]`` (``flow`` of tab ``context["flow"]``, or ``global``) and store
        ``context["store"]``.

        Raises:
            NodeRedError: ``not_found`` (404) when the palette package is not installed (or the tab is gone),
                ``nodered_unauthorized`` (401) without ``context.write``, ``nodered_error`` naming the plugin's
                refusal.
        """
        body = {key: context[key] for key in ("scope", "flow", "store", "key", "value") if context.get(key)
                is not None or key == "value"}
        await self._request("POST", "/ai-sidebar/context", body=body)

    async def get_nodes(self) -> list[dict[str, Any]]:
        """``GET /nodes``: the installed node sets, ``[{id, name, types[], enabled, module, version}]``."""
        return await self._request("GET", "/nodes")

    async def get_node_help(self, language: str = "en-US") -> str:
        """``GET /nodes`` as the editor loads it (HTML): every enabled node set's templates and help, the help in
        ``language`` (sent as ``Accept-Language``; Node-RED falls back to a module's ``en-US`` help)."""
        return await self._request("GET", "/nodes", accept="text/html", language=language)

    async def get_locale(self, namespace: str, language: str) -> dict[str, Any]:
        """``GET /locales/<namespace>?lng=<language>``: the editor's message catalog of a namespace (``node-red``
        for the core nodes, ``<module>/<set>`` for a node set with its own catalog) in ``language``, as i18next
        resources (nested objects of strings); Node-RED falls back to English for what a language lacks."""
        return await self._request("GET", f"/locales/{quote(namespace, safe='@/')}?lng={quote(language, safe='')}")

    async def get_settings(self) -> dict[str, Any]:
        """``GET /settings``: the runtime settings the editor sees (``version``, ``httpNodeRoot``, ...)."""
        return await self._request("GET", "/settings")

    async def get_projects(self) -> dict[str, Any]:
        """``GET /projects`` (permission ``projects.read``): ``{"projects": [name, ...], "active": name}``
        (``active`` absent when no project is active); 404 ``not_found`` when Node-RED's Projects feature is off
        (``@node-red/editor-api`` ``editor/projects.js``)."""
        return await self._request("GET", "/projects")

    async def get_project_commits(self, project: str, limit: int = 20) -> dict[str, Any]:
        """``GET /projects/:id/commits?limit=`` of the active project: ``{"commits": [{sha, parents, refs, author,
        date (Unix seconds as a string), subject}], "total", "count"}`` newest first (``git log``)."""
        return await self._request("GET", f"/projects/{quote(project, safe='')}/commits?limit={int(limit)}")

    async def version(self, ttl: float = VERSION_TTL) -> str:
        """The Node-RED version from ``GET /settings``, cached for ``ttl`` seconds (it changes only on restart);
        :data:`UNKNOWN_VERSION` when it cannot be read."""
        cached = self._shared.get("version")
        if cached is not None and time.monotonic() < cached[0]:
            return cached[1]
        try:
            value = str((await self.get_settings()).get("version") or UNKNOWN_VERSION)
        except NodeRedError:
            return UNKNOWN_VERSION
        self._shared["version"] = (time.monotonic() + ttl, value)
        return value

    async def get_diagnostics(self) -> dict[str, Any]:
        """``GET /diagnostics`` (Node-RED >= 3.0): runtime, OS and module report.

        Raises:
            NodeRedError: ``diagnostics_disabled`` (403) or ``not_found`` (404, Node-RED older than 3.0).
        """
        return await self._request("GET", "/diagnostics")

    async def get_auth_login(self) -> dict[str, Any]:
        """``GET /auth/login``: the login scheme, ``{}`` when adminAuth is off (``{"type": "credentials", ...}``
        otherwise)."""
        answer = await self._send("GET", "/auth/login", auth=False)
        return answer if isinstance(answer, dict) else {}

    async def access_token(self, renew: bool = False) -> str | None:
        """The bearer token this client sends (the configured one, or one from the password grant; ``None``
        without credentials), for Node-RED's comms websocket, which takes it in an ``{"auth": token}`` message.

        Args:
            renew: forget a token from an earlier password grant first (Node-RED refused it).

        Raises:
            NodeRedError: the password grant failed (see :meth:`login`).
        """
        if renew and not self._credentials.token:
            async with self._login_lock:
                self._login_token = None
        return await self._bearer()

    # -- plumbing --------------------------------------------------------------------------------

    async def check_login(self) -> None:
        """Log in once now (at start) when a user name and password are configured, so that the log says at once
        whether the account works and whether it may deploy (:meth:`login` warns when it may only read); a
        failure is logged, never raised."""
        if self._credentials.token or not self._credentials.can_login:
            return
        try:
            await self.access_token()
        except NodeRedError as err:
            log.warning("Node-RED login of NODE_RED_USERNAME=%s at %s failed: %s", self._credentials.username,
                        self.base_url, err.message)

    async def login(self) -> str:
        """Password grant: ``GET /auth/login`` then ``POST /auth/token`` with the credentials' ``scope``; returns
        the access token. A user refused ``*`` is asked for ``read`` next, with a warning that deploys will fail.

        Raises:
            NodeRedError: ``nodered_login_failed`` when the credentials are refused or adminAuth is not the
                credentials scheme.
        """
        creds = self._credentials
        if self._login_refused is not None and time.monotonic() < self._login_refused[0]:
            # A new error each time: the kept one raised again would gain every raise's frames (and their bodies).
            refused = self._login_refused[1]
            raise NodeRedError(refused.status, refused.code, **refused.sentence_args())
        if not creds.can_login:
            raise NodeRedError(401, "nodered_unauthorized", key="nodered_unauthorized.login")
        scheme = await self._send("GET", "/auth/login", auth=False)
        if not isinstance(scheme, dict) or scheme.get("type") != "credentials":
            raise NodeRedError(None, "nodered_login_failed", key="nodered_login_failed.scheme")
        # Node-RED answers 403 both for a wrong password and for a scope beyond the user's permissions, so a
        # refused "*" is tried again as "read": a read-only account still reads.
        scopes = ("*", "read") if creds.scope == "*" else ("read",)
        for scope in scopes:
            form = {
                "client_id": CLIENT_ID,
                "grant_type": "password",
                "scope": scope,
                "username": creds.username,
                "password": creds.password.get_secret_value() if creds.password else "",
            }
            try:
                data = await self._send("POST", "/auth/token", form=form, auth=False)
            except NodeRedError as err:
                if err.status == 403 and scope != scopes[-1]:
                    continue
                raise self._refused(err) from None
            if scope != creds.scope:
                log.warning("Node-RED refused the write scope (*) to NODE_RED_USERNAME=%s, so it is logged in with "
                            "read: reading works, but write tools (deploys) will fail with nodered_unauthorized. "
                            "Give that user the \"*\" permission in adminAuth, or set NODE_RED_TOKEN of a user who "
                            "may deploy.", creds.username)
            return data["access_token"]
        raise AssertionError("unreachable: the last scope either returns or raises")

    def _refused(self, err: NodeRedError) -> NodeRedError:
        """What a refused ``POST /auth/token`` raises (remembered for :data:`LOGIN_RETRY_AFTER` seconds), or
        ``err`` itself for another failure."""
        if err.status in (401, 403):
            refused = NodeRedError(err.status, "nodered_login_failed",
                                   params={"user": self._credentials.username, "minutes": LOGIN_RETRY_AFTER // 60})
        elif err.status in (429, 500):
            # Node-RED rate-limits /auth/token after repeated failures (and may answer 500 for it).
            refused = NodeRedError(err.status, "nodered_login_failed", key="nodered_login_failed.rate_limited")
        else:
            return err
        self._login_refused = (time.monotonic() + LOGIN_RETRY_AFTER, refused)
        return refused

    async def _request(self, method: str, path: str, *, accept: str = "application/json",
                       language: str | None = None, body: Any = None,
                       headers: dict[str, str] | None = None) -> Any:
        options: dict[str, Any] = {"accept": accept, "language": language, "body": body, "headers": headers}
        try:
            return await self._send(method, path, auth=True, **options)
        except NodeRedError as err:
            if err.status != 401 or not self._credentials.can_login or self._credentials.token:
                raise
        # The login token expired or was revoked: log in again once and retry.
        async with self._login_lock:
            self._login_token = await self.login()
        return await self._send(method, path, auth=True, **options)

    async def _bearer(self) -> str | None:
        if self._credentials.token:
            return self._credentials.token.get_secret_value()
        if self._credentials.can_login:
            async with self._login_lock:
                if self._login_token is None:
                    self._login_token = await self.login()
            return self._login_token
        return None

    async def _send(self, method: str, path: str, *, auth: bool, form: dict | None = None,
                    accept: str = "application/json", language: str | None = None, body: Any = None,
                    headers: dict[str, str] | None = None) -> Any:
        """One request (``form`` or JSON ``body``); the JSON answer decoded, or the text when ``accept`` is not
        JSON."""
        headers = {"Accept": accept, "Node-RED-API-Version": API_VERSION, **(headers or {})}
        if language:
            headers["Accept-Language"] = language
        if auth:
            token = await self._bearer()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        url = self.base_url + path
        try:
            async with self._session.request(method, url, headers=headers, data=form, json=body,
                                             timeout=self._timeout) as resp:
                if resp.status >= 400:
                    raise await _error_from(resp, path)
                if accept != "application/json":
                    return await resp.text()
                return await resp.json(content_type=None)
        except TimeoutError:
            raise NodeRedError(None, "nodered_timeout", params={"url": self.base_url, "path": path}) from None
        except aiohttp.ClientError as err:
            raise NodeRedError(None, "nodered_unreachable",
                               params={"url": self.base_url, "reason": type(err).__name__}) from None


async def _error_from(resp: aiohttp.ClientResponse, path: str) -> NodeRedError:
    """Turn a Node-RED 4xx/5xx answer into a NodeRedError (Node-RED errors are ``{code, message}``)."""
    body: Any = None
    try:
        body = await resp.json(content_type=None)
    except (ValueError, aiohttp.ContentTypeError):
        pass
    if isinstance(body, dict) and isinstance(body.get("error"), dict):  # the palette plugin's own routes
        body = body["error"]
    nr_code = body.get("code") if isinstance(body, dict) else None
    nr_message = body.get("message") if isinstance(body, dict) else None
    if resp.status == 401:
        return NodeRedError(401, "nodered_unauthorized", params={"path": path})
    if resp.status == 403 and nr_code == "diagnostics.disabled":
        return NodeRedError(403, "diagnostics_disabled")
    if resp.status == 404:
        return NodeRedError(404, "not_found", params={"path": path})
    if resp.status == 409 and nr_code == "version_mismatch":
        return NodeRedError(409, "flows_conflict")
    return NodeRedError(resp.status, "nodered_error",
                        params={"status": resp.status, "path": path, "detail": nr_message or nr_code or resp.reason})
