"""Two Node-RED instances behind one ``nodered-mcp`` (``MCP_NODERED_INSTANCES``): each at ``/<name>/mcp``, signed
in to with that instance's own users through one authorization server; flows, grants and audits stay apart. Both
Node-REDs are real, with adminAuth, and the MCP SDK's own client runs the OAuth flow."""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest

from mcp_server.instances import instance_file, parse_instances
from tests.support.nodered import NodeRed, example_flows, free_port, hash_password
from tests.test_mcp_signin import (
    INITIALIZE,
    MCP_HEADERS,
    SHARED_TOKEN,
    Browser,
    approving,
    flows_as,
    running_mcp_server,
    signed_in_session,
    text_of,
)

# The same user name on both instances, with a different password on each: a sign-in is checked by the instance
# the client named.
ALICE_A, ALICE_B = ("alice", "alice-on-line-a-4-tests"), ("alice", "alice-on-line-b-4-tests")
FLOWS_A, FLOWS_B = "common/catch/01 - Catch error.json", "common/inject/01 - Trigger a flow at startup.json"


def users_nodered(tmp_path_factory, name: str, user: tuple[str, str], flows: str) -> NodeRed:
    return NodeRed(userdir=tmp_path_factory.mktemp(f"nodered-{name}"), port=free_port(), admin_root="/admin",
                   admin_auth={"type": "credentials", "users": [
                       {"username": user[0], "password": hash_password(user[1]), "permissions": "*"}]},
                   flows=example_flows((flows,)), with_palette=False)


@pytest.fixture(scope="module")
def two_noderes(tmp_path_factory):
    line_a = users_nodered(tmp_path_factory, "a", ALICE_A, FLOWS_A)
    line_b = users_nodered(tmp_path_factory, "b", ALICE_B, FLOWS_B)
    line_a.start()
    try:
        line_b.start()
        try:
            yield line_a, line_b
        finally:
            line_b.stop()
    finally:
        line_a.stop()


@pytest.fixture(scope="module")
def instances_server(two_noderes, tmp_path_factory):
    line_a, line_b = two_noderes
    instances = {"line-a": {"url": line_a.url}, "line-b": {"url": line_b.url}}
    with running_mcp_server({"MCP_NODERED_INSTANCES": json.dumps(instances), "MCP_WRITE_TOOLS": "true",
                             "MCP_HTTP_TOKEN": SHARED_TOKEN, "AI_SIDEBAR_EVIDENCE": "false"},
                            tmp_path_factory.mktemp("mcp-instances"), "/line-a/mcp") as server:
        yield server


def at(server, instance: str):
    """The same server, seen at another instance's endpoint."""
    return type(server)(server.base, server.db, server.log, f"/{instance}/mcp")


def tab_label(nodered: NodeRed) -> str:
    return next(n["label"] for n in nodered.flows if n["type"] == "tab")


def audit_rows(server) -> list[tuple]:
    with sqlite3.connect(server.db.parent / "audit.db") as db:
        return db.execute("SELECT instance, tool, decision, outcome, user FROM mcp_audit ORDER BY id").fetchall()


async def test_each_instance_has_its_own_protected_resource_and_one_authorization_server(instances_server):
    async with httpx.AsyncClient(timeout=30) as http:
        for name in ("line-a", "line-b"):
            endpoint = f"{instances_server.base}/{name}/mcp"
            refused = await http.post(endpoint, json=INITIALIZE, headers=MCP_HEADERS)
            assert refused.status_code == 401
            metadata_url = f"{instances_server.base}/.well-known/oauth-protected-resource/{name}/mcp"
            assert f'resource_metadata="{metadata_url}"' in refused.headers["www-authenticate"]
            metadata = (await http.get(metadata_url)).json()
            assert metadata["resource"] == endpoint
            assert metadata["authorization_servers"] == [f"{instances_server.base}/"]
            # The shared token reaches every instance (scripts name the instance by its path).
            script = await http.post(endpoint, json=INITIALIZE,
                                     headers={**MCP_HEADERS, "Authorization": f"Bearer {SHARED_TOKEN}"})
            assert script.status_code == 200
        assert (await http.post(f"{instances_server.base}/mcp", json=INITIALIZE, headers=MCP_HEADERS)).status_code \
            == 404


