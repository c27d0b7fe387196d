"""Generated Node-RED workspaces for the large-flow tests: built in code (never committed as fixtures), made only of
core node types so that a real Node-RED starts them.

:func:`big_code_tab` is a tab of function nodes whose code totals more than the compaction budget;
:func:`workspace` is a 500-node workspace with subflows (their own env definitions, one nested in another), groups,
link out/in/call across tabs, tab env (with a ``cred`` entry), locked tabs, a 28-rule switch, a long change node,
a property named like a secret that holds a config node's id, and an MQTT broker at its default port;
:data:`CREDENTIALS` are what its config nodes get when deployed as the editor deploys them
(:meth:`tests.support.nodered.NodeRed.deploy_credentials`); :func:`code_heavy_tab` is an area tab of hundreds of
nodes with more than 100 KB of function code and a function node fed by more neighbours than the assist context
shows, one of them holding a key.
"""

from __future__ import annotations

from typing import Any

CRED_VALUE = "tab-env-secret-value-9921"
SUBFLOW_CRED_VALUE = "subflow-env-secret-7733"
BROKER_PASSWORD = "broker-secret-5150"
PROXY_PASSWORD = "proxy-secret-6060"
# Node-RED keeps these encrypted in flows_cred.json and never returns them in GET /flows.
CREDENTIALS = {"store-broker": {"user": "recorder", "password": BROKER_PASSWORD},
               "store-proxy": {"username": "corp", "password": PROXY_PASSWORD}}
API_KEY = "sk-proj-Qm7vX2kR9tLp4Wz8Nc3Hd6Jf1Bs5Gy0Ae7Uo2Ki9Xr4Tv"
READING_PASSWORD = "reading-password-4412"


def function_code(lines: int, seed: int) -> str:
    """Valid JavaScript of about ``lines`` * 60 characters."""
    body = [f"// step {seed}: scale and check each reading"]
    body += [f"const reading{n} = Number(msg.payload.readings[{n}]) * {seed + n} + {n % 7};" for n in range(lines)]
    body.append("msg.payload = { total: " + " + ".join(f"reading{n}" for n in range(min(lines, 5))) + " };")
    body.append("return msg;")
    return "\n".join(body)


def big_code_tab(tab_id: str = "bigtab", count: int = 62) -> list[dict[str, Any]]:
    """``count`` function nodes in a chain (every fifth with two outputs), ~3.4 KB of code each, one of ~90 KB."""
    nodes: list[dict[str, Any]] = [{"id": tab_id, "type": "tab", "label": "Big code", "disabled": False,
                                    "info": "A tab whose function code passes the model's budget."}]
    ids = [f"{tab_id}-f{n:03d}" for n in range(count)]
    for n, node_id in enumerate(ids):
        following = [ids[n + 1]] if n + 1 < count else []
        wires = [following, [ids[n + 2]] if n + 2 < count else []] if n % 5 == 0 else [following]
        nodes.append({"id": node_id, "type": "function", "z": tab_id, "name": f"step {n}",
                      "func": function_code(1500 if n == 7 else 55, n), "outputs": len(wires), "timeout": 0,
                      "noerr": 0, "initialize": "", "finalize": "", "libs": [], "x": 100 + 10 * n, "y": 80,
                      "wires": wires})
    return nodes


def _subflows() -> list[dict[str, Any]]:
    """Subflow ``sfA`` (env THRESHOLD, LABEL, API_SECRET) and ``sfB`` (env MODE) holding an instance of ``sfA``."""
    return [
        {"id": "sfA", "type": "subflow", "name": "Scale reading", "info": "", "category": "",
         "in": [{"x": 50, "y": 30, "wires": [{"id": "sfA-c"}]}],
         "out": [{"x": 500, "y": 30, "wires": [{"id": "sfA-f", "port": 0}]}],
         "env": [{"name": "THRESHOLD", "type": "num", "value": "5"},
                 {"name": "LABEL", "type": "str", "value": "greenhouse sensor"},
                 {"name": "API_SECRET", "type": "cred", "value": SUBFLOW_CRED_VALUE}],
         "locked": True},
        {"id": "sfA-c", "type": "change", "z": "sfA", "name": "copy", "x": 150, "y": 30, "wires": [["sfA-f"]],
         "rules": [{"t": "set", "p": "threshold", "pt": "msg", "to": "THRESHOLD", "tot": "env"}]},
        {"id": "sfA-f", "type": "function", "z": "sfA", "name": "scale", "x": 300, "y": 30, "outputs": 1,
         "func": function_code(4, 1), "wires": [[]]},
        {"id": "sfB", "type": "subflow", "name": "Route reading", "info": "", "category": "",
         "in": [{"x": 50, "y": 30, "wires": [{"id": "sfB-i"}]}],
         "out": [{"x": 500, "y": 30, "wires": [{"id": "sfB-s", "port": 0}]},
                 {"x": 500, "y": 90, "wires": [{"id": "sfB-s", "port": 1}]}],
         "env": [{"name": "MODE", "type": "str", "value": "fast"}]},
        {"id": "sfB-i", "type": "subflow:sfA", "z": "sfB", "x": 150, "y": 30, "wires": [["sfB-s"]],
         "env": [{"name": "THRESHOLD", "type": "num", "value": "9"}]},
        {"id": "sfB-s", "type": "switch", "z": "sfB", "name": "split", "property": "payload.total",
         "propertyType": "msg", "rules": [{"t": "gt", "v": "10", "vt": "num"}, {"t": "else"}], "checkall": "true",
         "repair": False, "outputs": 2, "x": 300, "y": 30, "wires": [[], []]},
    ]


