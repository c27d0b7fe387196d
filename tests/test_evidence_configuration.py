"""Runtime evidence with its cause (issue 30, items 1, 2 and 6), against a real Node-RED running a flow built here
and the scripted model, asserting on what the model received:

* "why does it fail?" brings the failing nodes' configuration (a change node's JSONata expression, a function's
  code) beside their errors, in every language, and a debug message the user attached brings the configuration of
  the node that produced it;
* a broker address in a node's configuration reaches the model, while an address in a payload stays masked;
* a status set as a message key (``node-red:common.status.connecting``) reads as the editor words it in the user's
  language, and an undefined debug value reads as ``undefined``.
"""

from __future__ import annotations

import json

import pytest

from service.web.app import create_app
from service.web.keys import EVIDENCE
from tests.support.model_server import Reply
from tests.support.nodered import NodeRed, free_port
from tests.support.writable import settings_for
from tests.test_runtime_evidence import chat, inject, press, wait_for

TAB = "c30e000000000001"
PRICE_INJECT, PRICE = "c30e0000000000a1", "c30e0000000000c1"
PARSE_INJECT, PARSE = "c30e0000000000a2", "c30e0000000000f1"
PARSED, PARSED_DEBUG = "c30e0000000000a3", "c30e0000000000d1"
NOTHING_INJECT, NOTHING_DEBUG = "c30e0000000000a4", "c30e0000000000d2"
SENSOR, BROKER = "c30e0000000000e1", "c30e0000000000b1"
DOOR_INJECT, DOOR = "c30e0000000000a5", "c30e0000000000f2"
EXPRESSION = "$number(payload) * vatRate"
CODE = "const reading = msg.payload.reading.value;\nreturn { payload: reading * 2 };"
BROKER_HOST = "127.0.0.1"
PAYLOAD_ADDRESS = "192.168.77.31"
INJECT_ADDRESS = "10.20.30.40"  # in an inject node's configured payload: configuration
# What Node-RED 4.1's own catalogs (@node-red/nodes/locales/<lang>/messages.json, common.status) say.
CONNECTION_WORDS = {"de": {"Verbindung wird hergestellt", "Verbindung getrennt"}, "ja": {"接続中", "切断"},
                    "fr": {"Connexion", "Déconnecté"}, "es-ES": {"conectando", "desconectado"}}


def flows(broker_port: int) -> list[dict]:
    """A tab whose change node fails on its JSONata expression, whose function fails with a TypeError, whose MQTT
    node waits for a broker nobody runs, and whose debug nodes show a function's output and an undefined value."""
    def debug(node_id: str, name: str, complete: str) -> dict:
        return {"id": node_id, "type": "debug", "z": TAB, "name": name, "active": True, "tosidebar": True,
                "console": False, "tostatus": False, "complete": complete, "targetType": "msg", "statusVal": "",
                "statusType": "auto", "x": 500, "y": 300, "wires": []}

    return [
        {"id": TAB, "type": "tab", "label": "Shop", "disabled": False, "info": ""},
        inject(PRICE_INJECT, TAB, [PRICE], "no prices", "str"),
        {"id": PRICE, "type": "change", "z": TAB, "name": "gross price", "rules": [
            {"t": "set", "p": "payload", "pt": "msg", "to": EXPRESSION, "tot": "jsonata"}],
         "action": "", "property": "", "from": "", "to": "", "reg": False, "x": 300, "y": 80, "wires": [[]]},
        inject(PARSE_INJECT, TAB, [PARSE], "plain text", "str"),
        {"id": PARSE, "type": "function", "z": TAB, "name": "parse reading", "func": CODE, "outputs": 1,
         "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 300, "y": 140,
         "wires": [[]]},
        inject(PARSED, TAB, [PARSED_DEBUG], json.dumps({"note": f"seen at {INJECT_ADDRESS}"}), "json"),
        debug(PARSED_DEBUG, "parsed", "payload"),
        inject(NOTHING_INJECT, TAB, [NOTHING_DEBUG]),
        inject(DOOR_INJECT, TAB, [DOOR]),
        # A key without a namespace: the editor looks it up in the node's own (the core's, for a function node).
        {"id": DOOR, "type": "function", "z": TAB, "name": "door", "outputs": 1, "timeout": 0, "noerr": 0,
         "func": 'node.status({fill: "green", shape: "dot", text: "common.status.connected"});\nreturn msg;',
         "initialize": "", "finalize": "", "libs": [], "x": 300, "y": 420, "wires": [[]]},
        debug(NOTHING_DEBUG, "nothing", "nothing"),
        {"id": SENSOR, "type": "mqtt in", "z": TAB, "name": "sensor feed", "topic": "shop/sensor", "qos": "0",
         "datatype": "auto-detect", "broker": BROKER, "nl": False, "rap": True, "rh": 0, "inputs": 0, "x": 120,
         "y": 360, "wires": [[]]},
        {"id": BROKER, "type": "mqtt-broker", "name": "shop broker", "broker": BROKER_HOST, "port": str(broker_port),
         "clientid": "", "autoConnect": True, "usetls": False, "protocolVersion": "4", "keepalive": "60",
         "cleansession": True, "credentials": {"user": "shop", "password": "mqtt-secret-9"}},
    ]


