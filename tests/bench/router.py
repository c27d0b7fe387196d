"""The router graph (issue 21): the labelled requests of ``tests/support/router_paths.py`` sent through the real
service (in-process, MCP tools on as by default, knowledge refreshed) against a Node-RED, with a scripted model
server counting the model calls of each; reports calls per path, the share answered with ≤ 2 calls and the requests
that did not take their labelled path; and the share of the requests that need tools
(``tests/support/tool_requests.py``) that a model call offered tools.

Run alone: ``.venv/bin/python -m tests.bench.router`` (starts its own Node-RED).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.support.model_server import ScriptedModelServer
from tests.support.router_paths import ROUTER_REQUESTS, run_labelled, summary
from tests.support.tool_requests import NEEDS_TOOLS

from .report import router_lines

BENCH_TOKEN = "bench-router-token-0123456789"


async def run(nodered_url: str) -> dict[str, Any]:
    """The labelled set's summary (see :func:`tests.support.router_paths.summary`) against ``nodered_url``."""
    model = ScriptedModelServer()
    model.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-router-") as workdir:
            # A service token, as the plugin gives its service: only then are the requests' users believed (a
            # token-less service answers everyone as the read-only anonymous editor, and @tools: needs write).
            settings = Settings(token=BENCH_TOKEN, nodered=NodeRedSettings(url=nodered_url),
                                openai_base_url=model.base_url, openai_api_key="bench-router-key",
                                memory_db_path=Path(workdir) / "memory.db",
                                knowledge_refresh=0)
            headers = {"Authorization": f"Bearer {BENCH_TOKEN}", "X-Node-RED-User": "bench-router"}
            async with TestClient(TestServer(create_app(settings)), headers=headers) as client:
                await client.server.app[KNOWLEDGE].refresher.refresh()
                return summary(await run_labelled(client, model, nodered_url, [*ROUTER_REQUESTS, *NEEDS_TOOLS]))
    finally:
        model.stop()


def main() -> int:
    from tests.support.nodered import NodeRed, example_flows, free_port

    workdir = Path(tempfile.mkdtemp(prefix="bench-router-nodered-"))
    nodered = NodeRed(userdir=workdir / "nodered", port=free_port(), flows=example_flows(), with_palette=False)
    nodered.start()
    try:
        results = asyncio.run(run(nodered.url))
    finally:
        nodered.stop()
    print("\n".join(router_lines(results)))
    print(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
