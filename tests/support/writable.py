"""A Node-RED of a test module's own, whose flows that module's tests change (write tools, approvals).

The fixture is registered in tests/conftest.py; its name holds "nodered", so the tests using it are marked
``nodered`` and run on every supported Node-RED version.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

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


def deployed(nodered: NodeRed) -> dict[str, Any]:
    """Node-RED's deployed flows as ``GET /flows`` answers with ``Node-RED-API-Version: v2``:
    ``{"rev": str, "flows": [node, ...]}``."""
    request = urllib.request.Request(f"{nodered.url}/flows", headers={"Node-RED-API-Version": "v2"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())
