"""Which ``Host`` and ``Origin`` a request may name: the DNS-rebinding guard of the service and of the MCP server's
streamable HTTP transport (``AI_SIDEBAR_ALLOWED_HOSTS``, ``MCP_HTTP_ALLOWED_HOSTS``).

A web page the user opens can make its own host name resolve to 127.0.0.1 and then talk to a loopback port as a
same-origin page ("DNS rebinding"); its requests still carry the page's host name in ``Host`` (and its origin in
``Origin``, RFC 6454). Answering only requests that name an allowed host stops it. A host name of the list matches
with any port; ``*`` turns the check off (behind a proxy that checks it itself).

This module imports nothing from ``service`` outside ``service/nodered/``: the MCP server uses it alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

# Names that reach this machine's loopback interface only; "[::1]" as a Host header writes it (RFC 3986 IP-literal).
LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")
ANY_HOST = "*"


def parse_hosts(setting: str | None) -> tuple[str, ...]:
    """A comma-separated ``*_ALLOWED_HOSTS`` value as lower-case host names without port.

    ``"Example.org, 10.0.0.5:8765, [fd00::1]"`` → ``("example.org", "10.0.0.5", "[fd00::1]")``; an IPv6 address may
    be written with or without brackets. ``None`` or empty: no names.

    Raises:
        ValueError: a name holds a scheme, a path or a space (``http://host`` or ``host/path``: give the name only).
    """
    names: list[str] = []
    for raw in (setting or "").split(","):
        name = raw.strip().lower()
        if not name:
            continue
        if name == ANY_HOST:
            names.append(name)
            continue
        if "/" in name or " " in name or "@" in name:
            raise ValueError(f"{raw.strip()!r} is not a host name: give names like example.org or 10.0.0.5, "
                             "comma-separated, without scheme or path")
        names.append(_without_port(name) if name.startswith("[") or name.count(":") <= 1 else f"[{name}]")
    return tuple(names)


def _without_port(host: str) -> str:
    """``host[:port]`` (``[v6]:port`` for IPv6) without the port, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[:end + 1] if end != -1 else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class HostAllowList:
    """The host names requests may name in ``Host`` and ``Origin``.

    Attributes:
        names: lower-case host names without port (IPv6 in brackets); loopback names always included; ``*`` in it
            allows every host.
    """

    names: tuple[str, ...] = LOOPBACK_HOSTS

    @classmethod
    def of(cls, extra: Iterable[str] = (), bind_host: str | None = None) -> HostAllowList:
        """The loopback names, the ``extra`` names (from :func:`parse_hosts`) and the address the server binds to
        when that names one host (not ``0.0.0.0`` or ``::``, which name every interface)."""
        names = list(LOOPBACK_HOSTS)
        if bind_host and bind_host not in ("0.0.0.0", "::", ""):
            names.extend(parse_hosts(bind_host))
        names.extend(extra)
        return cls(tuple(dict.fromkeys(names)))

    @property
    def any(self) -> bool:
        return ANY_HOST in self.names

    def allows_host(self, host: str | None) -> bool:
        """Whether a ``Host`` header value (``name[:port]``) names an allowed host; a missing one does not."""
        if self.any:
            return True
        return bool(host) and _without_port(host or "") in self.names

    def allows_origin(self, origin: str | None) -> bool:
        """Whether an ``Origin`` header value is absent or an http(s) origin on an allowed host (``null``, the
        origin of a sandboxed frame or a file, is not)."""
        if origin is None or self.any:
            return True
        try:
            parts = urlsplit(origin.strip())
            port_free = parts.hostname
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not port_free:
            return False
        host = f"[{port_free}]" if ":" in port_free else port_free
        return host in self.names

    def patterns(self) -> tuple[list[str], list[str]]:
        """The same list as the MCP SDK's ``TransportSecuritySettings`` writes it: ``(allowed_hosts,
        allowed_origins)`` with ``name`` and ``name:*`` (any port) for each name, origins for http and https."""
        hosts = [pattern for name in self.names for pattern in (name, f"{name}:*")]
        origins = [f"{scheme}://{pattern}" for scheme in ("http", "https") for pattern in hosts]
        return hosts, origins
