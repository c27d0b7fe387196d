"""Several Node-RED instances behind one ``nodered-mcp`` (``MCP_NODERED_INSTANCES``, streamable HTTP only).

Each instance gets an MCP endpoint of its own, ``/<name>/mcp``, served by its own server
(:func:`mcp_server.server.build_server`: its own Node-RED client, runtime evidence, knowledge index and resource
subscriptions), so its tools, resources and prompts are those of a one-instance server and a client connects to one
instance at a time. With sign-in (``MCP_AUTH=oauth``) one authorization server serves them all (one issuer, one
sign-in page, one ``MCP_AUTH_DB``) and each endpoint is a protected resource of its own: a person signs in with the
users of the instance the client named as its RFC 8707 ``resource``, the grant is for that instance, and its tokens
are refused at every other endpoint. The audit's rows name their instance.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from service.nodered.hosts import HostAllowList
from service.nodered.settings import EnvSettings, EvidenceSettings, NodeRedSettings, SettingsError

from .auth import McpAuthSettings, SignIn
from .server import build_server
from .settings import McpWriteSettings

# An instance name is one URL path segment of its endpoint, and a column value of the audit and the grants.
INSTANCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


class InstanceConfig(BaseModel):
    """One instance of ``MCP_NODERED_INSTANCES``: the keys of :class:`NodeRedSettings` without ``NODE_RED_``
    (``url``, ``token`` or ``username`` + ``password``, ``timeout``)."""

    model_config = ConfigDict(extra="forbid")

    url: str
    token: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None
    timeout: float = Field(10.0, gt=0)

    def settings(self) -> NodeRedSettings:
        """These values as the core's settings model (validated as ``NODE_RED_*`` are).

        Raises:
            SettingsError: a value :class:`NodeRedSettings` refuses (a URL that is not http(s), a user name
                without a password).
        """
        env = {"NODE_RED_URL": self.url, "NODE_RED_TIMEOUT": str(self.timeout)}
        if self.token is not None:
            env["NODE_RED_TOKEN"] = self.token.get_secret_value()
        if self.username is not None:
            env["NODE_RED_USERNAME"] = self.username
        if self.password is not None:
            env["NODE_RED_PASSWORD"] = self.password.get_secret_value()
        return NodeRedSettings.load(env=env)


class McpInstancesSettings(EnvSettings):
    """``MCP_NODERED_INSTANCES``: the Node-RED instances one server fronts, a JSON object (or the path of a JSON
    file holding one) of name → :class:`InstanceConfig`, e.g. ``{"line1": {"url": "http://10.0.0.5:1880"},
    "line2": {"url": "http://10.0.0.6:1880/admin"}}``. Names are 1 to 32 of ``a-z``, ``0-9``, ``_`` and ``-``
    (starting with a letter or digit). Unset: one instance, ``NODE_RED_*``."""

    instances: str | None = Field(None, validation_alias="MCP_NODERED_INSTANCES")

    @field_validator("instances")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_instances(value)
            return value
        return None

    def configs(self) -> dict[str, NodeRedSettings]:
        """Name → settings, in the order given; empty when unset."""
        return parse_instances(self.instances) if self.instances else {}


def parse_instances(value: str) -> dict[str, NodeRedSettings]:
    """Read ``MCP_NODERED_INSTANCES`` (JSON text, or a file path when it does not start with ``{``).

    Raises:
        ValueError: unreadable, not an object of at least one instance, a bad name or a bad instance (the
            message names which; no value is echoed, since one may be a password).
    """
    text = value.strip()
    if not text.startswith("{"):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(f"is neither a JSON object nor a readable file ({type(err).__name__})") from None
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"is not valid JSON (line {err.lineno}, column {err.colno})") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError('must be a JSON object of at least one instance: {"name": {"url": "http://..."}}')
    configs = {}
    for name, entry in raw.items():
        if not INSTANCE_NAME.match(name):
            raise ValueError(f"instance name {name!r} must be 1 to 32 of a-z, 0-9, _ and -, starting with a "
                             "letter or digit (it becomes the path /<name>/mcp)")
        try:
            configs[name] = InstanceConfig.model_validate(entry).settings()
        except (ValidationError, SettingsError) as err:
            fields = ", ".join(".".join(str(part) for part in error["loc"]) or "value"
                               for error in err.errors()) if isinstance(err, ValidationError) else str(err)
            raise ValueError(f"instance {name!r}: {fields}") from None
    return configs


def instance_file(path: str | None, name: str) -> str | None:
    """An instance's own copy of a per-server SQLite file: ``knowledge.db`` → ``knowledge-<name>.db`` (``None``
    and ``:memory:`` stay as they are)."""
    if path is None or path == ":memory:":
        return path
    file = Path(path)
    return str(file.with_name(f"{file.stem}-{name}{file.suffix}"))


def instances_app(instances: dict[str, NodeRedSettings], *, host: str, port: int, knowledge_db: str | None,
                  evidence: EvidenceSettings, writes: McpWriteSettings, allowed_hosts: HostAllowList,
                  auth: McpAuthSettings | None = None, shared_token: str | None = None) -> Starlette:
    """The ASGI app serving every instance of ``instances`` at ``/<name>/mcp`` (with ``auth``: its protected
    resource metadata at ``/.well-known/oauth-protected-resource/<name>/mcp`` and the authorization server's routes
    at the root, one sign-in for all). The write tools, their audit file (``MCP_AUDIT_DB``, rows naming their
    instance) and the evidence settings apply to every instance; each instance indexes its knowledge in its own
    file (:func:`instance_file`)."""
    signins = SignIn.for_instances(auth, host, port, {name: config.url for name, config in instances.items()},
                                   shared_token) if auth is not None and auth.enabled else {}
    servers = {name: build_server(config, host=host, port=port, knowledge_db=instance_file(knowledge_db, name),
                                  evidence=evidence, writes=writes, allowed_hosts=allowed_hosts,
                                  signin=signins.get(name), instance=name, http_path=f"/{name}/mcp")
               for name, config in instances.items()}
    routes: list[BaseRoute] = []
    for name, server in servers.items():
        # Each instance's app routes the path again and checks tokens for its own resource (the SDK's middleware).
        app = server.streamable_http_app()
        routes.append(Route(f"/{name}/mcp", app))
        if name in signins:
            routes.append(Route(f"/.well-known/oauth-protected-resource/{name}/mcp", app))
    if signins:
        routes += next(iter(signins.values())).routes()

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    return Starlette(routes=routes, lifespan=lifespan)
