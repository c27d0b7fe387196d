"""Who a request is for, and what it may do: the headers the palette plugin and the ``ai-chat`` node set.

The plugin and the ``ai-chat`` node are the only callers that hold ``AI_SIDEBAR_TOKEN``, so these headers are trusted
as they set them (they build them themselves and never forward such headers from a browser):

- ``X-Node-RED-Token``: the editor user's own Admin API bearer token (the service reads Node-RED with it, never
  with wider rights).
- ``X-Node-RED-User``: ``encodeURIComponent(req.user.username)``, editor requests only. It is decoded exactly
  (no trim, no cut); absent means adminAuth is off and the request is the single anonymous editor's.
- ``X-AI-Sidebar-Flow-Node``: the id of the ``ai-chat`` node that asks (never with ``X-Node-RED-User``), with
  ``X-AI-Sidebar-Flow-Grants`` (``tools``, ``memory``, ``flows``: what the node's own config turned on) and
  ``X-AI-Sidebar-Conversation`` (``encodeURIComponent(msg.sessionId)``).
- ``X-AI-Sidebar-Permission``: ``read`` or ``write``; absent means ``write`` (direct clients holding the token).
  A flow node is ``read`` unless its grants hold ``flows`` (its "Allow flow changes" switch) *and* this header says
  ``write`` explicitly: both come from the relay, which builds them from the node's deployed config (a message
  into the flow cannot set either), so only the flow author who deployed the node can let it offer write tools,
  and each write still waits for an approval answered with this node's identity.

A service without ``AI_SIDEBAR_TOKEN`` cannot tell the plugin from any other local process (or a web page that got
past the host check), so it believes none of these headers but the user's own Node-RED token: every caller is the
anonymous editor, read-only (:data:`HEADERS_TRUSTED` is false; issue 29). It answers questions and keeps the
anonymous memory; flow changes, approvals and tools by name need the token.

Identities live in separate namespaces (:class:`Identity` ``kind``): editor users, the anonymous editor, flow
nodes (node id and conversation). Memory keeps the kind, the name and the conversation in separate columns, so no
name in one namespace can be read as another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote

from aiohttp import web

from service.errors import ServiceError

USER_TOKEN_HEADER = "X-Node-RED-Token"
USER_NAME_HEADER = "X-Node-RED-User"
FLOW_NODE_HEADER = "X-AI-Sidebar-Flow-Node"
FLOW_GRANTS_HEADER = "X-AI-Sidebar-Flow-Grants"
CONVERSATION_HEADER = "X-AI-Sidebar-Conversation"
PERMISSION_HEADER = "X-AI-Sidebar-Permission"

GRANTS = frozenset({"tools", "memory", "flows"})
# Whether the identity and permission headers come from a caller that proved it holds AI_SIDEBAR_TOKEN: set by
# create_app (true only with a token). Declared here, below the web layer, because request_caller reads it.
HEADERS_TRUSTED = web.AppKey("ai_sidebar_headers_trusted", bool)
# What encodeURIComponent can produce (ECMA-262, "encodeURIComponent": unreserved marks stay, the rest is %XX of
# UTF-8). Anything else did not come from it; refusing it keeps decoding one-to-one and exact.
_URI_COMPONENT = re.compile(r"^(?:[A-Za-z0-9\-_.!~*'()]|%[0-9A-Fa-f]{2})+$")
# Visible ASCII: Node-RED node ids (16 hex digits, ``<instance>-<id>`` inside subflows, hand-written ids).
_NODE_ID = re.compile(r"^[\x21-\x7e]{1,200}$")


@dataclass(frozen=True)
class Identity:
    """Whose conversations and saved knowledge a request reads and writes.

    Attributes:
        kind: the namespace: ``user`` (an editor user under adminAuth), ``anonymous`` (the one editor identity
            without adminAuth), ``flow`` (an ``ai-chat`` node).
        name: the exact user name, or the ``ai-chat`` node id; ``""`` for ``anonymous``.
        conversation: flow nodes only: the flow's ``msg.sessionId``; ``None`` when the flow set none (then
            nothing is remembered).
    """

    kind: Literal["user", "anonymous", "flow"]
    name: str = ""
    conversation: str | None = None

    @property
    def remembers(self) -> bool:
        """Whether memory can be scoped to this identity (a flow node needs a conversation)."""
        return self.kind != "flow" or self.conversation is not None

    @property
    def principal(self) -> tuple[str, str]:
        """Who is counted for limits (open streams): the user, or the ``ai-chat`` node whatever conversation."""
        return self.kind, self.name


ANONYMOUS = Identity("anonymous")


@dataclass(frozen=True)
class Caller:
    """A request's identity and rights.

    Attributes:
        identity: whose memory it uses.
        permission: ``write`` lets it run a tool by name (``@tools:``, ``execute-tool``), be offered write tools
            (each waits for approval), resume a run and change sessions and templates; ``read`` does not. Flow nodes
            are ``read`` unless granted ``flows`` (see the module docstring).
        grants: flow nodes: what the ``ai-chat`` node's config turned on (``tools``, ``memory``, ``flows``);
            editor callers have all.
        token: the editor user's Admin API token, when one was forwarded.
        unverified: the service runs without ``AI_SIDEBAR_TOKEN``, so the caller's headers were not believed
            (anonymous, read-only).
    """

    identity: Identity = ANONYMOUS
    permission: Literal["read", "write"] = "write"
    grants: frozenset[str] = GRANTS
    token: str | None = field(default=None, repr=False)
    unverified: bool = False

    @property
    def may_write(self) -> bool:
        return self.permission == "write"

    @property
    def tools(self) -> bool:
        """Whether tools may run at all for this caller (before an ``ai-config`` node's own switch)."""
        return "tools" in self.grants

    @property
    def memory(self) -> bool:
        """Whether memory may be read and written (before an ``ai-config`` node's own switch)."""
        return "memory" in self.grants and self.identity.remembers

    def require_write(self) -> None:
        """Raises: ServiceError 403 ``forbidden`` for a read-only caller (worded for a service without
        ``AI_SIDEBAR_TOKEN`` when that is why)."""
        if not self.may_write:
            raise ServiceError("forbidden", status=403,
                               key="forbidden.no_service_token" if self.unverified else "forbidden.write")


def _decoded(header: str, raw: str) -> str:
    """An ``encodeURIComponent`` value decoded exactly.

    Raises:
        ServiceError: 400 ``invalid_request`` for anything encodeURIComponent cannot have produced.
    """
    if not _URI_COMPONENT.match(raw):
        raise ServiceError("invalid_request", key="invalid_request.header_encoding", params={"header": header})
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise ServiceError("invalid_request", key="invalid_request.header_utf8", params={"header": header}) from None


def request_caller(request: web.Request) -> Caller:
    """The :class:`Caller` the request's headers describe; without ``AI_SIDEBAR_TOKEN`` (:data:`HEADERS_TRUSTED`
    false) the anonymous editor, read-only, whatever they claim.

    Raises:
        ServiceError: 400 ``invalid_request`` naming the header that is malformed, or when a request claims to
            be both an editor user and a flow node.
    """
    headers = request.headers
    if not request.app.get(HEADERS_TRUSTED, False):
        return Caller(ANONYMOUS, "read", GRANTS, headers.get(USER_TOKEN_HEADER) or None, unverified=True)
    permission: Literal["read", "write"]
    claimed = headers.get(PERMISSION_HEADER, "write")
    if claimed == "read":
        permission = "read"
    elif claimed == "write":
        permission = "write"
    else:
        raise ServiceError("invalid_request", key="invalid_request.permission", params={"header": PERMISSION_HEADER})
    token = headers.get(USER_TOKEN_HEADER) or None
    node_id = headers.get(FLOW_NODE_HEADER)
    if node_id is not None:
        if USER_NAME_HEADER in headers:
            raise ServiceError("invalid_request", key="invalid_request.two_identities",
                               params={"user_header": USER_NAME_HEADER, "node_header": FLOW_NODE_HEADER})
        if not _NODE_ID.match(node_id):
            raise ServiceError("invalid_request", key="invalid_request.node_id", params={"header": FLOW_NODE_HEADER})
        grants = frozenset(g.strip() for g in headers.get(FLOW_GRANTS_HEADER, "").split(",") if g.strip())
        if not grants <= GRANTS:
            raise ServiceError("invalid_request", key="invalid_request.grants",
                               params={"header": FLOW_GRANTS_HEADER, "grants": ", ".join(sorted(grants)),
                                       "allowed": ", ".join(sorted(GRANTS))})
        raw = headers.get(CONVERSATION_HEADER, "")
        conversation = _decoded(CONVERSATION_HEADER, raw) if raw else None
        # A flow node answers whoever triggers its flow (an HTTP endpoint may be open to anyone): read only, unless
        # the node's deployed config allows flow changes (grant and header, both set by the relay alone).
        node_permission: Literal["read", "write"] = \
            "write" if "flows" in grants and headers.get(PERMISSION_HEADER) == "write" else "read"
        return Caller(Identity("flow", node_id, conversation), node_permission, grants, token)
    if USER_NAME_HEADER in headers:
        return Caller(Identity("user", _decoded(USER_NAME_HEADER, headers[USER_NAME_HEADER])), permission,
                      GRANTS, token)
    return Caller(ANONYMOUS, permission, GRANTS, token)


def request_token(request: web.Request) -> str | None:
    """The editor user's Admin API token, when the plugin forwarded one."""
    return request.headers.get(USER_TOKEN_HEADER) or None
