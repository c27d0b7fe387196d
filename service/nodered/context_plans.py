"""``set_context`` (issue 36): set one flow or global context value, after approval.

Node-RED's Admin API only reads and deletes context (``GET``/``DELETE /context/...``, Node-RED docs "Admin HTTP
API"), so the value is written through the palette plugin's ``POST /ai-sidebar/context``
(``node-red-contrib-ai-sidebar/plugins/lib/context-route.js``), which sets it with the runtime's own context API.

The planner is pure: it checks the key, the tab and the store on the live flows and the runtime's context stores
(``GET /settings`` answers ``context: {"default", "stores"}``), and returns a :class:`~service.nodered.write_plans.
Change` whose diff carries ``context``: ``{"scope", "flow", "flowLabel", "store", "key", "value"}`` (``flow`` and
``flowLabel`` are ``None`` for global context; ``store`` is the store written, the default one when none was
asked). No flow changes, so the diff has no parts to untick.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.messages import Sentence
from service.nodered.tooling import ToolFailure
from service.nodered.write_plans import Change, empty_diff, is_test_tab

# Characters of the value as JSON: context is runtime state, not a place for documents (a larger value would not
# fit on a card a person reads either).
MAX_VALUE_CHARS = 100_000
# A key Node-RED's context API reads as a property path (``a``, ``a.b``, ``a["b c"]``, ``a[0]``); the store-prefix
# syntax ``#:(store)::key`` and ``$parent`` (another flow's context) are refused: the store is its own argument and
# a card names the one flow written.
_KEY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*|\[\d+\]|\[\"[^\"\\]+\"\]|\['[^'\\]+'\])*$")


class SetContextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: Literal["flow", "global"] = Field(description=(
        "flow: the context of one tab (what flow.get reads on it); global: the context every flow shares"))
    key: str = Field(min_length=1, max_length=200, description=(
        "the context key, a property path as flow.set takes it: \"count\", \"config.limit\", \"rooms[0]\""))
    value: Any = Field(description="the new value, any JSON (null sets null; to delete, use the editor)")
    flow_id: str | None = Field(None, max_length=128, description=(
        "flow scope: the tab; default: the tab open in the editor"))
    store: str | None = Field(None, max_length=64, description=(
        "the context store (get_settings lists them); default: the runtime's default store"))


def plan_set_context(flows: list[dict[str, Any]], args: dict[str, Any], stores: dict[str, Any],
                     editor_flow: str | None = None) -> Change:
    """Set context ``args["key"]`` to ``args["value"]`` in ``args["scope"]`` (a flow: ``args["flow_id"]``, else
    ``editor_flow``) and ``args["store"]``.

    Args:
        flows: the deployed flows (``GET /flows``).
        args: :class:`SetContextArgs`, parsed.
        stores: the runtime's ``context`` settings, ``{"default": name, "stores": [name, ...]}`` (Node-RED answers
            ``{"default": "memory", "stores": ["memory"]}`` when ``contextStorage`` is not set).
        editor_flow: the tab open in the editor, for a flow scope without ``flow_id``.

    Raises:
        ToolFailure: ``invalid_params`` (a key that is no property path, a value too large, an unknown store, a
            flow scope without a tab, a disabled tab or a subflow), ``flow_not_found``.
    """
    key, scope = args["key"], args["scope"]
    if not _KEY.match(key):
        raise _invalid("key", f"{key!r} is not a context key such as count, config.limit or rooms[0]")
    size = len(json.dumps(args["value"], ensure_ascii=False))
    if size > MAX_VALUE_CHARS:
        raise _invalid("value", f"its JSON is {size} characters, more than {MAX_VALUE_CHARS}")
    known = [str(name) for name in stores.get("stores") or ["memory"]]
    store = args.get("store") or str(stores.get("default") or known[0])
    if store not in known:
        raise _invalid("store", f"{store!r} is not a context store of this Node-RED ({', '.join(known)})")
    context: dict[str, Any] = {"scope": scope, "flow": None, "flowLabel": None, "store": store, "key": key,
                               "value": args["value"]}
    if scope == "global":
        if args.get("flow_id"):
            raise _invalid("flow_id", "global context belongs to no tab; leave flow_id out")
        sentence = Sentence("change.set_context.global", name=key, store=store)
        return Change("set_context", sentence, {**empty_diff(), "context": context}, context=context)
    flow_id = args.get("flow_id") or editor_flow
    if not flow_id:
        raise _invalid("flow_id", "flow context needs the tab: give flow_id (get_flows lists the tabs)")
    by_id = {node["id"]: node for node in flows}
    tab = by_id.get(flow_id)
    if tab is None or tab.get("type") != "tab":
        if tab is not None and tab.get("type") == "subflow":
            raise _invalid("flow_id", "a subflow's context belongs to each of its instances; choose a tab")
        tabs = ", ".join(f'"{n.get("label") or n["id"]}" ({n["id"]})' for n in flows if n.get("type") == "tab")
        raise ToolFailure("flow_not_found", params={"flow_id": flow_id, "tabs": tabs[:2000] or "none"})
    label = str(tab.get("label") or tab["id"])
    if tab.get("disabled"):
        raise _invalid("flow_id", f"tab \"{label}\" is disabled: its flow does not run, so it has no context")
    context.update(flow=flow_id, flowLabel=label)
    sentence = Sentence("change.set_context.flow", name=key, store=store, tab=label)
    return Change("set_context", sentence, {**empty_diff(), "context": context}, context=context,
                  test_tabs_only=is_test_tab(tab))


def _invalid(parameter: str, detail: str) -> ToolFailure:
    return ToolFailure("invalid_params", params={"tool": "set_context", "parameter": parameter, "detail": detail})