@pytest.fixture(scope="module")
def shop_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-shop"), port=free_port(),
                       flows=flows(free_port()), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
async def shop(aiohttp_client, shop_nodered, model, tmp_path):
    client = await aiohttp_client(create_app(settings_for(shop_nodered, model, tmp_path)))
    buffer = client.app[EVIDENCE]
    await wait_for(lambda: buffer.connected, what="subscribed to comms")
    return client


def sent_to_model(model, index: int = 0) -> str:
    return json.dumps(model.requests[index]["messages"], ensure_ascii=False)


@pytest.mark.parametrize(("language", "question"), [
    ("en-US", "Why does this flow fail?"),
    ("de", "Warum schlägt dieser Flow fehl?"),
    ("fr", "Pourquoi ce flux échoue ?"),
    ("ja", "このフローはなぜ失敗するの？"),
    ("es-ES", "¿Por qué falla este flujo?"),
])
async def test_why_does_it_fail_brings_the_failing_nodes_expression_and_code(shop, shop_nodered, model, language,
                                                                             question):
    buffer = shop.app[EVIDENCE]
    for button in (PRICE_INJECT, PARSE_INJECT, NOTHING_INJECT):
        assert await press(shop_nodered, button) == 200
    await wait_for(lambda: all(any(e.kind == "error" for e in buffer.select(node_ids=[node]))
                               for node in (PRICE, PARSE)) and buffer.select(node_ids=[NOTHING_DEBUG]),
                   what="both errors and the undefined value")

    events = await chat(shop, message=question, language=language, selectedFlow={"id": TAB, "label": "Shop"})
    assert [(e["tool"], e["origin"]) for e in events if e["type"] == "tool_call"][0] == \
        ("get_debug_messages", "keyword")
    sent = sent_to_model(model)
    assert EXPRESSION in sent  # the change node's expression
    assert "msg.payload.reading.value" in sent  # the function's code
    assert '"gross price"' in sent.replace('\\"', '"') and '"parse reading"' in sent.replace('\\"', '"')
    assert "mqtt-secret-9" not in sent
    # The undefined value as the Debug sidebar shows it.
    assert "msg.nothing, undefined: undefined" in sent and "(undefined)" not in sent
    assert events[-1]["type"] == "done"