def _tab(number: int, size: int, code_lines: int = 3) -> list[dict[str, Any]]:
    """A tab of ``size`` nodes: chains of inject, change, switch, function (``code_lines`` lines of code each), delay,
    json, template and debug nodes, a group, a junction, link nodes and subflow instances."""
    tab_id = f"w{number}"
    nodes: list[dict[str, Any]] = [{
        "id": tab_id, "type": "tab", "label": f"Area {number}", "disabled": False, "info": "",
        "locked": number % 2 == 0,
        "env": [{"name": "SITE", "type": "str", "value": f"site {number}"},
                {"name": "LIMIT", "type": "num", "value": str(10 * number)},
                {"name": "DB_PASSWORD", "type": "cred", "value": CRED_VALUE}]}]
    group_id = f"{tab_id}-g"
    nodes.append({"id": group_id, "type": "group", "z": tab_id, "name": f"Inputs {number}",
                  "style": {"label": True}, "nodes": [], "x": 10, "y": 10, "w": 400, "h": 200})
    kinds = ("inject", "change", "switch", "function", "delay", "json", "template", "debug")
    n = 0
    while len(nodes) < size:
        chain = [f"{tab_id}-n{n + k:03d}" for k in range(len(kinds))]
        for k, (kind, node_id) in enumerate(zip(kinds, chain)):
            following = [chain[k + 1]] if k + 1 < len(chain) else []
            node: dict[str, Any] = {"id": node_id, "type": kind, "z": tab_id, "name": f"{kind} {n + k}",
                                    "x": 100 + 20 * k, "y": 100 + n, "wires": [following]}
            if kind == "inject":
                node.update({"props": [{"p": "payload"}], "repeat": "", "crontab": "", "once": False,
                             "topic": "", "payload": "", "payloadType": "date"})
                if n == 0:
                    node["g"] = group_id
                    nodes[1]["nodes"].append(node_id)
            elif kind == "change":
                node["rules"] = [{"t": "set", "p": "topic", "pt": "msg", "to": f"area/{number}/{n}", "tot": "str"}]
            elif kind == "switch":
                node.update({"property": "payload", "propertyType": "msg", "checkall": "true", "repair": False,
                             "rules": [{"t": "gt", "v": "10", "vt": "num"}, {"t": "else"}], "outputs": 2})
                node["wires"] = [following, [f"{tab_id}-j"]]
            elif kind == "function":
                node.update({"func": function_code(code_lines, n), "outputs": 1})
            elif kind == "delay":
                node.update({"pauseType": "delay", "timeout": "5", "timeoutUnits": "seconds"})
            elif kind == "debug":
                node.update({"active": True, "tosidebar": True, "complete": "payload", "targetType": "msg"})
                node.pop("wires")
            nodes.append(node)
        n += len(kinds)
    nodes.append({"id": f"{tab_id}-j", "type": "junction", "z": tab_id, "x": 500, "y": 50,
                  "wires": [[f"{tab_id}-lo"]]})
    nodes.append({"id": f"{tab_id}-lo", "type": "link out", "z": tab_id, "name": f"to area {number % 5 + 1}",
                  "mode": "link", "links": [f"w{number % 5 + 1}-li"], "x": 600, "y": 50})
    nodes.append({"id": f"{tab_id}-li", "type": "link in", "z": tab_id, "name": f"into area {number}",
                  "links": [f"w{(number - 2) % 5 + 1}-lo"], "x": 50, "y": 400, "wires": [[f"{tab_id}-sfB"]]})
    nodes.append({"id": f"{tab_id}-lc", "type": "link call", "z": tab_id, "name": "ask storage",
                  "links": ["store-in"], "linkType": "static", "timeout": "30", "x": 300, "y": 400,
                  "wires": [[f"{tab_id}-sfA"]]})
    nodes.append({"id": f"{tab_id}-sfA", "type": "subflow:sfA", "z": tab_id, "x": 400, "y": 400,
                  "env": [{"name": "LABEL", "type": "str", "value": f"area {number}"}], "wires": [[]]})
    nodes.append({"id": f"{tab_id}-sfB", "type": "subflow:sfB", "z": tab_id, "x": 200, "y": 400,
                  "wires": [[f"{tab_id}-lc"], []]})
    return nodes


def switch_rules(count: int = 28) -> list[dict[str, Any]]:
    return [{"t": "eq", "v": f"sensor-{n:02d}-" + "x" * 30, "vt": "str"} for n in range(count)]


def change_rules(count: int = 40) -> list[dict[str, Any]]:
    return [{"t": "set", "p": f"payload.field{n}", "pt": "msg", "to": f"value number {n} " + "y" * 20, "tot": "str"}
            for n in range(count)]


