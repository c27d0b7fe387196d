"""Flow slicing and compaction, as pure functions over every example flow Node-RED ships."""

from __future__ import annotations

import json
import re

import pytest

from service.compact import compact_flow
from service.flows import FlowNotFound, REDACTED, slice_flow, strip_secrets
from tests.support.nodered import EXAMPLES_DIR

EXAMPLE_FILES = sorted(EXAMPLES_DIR.rglob("*.json"))
NODE_LINE = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<type>.+?):(?=\s|$)(?P<rest>.*)$")


def as_tab(nodes):
    """An example file on a tab of its own (examples reference a tab id they do not contain)."""
    tab_id = next(n["z"] for n in nodes if n.get("z"))
    return tab_id, [{"id": tab_id, "type": "tab", "label": "example"}] + nodes


def parse_wires(rest: str) -> list[list[str]]:
    if "→" not in rest:
        return []
    text = rest.rsplit("→", 1)[1].strip()
    if not text.startswith("[1]"):
        return [[] if text == "-" else text.split(",")]
    ports = re.split(r"\s*\[\d+\]\s*", text)[1:]
    return [[] if p == "-" else p.split(",") for p in ports]


def test_node_red_ships_more_than_a_hundred_example_flows():
    assert len(EXAMPLE_FILES) > 100


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES_DIR)))
def test_every_node_id_type_and_wire_is_recoverable_from_the_compact_form(path):
    tab_id, flows = as_tab(json.loads(path.read_text(encoding="utf-8")))
    flow = slice_flow(flows, tab_id)
    text = compact_flow(flow)
    parsed = {}
    for line in text.splitlines():
        match = NODE_LINE.match(line)
        if match:
            parsed[match["id"]] = (match["type"], parse_wires(match["rest"]))
    for node in flow.nodes:
        kind, wires = parsed[node["id"]]
        assert kind == node["type"]
        expected = node.get("wires") or []
        assert [w for w in wires] == [list(w) for w in expected] or (not any(expected) and not any(wires))
    for config in flow.configs:
        assert parsed[config["id"]][0] == config["type"]


def test_compact_form_is_much_smaller_than_pretty_printed_json():
    total_raw = total_compact = 0
    for path in EXAMPLE_FILES:
        tab_id, flows = as_tab(json.loads(path.read_text(encoding="utf-8")))
        flow = slice_flow(flows, tab_id)
        total_raw += len(json.dumps(flow.nodes + flow.configs, indent=4))
        total_compact += len(compact_flow(flow))
    assert total_compact < total_raw * 0.5


def test_function_code_is_kept_verbatim_as_a_block():
    flows = [{"id": "t1", "type": "tab", "label": "T"},
             {"id": "f1", "type": "function", "z": "t1", "name": "sum", "x": 1, "y": 1, "outputs": 1,
              "func": "let total = 0;\nfor (const p of msg.payload) {\n  total += p.price;\n}\nreturn msg;",
              "wires": [["d1"]]},
             {"id": "d1", "type": "debug", "z": "t1", "x": 2, "y": 1, "wires": []}]
    text = compact_flow(slice_flow(flows, "t1"))
    assert "    | for (const p of msg.payload) {" in text
    assert "    |   total += p.price;" in text
    assert '[f1] function: "sum" → d1' in text  # outputs=1 is the default: left out


def test_config_nodes_used_by_the_tab_are_included_and_referenced_by_id():
    flows = [{"id": "t1", "type": "tab", "label": "T"},
             {"id": "m1", "type": "mqtt in", "z": "t1", "topic": "a/b", "broker": "b1", "x": 1, "y": 1,
              "wires": [[]]},
             {"id": "b1", "type": "mqtt-broker", "broker": "localhost", "port": "1883", "tls": "tls1"},
             {"id": "tls1", "type": "tls-config", "cert": "", "key": ""},
             {"id": "b2", "type": "mqtt-broker", "broker": "unused"}]
    flow = slice_flow(flows, "t1")
    assert [c["id"] for c in flow.configs] == ["b1", "tls1"]
    text = compact_flow(flow)
    assert "broker=@b1" in text and "[tls1] tls-config:" in text and "unused" not in text


def test_subflow_definitions_used_by_the_tab_are_included():
    flows = [{"id": "t1", "type": "tab", "label": "T"},
             {"id": "sf", "type": "subflow", "name": "Scale", "in": [{"wires": [{"id": "c1"}]}], "out": []},
             {"id": "c1", "type": "change", "z": "sf", "x": 1, "y": 1, "wires": [[]]},
             {"id": "i1", "type": "subflow:sf", "z": "t1", "x": 1, "y": 1, "wires": [[]]}]
    flow = slice_flow(flows, "t1")
    assert [s.tab["id"] for s in flow.subflows] == ["sf"]
    assert "[c1] change:" in compact_flow(flow)


