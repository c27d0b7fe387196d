"""Default property values of Node-RED's core nodes (Node-RED 4.1, ``@node-red/nodes/core/*/*.html``, the
``defaults`` of each ``RED.nodes.registerType``). A property still at its default says nothing about the flow, so
the compact form leaves it out; every value that differs is kept.

Values are compared as text (the editor stores many numbers and booleans as strings: ``"0"``, ``"false"``).
"""

from __future__ import annotations

from typing import Any


class AnyOf(tuple):
    """Several stored forms of one default (the editor changed how it stores some values between releases)."""

    def __new__(cls, *values: Any) -> AnyOf:
        return super().__new__(cls, values)


CORE_DEFAULTS: dict[str, dict[str, Any]] = {
    "inject": {"props": [{"p": "payload"}, {"p": "topic", "vt": "str"}], "repeat": "", "crontab": "",
               "once": False, "onceDelay": 0.1, "topic": "", "payload": "", "payloadType": "date"},
    "debug": {"active": True, "tosidebar": True, "console": False, "tostatus": False,
              "complete": AnyOf("payload", "false"),
              "targetType": "msg", "statusVal": "", "statusType": "auto"},
    "function": {"outputs": 1, "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": []},
    "switch": {"property": "payload", "propertyType": "msg", "checkall": "true", "repair": False, "outputs": 1},
    "change": {"action": "", "property": "", "from": "", "to": "", "reg": False},
    "template": {"field": "payload", "fieldType": "msg", "format": "handlebars", "syntax": "mustache",
                 "output": "str"},
    "json": {"property": "payload", "action": "", "pretty": False},
    "delay": {"pauseType": "delay", "timeout": "5", "timeoutUnits": "seconds", "rate": "1", "nbRateUnits": "1",
              "rateUnits": "second", "randomFirst": "1", "randomLast": "5", "randomUnits": "seconds",
              "drop": False, "allowrate": False, "outputs": 1},
    "trigger": {"op1": "1", "op2": "0", "op1type": "val", "op2type": "val", "duration": "250", "extend": False,
                "overrideDelay": False, "units": "ms", "reset": "", "bytopic": "all", "topic": "topic",
                "outputs": 1},
    "catch": {"scope": None, "uncaught": False},
    "status": {"scope": None},
    "complete": {"scope": []},
    "link in": {"links": []},
    "link out": {"mode": "link", "links": []},
    "link call": {"linkType": "static", "timeout": "30"},
    "http in": {"method": "get", "upload": False, "swaggerDoc": ""},
    "http response": {"statusCode": "", "headers": {}},
    "http request": {"method": "GET", "ret": "txt", "paytoqs": "ignore", "url": "", "tls": "", "persist": False,
                     "proxy": "", "insecureHTTPParser": False, "authType": "", "senderr": False, "headers": []},
    "mqtt in": {"topic": "", "qos": "2", "datatype": "auto-detect", "broker": "", "nl": False, "rap": True,
                "rh": 0, "inputs": 0},
    "mqtt out": {"topic": "", "qos": "", "retain": "", "respTopic": "", "contentType": "", "userProps": "",
                 "correl": "", "expiry": ""},
    "mqtt-broker": {"port": "1883", "clientid": "", "autoConnect": True, "usetls": False, "protocolVersion": "4",
                    "keepalive": "60", "cleansession": True, "autoUnsubscribe": True, "birthTopic": "",
                    "birthQos": "0", "birthRetain": "false", "birthPayload": "", "birthMsg": {},
                    "closeTopic": "", "closeQos": "0", "closeRetain": "false", "closePayload": "", "closeMsg": {},
                    "willTopic": "", "willQos": "0", "willRetain": "false", "willPayload": "", "willMsg": {},
                    "userProps": "", "sessionExpiry": ""},
    "split": {"splt": "\\n", "spltType": "str", "arraySplt": 1, "arraySpltType": "len", "stream": False,
              "addname": "", "property": "payload"},
    "join": {"mode": "auto", "build": "object", "property": "payload", "propertyType": "msg", "key": "topic",
             "joiner": "\\n", "joinerType": "str", "useparts": False, "accumulate": False, "timeout": "",
             "count": "", "reduceRight": False, "reduceExp": "", "reduceInit": "", "reduceInitType": "",
             "reduceFixup": ""},
    "range": {"minin": "", "maxin": "", "minout": "", "maxout": "", "action": "scale", "round": False,
              "property": "payload"},
    "csv": {"sep": ",", "hdrin": "", "hdrout": "none", "multi": "one", "ret": "\\n", "temp": "", "skip": "0",
            "strings": True, "include_empty_strings": "", "include_null_values": ""},
    "xml": {"property": "payload", "attr": "", "chr": ""},
    "yaml": {"property": "payload"},
    "html": {"property": "payload", "outproperty": "payload", "tag": "", "ret": "html", "as": "single"},
    "file": {"filename": "", "filenameType": "str", "appendNewline": True, "createDir": False,
             "overwriteFile": "false", "encoding": "none"},
    "file in": {"filename": "", "filenameType": "str", "format": "utf8", "chunk": False, "sendError": False,
                "encoding": "none", "allProps": False},
    "exec": {"command": "", "addpay": "", "append": "", "useSpawn": "false", "timer": "", "winHide": False,
             "oldrc": False},
    "comment": {"info": ""},
    "tcp in": {"server": "server", "host": "", "port": "", "datamode": "stream", "datatype": "buffer",
               "newline": "", "topic": "", "trim": False, "base64": False, "tls": ""},
    "websocket in": {"server": "", "client": ""},
    "websocket out": {"server": "", "client": ""},
}


