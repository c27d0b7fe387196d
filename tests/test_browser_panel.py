"""The sidebar's notices, token and cost lines and Knowledge panel (issues 17 and 21, editor side) in a real
headless Chromium against a real Node-RED (adminAuth: an admin and a read-only viewer), the service as a process
that reads Node-RED with its own account (so its knowledge index and its check of generated flows work), and the
scripted model.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import NodeRed, example_flows, free_port, hash_password, project_flows
from tests.test_browser_sidebar import (
    PASSWORD,
    SERVICE_TOKEN,
    USERNAME,
    ServiceProcess,
    admin_request,
    browser_installed,  # noqa: F401 (the session fixture that fails without a browser)
    fenced,
    run_feature,
    tab_named,
)

VIEWER, VIEWER_PASSWORD = "viewer", "viewer-password-for-browser-tests"
QUESTION = "Build me a flow that writes sensor readings to InfluxDB"
FLOW_WITH_UNKNOWN_TYPES = [
    {"id": "p-inject", "type": "inject", "z": "p-tab", "x": 120, "y": 80, "wires": [["p-fn"]]},
    {"id": "p-fn", "type": "functon", "z": "p-tab", "x": 280, "y": 80, "wires": [["p-influx"]]},
    {"id": "p-influx", "type": "influxdb out", "z": "p-tab", "x": 440, "y": 80, "wires": []},
]
USAGE_LINE = re.compile(r"^[\d,]+ tokens in · [\d,]+ out · (\$[\d.]+|—)$")


@pytest.fixture(scope="module")
def panel_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth (admin: everything, viewer: read), and the service reading it as the admin."""
    service_port = free_port()
    workdir = tmp_path_factory.mktemp("browser-panel")
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials",
                    "users": [{"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"},
                              {"username": VIEWER, "password": hash_password(VIEWER_PASSWORD),
                               "permissions": "read"}]},
        flows=example_flows() + project_flows(),
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    nodered.start()
    service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                             workdir / "service.log")
    service.env.update({"NODE_RED_USERNAME": USERNAME, "NODE_RED_PASSWORD": PASSWORD})
    try:
        service.start()
        yield nodered, service
    finally:
        service.stop()
        nodered.stop()


def token_of(nodered: NodeRed, username: str, password: str) -> str:
    form = urllib.parse.urlencode({"client_id": "node-red-admin", "grant_type": "password", "scope": "*",
                                   "username": username, "password": password}).encode()
    with urllib.request.urlopen(f"{nodered.url}/auth/token", data=form, timeout=10) as response:
        return json.loads(response.read())["access_token"]


def indexed(nodered: NodeRed) -> dict[str, Any]:
    """The knowledge index once the service's first refresh has read Node-RED (help and workspace)."""
    token = token_of(nodered, USERNAME, PASSWORD)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        body = admin_request(nodered, token, "GET", "/ai-sidebar/knowledge")
        if body.get("refreshedAt") and body["stores"].get("docs") and body["stores"].get("workspace"):
            return body
        time.sleep(0.5)
    raise AssertionError(f"the knowledge index was not built: {body}")


def test_an_answer_shows_its_unknown_node_types_usage_and_the_knowledge_panel_reindexes_for_an_admin(
        panel_stack, model):
    nodered, _ = panel_stack
    tab = tab_named(nodered, "01 - Catch error")
    body = indexed(nodered)
    model.script(Reply(text="Here is the flow:\n\n" + fenced(FLOW_WITH_UNKNOWN_TYPES)))

    seen = run_feature(nodered, "panel", tab["id"], QUESTION=QUESTION, NARROW_WIDTH="200", REINDEX="1")

    notice = seen["answer"]["notice"]
    assert notice["code"] == "unknown_node_types"
    assert notice["heading"] == "This flow uses node types that are not installed:"
    assert notice["items"] == ["functon not installed; did you mean function?",
                               "influxdb out provided by node-red-contrib-influxdb: install it from Manage palette"]
    assert notice["palette"] == "Manage palette" and notice["paletteShown"] and notice["inside"]
    assert seen["answer"]["importWarned"]
    assert seen["answer"]["importTitle"] == "This flow uses node types that are not installed: functon, influxdb out"
    usage = seen["answer"]["usage"]
    assert USAGE_LINE.match(usage["text"]), usage
    assert seen["answer"]["session"]["text"].startswith("This conversation: ")
    assert USAGE_LINE.match(seen["answer"]["session"]["text"].removeprefix("This conversation: "))

    panel = seen["panel"]
    assert panel["open"] and not panel["reindexDisabled"] and not panel["readOnlyNote"]
    stores = {s["store"]: s for s in panel["stores"]}
    assert stores["docs"]["name"] == "Installed nodes' help"
    assert stores["workspace"]["name"] == "Your workspace"
    docs_modules = {s["module"] for s in body["sources"] if s["store"] == "docs"}
    assert stores["docs"]["counts"].startswith(f"{len(docs_modules)} source")
    assert any(entry.startswith("node-red@") for entry in stores["docs"]["entries"])
    assert "Workspace summary" == stores["workspace"]["entries"][0]
    assert "Flow “01 - Catch error”" in stores["workspace"]["entries"]
    assert panel["freshness"].startswith("Last refreshed ")
    assert seen["reindexRunning"] == {"disabled": True, "kind": "running"}
    after = seen["afterReindex"]
    assert after["statusKind"] == "done", after["status"]
    assert re.fullmatch(r"Reindexed: \d+ sources read again, \d+ removed\.", after["status"])
    assert not after["reindexDisabled"]
    assert seen["closedByEscape"]

    assert seen["narrowWidth"] <= 240
    narrow = seen["narrowPanel"]
    assert narrow["open"] and narrow["inside"] and narrow["buttonInHeader"] and narrow["newChatInside"], narrow
    assert seen["narrowAnswer"]["notice"]["inside"] and seen["narrowAnswer"]["usage"]["inside"]


def test_a_read_only_user_sees_the_knowledge_but_cannot_reindex_or_open_the_palette_manager(panel_stack, model):
    nodered, _ = panel_stack
    tab = tab_named(nodered, "01 - Catch error")
    indexed(nodered)
    model.script(Reply(text="Here is the flow:\n\n" + fenced(FLOW_WITH_UNKNOWN_TYPES)))

    seen = run_feature(nodered, "panel", tab["id"], QUESTION=QUESTION, NARROW_WIDTH="200", USERNAME=VIEWER,
                       PASSWORD=VIEWER_PASSWORD, SHOT_SUFFIX="-read-only")

    assert seen["answer"]["notice"]["palette"] is None
    assert len(seen["answer"]["notice"]["items"]) == 2
    assert USAGE_LINE.match(seen["answer"]["usage"]["text"])
    panel = seen["panel"]
    assert panel["reindexDisabled"] and panel["readOnlyNote"]
    # the document library too: a reader keeps private documents (a shared one needs write)
    assert {s["store"] for s in panel["stores"]} == {"docs", "workspace", "documents"}
