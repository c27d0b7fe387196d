"""An MCP server for tests (``python -m tests.support.many_tools_server [--hang | --few] [--http PORT]``), built
with the ``mcp`` SDK's FastMCP: by default 150 tools (15 services × 10 actions, ``<service>_<action>``; the reading
actions annotated ``readOnlyHint``); ``--few``: ``echo``, ``explode`` (which kills the process mid-call, as a
crashing server does), ``report`` (a long text: about 3,000 characters naming its ``part``) and ``whoami`` (over
HTTP: the request's ``Authorization`` header and MCP session id); ``--hang``: never answers its start. Over stdio
unless ``--http PORT`` serves streamable HTTP at ``http://127.0.0.1:PORT/mcp``."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

SERVICES = {
    "jira": "Jira issue tracker tickets", "github": "GitHub pull requests and repositories",
    "postgres": "PostgreSQL database tables and rows", "grafana": "Grafana dashboards and panels",
    "slack": "Slack channels and chat messages", "s3": "Amazon S3 buckets and stored files",
    "calendar": "calendar meetings and appointments", "wiki": "Confluence wiki documentation pages",
    "crm": "customer relationship records and sales leads", "sensors": "factory sensor readings and telemetry",
    "invoices": "billing invoices and payments", "docker": "Docker containers and images",
    "email": "email inbox letters", "weather": "weather forecasts and temperatures",
    "inventory": "warehouse stock levels and spare parts",
}
ACTIONS = {
    "list": ("List", True), "get": ("Read one of the", True), "search": ("Search", True),
    "count": ("Count", True), "export": ("Export a report of", True), "create": ("Create new", False),
    "update": ("Change existing", False), "delete": ("Delete", False), "archive": ("Archive old", False),
    "watch": ("Subscribe to changes of", False),
}


def tool_names() -> list[str]:
    """The 150 tool names, ``<service>_<action>``."""
    return [f"{service}_{action}" for service in SERVICES for action in ACTIONS]


def description(name: str) -> str:
    service, action = name.split("_", 1)
    return f"{ACTIONS[action][0]} {SERVICES[service]}."


def _runner(name: str):
    def run(query: str = "") -> str:
        return f"{name} done for {query!r}"
    return run


def whoami(ctx: Context) -> str:
    """The ``Authorization`` header and ``mcp-session-id`` of the HTTP request that carried this call."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", {})
    return f"authorization={headers.get('authorization')} session={headers.get('mcp-session-id')}"


def report(part: int = 1) -> str:
    """A long result, as a log export or a large query answer is: 40 lines naming ``part``."""
    return "\n".join(f"part {part} line {line}: sensor reading within limits, no alarm raised, value {line * part}"
                     for line in range(40))


def build(few: bool, port: int = 8000) -> FastMCP:
    server = FastMCP("test-tools", port=port)
    if few:
        def echo(text: str = "") -> str:
            return f"echo: {text}"

        def explode() -> str:
            os._exit(3)  # the process dies while the call waits for its answer

        server.add_tool(echo, name="echo", description="Echo the text.",
                        annotations=ToolAnnotations(readOnlyHint=True))
        server.add_tool(explode, name="explode", description="Read the crash report.",
                        annotations=ToolAnnotations(readOnlyHint=True))
        server.add_tool(report, name="report", description="Export the sensor report, one part at a time.",
                        annotations=ToolAnnotations(readOnlyHint=True))
        server.add_tool(whoami, name="whoami", description="Tell who is calling.",
                        annotations=ToolAnnotations(readOnlyHint=True))
        return server
    for name in tool_names():
        server.add_tool(_runner(name), name=name, description=description(name),
                        annotations=ToolAnnotations(readOnlyHint=ACTIONS[name.split("_", 1)[1]][1]))
    return server


if __name__ == "__main__":
    if "--hang" in sys.argv:
        while True:
            time.sleep(3600)
    if "--http" in sys.argv:
        build("--few" in sys.argv, int(sys.argv[sys.argv.index("--http") + 1])).run("streamable-http")
    else:
        build("--few" in sys.argv).run("stdio")