def is_default(node_type: str, key: str, value: Any) -> bool:
    """Whether ``value`` is the core default of property ``key`` for ``node_type`` (unknown types: never)."""
    defaults = CORE_DEFAULTS.get(node_type)
    if defaults is None or key not in defaults:
        return False
    default = defaults[key]
    if isinstance(default, AnyOf):
        return any(_text(value) == _text(choice) for choice in default)
    if isinstance(default, (list, dict)) or isinstance(value, (list, dict)):
        return value == default
    return _text(value) == _text(default)


# Properties that, at their default, change nothing in how the node runs given the value of another property
# (type → property → (the other property, its values under which the first is unused)): the compact form leaves
# them out altogether. From the nodes' runtime code, Node-RED 4.1 and 5:
# - inject (20-inject.js): ``props`` at its default, entries without a ``v``, takes payload from ``payload`` /
#   ``payloadType`` and the topic from ``topic``, exactly what a node without ``props`` gets ("Handle legacy"),
#   whatever the other property; ``onceDelay`` is read only when ``once`` is truthy in JavaScript (``if (this.once)``:
#   a string "false" is truthy, so only a missing, false, empty or zero ``once`` leaves it unused).
# - debug (21-debug.js): ``statusType`` and ``statusVal`` are read only when ``tostatus === true``.
WITHOUT_EFFECT: dict[str, dict[str, tuple[str | None, tuple[Any, ...]]]] = {
    "inject": {"props": (None, ()), "onceDelay": ("once", (None, False, "", 0))},
    "debug": {"statusType": ("tostatus", (None, False, "false", "")),
              "statusVal": ("tostatus", (None, False, "false", ""))},
}


def without_effect(node: dict[str, Any], key: str) -> bool:
    """Whether property ``key`` of ``node`` is at its core default and, given the node's other properties, unused
    by the node's runtime (:data:`WITHOUT_EFFECT`): a model that rebuilt the node without it would get a node that
    runs the same. Unknown types and properties: never."""
    rule = WITHOUT_EFFECT.get(str(node.get("type")), {}).get(key)
    if rule is None or not is_default(str(node["type"]), key, node.get(key)):
        return False
    other, unused_when = rule
    return other is None or node.get(other) in unused_when


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def default_differs(node_type: str, key: str, value: Any) -> bool:
    """Whether ``node_type`` has a known default for ``key`` and ``value`` is not it."""
    return key in CORE_DEFAULTS.get(node_type, {}) and not is_default(node_type, key, value)
