"""A Node-RED of a test module's own, whose flows that module's tests change (write tools, approvals). The fixtures are
registered in tests/conftest.py (``write_settings`` and ``service``: the service against it); its name holds
"nodered", so the tests using it are marked ``nodered`` and run on every supported Node-RED version.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from tests.support.nodered import NodeRed, example_flows, free_port

# Two small tabs to write to: an inject chain and a function node with two outputs.
WRITABLE_EXAMPLES = ("common/inject/02 - Trigger a flow at regular intervals.json",
                     "function/function/02 - Send multiple messages.json")


@pytest.fixture(scope="module")
def writable_nodered(tmp_path_factory, request):
    """A Node-RED (without the palette) with :data:`WRITABLE_EXAMPLES`, one per test module: the module's tests
    write to its flows, so no other module sees what they leave."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    instance = NodeRed(userdir=tmp_path_factory.mktemp(f"nodered-{name}"), port=free_port(),
                       flows=example_flows(WRITABLE_EXAMPLES), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def settings_for(nodered: NodeRed, model: Any, tmp_path: Any) -> Settings:
    """The service's settings against ``nodered`` and the scripted ``model``: a database of the test's own
    (under ``tmp_path``), no MCP tools, no background knowledge refresh."""
    from tests.conftest import SERVICE_SECRET, TEST_API_KEY  # here: conftest imports this module

    return Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=nodered.url),
                    openai_base_url=model.base_url, openai_api_key=TEST_API_KEY,
                    memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False, knowledge_refresh=0)


@pytest.fixture
def write_settings(writable_nodered, model, tmp_path) -> Settings:
    """The service's settings (:func:`settings_for`) against the module's :func:`writable_nodered`."""
    return settings_for(writable_nodered, model, tmp_path)


@pytest.fixture
async def service(aiohttp_client, write_settings):
    """A test client of the service built from :func:`write_settings`."""
    return await aiohttp_client(create_app(write_settings))


def deployed(nodered: NodeRed) -> dict[str, Any]:
    """Node-RED's deployed flows as ``GET /flows`` answers with ``Node-RED-API-Version: v2``:
    ``{"rev": str, "flows": [node, ...]}``."""
    request = urllib.request.Request(f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())