def test_credentials_and_secret_looking_properties_never_reach_the_compact_form():
    node = {"id": "h1", "type": "http request", "z": "t1", "x": 1, "y": 1, "url": "https://api.example.com",
            "password": "hunter2", "apiKey": "k-123", "credentials": {"user": "bob", "password": "x"},
            "authType": "bearer", "wires": [[]]}
    clean = strip_secrets(node)
    assert clean["password"] == REDACTED and clean["apiKey"] == REDACTED and "credentials" not in clean
    assert clean["authType"] == "bearer"
    text = compact_flow(slice_flow([{"id": "t1", "type": "tab"}, node], "t1"))
    assert "hunter2" not in text and "k-123" not in text and "bob" not in text


def test_unknown_tab_raises_flow_not_found_listing_known_tabs():
    with pytest.raises(FlowNotFound) as info:
        slice_flow([{"id": "t1", "type": "tab", "label": "Main"}], "zz")
    assert info.value.known == [{"id": "t1", "label": "Main", "disabled": False}]


def test_secrets_written_inside_code_urls_and_env_are_redacted():
    code = ('const token = "tok_live_4f9a8b7c6d";\n'
            'msg.headers = {Authorization: "Bearer abcdefghijklmnop123"};\n'
            'const key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV";\n'
            'return msg; // keep this comment')
    tab = {"id": "t1", "type": "tab", "label": "T",
           "env": [{"name": "DB_PASS", "value": "s3cr3t-env", "type": "cred"},
                   {"name": "SITE", "value": "greenhouse", "type": "str"}]}
    nodes = [tab,
             {"id": "f1", "type": "function", "z": "t1", "x": 1, "y": 1, "func": code, "wires": [[]]},
             {"id": "m1", "type": "mqtt-broker", "broker": "mqtt://bob:hunter22@broker.local:1883"},
             {"id": "h1", "type": "http request", "z": "t1", "x": 2, "y": 1, "url": "http://x", "broker": "m1",
              "wires": [[]]}]
    text = compact_flow(slice_flow(nodes, "t1"))
    for secret in ("tok_live_4f9a8b7c6d", "abcdefghijklmnop123", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "hunter22"):
        assert secret not in text
    assert "return msg; // keep this comment" in text and "bob:[redacted]@broker.local" in text
    clean_tab = strip_secrets(tab)
    assert clean_tab["env"][0]["value"] == REDACTED and clean_tab["env"][1]["value"] == "greenhouse"


def test_secrets_in_query_strings_and_in_rules_that_set_secret_properties_are_redacted():
    nodes = [{"id": "t1", "type": "tab"},
             {"id": "h1", "type": "http request", "z": "t1", "x": 1, "y": 1, "wires": [[]],
              "url": "https://alice:s3cretpw@api.example.com/v1?api_key=qkey-4444&token=qtok-3333&city=Paris"},
             {"id": "c1", "type": "change", "z": "t1", "x": 2, "y": 1, "wires": [[]],
              "rules": [{"t": "set", "p": "password", "pt": "msg", "to": "plainpw-777", "tot": "str"},
                        {"t": "set", "p": "headers.Authorization", "pt": "msg", "to": "Basic Ym9iOnB3", "tot": "str"},
                        {"t": "set", "p": "topic", "pt": "msg", "to": "sensors/temp", "tot": "str"}]}]
    text = compact_flow(slice_flow(nodes, "t1"))
    for secret in ("s3cretpw", "qkey-4444", "qtok-3333", "plainpw-777", "Ym9iOnB3"):
        assert secret not in text, secret
    assert "city=Paris" in text and "sensors/temp" in text


def test_core_defaults_are_left_out_and_every_other_value_is_kept():
    from service.compact import compact_node

    debug = {"id": "d1", "type": "debug", "active": True, "tosidebar": True, "console": False,
             "complete": "payload", "targetType": "msg", "statusType": "auto", "wires": []}
    assert compact_node(debug, set()) == ["[d1] debug:"]
    broker = {"id": "b1", "type": "mqtt-broker", "broker": "localhost", "port": "1883", "autoConnect": False,
              "keepalive": 30}
    line = compact_node(broker, set())[0]
    assert "autoConnect=false" in line and "keepalive=30" in line and "port=" not in line
    unknown = {"id": "u1", "type": "contrib-thing", "outputs": 1, "flag": False, "mode": "a"}
    assert compact_node(unknown, set())[0] == "[u1] contrib-thing: outputs=1 mode=a"
