"""Check a person's Node-RED user name and password with Node-RED itself: its documented admin password grant,
``POST <httpAdminRoot>/auth/token`` with ``client_id=node-red-admin``, ``grant_type=password`` and a ``scope``
(https://nodered.org/docs/api/admin/oauth). The password is sent there once and kept nowhere."""

from __future__ import annotations

from dataclasses import dataclass, field

import aiohttp

from service.nodered.client import CLIENT_ID


@dataclass(frozen=True)
class NodeRedLogin:
    """A successful login: the Node-RED ``token`` (``expires_in`` seconds) and whether it may write (Node-RED granted
    scope ``*``; ``read`` otherwise)."""

    token: str = field(repr=False)
    expires_in: float
    may_write: bool


class LoginRefused(Exception):
    """Node-RED refused the user name and password (or the login scheme is not ``credentials``)."""


class NodeRedUnreachable(Exception):
    """Node-RED did not answer the login (down, timeout, or a server error)."""


LOGIN_TIMEOUT = 10.0  # seconds for the whole login (Node-RED's bcrypt check included)


async def nodered_login(admin_url: str, username: str, password: str, want_write: bool) -> NodeRedLogin:
    """Log ``username`` in at the Node-RED whose admin root is ``admin_url``. With ``want_write``, asks scope ``*``
    first and ``read`` when Node-RED refuses it (a read-only user), else ``read`` only.

    Raises:
        LoginRefused: wrong user name or password, or adminAuth is not the ``credentials`` type.
        NodeRedUnreachable: Node-RED could not be asked.
    """
    base = admin_url.rstrip("/")
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=LOGIN_TIMEOUT)) as http:
            async with http.get(f"{base}/auth/login") as resp:
                scheme = await resp.json(content_type=None) if resp.status == 200 else None
            if not isinstance(scheme, dict) or scheme.get("type") != "credentials":
                raise LoginRefused("Node-RED does not offer a user name and password login (adminAuth)")
            for scope in ("*", "read") if want_write else ("read",):
                form = {"client_id": CLIENT_ID, "grant_type": "password", "scope": scope, "username": username,
                        "password": password}
                async with http.post(f"{base}/auth/token", data=form) as resp:
                    if resp.status in (401, 403):
                        continue
                    if resp.status >= 400:
                        raise NodeRedUnreachable(f"Node-RED answered {resp.status}")
                    answer = await resp.json(content_type=None)
                return NodeRedLogin(answer["access_token"], float(answer.get("expires_in") or 3600), scope == "*")
    except (aiohttp.ClientError, TimeoutError) as err:
        raise NodeRedUnreachable(type(err).__name__) from None
    raise LoginRefused("wrong user name or password")
