"""``nodered-mcp``: run the Node-RED MCP server over stdio (default) or streamable HTTP.

On stdio, stdout carries the protocol: everything else is logged to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import logging
import os
import sys
from typing import TYPE_CHECKING

from service.nodered.client import NodeRedClient, admin_session
from service.nodered.hosts import HostAllowList
from service.nodered.settings import EvidenceSettings, NodeRedSettings, SettingsError

from .auth import McpAuthSettings, SignIn
from .instances import McpInstancesSettings, instances_app
from .server import build_server
from .settings import McpHttpSettings, McpWriteSettings

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("mcp_server")


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``; lifespan events pass through.

    FastMCP's own ``token_verifier`` hook needs OAuth ``AuthSettings`` (an issuer URL) and publishes
    protected-resource metadata, which would send clients into OAuth discovery for what is a static shared secret.
    """

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                from starlette.responses import JSONResponse

                response = JSONResponse(
                    {"error": {"code": "unauthorized",
                               "message": "Missing or wrong bearer token (MCP_HTTP_TOKEN of the MCP server)."}},
                    status_code=401, headers={"WWW-Authenticate": 'Bearer realm="nodered-mcp"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class HostCheck:
    """ASGI middleware: a request whose ``Host``, or ``Origin`` when present, names a host outside ``allowed`` is
    answered 421 ``misdirected_request`` in the JSON error shape (DNS rebinding, :mod:`service.nodered.hosts`),
    before the bearer check and on every path. The MCP SDK checks the same list again on ``/mcp``
    (:func:`mcp_server.server.build_server`), answering in plain text."""

    def __init__(self, app: ASGIApp, allowed: HostAllowList):
        self.app = app
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host, origin = headers.get(b"host"), headers.get(b"origin")
            if not self._allowed.allows_host(host.decode("latin-1") if host is not None else None) or \
                    not self._allowed.allows_origin(origin.decode("latin-1") if origin is not None else None):
                from starlette.responses import JSONResponse

                response = JSONResponse(
                    {"error": {"code": "misdirected_request",
                               "message": "This server does not answer for the host named in Host or Origin; "
                                          "add it to MCP_HTTP_ALLOWED_HOSTS if it is meant to reach this server."}},
                    status_code=421)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def check_login(config: NodeRedSettings) -> None:
    """Log in once before serving, so that the log says at start whether the password account may deploy (the
    write tools need it; :meth:`NodeRedClient.check_login`)."""

    async with admin_session() as session:
        client = NodeRedClient(config.url, session, config.credentials_for(writes=True), timeout=config.timeout)
        await client.check_login()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="nodered-mcp",
        description="MCP server for a Node-RED instance, read-only unless MCP_WRITE_TOOLS=true (then every write "
                    "asks the client's user through MCP elicitation and is recorded in MCP_AUDIT_DB). Node-RED is "
                    "reached through NODE_RED_URL (including httpAdminRoot) with NODE_RED_TOKEN or "
                    "NODE_RED_USERNAME + NODE_RED_PASSWORD.")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="stdio (default) or streamable HTTP at http://HOST:PORT/mcp")
    defaults = McpHttpSettings.model_fields
    parser.add_argument("--host", help=f"HTTP bind address (default {defaults['host'].default})")
    parser.add_argument("--port", type=int, help=f"HTTP port (default {defaults['port'].default})")
    parser.add_argument("--token", default=None,
                        help="bearer token HTTP clients must send (prefer the MCP_HTTP_TOKEN environment variable: "
                             "command lines are visible to other local users)")
    parser.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``nodered-mcp`` console script."""
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    flags = {"host": args.host, "port": args.port, "token": args.token or None}
    try:
        config = NodeRedSettings.load()
        evidence = EvidenceSettings.load()
        writes = McpWriteSettings.load()
        http = McpHttpSettings.load(**{name: value for name, value in flags.items() if value is not None})
        auth = McpAuthSettings.load()
        instances = McpInstancesSettings.load().configs()
        if instances and args.transport != "http":
            raise SettingsError("MCP_NODERED_INSTANCES needs --transport http (each instance is served at "
                                "/<name>/mcp); a stdio server fronts the one Node-RED of NODE_RED_URL.")
        if args.transport == "http":
            http.check_bind(writes=writes.enabled, signin=auth.enabled)
    except SettingsError as err:
        print(f"nodered-mcp: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    knowledge_db = os.environ.get("MCP_KNOWLEDGE_DB") or ":memory:"
    if writes.enabled:
        for checked in instances.values() or (config,):
            asyncio.run(check_login(checked))
    if args.transport == "stdio":
        if auth.enabled:
            log.warning("nodered-mcp: MCP_AUTH=oauth applies to streamable HTTP only; on stdio the client that "
                        "started the server is its user, and the server's own Node-RED credentials apply.")
        build_server(config, knowledge_db=knowledge_db, evidence=evidence, writes=writes).run("stdio")
        return

    import uvicorn

    allowed = http.host_allow_list
    shared_token = http.token.get_secret_value() if http.token is not None else None
    # With sign-in the SDK's bearer middleware checks every token, the shared one included (as a script's).
    app: ASGIApp
    if instances:
        app = instances_app(instances, host=http.host, port=http.port, knowledge_db=knowledge_db, evidence=evidence,
                            writes=writes, allowed_hosts=allowed, auth=auth, shared_token=shared_token)
        for name, instance in instances.items():
            log.warning("nodered-mcp: streamable HTTP on http://%s:%d/%s/mcp for Node-RED at %s", http.host,
                        http.port, name, instance.url)
    else:
        signin = SignIn.of(auth, http.host, http.port, config.url, shared_token) if auth.enabled else None
        app = build_server(config, host=http.host, port=http.port, knowledge_db=knowledge_db, evidence=evidence,
                           writes=writes, allowed_hosts=allowed, signin=signin).streamable_http_app()
        log.warning("nodered-mcp: streamable HTTP on http://%s:%d/mcp for Node-RED at %s", http.host, http.port,
                    config.url)
    if shared_token is not None and not auth.enabled:
        app = BearerAuth(app, shared_token)
    app = HostCheck(app, allowed)
    if auth.enabled and evidence.enabled:
        for name, served in (instances or {"": config}).items():
            if served.token is None and served.username is None:
                log.warning("nodered-mcp: %sno Node-RED credentials of its own: the runtime evidence tools (debug "
                            "messages, node status) will answer 'NOT connected'. Give the server a read-only "
                            "account (NODE_RED_USERNAME/NODE_RED_PASSWORD or NODE_RED_TOKEN) for its comms "
                            "subscription; every call still reads with the signed-in user's rights.",
                            f"instance {name}: " if name else "")
    if http.token is None and not auth.enabled:
        log.warning("nodered-mcp: MCP_HTTP_TOKEN is not set: every local user (any process on this machine) can "
                    "connect and read the flows, settings and runtime messages of Node-RED with this server's "
                    "Node-RED credentials. Set MCP_HTTP_TOKEN, or use stdio, to keep them to your MCP clients.")
    uvicorn.run(app, host=http.host, port=http.port, log_level=args.log_level.lower())


if __name__ == "__main__":
    main()
