"""The core's tools, each declared once: the service's registry offers them to models, execute-tool and
``@tools:``, and the MCP server registers the read tools, all from these declarations.

Adding a tool is one :class:`~service.nodered.tooling.Tool` here plus its function (a write tool: its planner in
:mod:`service.nodered.write_tools`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from service.nodered import canvas_tools, write_tools
from service.nodered.context_plans import SetContextArgs
from service.nodered.evidence_tools import (
    DebugMessagesArgs,
    DebugMessagesResult,
    NodeStatusArgs,
    NodeStatusResult,
    get_debug_messages,
    get_node_status,
)
from service.nodered.flow_tools import FlowResult, GetFlowArgs, GetNodeInfoArgs, NodeInfoResult, get_flow, get_node_info
from service.nodered.runtime_tools import (
    DiagnosticsResult,
    FlowsResult,
    NoArgs,
    NodeTypesArgs,
    NodeTypesResult,
    SettingsResult,
    get_diagnostics,
    get_flows,
    get_settings,
    list_node_types,
)
from service.nodered.tooling import Tool, ToolContext, ToolOutput

READ_TOOLS: tuple[Tool, ...] = (
    Tool(
        name="get_settings", title="Node-RED runtime settings", args=NoArgs, result=SettingsResult, run=get_settings,
        configuration=True,
        description=(
            "Read the runtime settings of Node-RED (GET /settings): its version, httpNodeRoot, editor theme, context "
            "stores, function node options, and whether adminAuth is on (user, permissions).\n\n"
            "Use it to know which Node-RED version you are talking to or how the runtime is configured. It shows "
            "only the part of settings.js the editor may see, never credentials.")),
    Tool(
        name="get_diagnostics", title="Node-RED diagnostics report", args=NoArgs, result=DiagnosticsResult,
        run=get_diagnostics,
        description=(
            "Read the diagnostics report of Node-RED (GET /diagnostics): Node-RED and Node.js versions, operating "
            "system, memory, installed modules and a safe summary of settings.\n\n"
            "Use it to troubleshoot or check versions and resources. It fails when diagnostics are turned off in "
            "settings.js or Node-RED is older than 3.0; then use get_settings.")),
    Tool(
        name="get_flows", title="List Node-RED flows", args=NoArgs, result=FlowsResult, run=get_flows,
        description=(
            "Summarize every deployed tab (flow) and subflow: id, label, disabled, number of nodes and the node "
            "types used, plus the count of global config nodes.\n\n"
            "Call this first to find the id of a tab, then read it with get_flow.")),
    Tool(
        name="get_flow", title="Read one Node-RED flow", args=GetFlowArgs, result=FlowResult, run=get_flow,
        configuration=True,
        description=(
            "Read one tab (or subflow) with all its nodes and wires, the config nodes they use and the subflows "
            "they instantiate; without flow_id, the tab open in the editor (its editor version, which may hold "
            "undeployed changes). The text lists one node per line: [id] type \"name\" properties → wired "
            "targets; properties at their default are named once, at the end.\n\n"
            "Every node's id, type, name and wires are always there. On a large tab long code and values are cut "
            "(marked …[+N chars]) and the text names the nodes shortened: read those with get_node_info. "
            "Credentials are redacted. An unknown id fails with the list of existing tabs.")),
    Tool(
        name="get_node_info", title="Read Node-RED nodes", args=GetNodeInfoArgs, result=NodeInfoResult,
        run=get_node_info, configuration=True,
        description=(
            "Read deployed nodes by id (without node_ids, the nodes selected in the editor): every property and "
            "their code in full (credentials redacted), wiring, the tab or subflow each node is on, and the npm "
            "module and version that provide the node's type.\n\n"
            "Ids that match nothing are listed as missing; it fails only when none matches.")),
    Tool(
        name="list_node_types", title="List installed node types", args=NodeTypesArgs, result=NodeTypesResult,
        run=list_node_types,
        description=(
            "List the node types installed in Node-RED (GET /nodes) with the npm module and version providing "
            "each, and whether it is enabled.\n\n"
            "Use it before proposing a flow, to know whether a contributed node is installed.")),
    Tool(
        name="get_debug_messages", title="Recent Node-RED errors and debug messages", args=DebugMessagesArgs,
        result=DebugMessagesResult, run=get_debug_messages,
        description=(
            "Read what the running flows did recently, as the editor's Debug sidebar shows it: errors and warnings "
            "raised by nodes (node.error, node.warn; with the id, type and name of the node that raised them) and "
            "the messages debug nodes showed (value, type, shape and size), for a tab (default: the tab open in the "
            "editor), one node, or the last `since` seconds. Errors come first, then warnings, then debug messages, "
            "newest first.\n\n"
            "Use it to answer why a flow fails or what a node sent. Only what happened since the assistant started "
            "listening is there (by default the last 15 minutes, 20 messages per node); secrets are redacted and "
            "long values shortened. Read the flow with get_flow to relate the messages to the nodes.")),
    Tool(
        name="get_node_status", title="Node-RED node status", args=NodeStatusArgs, result=NodeStatusResult,
        run=get_node_status,
        description=(
            "Read the current status of nodes (the coloured dot or ring and the text under a node in the editor: "
            "\"connected\", \"disconnected\", an error text), for given node ids, the nodes selected in the "
            "editor, or every node of a tab.\n\n"
            "Use it to check connections (MQTT, databases, serial ports) and nodes that report their state. A node "
            "that never set a status is not listed.")),
)


def _write_tool(name: str, title: str, args: type[BaseModel], description: str, destructive: bool) -> Tool:
    """A write tool whose run applies and whose preview shows the plan of :mod:`service.nodered.write_tools`."""
    async def run(ctx: ToolContext, **arguments: Any) -> ToolOutput:
        return await write_tools.apply(ctx, name, arguments)

    async def preview(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        return await write_tools.preview(ctx, name, arguments)

    return Tool(name=name, title=title, args=args, result=write_tools.WriteResult, run=run, preview=preview,
                access="write", permission="write", description=description, destructive=destructive)


APPROVAL_NOTE = (" It runs only after the user approves it (they see a preview and may edit or reject it); a "
                 "rejection comes back with the user's reason.")

# The core's write tools: never run without an approval record (the service's agent pauses for the user before each
# call; execute-tool and @tools: ask the same way; the MCP server offers them only with MCP_WRITE_TOOLS=true and asks
# its client's user through MCP elicitation).
WRITE_TOOLS: tuple[Tool, ...] = (
    _write_tool("add_nodes", "Add nodes to a flow", write_tools.AddNodesArgs, (
        "Add nodes and their wires to a tab (a generated flow): give the nodes as in a Node-RED flow export, with "
        "ids, types, properties, x/y and wires among them; their ids are replaced by new ones. Without flow_id "
        "they go to the tab open in the editor; with new_tab_label onto a new tab.\n\n"
        "Check installed node types with list_node_types first." + APPROVAL_NOTE), destructive=False),
    _write_tool("update_node", "Change a node", write_tools.UpdateNodeArgs, (
        "Change properties of one node, e.g. fix a function node's code (func) or a change node's rules. Read the "
        "node with get_node_info first and send the whole new value of each property you change." + APPROVAL_NOTE),
                destructive=True),
    _write_tool("delete_nodes", "Delete nodes", write_tools.DeleteNodesArgs, (
        "Delete nodes by id, with the wires to them. Tabs cannot be deleted this way." + APPROVAL_NOTE),
                destructive=True),
    _write_tool("create_tab", "Create a tab", write_tools.CreateTabArgs, (
        "Create a new empty tab (flow) with a label; add nodes to it with add_nodes and its id, or use "
        "add_nodes with new_tab_label directly." + APPROVAL_NOTE), destructive=False),
    _write_tool("trigger_inject", "Trigger an inject node", write_tools.TriggerInjectArgs, (
        "Trigger a deployed inject node once, as its button in the editor does; its message runs through the "
        "deployed flow." + APPROVAL_NOTE), destructive=True),
    _write_tool("tidy_layout", "Tidy a tab's layout", write_tools.TidyLayoutArgs, (
        "Tidy the layout of a tab, or of some of its nodes (e.g. the ones you just added): the nodes are laid out "
        "left to right along their wires in layers, on the grid, over no other node; grouped nodes stay where they "
        "are. Only positions change." + APPROVAL_NOTE), destructive=False),
    _write_tool("set_context", "Set a context value", SetContextArgs, (
        "Set one flow context value (of a tab: what flow.get reads there) or global context value, in the default "
        "context store or a given one, as a function node's flow.set / global.set does. The value is any JSON. "
        "Needs the AI sidebar palette package in Node-RED (Node-RED's Admin API only reads context)."
        + APPROVAL_NOTE), destructive=True),
    _write_tool("set_disabled", "Disable or enable nodes and tabs", canvas_tools.SetDisabledArgs, (
        "Disable (disabled: true) or enable nodes and tabs by id, as the editor's Disable/Enable does: a disabled "
        "node or tab stays in the flow with its wires but does not run. Subflow definitions, groups and junctions "
        "cannot be disabled; a locked tab refuses it." + APPROVAL_NOTE), destructive=True),
    _write_tool("rename", "Rename a node, group or tab", canvas_tools.RenameArgs, (
        "Set the name of a node, group or subflow, or the label of a tab." + APPROVAL_NOTE), destructive=True),
    _write_tool("create_group", "Group nodes", canvas_tools.CreateGroupArgs, (
        "Put nodes of one tab into a new group with a name and an optional style (fill, stroke, label); the group "
        "is drawn around them. Nodes already in one group get the new group inside it; nodes taken from another "
        "group leave it." + APPROVAL_NOTE), destructive=False),
    _write_tool("change_group_members", "Change a group's members", canvas_tools.ChangeGroupMembersArgs, (
        "Add nodes of the group's tab to an existing group (add) or take members out of it (remove); its border "
        "follows its members." + APPROVAL_NOTE), destructive=True),
    _write_tool("ungroup", "Ungroup", canvas_tools.UngroupArgs, (
        "Remove a group; its nodes stay where they are (in the group around it, if any)." + APPROVAL_NOTE),
                destructive=True),
    _write_tool("link_nodes", "Link nodes across tabs", canvas_tools.LinkNodesArgs, (
        "Connect a link out node (or a link call node) to a link in node, on the same or another tab; both "
        "ends' links are kept consistent. A link out may send to several link in nodes (replace: true drops the "
        "others); a link call calls one (replace: true to change it). Create the link nodes with add_nodes "
        "first when they do not exist." + APPROVAL_NOTE), destructive=True),
    _write_tool("move_nodes", "Move nodes to another tab", canvas_tools.MoveNodesArgs, (
        "Move nodes (groups with their members) to another tab. Wires cannot cross tabs: each wire between a moved "
        "node and one left behind is removed, or with link_cut_wires: true replaced by a link out → link in pair. "
        "A moved node whose group stays leaves the group." + APPROVAL_NOTE), destructive=True),
    _write_tool("add_subflow_instance", "Add a subflow instance", canvas_tools.AddSubflowInstanceArgs, (
        "Put an instance of an existing subflow on a tab, optionally named, with env values of its own and its "
        "outputs wired to nodes of that tab; it is placed beside the nodes it is wired to." + APPROVAL_NOTE),
                destructive=False),
    _write_tool("create_subflow", "Turn nodes into a subflow", canvas_tools.CreateSubflowArgs, (
        "Turn nodes of one tab (groups with their members) into a new subflow, as the editor's Selection to "
        "Subflow does: the nodes move into it, its input is wired to the node the incoming wires reached (they "
        "must reach one node), each set of outgoing wires to the same nodes becomes an output, and an instance "
        "takes their place, wired as they were. Values that differ are not turned into env properties."
        + APPROVAL_NOTE), destructive=True),
)
# The tools that read the runtime evidence: whoever offers them runs a comms subscriber (the service its own, the
# MCP server its own).
EVIDENCE_TOOL_NAMES = frozenset({"get_debug_messages", "get_node_status"})
