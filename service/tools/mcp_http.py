"""The HTTP client of a request's MCP server: every request it sends, the first and any redirect whoever follows it,
goes only to an address :class:`~service.mcp_addresses.AddressPolicy` allowed (issue 29).

The ``mcp`` SDK's streamable HTTP transport takes an ``httpx_client_factory``; the client it gets here has a
transport that resolves each request's host, checks every address, and sends the request to the checked address
itself (the URL's host swapped for it; the ``Host`` header, and for HTTPS the TLS server name and certificate check,
keep the name). So there is no second lookup between the check and the connection for a rebinding DNS server to
answer differently. The client ignores ``HTTP(S)_PROXY``: through a proxy the service would check the proxy's
address, not the server's.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import httpx

from service.mcp_addresses import ALLOW_VARIABLE, Address, AddressNotAllowed, AddressPolicy, origin

log = logging.getLogger(__name__)

# The SDK's own defaults (mcp.shared._httpx_utils): 30 s to connect, write and wait for the pool, 300 s to read.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=300.0)


class OriginOnly(logging.Filter):
    """Shortens the URL in httpx's request log (``HTTP Request: POST <url> "HTTP/1.1 200 OK"``, at INFO) to its
    origin: an MCP server's path and query may carry a secret, as its headers do."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > 1 and isinstance(args[1], httpx.URL):
            record.args = (args[0], origin(str(args[1])), *args[2:])
        return True


# Installed with the module that sends to request-supplied URLs; it also shortens every other httpx request line.
logging.getLogger("httpx").addFilter(OriginOnly())


class RefusedAddress(httpx.ConnectError):
    """A request was not sent: its host is, or resolves to, an address the policy does not allow (an
    ``httpx.ConnectError``, so the SDK and its callers treat it as the server being unreachable)."""


class PinnedTransport(httpx.AsyncBaseTransport):
    """Sends each request to an address ``policy`` checked for its host (see the module docstring).

    Args:
        policy: the operator's allow-list.
        inner: the transport that sends (default: httpx's own, without proxies from the environment).
    """

    def __init__(self, policy: AddressPolicy, inner: httpx.AsyncBaseTransport | None = None):
        self._policy = policy
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            addresses = await self._policy.check(str(request.url))
        except AddressNotAllowed as refused:
            log.warning("refused a request to the MCP server at %s: it resolves to %s, not allowed by %s",
                        refused.origin, refused.address, ALLOW_VARIABLE)
            raise RefusedAddress(str(refused), request=request) from None
        except OSError as failed:
            raise httpx.ConnectError(f"{request.url.host} does not resolve: {failed}", request=request) from None
        if not addresses:  # an allowed name: sent as it is
            return await self._inner.handle_async_request(request)
        extensions: dict[str, Any] = dict(request.extensions)
        if request.url.scheme == "https":
            extensions.setdefault("sni_hostname", request.url.host)
        for address in addresses[:-1]:
            with contextlib.suppress(httpx.ConnectError):  # nothing was sent: the next address may answer
                return await self._send(request, address, extensions)
        return await self._send(request, addresses[-1], extensions)

    async def _send(self, request: httpx.Request, address: Address, extensions: dict[str, Any]) -> httpx.Response:
        # The headers (Host among them, set from the URL when the request was built) and the body are the
        # request's own; only where the connection goes changes.
        pinned = httpx.Request(request.method, request.url.copy_with(host=str(address)), headers=request.headers,
                               stream=request.stream, extensions=extensions)
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client_factory(policy: AddressPolicy):
    """An ``httpx_client_factory`` for ``mcp.client.streamable_http.streamablehttp_client``: ``(headers, timeout,
    auth) → httpx.AsyncClient`` sending only to addresses ``policy`` allows, redirects left unfollowed by httpx (the
    SDK follows those within the server's origin itself; each is checked like the first request)."""

    def factory(headers: dict[str, str] | None = None, timeout: httpx.Timeout | None = None,
                auth: httpx.Auth | None = None) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers=headers, timeout=timeout or DEFAULT_TIMEOUT, auth=auth,
                                 transport=PinnedTransport(policy), trust_env=False)
    return factory
