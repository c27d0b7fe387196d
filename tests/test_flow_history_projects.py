"""Node-RED's Projects feature beside the flow history (issue 35, last bullet), on a real Node-RED 4.1 with Projects
on, one active project made through the Admin API and a second commit made with git: the listing names the project
and its commits newest first, ``what_changed`` tells the model about its latest commit, and with Projects off
``project`` is null."""

from __future__ import annotations

import pytest

from service.history.tools import what_changed
from tests.support.nodered import NodeRed, free_port
from tests.support.projects import GIT_USER, commit
from tests.support.writable import settings_for
from tests.test_flow_history import base_flows, context, deploy_captured

SECOND_TIME = "2030-01-02T03:04:05Z"


@pytest.fixture(scope="module")
def projects_nodered(tmp_path_factory):
    """Node-RED with Projects on and the active project ``demo``: "Create project" (Node-RED's own first commit)
    then "Tune the alarm threshold" (git, at :data:`SECOND_TIME`)."""
    userdir = tmp_path_factory.mktemp("nodered-projects")
    instance = NodeRed(userdir=userdir, port=free_port(), flows=base_flows(), with_palette=False, projects=True,
                       env=GIT_USER)
    instance.start()
    try:
        instance.admin("/projects", {"name": "demo", "credentialSecret": "", "files": {"flow": "flow.json"}})
        commit(userdir / "projects" / "demo", "Tune the alarm threshold", SECOND_TIME)
        yield instance
    finally:
        instance.stop()


@pytest.fixture
async def projects_client(aiohttp_client, projects_nodered, model, tmp_path):
    from service.web.app import create_app

    client = await aiohttp_client(create_app(settings_for(projects_nodered, model, tmp_path)))
    await deploy_captured(client, projects_nodered, base_flows())
    return client


async def test_the_listing_names_the_active_project_and_its_commits_newest_first(projects_client):
    answer = await projects_client.get("/ai-sidebar/flow-history")
    assert answer.status == 200
    listing = await answer.json()
    assert listing["deploys"], listing
    project = listing["project"]
    assert project["name"] == "demo" and "error" not in project, project
    assert [c["subject"] for c in project["commits"]] == ["Tune the alarm threshold", "Create project"]
    latest = project["commits"][0]
    assert latest["time"] == SECOND_TIME and latest["author"] == "Grace Hopper"
    assert len(latest["sha"]) == 40 and all(c in "0123456789abcdef" for c in latest["sha"])


async def test_what_changed_tells_the_model_the_project_and_its_latest_commit(projects_client, projects_nodered):
    rev = await deploy_captured(projects_client, projects_nodered, base_flows()[:-1])
    output = await what_changed(context(projects_client), since=rev)
    assert output.data["project"]["name"] == "demo"
    assert "Projects feature is on: project demo" in output.text
    assert "'Tune the alarm threshold'" in output.text and SECOND_TIME in output.text


async def test_with_projects_off_the_listing_says_project_null(client):
    answer = await client.get("/ai-sidebar/flow-history")
    assert answer.status == 200
    assert (await answer.json())["project"] is None
