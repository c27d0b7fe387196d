"""An independent reader of the compact flow text (written from the format's description in ``service/compact.py``,
sharing no code with it), used to check that what a model receives lets it recover the flows."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

HEADER = re.compile(r'^(?P<kind>Tab|Subflow) (?P<label>"(?:[^"\\]|\\.)*") \[(?P<id>[^\]]+)\]: (?P<count>\d+) nodes'
                    r'(?P<flags>.*)$')
NODE = re.compile(r"^\[(?P<id>[^\]\s]+)\] (?P<type>.+?):(?=\s|$)(?P<rest>.*)$")
LINK = re.compile(r'(?P<id>[^\s,()]+)(?: \((?:"(?:[^"\\]|\\.)*"(?:, )?)?(?:(?P<kind>tab|subflow) '
                  r'"(?:[^"\\]|\\.)*" \[(?P<flow>[^\]]+)\]|(?P<here>this (?:tab|subflow)))?\)| \(not found\))?')
ENV_NAME = re.compile(r'(?:^|, )(?P<name>[A-Za-z_][\w]*)(?:=| \(cred, value hidden\))')


@dataclass
class ReadNode:
    type: str
    wires: list[list[str]]
    links: dict[str, str | None]  # link target id → id of its tab or subflow
    line: str
    code: list[str] = field(default_factory=list)  # the lines of its code blocks, as shown


@dataclass
class Section:
    kind: str
    id: str
    label: str
    flags: str
    env: list[str] = field(default_factory=list)
    env_line: str = ""
    nodes: dict[str, ReadNode] = field(default_factory=dict)


@dataclass
class Reading:
    sections: dict[str, Section] = field(default_factory=dict)
    shortened: list[str] = field(default_factory=list)
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)

    def node(self, node_id: str) -> ReadNode | None:
        for section in self.sections.values():
            if node_id in section.nodes:
                return section.nodes[node_id]
        return None

    def value(self, node_id: str, key: str) -> str | None:
        """The text of property ``key`` of a node as a model can know it: written on the node's line (``key=...``
        up to the next space), else its type's entry in the "Defaults" section, else ``None`` (left out: empty,
        false or unset)."""
        node = self.node(node_id)
        assert node is not None, node_id
        found = re.search(rf" {re.escape(key)}=(\S+)", node.line.split(" → ")[0])
        if found:
            return found.group(1)
        return self.defaults.get(node.type, {}).get(key)


def read(text: str) -> Reading:
    """Sections (tabs, subflows), their nodes, env names, the "Shortened" list and the defaults section."""
    reading = Reading()
    section: Section | None = None
    last: ReadNode | None = None
    in_defaults = False
    for line in text.splitlines():
        header = HEADER.match(line)
        if header:
            section = Section(header["kind"], header["id"], json.loads(header["label"]), header["flags"])
            reading.sections[section.id] = section
            in_defaults, last = False, None
            continue
        if line.startswith(("Shortened to fit", "Too large for")):
            if "get_node_info: " in line:
                reading.shortened += line.rsplit("get_node_info: ", 1)[1].split(",")
            else:
                reading.shortened.append("*")  # every node's properties left out
            continue
        if line.startswith("Defaults ("):
            in_defaults = True
            continue
        in_defaults = in_defaults and line.startswith("  ")
        if in_defaults:
            kind, values = line.strip().split(": ", 1)
            reading.defaults[kind] = dict(pair.split("=", 1) for pair in values.split(" "))
            continue
        if line.startswith("env: ") and section is not None:
            section.env_line = line
            section.env = [m["name"] for m in ENV_NAME.finditer(line[5:])]
            continue
        if line.startswith("    | ") and last is not None:
            last.code.append(line[6:])
            continue
        match = NODE.match(line)
        if match and section is not None:
            rest = match["rest"]
            wires: list[list[str]] = []
            if " → " in rest:
                rest, tail = rest.rsplit(" → ", 1)
                ports = re.findall(r"\[\d+\] (\S+)", tail) if tail.startswith("[1] ") else [tail]
                wires = [[] if port == "-" else port.split(",") for port in ports]
            links: dict[str, str | None] = {}
            found = re.search(r" links=(.*?)(?= [A-Za-z_][\w]*=|$)", rest)
            if found:
                for link in LINK.finditer(found.group(1)):
                    if link["id"]:
                        links[link["id"]] = section.id if link["here"] else link["flow"]
            last = ReadNode(match["type"], wires, links, line)
            section.nodes[match["id"]] = last
    return reading


def property_json(line: str, key: str):
    """The JSON value of ``key=`` on a node line (lists and objects are written as JSON)."""
    start = line.index(f" {key}=") + len(key) + 2
    value, _ = json.JSONDecoder().raw_decode(line, start)
    return value
