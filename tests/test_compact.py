"""Flow slicing and compaction, as pure functions over every example flow Node-RED ships."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from service.nodered.compact import FlowTooLarge, compact_flow, compact_nodes
from service.nodered.flow_tools import _off_loop
from service.nodered.flows import REDACTED, FlowNotFound, index_flows, link_targets, slice_flow, strip_secrets
from tests.support.compact_reader import property_json, read
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
    # Link targets (link in/out/call) are named with the tab they are on.
    reading = read(text)
    ids = {n["id"]: n for n in flows}
    for node in flow.nodes:
        for target in node.get("links") or []:
            assert reading.node(node["id"]).links[target] == (ids[target].get("z") if target in ids else None)


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
    # outputs=1 is what the wires show (one port).
    assert '[f1] function: "sum" → d1' in text and "outputs" not in text


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
    from service.nodered.compact import compact_node

    debug = {"id": "d1", "type": "debug", "active": True, "tosidebar": True, "console": False,
             "complete": "payload", "targetType": "msg", "statusType": "auto", "wires": []}
    assert compact_node(debug, set()) == ["[d1] debug:"]
    broker = {"id": "b1", "type": "mqtt-broker", "broker": "localhost", "port": "1883", "autoConnect": False,
              "keepalive": 30}
    line = compact_node(broker, set())[0]
    assert "autoConnect=false" in line and "keepalive=30" in line and "port=" not in line
    unknown = {"id": "u1", "type": "contrib-thing", "outputs": 1, "flag": False, "mode": "a"}
    assert compact_node(unknown, set())[0] == "[u1] contrib-thing: outputs=1 mode=a"


# --- structure first, within a budget (issue 13, items 1-5; issue 14, item 4) ---------------------------------------

def function_tab(sizes: list[int]) -> list[dict]:
    flows = [{"id": "t1", "type": "tab", "label": "T"}]
    for number, size in enumerate(sizes):
        code = "\n".join(f"msg.v{line} = {line}; // node {number}" for line in range(size // 25 + 1))[:size]
        flows.append({"id": f"f{number}", "type": "function", "z": "t1", "name": f"fn {number}", "x": 1, "y": 1,
                      "func": code, "wires": [[f"f{number + 1}"]] if number + 1 < len(sizes) else [[]]})
    return flows


def test_over_the_budget_the_longest_code_is_cut_first_and_named_for_get_node_info():
    flows = function_tab([600, 600, 100_000, 40_000])
    text = compact_flow(slice_flow(flows, "t1"), budget=20_000)
    reading = read(text)
    assert len(text) <= 20_000
    assert list(reading.sections["t1"].nodes) == ["f0", "f1", "f2", "f3"]
    assert reading.sections["t1"].nodes["f2"].wires == [["f3"]]
    # The short ones stay whole; both long ones are cut to one common length and named.
    for small in ("f0", "f1"):
        assert reading.node(small).code == flows[1 + int(small[1])]["func"].split("\n")
    assert reading.shortened == ["f2", "f3"]
    kept = [len("\n".join(reading.node(n).code[:-1])) for n in ("f2", "f3")]
    assert abs(kept[0] - kept[1]) < 100 and reading.node("f3").code[-1].startswith("…[+")


def test_a_tab_within_the_budget_is_not_shortened():
    flows = function_tab([600, 20_000])
    text = compact_flow(slice_flow(flows, "t1"))
    assert "Shortened" not in text and "…[+" not in text
    assert read(text).node("f1").code == flows[2]["func"].split("\n")


def test_all_rules_stay_and_their_long_values_are_shortened_instead():
    rules = [{"t": "eq", "v": f"rule {n} " + "v" * 2000, "vt": "str"} for n in range(28)]
    flows = [{"id": "t1", "type": "tab", "label": "T"},
             {"id": "s1", "type": "switch", "z": "t1", "x": 1, "y": 1, "property": "topic", "rules": rules,
              "outputs": 28, "wires": [[] for _ in range(28)]}]
    text = compact_flow(slice_flow(flows, "t1"), budget=12_000)
    assert len(text) <= 12_000
    shown = property_json(read(text).node("s1").line, "rules")
    assert len(shown) == 28
    for rule, original in zip(shown, rules):
        assert rule["t"] == "eq" and rule["vt"] == "str"
        assert rule["v"].startswith(original["v"][:60]) and "…[+" in rule["v"]
    assert read(text).shortened == ["s1"]


def test_when_cutting_is_not_enough_properties_are_left_out_but_every_node_stays():
    flows = [{"id": "t1", "type": "tab", "label": "T"}]
    flows += [{"id": f"c{n:03d}", "type": "change", "z": "t1", "x": 1, "y": 1, "name": f"c{n}",
               "rules": [{"t": "set", "p": f"p{k}", "pt": "msg", "to": f"v{k}", "tot": "str"} for k in range(8)],
               "wires": [[f"c{n + 1:03d}"]]} for n in range(300)]
    text = compact_flow(slice_flow(flows, "t1"), budget=30_000)
    reading = read(text)
    assert len(text) <= 30_000
    assert list(reading.sections["t1"].nodes) == [f"c{n:03d}" for n in range(300)]
    assert all(reading.node(f"c{n:03d}").wires == [[f"c{n + 1:03d}"]] for n in range(300))
    left_out = [node_id for node_id, node in reading.sections["t1"].nodes.items() if " … " in node.line]
    assert left_out and reading.shortened == left_out


def test_a_structure_longer_than_the_budget_is_still_sent_whole_and_says_so():
    flows = [{"id": "t1", "type": "tab", "label": "T"}]
    flows += [{"id": f"c{n:03d}", "type": "change", "z": "t1", "x": 1, "y": 1, "name": f"c{n}",
               "rules": [{"t": "set", "p": "p", "pt": "msg", "to": "v", "tot": "str"}],
               "wires": [[f"c{n + 1:03d}"]]} for n in range(300)]
    text = compact_flow(slice_flow(flows, "t1"), budget=8_000, limit=100_000)
    reading = read(text)
    assert len(text) > 8_000
    assert "Every node's properties are left out" in text and reading.shortened == ["*"]
    assert all(reading.node(f"c{n:03d}").wires == [[f"c{n + 1:03d}"]] for n in range(300))
    assert all(" … " in node.line for node in reading.sections["t1"].nodes.values())


def test_structure_beyond_the_limit_names_subflows_then_refuses_the_tab():
    flows = [{"id": "t1", "type": "tab", "label": "T"}]
    for number in range(10):
        sub = f"sf{number}"
        flows.append({"id": sub, "type": "subflow", "name": f"S{number}", "in": [], "out": []})
        flows += [{"id": f"{sub}-n{k:03d}", "type": "debug", "z": sub, "x": 1, "y": 1} for k in range(200)]
        flows.append({"id": f"i{number}", "type": f"subflow:{sub}", "z": "t1", "x": 1, "y": 1, "wires": [[]]})
    flow = slice_flow(flows, "t1")
    text = compact_flow(flow, budget=5_000, limit=10_000)
    reading = read(text)
    assert list(reading.sections["t1"].nodes) == [f"i{n}" for n in range(10)]
    assert 'Subflow "S3" [sf3]: 200 nodes, not expanded here (read it with get_flow flow_id=sf3)' in text
    with pytest.raises(FlowTooLarge) as info:
        compact_flow(flow, budget=100, limit=400)
    assert info.value.nodes == 2010 and info.value.size > 400


def test_tab_env_locked_subflow_env_definitions_and_link_targets_are_shown():
    flows = [{"id": "t1", "type": "tab", "label": "Main", "locked": True,
              "env": [{"name": "SITE", "type": "str", "value": "north field"},
                      {"name": "TOKEN", "type": "cred", "value": "secret-in-env-1234"}]},
             {"id": "t2", "type": "tab", "label": "Other"},
             {"id": "sf", "type": "subflow", "name": "Sub", "in": [], "out": [],
              "env": [{"name": "LEVEL", "type": "num", "value": "3"}]},
             {"id": "i1", "type": "subflow:sf", "z": "t1", "x": 1, "y": 1, "wires": [[]]},
             {"id": "lc", "type": "link call", "z": "t1", "x": 1, "y": 1, "links": ["li"], "linkType": "static",
              "timeout": "30", "wires": [[]]},
             {"id": "li", "type": "link in", "z": "t2", "name": "Get data", "x": 1, "y": 1, "links": [],
              "wires": [[]]}]
    text = compact_flow(slice_flow(flows, "t1"))
    reading = read(text)
    assert reading.sections["t1"].flags == ", locked"
    assert reading.sections["t1"].env_line == 'env: SITE="north field" (str), TOKEN (cred, value hidden)'
    assert reading.sections["sf"].env_line == "env: LEVEL=3 (num)"
    assert reading.node("lc").links == {"li": "t2"}
    assert 'links=li ("Get data", tab "Other" [t2])' in reading.node("lc").line
    assert "secret-in-env-1234" not in text


def test_a_reference_stored_under_a_secret_looking_name_is_kept_and_its_config_node_listed():
    node = {"id": "h1", "type": "http request", "z": "t1", "x": 1, "y": 1, "auth": "cfg1", "password": "cfg1x",
            "wires": [[]]}
    assert strip_secrets(node)["auth"] == REDACTED
    clean = strip_secrets(node, references={"cfg1", "h1"})
    assert clean["auth"] == "cfg1" and clean["password"] == REDACTED
    flows = [{"id": "t1", "type": "tab"}, node, {"id": "cfg1", "type": "http proxy", "url": "http://proxy:1"}]
    text = compact_flow(slice_flow(flows, "t1"))
    assert " auth=@cfg1" in text and "[cfg1] http proxy:" in text and "cfg1x" not in text


def test_defaults_of_a_type_with_several_nodes_are_stated_once_and_a_lone_nodes_on_its_line():
    flows = [{"id": "t1", "type": "tab"},
             {"id": "m1", "type": "mqtt in", "z": "t1", "x": 1, "y": 1, "topic": "a", "broker": "b1", "qos": "2",
              "wires": [[]]},
             {"id": "b2", "type": "mqtt-broker", "broker": "other", "port": 8883}]
    brokers = [{"id": f"b{n}", "type": "mqtt-broker", "broker": f"host{n}", "port": "1883", "keepalive": "60"}
               for n in (1, *range(3, 10))]
    for number, broker in enumerate([{"id": "b2"}, *brokers[1:]], 2):
        flows[1][f"broker{number}"] = broker["id"]
    flows += brokers
    reading = read(compact_flow(slice_flow(flows, "t1")))
    # Eight brokers at port 1883: listed once under "Defaults", left off their lines; the one that differs keeps it.
    assert reading.defaults["mqtt-broker"] == {"port": "1883", "keepalive": "60"}
    assert all("port=" not in reading.node(broker["id"]).line for broker in brokers)
    assert "port=8883" in reading.node("b2").line
    # One mqtt in node: its qos at the default is on its line, not in the section.
    assert "qos=2" in reading.node("m1").line and "mqtt in" not in reading.defaults
    assert all(reading.value(broker["id"], "port") == "1883" for broker in brokers)


def test_a_tab_whose_defaults_would_cost_more_in_a_section_has_none():
    flows = [{"id": "t1", "type": "tab"},
             {"id": "i1", "type": "inject", "z": "t1", "x": 1, "y": 1, "payloadType": "date", "repeat": "",
              "wires": [["d1"]]},
             {"id": "d1", "type": "debug", "z": "t1", "x": 2, "y": 1, "active": True, "complete": "payload",
              "wires": []}]
    text = compact_flow(slice_flow(flows, "t1"))
    assert "Defaults (" not in text
    assert "[i1] inject: payloadType=date → d1" in text and "[d1] debug: active=true complete=payload" in text


def test_properties_at_their_default_that_the_node_does_not_use_are_left_out():
    # inject.js reads onceDelay only when once is true, and builds the default props itself when they are
    # missing; debug.js reads statusType and statusVal only when tostatus is true.
    props = [{"p": "payload"}, {"p": "topic", "vt": "str"}]
    flows = [{"id": "t1", "type": "tab"},
             {"id": "i1", "type": "inject", "z": "t1", "x": 1, "y": 1, "props": props, "once": False,
              "onceDelay": 0.1, "payload": "", "payloadType": "date", "wires": [["d1"]]},
             {"id": "i2", "type": "inject", "z": "t1", "x": 1, "y": 2, "props": props, "once": True,
              "onceDelay": 0.1, "payload": "", "payloadType": "date", "wires": [["d1"]]},
             {"id": "i3", "type": "inject", "z": "t1", "x": 1, "y": 3, "props": [{"p": "payload"}],
              "once": False, "onceDelay": 3, "wires": [["d1"]]},
             {"id": "i4", "type": "inject", "z": "t1", "x": 1, "y": 4, "once": "false", "onceDelay": 0.1,
              "wires": [["d1"]]},  # a string: truthy for inject.js, which then waits onceDelay
             {"id": "d1", "type": "debug", "z": "t1", "x": 2, "y": 1, "tostatus": False, "statusType": "auto",
              "statusVal": "", "wires": []},
             {"id": "d2", "type": "debug", "z": "t1", "x": 2, "y": 2, "tostatus": True, "statusType": "auto",
              "statusVal": "", "wires": []}]
    reading = read(compact_flow(slice_flow(flows, "t1")))
    assert reading.value("i1", "onceDelay") is None and reading.value("i1", "props") is None
    assert reading.value("i2", "onceDelay") == "0.1" and "once=true" in reading.node("i2").line
    assert "onceDelay=3" in reading.node("i3").line and property_json(reading.node("i3").line, "props") == [
        {"p": "payload"}]
    assert reading.value("i4", "onceDelay") == "0.1"
    assert reading.value("d1", "statusType") is None and reading.value("d2", "statusType") == "auto"


def test_outputs_is_left_out_only_where_the_wires_show_as_many_ports():
    flows = [{"id": "t1", "type": "tab"},
             {"id": "s1", "type": "switch", "z": "t1", "x": 1, "y": 1, "outputs": 2, "wires": [["d1"], []]},
             {"id": "s2", "type": "switch", "z": "t1", "x": 1, "y": 2, "outputs": 3, "wires": [["d1"]]},
             {"id": "f1", "type": "function", "z": "t1", "x": 1, "y": 3, "outputs": 0, "wires": []},
             {"id": "d1", "type": "debug", "z": "t1", "x": 2, "y": 1, "wires": []}]
    reading = read(compact_flow(slice_flow(flows, "t1")))
    assert reading.node("s1").wires == [["d1"], []] and "outputs" not in reading.node("s1").line
    assert "outputs=3" in reading.node("s2").line  # a flow the editor left half-updated says so
    assert "outputs=0" in reading.node("f1").line


def test_a_link_to_a_node_of_the_same_tab_says_this_tab():
    flows = [{"id": "t1", "type": "tab", "label": "Main"},
             {"id": "lo", "type": "link out", "z": "t1", "x": 1, "y": 1, "links": ["li", "lx"]},
             {"id": "li", "type": "link in", "z": "t1", "name": "here", "x": 2, "y": 1, "links": ["lo"],
              "wires": [[]]},
             {"id": "t2", "type": "tab", "label": "Other"},
             {"id": "lx", "type": "link in", "z": "t2", "x": 1, "y": 1, "links": ["lo"], "wires": [[]]}]
    reading = read(compact_flow(slice_flow(flows, "t1")))
    assert 'links=li ("here", this tab),lx (tab "Other" [t2])' in reading.node("lo").line
    assert reading.node("lo").links == {"li": "t1", "lx": "t2"}
    # Loose nodes, maybe from several tabs (get_node_info): the tab is always named.
    index = index_flows(flows)
    loose = compact_nodes([flows[1]], set(), link_targets=link_targets(index, [flows[1]]))
    assert 'links=li ("here", tab "Main" [t1]),lx (tab "Other" [t2])' in loose


def test_subflows_nested_thousands_deep_are_sliced_without_recursion():
    flows = [{"id": "t1", "type": "tab"}, {"id": "top", "type": "subflow:sf0000", "z": "t1", "x": 1, "y": 1}]
    for number in range(3000):
        flows.append({"id": f"sf{number:04d}", "type": "subflow", "name": str(number), "in": [], "out": []})
        if number + 1 < 3000:
            flows.append({"id": f"n{number:04d}", "type": f"subflow:sf{number + 1:04d}", "z": f"sf{number:04d}",
                          "x": 1, "y": 1})
    flow = slice_flow(flows, "t1")
    assert len(flow.subflows) == 3000 and flow.subflows[-1].tab["id"] == "sf2999"


def test_a_value_nested_hundreds_deep_is_a_tool_failure_not_a_crash():
    from service.nodered.flow_tools import ToolFailure, _flow_output

    deep: list = []
    inner = deep
    for _ in range(600):
        inner.append([])
        inner = inner[0]
    flow_data = [{"id": "t1", "type": "tab"},
                 {"id": "a", "type": "function", "z": "t1", "x": 1, "y": 1, "deep": deep, "wires": []}]
    with pytest.raises(ToolFailure) as info:
        asyncio.run(_off_loop(_flow_output, flow_data, [], "t1"))
    assert info.value.code == "flow_too_large"
