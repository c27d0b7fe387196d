"""The generated-flow check's rules on GET /nodes-shaped node sets: which blocks are flow exports, which types are
unknown, and what each is named with (the chat-level tests with a real Node-RED are in test_knowledge_chat.py)."""

from __future__ import annotations

from service.knowledge.flowcheck import flow_node_types, notice_message, unknown_types

NODE_SETS = [
    {"id": "node-red/function", "module": "node-red", "types": ["function"], "enabled": True},
    {"id": "node-red/mqtt", "module": "node-red", "types": ["mqtt in", "mqtt out", "mqtt-broker"], "enabled": True},
    {"id": "node-red-node-ping/ping", "module": "node-red-node-ping", "types": ["ping"], "enabled": False},
]


def test_only_json_blocks_that_are_flow_exports_give_node_types():
    answer = ('```json\n[{"type": "mqtt in"}, {"type": "functon"}, {"type": "mqtt in"}, {"id": "x"}]\n```\n'
              '```json\n{"flows": [{"type": "ui_button"}]}\n```\n```json\n{"type": "not a list"}\n```\n'
              '```json\n[{"type": "broken",]\n```\n```js\n[{"type": "in a js block"}]\n```')
    assert flow_node_types(answer) == ["mqtt in", "functon", "ui_button"]


def test_each_unknown_type_is_named_with_its_module_or_the_closest_installed_type():
    found = unknown_types(["mqtt in", "tab", "subflow:abc", "functon", "influxdb out", "ping", "ui_gauge",
                           "ui-chart", "zzzz"], NODE_SETS)
    assert [item.as_event() for item in found] == [
        {"type": "functon", "closest": "function"},
        {"type": "influxdb out", "module": "node-red-contrib-influxdb"},
        {"type": "ping", "module": "node-red-node-ping"},  # installed but its node set is disabled
        {"type": "ui_gauge", "module": "node-red-dashboard"},
        {"type": "ui-chart", "module": "@flowfuse/node-red-dashboard"},
        {"type": "zzzz"}]
    assert notice_message(found[-1:], {}) == ("The flow in this answer uses node types that are not installed in "
                                             'this Node-RED: "zzzz" (no installed node has this type).')
