"""The node types of a generated flow checked against the installed ones (issue 17): a model that writes a flow
export in a ```json block may invent types, misspell them or use a module the user does not have.

The installed types are the ``types`` of the enabled node sets of ``GET /nodes`` (JSON; the list the knowledge
refresher reads). An unknown type is named with the module that provides it (a disabled node set of this
Node-RED, else :data:`CONTRIB_MODULES`) or else the closest installed type (``difflib``).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

# Types of a flow export that are no node set's: the editor's own objects, and subflow instances (``subflow:<id>``).
BUILT_IN = frozenset({"tab", "subflow", "group", "junction", "unknown"})
CLOSEST_CUTOFF = 0.6  # difflib ratio under which no installed type is offered as "closest"

# Node types of widely used modules from the npm registry (their package.json ``node-red.nodes`` and the types
# registered there), for a type whose module is not installed.
CONTRIB_MODULES: dict[str, str] = {
    **dict.fromkeys(("influxdb", "influxdb out", "influxdb in", "influxdb batch"), "node-red-contrib-influxdb"),
    **dict.fromkeys(("modbus-client", "modbus-read", "modbus-write", "modbus-getter", "modbus-flex-getter",
                     "modbus-flex-write", "modbus-server", "modbus-response"), "node-red-contrib-modbus"),
    **dict.fromkeys(("e-mail", "e-mail in", "e-mail mta"), "node-red-node-email"),
    **dict.fromkeys(("serial in", "serial out", "serial request", "serial-port"), "node-red-node-serialport"),
    **dict.fromkeys(("sqlite", "sqlitedb"), "node-red-node-sqlite"),
    **dict.fromkeys(("mysql", "MySQLdatabase"), "node-red-node-mysql"),
    **dict.fromkeys(("postgresql", "postgreSQLConfig"), "node-red-contrib-postgresql"),
    **dict.fromkeys(("mongodb", "mongodb in", "mongodb out"), "node-red-node-mongodb"),
    **dict.fromkeys(("OpcUa-Client", "OpcUa-Item", "OpcUa-Endpoint", "OpcUa-Browser", "OpcUa-Server"),
                    "node-red-contrib-opcua"),
    **dict.fromkeys(("s7 in", "s7 out", "s7 endpoint", "s7 control"), "node-red-contrib-s7"),
    **dict.fromkeys(("telegram bot", "telegram sender", "telegram receiver", "telegram command"),
                    "node-red-contrib-telegrambot"),
    **dict.fromkeys(("server", "server-state-changed", "api-call-service", "trigger-state", "poll-state",
                     "current-state", "ha-entity"), "node-red-contrib-home-assistant-websocket"),
    **dict.fromkeys(("rpi-gpio in", "rpi-gpio out"), "node-red-node-pi-gpio"),
    "openweathermap": "node-red-node-openweathermap",
    "ping": "node-red-node-ping",
    "smooth": "node-red-node-smooth",
    "random": "node-red-node-random",
    "moment": "node-red-contrib-moment",
    "bigtimer": "node-red-contrib-bigtimer",
    "cronplus": "node-red-contrib-cron-plus",
}
# Prefixes of whole families: Node-RED Dashboard 1 (``ui_button``) and FlowFuse Dashboard 2 (``ui-button``).
CONTRIB_PREFIXES: tuple[tuple[str, str], ...] = (("ui_", "node-red-dashboard"),
                                                 ("ui-", "@flowfuse/node-red-dashboard"))

# English sentences of the notice (``unknownNodeTypes`` in locales/<lang>/knowledge.json translates them).
SENTENCES = {"message": "The flow in this answer uses node types that are not installed in this Node-RED: {types}.",
             "closest": "{type} (did you mean {closest}?)",
             "module": "{type} (provided by {module}, not installed or not enabled here)",
             "unknown": "{type} (no installed node has this type)"}

_JSON_BLOCK = re.compile(r"```json[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class UnknownType:
    """A type of a generated flow that is not installed: the module that provides it, or the closest installed
    type, or neither."""

    type: str
    closest: str | None = None
    module: str | None = None

    def as_event(self) -> dict[str, str]:
        """``{"type", "closest"?, "module"?}`` (the ``notice`` event's ``types`` entries)."""
        found = {"type": self.type}
        if self.closest:
            found["closest"] = self.closest
        if self.module:
            found["module"] = self.module
        return found


def flow_node_types(answer: str) -> list[str]:
    """The distinct node types of every flow export in ``answer``'s ```json blocks, in order of appearance. A
    block is a flow export when it is a JSON list of objects with a string ``type`` (or an object with such a list
    under ``flows``); other blocks, and blocks that are not valid JSON, are ignored."""
    types: list[str] = []
    for block in _JSON_BLOCK.findall(answer):
        try:
            data = json.loads(block)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("flows"), list):
            data = data["flows"]
        if not isinstance(data, list):
            continue
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"] not in types:
                types.append(item["type"])
    return types


def unknown_types(types: list[str], node_sets: list[dict[str, Any]]) -> list[UnknownType]:
    """The ``types`` no enabled node set of ``node_sets`` (``GET /nodes`` JSON) registers, each with its module
    (a disabled set of this Node-RED, else :data:`CONTRIB_MODULES` / :data:`CONTRIB_PREFIXES`) or else the
    closest installed type (``difflib`` ratio ≥ :data:`CLOSEST_CUTOFF`)."""
    installed: set[str] = set()
    disabled: dict[str, str] = {}
    for node_set in node_sets:
        if not isinstance(node_set, dict):
            continue
        for node_type in node_set.get("types") or []:
            if node_set.get("enabled", True):
                installed.add(node_type)
            elif node_set.get("module"):
                disabled[node_type] = node_set["module"]
    unknown = []
    for node_type in types:
        if node_type in installed or node_type in BUILT_IN or node_type.startswith("subflow:"):
            continue
        module = disabled.get(node_type) or CONTRIB_MODULES.get(node_type) or next(
            (name for prefix, name in CONTRIB_PREFIXES if node_type.startswith(prefix)), None)
        closest = None
        if module is None:
            closest = next(iter(difflib.get_close_matches(node_type, sorted(installed), 1, CLOSEST_CUTOFF)), None)
        unknown.append(UnknownType(node_type, closest, module))
    return unknown


def notice_message(unknown: list[UnknownType], sentences: dict[str, str]) -> str:
    """The notice's sentence for ``unknown`` types, from ``sentences`` (a language's ``unknownNodeTypes``; a
    missing key falls back to :data:`SENTENCES`, English)."""
    words = {**SENTENCES, **sentences}
    parts = []
    for item in unknown:
        key = "module" if item.module else "closest" if item.closest else "unknown"
        parts.append(words[key].format(type=f'"{item.type}"', closest=f'"{item.closest}"', module=item.module))
    return words["message"].format(types="; ".join(parts))
