"""The History panel with Node-RED's Projects feature on (issue 35, last bullet), in a real headless Chromium against
a real Node-RED 4.1 (adminAuth under /admin, Projects on, the active project ``garden`` with two commits) and the
service as a process: the panel's first line names the project and its last commit, the recent commits unfold
newest first, and all of it fits the sidebar at 240 px."""

from __future__ import annotations

import pytest

from tests.support.model_server import ScriptedModelServer
from tests.support.nodered import NodeRed, free_port, hash_password
from tests.support.projects import GIT_USER, commit
from tests.test_browser_history import run_history
from tests.test_browser_sidebar import (  # noqa: F401  (browser_installed is a fixture)
    PASSWORD,
    SERVICE_TOKEN,
    USERNAME,
    ServiceProcess,
    admin_request,
    admin_token,
    browser_installed,
    pytestmark,
)

SECOND_TIME = "2030-01-02T03:04:05Z"
SUBJECT = "Water the garden at dawn"


@pytest.fixture(scope="module")
def projects_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth, Projects on and the active project ``garden`` ("Create project", then
    :data:`SUBJECT` at :data:`SECOND_TIME`), and the service keeping its deploys."""
    service_port = free_port()
    workdir = tmp_path_factory.mktemp("browser-history-projects")
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin", projects=True,
        admin_auth={"type": "credentials",
                    "users": [{"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"}]},
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN,
             **GIT_USER})
    nodered.start()
    service = ServiceProcess(service_port, nodered.url, model_server.base_url, workdir / "memory.db",
                             workdir / "service.log")
    service.env.update({"NODE_RED_USERNAME": USERNAME, "NODE_RED_PASSWORD": PASSWORD})
    try:
        admin_request(nodered, admin_token(nodered), "POST", "/projects",
                      {"name": "garden", "credentialSecret": "", "files": {"flow": "flow.json"}})
        commit(workdir / "nodered" / "projects" / "garden", SUBJECT, SECOND_TIME)
        service.start()
        yield nodered, service
    finally:
        service.stop()
        nodered.stop()


def test_the_history_panel_names_the_active_project_and_unfolds_its_recent_commits(projects_stack, model):
    nodered, _ = projects_stack

    seen = run_history(nodered, "", script="sidebar_history_project.js")

    closed = seen["closed"]
    assert closed["visible"] and closed["first"], closed
    assert closed["line"].startswith(f"Projects is on: project garden, last commit “{SUBJECT}” ("), closed["line"]
    assert "2030" in closed["line"]
    assert closed["summary"] == "Recent commits (2)" and closed["open"] is False
    assert not any(commit["shown"] for commit in closed["commits"])
    unfolded = seen["unfolded"]
    assert [c["subject"] for c in unfolded["commits"]] == [SUBJECT, "Create project"]
    assert all(c["shown"] for c in unfolded["commits"])
    assert "Grace Hopper" in unfolded["commits"][0]["meta"]
    assert unfolded["commits"][0]["sha"][:7] in unfolded["commits"][0]["meta"]
    assert seen["narrowWidth"] <= 240
    assert seen["narrow"]["fits"] and seen["narrow"]["visible"], seen["narrow"]
