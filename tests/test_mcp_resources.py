"""The MCP server's resources against a real Node-RED, through the SDK's own client: list, read, templates with
completions, and a subscription told of a deploy that changed its tab (and not of one that left it alone)."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import ResourceTemplateReference, ResourceUpdatedNotification, ServerNotification
from pydantic import AnyUrl

from mcp_server.resources import CONFIG_URI, FLOW_URI, HELP_URI, SUMMARY_URI, config_uri, flow_uri
from mcp_server.server import NodeRedConfig, build_server
from tests.support.nodered import NodeRed, free_port

# The secret lives in a function's code: the compact, redacted form must not show it.
SECRET = "sk-live-7b1d0c55e2a94f6f9d3e8a1b2c4d6e8f"
FLOWS = [
    {"id": "tabA", "type": "tab", "label": "Area 1"},
    {"id": "tabB", "type": "tab", "label": "Billing"},
    {"id": "inj", "type": "inject", "z": "tabA", "name": "tick", "x": 100, "y": 80, "wires": [["fn"]]},
    {"id": "fn", "type": "function", "z": "tabA", "name": "scale", "x": 300, "y": 80, "wires": [["dbg"]],
     "func": f'const apiKey = "{SECRET}";\nreturn msg;', "outputs": 1},
    {"id": "dbg", "type": "debug", "z": "tabA", "name": "out", "x": 500, "y": 80, "wires": []},
    {"id": "other", "type": "debug", "z": "tabB", "name": "bill", "x": 100, "y": 80, "wires": []},
    {"id": "broker1", "type": "mqtt-broker", "name": "plant broker", "broker": "localhost", "port": "1883"},
]


@pytest.fixture(scope="module")
def resource_nodered(tmp_path_factory):
    """A Node-RED of this module's own (its tests deploy), without the palette."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-resources"), port=free_port(), flows=FLOWS,
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


def _server(nodered):
    return build_server(NodeRedConfig(url=nodered.url), knowledge_db=None)


async def test_resources_list_read_and_complete_tabs_configs_help_and_summary(resource_nodered):
    async with create_connected_server_and_client_session(_server(resource_nodered)._mcp_server) as session:
        listed = {str(r.uri): r for r in (await session.list_resources()).resources}
        assert {flow_uri("tabA"), flow_uri("tabB"), config_uri("broker1"), SUMMARY_URI} <= set(listed)
        assert listed[flow_uri("tabA")].title == "tab Area 1"
        templates = {t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates}
        assert {FLOW_URI, CONFIG_URI, HELP_URI} <= templates

        tab = (await session.read_resource(AnyUrl(flow_uri("tabA")))).contents[0].text
        assert "scale" in tab and "[inj]" in tab and "[dbg]" in tab and "[other]" not in tab
        assert SECRET not in tab
        config = (await session.read_resource(AnyUrl(config_uri("broker1")))).contents[0].text
        assert "plant broker" in config and "mqtt-broker" in config
        summary = (await session.read_resource(AnyUrl(SUMMARY_URI))).contents[0].text
        assert "Area 1" in summary and "Billing" in summary and "function: 1" in summary
        help_text = (await session.read_resource(AnyUrl("nodered://node-help/mqtt%20in"))).contents[0].text
        assert help_text.startswith("mqtt in (node-red ") and "broker" in help_text.lower()

        by_id = await session.complete(ResourceTemplateReference(type="ref/resource", uri=FLOW_URI),
                                       {"name": "flow_id", "value": "tab"})
        assert sorted(by_id.completion.values) == ["tabA", "tabB"]
        by_label = await session.complete(ResourceTemplateReference(type="ref/resource", uri=FLOW_URI),
                                          {"name": "flow_id", "value": "Bil"})
        assert by_label.completion.values == ["tabB"]
        types = await session.complete(ResourceTemplateReference(type="ref/resource", uri=HELP_URI),
                                       {"name": "node_type", "value": "mqtt"})
        assert "mqtt%20in" in types.completion.values


async def test_an_unknown_tab_is_an_error_naming_the_tabs(resource_nodered):
    from mcp.shared.exceptions import McpError

    async with create_connected_server_and_client_session(_server(resource_nodered)._mcp_server) as session:
        try:
            await session.read_resource(AnyUrl(flow_uri("no-such-tab")))
        except McpError as err:
            assert "no-such-tab" in str(err) and "tabA" in str(err)
        else:
            raise AssertionError("an unknown tab was read")


async def test_a_subscribed_tab_is_announced_after_a_deploy_that_changes_it(resource_nodered):
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, ServerNotification) and isinstance(message.root, ResourceUpdatedNotification):
            updates.append(str(message.root.params.uri))
            arrived.set()

    server = _server(resource_nodered)
    async with create_connected_server_and_client_session(server._mcp_server, message_handler=on_message) as session:
        caps = session.get_server_capabilities()
        assert caps is not None and caps.resources is not None and caps.resources.subscribe is True
        await session.subscribe_resource(AnyUrl(flow_uri("tabA")))
        await session.subscribe_resource(AnyUrl(flow_uri("tabB")))
        # The comms subscription hears of deploys once it is connected: wait for it (the evidence tool says so).
        with anyio.fail_after(30):
            while True:
                status = await session.call_tool("get_node_status", {"flow_id": "tabA"})
                if "(connected to" in status.content[0].text:
                    break
                await anyio.sleep(0.1)
        current = resource_nodered.admin("/flows")
        changed = [{**n, "name": "scaled twice"} if n["id"] == "fn" else n for n in current["flows"]]
        resource_nodered.admin("/flows", {"rev": current["rev"], "flows": changed})
        with anyio.fail_after(30):
            await arrived.wait()
        assert updates == [flow_uri("tabA")]
        # Unsubscribed: the next change of that tab is not announced (a change of tabB is, and comes after it).
        await session.unsubscribe_resource(AnyUrl(flow_uri("tabA")))
        arrived = anyio.Event()
        current = resource_nodered.admin("/flows")
        changed = [{**n, "name": "again"} if n["id"] in ("fn", "other") else n for n in current["flows"]]
        resource_nodered.admin("/flows", {"rev": current["rev"], "flows": changed})
        with anyio.fail_after(30):
            await arrived.wait()
        assert updates == [flow_uri("tabA"), flow_uri("tabB")]
