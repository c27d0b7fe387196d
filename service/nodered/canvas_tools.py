"""The canvas write tools' arguments and planners (issue 36): ``set_disabled``, ``rename``, ``create_group``,
``change_group_members``, ``ungroup``, ``link_nodes``, ``move_nodes``, ``add_subflow_instance``,
``create_subflow``. Declared as tools in
:mod:`service.nodered.tools`; planned,
previewed, approved and applied (deployed with the ``rev`` checked, or handed to the editor as one undo step) by
:mod:`service.nodered.write_tools` like the core's write tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.canvas_plans import plan_rename, plan_set_disabled
from service.nodered.group_plans import plan_change_group_members, plan_create_group, plan_ungroup
from service.nodered.link_plans import plan_link_nodes
from service.nodered.move_plans import plan_move_nodes
from service.nodered.subflow_plans import plan_add_subflow_instance, plan_create_subflow
from service.nodered.write_plans import MAX_NODES, Change, Locks


class SetDisabledArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(min_length=1, max_length=MAX_NODES, description="ids of the nodes and tabs")
    disabled: bool = Field(description="true: disable them (they stop running after the deploy); false: enable")


class RenameArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(max_length=128, description="the node, group, subflow or tab to rename")
    name: str = Field(max_length=200, description="the new name (a tab's label); empty: no name")


class CreateGroupArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] = Field(min_length=1, max_length=MAX_NODES, description=(
        "the nodes (or groups) to put in the group, all on one tab"))
    name: str = Field("", max_length=200, description="the group's name, shown on its border")
    style: dict[str, Any] = Field({}, description=(
        "the editor's group style, e.g. {\"fill\": \"#e3f3d3\", \"stroke\": \"#92d04f\", \"label\": true}"))


class ChangeGroupMembersArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    group_id: str = Field(max_length=128, description="the group")
    add: list[str] = Field([], max_length=MAX_NODES, description=(
        "nodes of the group's tab to put in it (they leave any other group)"))
    remove: list[str] = Field([], max_length=MAX_NODES, description=(
        "members to take out (they stay on the tab, in the group around it if any)"))


class UngroupArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    group_id: str = Field(max_length=128, description="the group to remove; its nodes stay")


class LinkNodesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_id: str = Field(max_length=128, description="a link out node (mode: send to links) or a link call node")
    target_id: str = Field(max_length=128, description="the link in node, on any tab")
    replace: bool = Field(False, description=(
        "drop the source's existing links first (a link call calls one link in: needed to change its target)"))


class MoveNodesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] = Field(min_length=1, max_length=MAX_NODES, description=(
        "the nodes to move (a group moves with its members)"))
    flow_id: str = Field(max_length=128, description="the tab to move them to")
    link_cut_wires: bool = Field(False, description=(
        "replace each wire between a moved node and one left behind by a link out → link in pair (default: such "
        "wires are removed)"))


class SubflowEnvEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, description="the env property of the subflow to set")
    type: str = Field("str", max_length=20, description="its type: str, num, bool, json, env, ...")
    value: str = Field("", max_length=10000, description="its value, as text")


class AddSubflowInstanceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subflow_id: str = Field(max_length=128, description="the subflow definition (get_flows lists them)")
    flow_id: str = Field(max_length=128, description="the tab to put the instance on")
    name: str = Field("", max_length=200, description="the instance's name; empty: the subflow's")
    env: list[SubflowEnvEntry] = Field([], max_length=100, description=(
        "values of the subflow's env properties for this instance (the others keep the definition's)"))
    wires: list[list[str]] = Field([], max_length=100, description=(
        "for each output of the subflow, the ids of the nodes on the tab it is wired to"))


class CreateSubflowArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node_ids: list[str] = Field(min_length=1, max_length=MAX_NODES, description=(
        "the nodes (or groups) of one tab to turn into a subflow"))
    name: str = Field(min_length=1, max_length=200, description="the new subflow's name")


Planner = Callable[[list[dict[str, Any]], dict[str, Any], Locks | None], Change]

# tool name → its planner of (flows, parsed arguments, locks); write_tools.plan dispatches to it.
PLANNERS: dict[str, Planner] = {
    "set_disabled": lambda flows, a, locks: plan_set_disabled(flows, a["ids"], a["disabled"], locks),
    "rename": lambda flows, a, locks: plan_rename(flows, a["id"], a["name"], locks),
    "create_group": lambda flows, a, locks: plan_create_group(flows, a["node_ids"], a.get("name", ""),
                                                              a.get("style"), locks),
    "change_group_members": lambda flows, a, locks: plan_change_group_members(
        flows, a["group_id"], a.get("add") or [], a.get("remove") or [], locks),
    "ungroup": lambda flows, a, locks: plan_ungroup(flows, a["group_id"], locks),
    "link_nodes": lambda flows, a, locks: plan_link_nodes(flows, a["source_id"], a["target_id"],
                                                          a.get("replace", False), locks),
    "move_nodes": lambda flows, a, locks: plan_move_nodes(flows, a["node_ids"], a["flow_id"],
                                                          a.get("link_cut_wires", False), locks),
    "add_subflow_instance": lambda flows, a, locks: plan_add_subflow_instance(
        flows, a["subflow_id"], a["flow_id"], a.get("name", ""), a.get("env"), a.get("wires"), locks),
    "create_subflow": lambda flows, a, locks: plan_create_subflow(flows, a["node_ids"], a["name"], locks),
}
