"""Who a request is for: the editor user's Node-RED token and name, as the palette plugin forwards them.

The plugin is the only caller that holds ``AI_SIDEBAR_TOKEN``, so these headers are trusted as the plugin set
them: ``X-Node-RED-Token`` is the editor user's own Admin API bearer token (the service reads Node-RED with it,
never with wider rights); ``X-Node-RED-User`` is ``req.user.username``, percent-encoded. With adminAuth off there
is no user: everyone shares the identity ``default``.
"""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web

USER_TOKEN_HEADER = "X-Node-RED-Token"
USER_NAME_HEADER = "X-Node-RED-User"
SHARED_USER = "default"


def request_user(request: web.Request) -> str:
    """The Node-RED user name the request is made for, or ``default``."""
    raw = request.headers.get(USER_NAME_HEADER, "")
    name = unquote(raw).strip()[:200]
    return name or SHARED_USER


def request_token(request: web.Request) -> str | None:
    """The editor user's Admin API token, when the plugin forwarded one."""
    return request.headers.get(USER_TOKEN_HEADER) or None