async def test_a_grant_for_one_instance_reads_its_flows_and_is_refused_at_the_other(instances_server, two_noderes):
    line_a, line_b = two_noderes
    # alice's password of line B does not sign her in to line A: Node-RED A checks it.
    browser = Browser(*ALICE_A, consent=(), wrong_password=ALICE_B[1])
    async with signed_in_session(instances_server, browser) as (session, storage):
        assert browser.pages[1].status_code == 401
        listed = text_of(await session.call_tool("get_flows", {}))
        assert tab_label(line_a) in listed and tab_label(line_b) not in listed
        resources = [str(resource.uri) for resource in (await session.list_resources()).resources]
        assert any(tab["id"] in uri for uri in resources for tab in line_a.flows if tab["type"] == "tab")
        assert not any(tab["id"] in uri for uri in resources for tab in line_b.flows if tab["type"] == "tab")
    grant = instances_server.grants()[-1]
    assert (grant["user"], grant["instance"]) == ("alice", "line-a")
    async with httpx.AsyncClient(timeout=30) as http:
        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {storage.tokens.access_token}"}
        assert (await http.post(f"{instances_server.base}/line-a/mcp", json=INITIALIZE,
                                headers=bearer)).status_code == 200
        assert (await http.post(f"{instances_server.base}/line-b/mcp", json=INITIALIZE,
                                headers=bearer)).status_code == 401

    line_b_server = at(instances_server, "line-b")
    async with signed_in_session(line_b_server, Browser(*ALICE_B, consent=())) as (session, _storage):
        listed = text_of(await session.call_tool("get_flows", {}))
        assert tab_label(line_b) in listed and tab_label(line_a) not in listed
    assert instances_server.grants()[-1]["instance"] == "line-b"


async def test_writes_are_audited_per_instance_and_land_on_their_own_node_red(instances_server, two_noderes):
    line_a, line_b = two_noderes
    before = len(audit_rows(instances_server))
    for user, name in ((ALICE_A, "line-a"), (ALICE_B, "line-b")):
        browser = Browser(*user, consent=("write",))
        async with signed_in_session(at(instances_server, name), browser, elicitation_callback=approving) as \
                (session, _storage):
            created = await session.call_tool("create_tab", {"label": f"made on {name}"})
            assert not created.isError, text_of(created)
    assert audit_rows(instances_server)[before:] == [("line-a", "create_tab", "approve", "deployed", "alice"),
                                                     ("line-b", "create_tab", "approve", "deployed", "alice")]
    labels_a = {node.get("label") for node in flows_as(line_a, *ALICE_A)}
    labels_b = {node.get("label") for node in flows_as(line_b, *ALICE_B)}
    assert "made on line-a" in labels_a and "made on line-b" not in labels_a
    assert "made on line-b" in labels_b and "made on line-a" not in labels_b


def test_the_instances_setting_names_what_is_wrong_without_echoing_a_password():
    parsed = parse_instances('{"a": {"url": "http://127.0.0.1:1880", "username": "u", "password": "p"}}')
    assert parsed["a"].url == "http://127.0.0.1:1880" and parsed["a"].password.get_secret_value() == "p"
    for value, said in (('{"A B": {"url": "http://h"}}', "instance name 'A B'"),
                        ('{"a": {"url": "ftp://h", "password": "hunter2-secret"}}', "instance 'a'"),
                        ('{"a": {"url": "http://h", "username": "u"}}', "instance 'a'"),
                        ('{"a": {"url": "http://h", "secret": "hunter2-secret"}}', "'a': secret"),
                        ("{}", "at least one instance"), ("{not json", "not valid JSON")):
        with pytest.raises(ValueError) as refused:
            parse_instances(value)
        assert said in str(refused.value) and "hunter2" not in str(refused.value)
    assert instance_file("/var/lib/k.db", "line-a") == "/var/lib/k-line-a.db"
    assert instance_file(":memory:", "line-a") == ":memory:"
