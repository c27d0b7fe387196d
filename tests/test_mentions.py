"""@-mentions (issue 37): what the user pointed at in the sidebar reaches the model, against a real Node-RED and the
scripted model, asserting on what the model received: a mentioned node's configuration (from another tab, read as
deployed; a node of the open tab, read as the editor has it), a mentioned tab's nodes, a node type's name, an earlier
conversation of the user's own (never another user's); secrets never; a node that is not mentioned is not there; a
malformed mention is a 400 before any model call."""

from __future__ import annotations

import json

import pytest

from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.writable import settings_for
from tests.test_runtime_evidence import chat, function

OPEN_TAB, OTHER_TAB = "a37e000000000001", "a37e000000000002"
SCALER, UNMENTIONED, ON_OTHER = "a37e0000000000f1", "a37e0000000000f2", "a37e0000000000f3"
BROKER, FEED = "a37e0000000000b1", "a37e0000000000c1"
SCALER_CODE = "msg.payload = msg.payload * 37.5;\nreturn msg;"
UNMENTIONED_CODE = "msg.payload = 'never-mentioned-code';\nreturn msg;"
OTHER_CODE = "msg.payload = 'from-the-other-tab';\nreturn msg;"
EDITED_CODE = "msg.payload = 'edited-not-deployed';\nreturn msg;"
SECRET = "mqtt-secret-37"


def flows() -> list[dict]:
    return [
        {"id": OPEN_TAB, "type": "tab", "label": "Open", "disabled": False, "info": ""},
        {"id": OTHER_TAB, "type": "tab", "label": "Packaging line", "disabled": False, "info": ""},
        function(SCALER, OPEN_TAB, "scaler", SCALER_CODE),
        function(UNMENTIONED, OPEN_TAB, "unmentioned", UNMENTIONED_CODE),
        function(ON_OTHER, OTHER_TAB, "other tab fn", OTHER_CODE),
        {"id": FEED, "type": "mqtt in", "z": OTHER_TAB, "name": "line feed", "topic": "line/+/count", "qos": "0",
         "datatype": "auto-detect", "broker": BROKER, "nl": False, "rap": True, "rh": 0, "inputs": 0, "x": 120,
         "y": 160, "wires": [[ON_OTHER]]},
        {"id": BROKER, "type": "mqtt-broker", "name": "plant broker", "broker": "127.0.0.1", "port": "1",
         "clientid": "", "autoConnect": False, "usetls": False, "protocolVersion": "4", "keepalive": "60",
         "cleansession": True, "credentials": {"user": "plant", "password": SECRET}},
    ]


@pytest.fixture(scope="module")
def mentions_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-mentions"), port=free_port(), flows=flows(),
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
async def client(aiohttp_client, mentions_nodered, model, tmp_path):
    return await aiohttp_client(create_app(settings_for(mentions_nodered, model, tmp_path)))


def sent_to_model(model) -> str:
    return json.dumps(model.requests[-1]["messages"], ensure_ascii=False)


async def test_a_mentioned_node_tab_and_type_reach_the_model_and_nothing_else(client, model):
    model.script(Reply(text="Noted."))
    editor_copy = [{**node, "func": EDITED_CODE} if node["id"] == SCALER else node
                   for node in flows() if node.get("z") == OPEN_TAB or node["id"] == OPEN_TAB]
    events = await chat(client, message="What do these do together?", language="en-US",
                        selectedFlow={"id": OPEN_TAB, "label": "Open"}, flowData=editor_copy,
                        mentions=[{"kind": "node", "id": SCALER, "label": "scaler"},
                                  {"kind": "tab", "id": OTHER_TAB, "label": "Packaging line"},
                                  {"kind": "type", "id": "mqtt in"}])
    assert events[-1]["type"] == "done", events
    sent = sent_to_model(model)
    assert "What the user points at with @" in sent
    assert "edited-not-deployed" in sent  # the open tab's node as the editor has it
    assert "from-the-other-tab" in sent and "line/+/count" in sent  # the mentioned tab's nodes, as deployed
    assert '\\"Packaging line\\"' in sent and "Node types: mqtt in" in sent
    assert "never-mentioned-code" not in sent and SECRET not in sent


async def test_without_mentions_the_question_goes_alone(client, model):
    model.script(Reply(text="Noted."))
    await chat(client, message="What do these do together?", language="en-US",
               selectedFlow={"id": OPEN_TAB, "label": "Open"})
    sent = sent_to_model(model)
    assert "What the user points at with @" not in sent and OTHER_CODE.split("'")[1] not in sent


async def test_a_mentioned_config_node_is_shown_without_its_secret_and_an_unknown_id_is_skipped(client, model):
    model.script(Reply(text="Noted."))
    await chat(client, message="Which broker is this?", language="en-US",
               mentions=[{"kind": "config", "id": BROKER}, {"kind": "node", "id": "a37e0000000000ff"}])
    sent = sent_to_model(model)
    assert "plant broker" in sent and SECRET not in sent and "a37e0000000000ff" not in sent


@pytest.mark.parametrize("mentions", [
    [{"kind": "flow", "id": OPEN_TAB}],
    [{"kind": "node", "id": "no spaces allowed"}],
    [{"kind": "type", "id": "<script>"}],
    [{"kind": "node", "id": SCALER}] * 21,
])
async def test_a_malformed_mention_is_refused_before_the_model_is_asked(client, model, mentions):
    before = len(model.requests)
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hi", "mentions": mentions})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "invalid_request"
    assert len(model.requests) == before


async def test_a_mentioned_earlier_conversation_of_ones_own_reaches_the_model_and_anothers_does_not(client, model):
    alice, bob = {"X-Node-RED-User": "alice"}, {"X-Node-RED-User": "bob"}
    model.script(Reply(text="The packing line runs at 37 boxes a minute."), Reply(text="Noted."),
                 Reply(text="Noted."))
    response = await client.post("/ai-sidebar/stream-chat", headers=alice, json={
        "message": "How fast is the packing line?", "sessionId": "a37e5e5510000001"})
    assert response.status == 200
    await response.read()
    mention = [{"kind": "conversation", "id": "a37e5e5510000001", "label": "Packing speed"}]
    for headers in (alice, bob):
        response = await client.post("/ai-sidebar/stream-chat", headers=headers, json={
            "message": "Compare with what we said before", "mentions": mention})
        assert response.status == 200
        await response.read()
    own, others = (json.dumps(r["messages"][-1], ensure_ascii=False) for r in model.requests[-2:])
    assert '<earlier_conversation title=\\"Packing speed\\">' in own
    assert "User: How fast is the packing line?" in own and "37 boxes a minute" in own
    assert "earlier_conversation" not in others and "37 boxes" not in others