@pytest.mark.parametrize("language", ["de", "ja", "fr", "es-ES"])
async def test_a_connecting_mqtt_node_reads_as_the_editor_shows_it_with_its_broker_address(shop, model, language):
    buffer = shop.app[EVIDENCE]
    await wait_for(lambda: buffer.statuses([SENSOR]), what="the MQTT node's status")
    assert (buffer.statuses([SENSOR])[0].text or "").startswith("node-red:common.status.")

    model.script(Reply(tool_calls=[{"name": "get_node_status", "arguments": {"node_ids": [SENSOR]}}]),
                 Reply(text="The broker does not answer."))
    message = f"Mein MQTT-Knoten hängt, der Broker ist {PAYLOAD_ADDRESS}?" if language == "de" else \
        f"MQTT node sensor feed, broker {PAYLOAD_ADDRESS}?"
    events = await chat(shop, message=message, language=language, selectedFlow={"id": TAB, "label": "Shop"},
                        debugMessages=[{"nodeId": PARSED_DEBUG, "name": "parsed", "property": "payload",
                                        "format": "Object", "msg": json.dumps({"from": PAYLOAD_ADDRESS})}])
    assert [e["tool"] for e in events if e["type"] == "tool_call" and e["origin"] == "agent"] == ["get_node_status"]
    sent = sent_to_model(model, -1)
    assert "node-red:common.status" not in sent
    assert any(f'"{word}"' in sent.replace('\\"', '"') for word in CONNECTION_WORDS[language]), sent[-3000:]
    # The broker's address is configuration; the same kind of address in the user's words or a payload is not.
    assert f"broker={BROKER_HOST}" in sent
    assert PAYLOAD_ADDRESS not in sent and "[REDACTED_IP]" in sent
    assert "mqtt-secret-9" not in sent


@pytest.mark.parametrize(("language", "question"), [
    ("pt-BR", "O que significa esta mensagem?"),
    ("zh-CN", "这条消息是什么意思？"),
    ("ko", "이 메시지는 무슨 뜻인가요?"),
    ("ru", "Что значит это сообщение?"),
])
async def test_an_attached_debug_message_brings_the_configuration_of_the_node_that_produced_it(
        shop, model, language, question):
    model.script(Reply(text="ok"))
    events = await chat(shop, message=question, language=language, selectedFlow={"id": TAB, "label": "Shop"},
                        debugMessages=[{"nodeId": PARSED_DEBUG, "name": "parsed", "property": "payload",
                                        "format": "Object", "msg": json.dumps({"note": "seen"})},
                                       {"nodeId": NOTHING_DEBUG, "name": "nothing", "property": "nothing",
                                        "format": "undefined", "msg": "(undefined)"}])
    assert events[-1]["type"] == "done"
    text = sent_to_model(model)
    assert "msg.nothing (undefined):\\nundefined\\n</debug_message>" in text and "\\n(undefined)" not in text
    sent = "\n".join(sent_to_model(model, index) for index in range(len(model.requests)))
    # The debug node shows what the inject node wired into it sends: that node's configuration comes along, an
    # address in it included (configuration, not personal data).
    assert f"[{PARSED}] inject" in sent and f"seen at {INJECT_ADDRESS}" in sent.replace("\\", "")


@pytest.mark.parametrize(("language", "shown"), [("ko", "접속됨"), ("zh-TW", "已連接"), ("ru", "подключен"),
                                                 ("en-US", "connected")])
async def test_a_status_key_without_namespace_is_worded_in_the_node_s_own_catalog(shop, shop_nodered, model,
                                                                                 language, shown):
    buffer = shop.app[EVIDENCE]
    assert await press(shop_nodered, DOOR_INJECT) == 200
    await wait_for(lambda: buffer.statuses([DOOR]), what="the door node's status")
    model.script(Reply(tool_calls=[{"name": "get_node_status", "arguments": {"node_ids": [DOOR]}}]),
                 Reply(text="The door is connected."))
    await chat(shop, message="door status?", language=language, selectedFlow={"id": TAB, "label": "Shop"})
    sent = sent_to_model(model, -1).replace('\\"', '"')
    assert f'[{DOOR}] function "door": green dot "{shown}"' in sent and 'dot "common.status' not in sent
