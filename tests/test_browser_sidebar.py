"""The AI sidebar tab in a real headless Chromium against a real Node-RED, service and scripted model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support.model_server import Reply
from tests.support.nodered import PALETTE, REPO

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM) or shutil.which("node") is None,
                                reason="Debian chromium is installed by `make test`")


def run_browser(script: str, env: dict[str, str]) -> dict:
    ARTIFACTS.mkdir(exist_ok=True)
    completed = subprocess.run(
        ["node", str(REPO / "tests" / "browser" / script)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "NODE_PATH": os.environ.get("BROWSER_NODE_PATH", str(PALETTE / "node_modules")), "OUT_DIR": str(ARTIFACTS), **env})
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_asking_about_the_current_tab_streams_the_answer_into_the_sidebar(nodered, service_process, model):
    tab = next(t for t in nodered.tabs() if len(nodered.nodes_of(t["id"])) >= 3)
    answer = "This flow injects a timestamp every few seconds and shows it in the debug sidebar."
    model.script(Reply(text=answer, token_delay=0.15))

    seen = run_browser("sidebar_chat.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"],
                                           "QUESTION": "explain the current flow", "FINAL_TEXT": "debug sidebar"})

    assert seen["pageErrors"] == []
    assert seen["activeTab"] == tab["id"]
    assert answer in seen["finalText"]
    # Text appeared piece by piece while the model was still streaming.
    assert any(0 < len(text) < len(answer) for text in seen["partialTexts"])
    assert seen["toolCards"] >= 1 and seen["errors"] == []
    # The question went out with the editor's selection: the model saw that tab's nodes.
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert all(node["id"] in prompt for node in nodered.nodes_of(tab["id"]))
    assert os.path.getsize(seen["screenshot"]) > 10_000
