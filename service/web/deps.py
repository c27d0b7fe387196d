"""What a chat, assist or resume request may use (:class:`~service.chat.context.ChatDeps`), built per request from
the app's shared objects and the caller: the tool registry with the request's own MCP servers (refused when not
public, ``AI_SIDEBAR_MCP_ALLOWED_HOSTS``), the provider override, the memory and approval stores."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from service.chat.context import ChatDeps
from service.errors import ServiceError
from service.identity import Caller
from service.mcp_addresses import ALLOW_VARIABLE, AddressNotAllowed, AddressPolicy
from service.requests import ProviderOverride
from service.tools.registry import ToolRegistry
from service.web.keys import (
    APPROVALS,
    CHAT_MODELS,
    EVIDENCE,
    KNOWLEDGE,
    MEMORY,
    NODERED,
    SCENARIOS,
    SETTINGS,
    TOOLS,
)

log = logging.getLogger(__name__)


async def request_tools(request: web.Request, provider: ProviderOverride | None) -> ToolRegistry:
    """The app's tools, plus the external MCP servers the ``ai-config`` node of ``provider`` names.

    A stdio server of a request runs a program on the service's host: it is accepted only with
    ``AI_SIDEBAR_MCP_REQUEST_STDIO=true`` (a service whose flow editors may run programs there anyway); otherwise
    the service starts stdio servers only from its own configuration. A streamable HTTP server of a request is
    accepted when its host resolves only to public addresses, or to ones ``AI_SIDEBAR_MCP_ALLOWED_HOSTS`` allows
    (checked here, so that the user hears of it before the stream opens, and again on every request its client
    sends, redirects included: :mod:`service.tools.mcp_http`).

    Raises:
        ServiceError: 403 ``mcp_stdio_not_allowed`` (naming the server); 400 ``mcp_url_not_allowed`` (naming the
            server and its URL's origin); 400 ``invalid_request`` for a server named like one of the service's own
            (its tools' names would clash).
    """
    tools = request.app[TOOLS]
    servers = provider.mcpServers if provider is not None else []
    if not servers:
        return tools
    settings = request.app[SETTINGS]
    for server in servers:
        if server.command is not None and not settings.mcp_request_stdio:
            raise ServiceError("mcp_stdio_not_allowed", status=403, params={"server": server.name})
    own = {server.name for server in settings.mcp_servers}
    for server in servers:
        if server.name in own:
            raise ServiceError("invalid_request", status=400, key="invalid_request.mcp_server_name",
                               params={"server": server.name})
    policy = settings.mcp_address_policy
    for server in servers:
        if server.url is not None:
            await _refuse_internal(server.name, server.url, policy, server.start_timeout)
    assert tools.external is not None  # the app factory always gives the registry its external servers
    return tools.with_external(tools.external.with_servers(servers, policy))


async def _refuse_internal(name: str, url: str, policy: AddressPolicy, seconds: float) -> None:
    """Refuse the request's server ``name`` at ``url`` when its host is or resolves to an address ``policy`` does
    not allow. A name that does not resolve (within ``seconds``) passes: its client fails to connect, and the
    user hears that the server is unavailable, as for any server that does not answer.

    Raises:
        ServiceError: 400 ``mcp_url_not_allowed``.
    """
    try:
        async with asyncio.timeout(seconds):
            await policy.check(url)
    except AddressNotAllowed as refused:
        # The origin only: the path, query and headers may carry the node's secrets.
        log.warning("refused the MCP server %s of a request: %s resolves to %s, not allowed by %s", name,
                    refused.origin, refused.address, ALLOW_VARIABLE)
        raise ServiceError("mcp_url_not_allowed", status=400,
                           params={"server": name, "origin": refused.origin}) from None
    except (OSError, TimeoutError):
        pass


async def chat_deps(request: web.Request, caller: Caller, provider: ProviderOverride | None) -> ChatDeps:
    """What a chat run (or a resumed one) of ``caller`` uses, with the ``ai-config`` node's ``provider``.

    Raises:
        ServiceError: the node's MCP servers are refused (see :func:`request_tools`).
    """
    remember = caller.memory and (provider is None or provider.memory)
    return ChatDeps(settings=request.app[SETTINGS], nodered=request.app[NODERED].for_user(caller.token),
                    models=request.app[CHAT_MODELS], scenarios=request.app[SCENARIOS],
                    tools=await request_tools(request, provider),
                    user_token=caller.token, identity=caller.identity, may_write=caller.may_write,
                    granted_tools=caller.tools, provider=provider, knowledge=request.app[KNOWLEDGE],
                    memory=request.app[MEMORY].store if remember else None,
                    approvals=request.app[APPROVALS].approvals, evidence=request.app[EVIDENCE],
                    ledger=request.app[MEMORY].store)
