"""Which addresses the service may connect to for an MCP server a request names (issue 29).

An ``ai-config`` node's streamable HTTP MCP server is a URL any flow editor chose, and the service sends it requests
with headers that editor chose too; the service may run where those editors cannot reach (a cloud host with its
metadata endpoint at 169.254.169.254, a private network, other services on its own loopback). So the service
refuses such a server when its host is, or resolves to, an address that is not publicly routable: loopback,
link-local, private (RFC 1918), shared (100.64.0.0/10, RFC 6598), unique-local (fc00::/7), site-local, unspecified,
multicast, reserved and documentation ranges (Python's ``ipaddress.is_global``, which follows the IANA special-purpose
registries), also when written inside an IPv6 address (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible, 6to4,
NAT64 ``64:ff9b::/96``). The operator lets some through by name or range (``AI_SIDEBAR_MCP_ALLOWED_HOSTS``).

A name is checked after resolution, every address it resolves to; the connection then goes to the address that was
checked (:mod:`service.tools.mcp_http`), so a name that resolves differently a moment later (DNS rebinding) changes
nothing. The service's own servers (``MCP_SERVERS``) are trusted and never checked here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# host name, port → every address the name resolves to.
Resolver = Callable[[str, int], Awaitable[list[Address]]]

ALLOW_VARIABLE = "AI_SIDEBAR_MCP_ALLOWED_HOSTS"
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix: the IPv4 address is the last 32 bits
_HOST_NAME = re.compile(r"^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class AddressNotAllowed(Exception):
    """The server's host is (or resolves to) ``address``, which is not publicly routable and not allowed.

    Attributes:
        origin: ``scheme://host:port`` of the URL (never its path, query or credentials): what may be shown and
            logged.
        address: the refused address (for the operator's log; not shown to the requester, whom it would tell how
            the service's network resolves names).
    """

    def __init__(self, origin: str, address: Address):
        super().__init__(f"{origin} is not on a public address: the service connects to loopback, private and "
                         f"link-local addresses only when its operator allows them in {ALLOW_VARIABLE}")
        self.origin = origin
        self.address = address


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the default port written out; an IPv6 host in brackets)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}:{parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)}"


def _embedded(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and would reach (mapped, compatible, 6to4, NAT64), else ``None``."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or int(address) >> 32 == 0:  # NAT64, or IPv4-compatible ::a.b.c.d (and :: and ::1)
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether ``address`` is publicly routable: globally reachable per the IANA special-purpose registries
    (``ipaddress``'s ``is_global``), not multicast or site-local, and so is any IPv4 address it embeds."""
    if address.is_multicast or not address.is_global:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False
    embedded = _embedded(address)
    return embedded is None or is_public(embedded)


async def resolve(host: str, port: int) -> list[Address]:
    """Every address the name ``host`` resolves to for a TCP connection (the system resolver, as a connection
    would use).

    Raises:
        OSError: the name does not resolve (``socket.gaierror``).
    """
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # A link-local IPv6 answer carries its zone ("fe80::1%eth0"); the zone is not part of the address.
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


@dataclass(frozen=True)
class AddressPolicy:
    """The operator's allow-list for the MCP servers of requests: host names (``mcp.internal``; ``*.corp.example``
    for every name below it) whose addresses are not checked, and ranges (``10.0.0.0/8``, ``127.0.0.1``, ``::1``)
    whose addresses are allowed.

    Args:
        names: lower-case host names, without a trailing dot; ``*.suffix`` entries match names below ``suffix``.
        networks: the allowed ranges.
        resolver: host, port → addresses (replaceable for tests; default the system resolver).
    """

    names: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()
    resolver: Resolver = field(default=resolve, compare=False)

    @classmethod
    def parse(cls, setting: str) -> AddressPolicy:
        """The policy of ``AI_SIDEBAR_MCP_ALLOWED_HOSTS``: entries separated by commas or white space, each a host
        name, ``*.`` and a domain, an address or a CIDR range (host bits may be set: ``10.1.2.3/8`` is 10.0.0.0/8).

        Raises:
            ValueError: an entry that is none of these, named.
        """
        names: set[str] = set()
        networks: list[Network] = []
        for entry in re.split(r"[\s,]+", setting.strip()):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = entry.lower().rstrip(".")
            if not _HOST_NAME.match(name):
                raise ValueError(f"{ALLOW_VARIABLE}: {entry!r} is neither a host name nor an address or CIDR range")
            names.add(name)
        return cls(frozenset(names), tuple(networks))

    def allows_name(self, host: str) -> bool:
        """Whether ``host`` is a name the operator allows whatever it resolves to."""
        name = host.lower().rstrip(".")
        return name in self.names or any(entry.startswith("*.") and name.endswith(entry[1:])
                                         for entry in self.names)

    def allows(self, address: Address) -> bool:
        """Whether the service may connect to ``address``: a public one, or one in an allowed range (an IPv6 form
        of an IPv4 address counts as that address)."""
        if is_public(address):
            return True
        embedded = _embedded(address)
        return any(address in network or (embedded is not None and embedded in network) for network in self.networks)

    async def check(self, url: str) -> list[Address]:
        """The addresses the service may connect to for ``url``: every one its host resolves to, when all are
        allowed; empty when the host is an allowed name (the connection then resolves it itself).

        Raises:
            AddressNotAllowed: one of them is not (the first such, with the URL's origin).
            OSError: the host does not resolve, or is no valid host name.
        """
        parts = urlsplit(url)
        host = parts.hostname or ""
        if self.allows_name(host):
            return []
        try:
            addresses: list[Address] = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addresses = await self.resolver(host, parts.port or _DEFAULT_PORTS.get(parts.scheme, 0))
            except UnicodeError as err:  # no IDNA name ("\x80"): the resolver's codec refuses it
                raise OSError(f"{origin(url)}: the host is not a valid name ({err})") from None
        if not addresses:
            raise OSError(f"{origin(url)}: the host name resolves to no address")
        for address in addresses:
            if not self.allows(address):
                raise AddressNotAllowed(origin(url), address)
        return addresses