def _storage_tab() -> list[dict[str, Any]]:
    """The link call target, a 28-rule switch, a long change node, ``auth`` naming a config node, MQTT at 1883."""
    return [
        {"id": "store", "type": "tab", "label": "Storage", "disabled": False, "info": "", "locked": True,
         "env": []},
        {"id": "store-in", "type": "link in", "z": "store", "name": "store request", "links": [], "x": 50,
         "y": 50, "wires": [["store-route"]]},
        {"id": "store-route", "type": "switch", "z": "store", "name": "by sensor", "property": "topic",
         "propertyType": "msg", "rules": switch_rules(), "checkall": "false", "repair": False, "outputs": 28,
         "x": 200, "y": 50, "wires": [["store-set"] if n == 0 else [] for n in range(28)]},
        {"id": "store-set", "type": "change", "z": "store", "name": "shape record", "rules": change_rules(),
         "x": 350, "y": 50, "wires": [["store-http"]]},
        {"id": "store-http", "type": "http request", "z": "store", "name": "post record", "method": "POST",
         "ret": "obj", "url": "http://127.0.0.1:9/records", "auth": "store-proxy", "x": 500, "y": 50,
         "wires": [["store-mqtt", "store-ret"]]},
        {"id": "store-mqtt", "type": "mqtt out", "z": "store", "name": "announce", "topic": "records/new",
         "qos": "", "retain": "", "broker": "store-broker", "x": 650, "y": 50, "wires": []},
        {"id": "store-ret", "type": "link out", "z": "store", "name": "reply", "mode": "return", "links": [],
         "x": 650, "y": 100},
        {"id": "store-proxy", "type": "http proxy", "name": "corporate proxy", "url": "http://proxy.local:3128",
         "noproxy": []},
        {"id": "store-broker", "type": "mqtt-broker", "name": "local broker", "broker": "127.0.0.1", "port": "1883",
         "clientid": "", "autoConnect": False, "usetls": False, "protocolVersion": "4", "keepalive": "60",
         "cleansession": True, "autoUnsubscribe": True},
    ]


def workspace(tabs: int = 5, per_tab: int = 94) -> list[dict[str, Any]]:
    """About 500 nodes: ``tabs`` area tabs, the storage tab and two subflows."""
    flows = _subflows() + _storage_tab()
    for number in range(1, tabs + 1):
        flows += _tab(number, per_tab)
    return flows


FEEDS = 24  # function nodes wired into the merge node of :func:`code_heavy_tab`


def code_heavy_tab(number: int = 9, size: int = 300, code_lines: int = 45) -> list[dict[str, Any]]:
    """Area tab ``number`` (:func:`_tab`) of ``size`` nodes whose function nodes hold ``code_lines`` lines each
    (over 100 KB on the tab), plus a function node ``w<number>-merge`` fed by :data:`FEEDS` function nodes (the
    first one's first line assigns :data:`API_KEY`), by an inject node whose JSON payload holds
    :data:`READING_PASSWORD` and that also feeds a debug node (what it shows is the merge node's input), and wired
    to a function node and a debug node."""
    tab_id = f"w{number}"
    merge, reading, seen, store, out = (f"{tab_id}-{name}" for name in ("merge", "reading", "seen", "store", "out"))
    nodes = _tab(number, size, code_lines)
    for n in range(FEEDS):
        code = function_code(code_lines, 1000 + n)
        if n == 0:
            code = f'const apiKey = "{API_KEY}";\nmsg.headers = {{ authorization: apiKey }};\n{code}'
        nodes.append({"id": f"{tab_id}-feed{n:02d}", "type": "function", "z": tab_id, "name": f"feed {n}",
                      "func": code, "outputs": 1, "x": 100, "y": 600 + 20 * n, "wires": [[merge]]})
    nodes += [
        {"id": reading, "type": "inject", "z": tab_id, "name": "reading", "props": [{"p": "payload"}],
         "repeat": "", "crontab": "", "once": False, "topic": "", "payloadType": "json",
         "payload": '{"readings": [1, 2, 3], "password": "' + READING_PASSWORD + '"}', "x": 100, "y": 1200,
         "wires": [[merge, seen]]},
        {"id": seen, "type": "debug", "z": tab_id, "name": "seen", "active": True, "tosidebar": True,
         "complete": "payload", "targetType": "msg", "x": 300, "y": 1260, "wires": []},
        {"id": merge, "type": "function", "z": tab_id, "name": "merge readings", "outputs": 1,
         "func": function_code(code_lines, 999), "x": 300, "y": 1200, "wires": [[store, out]]},
        {"id": store, "type": "function", "z": tab_id, "name": "store merged", "outputs": 1,
         "func": "// keep the merged reading\nflow.set('merged', msg.payload);\nreturn msg;", "x": 500, "y": 1200,
         "wires": [[]]},
        {"id": out, "type": "debug", "z": tab_id, "name": "merged", "active": True, "tosidebar": True,
         "complete": "true", "targetType": "full", "x": 500, "y": 1260, "wires": []},
    ]
    return nodes
