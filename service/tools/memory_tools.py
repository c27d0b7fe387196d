"""The memory tools, declared once: ``search_memory``, ``get_user_preferences``, ``get_flow_templates``.

They read only what belongs to the requester's identity (an editor user, or an ``ai-chat`` node's conversation)
and shared entries such as flow templates.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

from service.nodered.text_budget import bounded
from service.nodered.tooling import Tool, ToolFailure, ToolOutput
from service.tools.context import ServiceToolContext as ToolContext

TEMPLATE_CATEGORY = "template"
PREFERENCE_CATEGORY = "preference"


def _store(ctx: ToolContext):
    if ctx.memory is None:
        raise ToolFailure("memory_unavailable", key="memory_unavailable.tool")
    return ctx.memory


async def search_memory(ctx: ToolContext, query: str, category: str | None = None, limit: int = 5) -> ToolOutput:
    """BM25-ranked matches in the user's earlier conversations and in saved knowledge (templates, notes)."""
    results = await _store(ctx).search(ctx.identity, query, category, limit)
    lines = [f"{i}. [{r['category']}] {r.get('key') or r.get('sessionId')}: {r['snippet']}"
             for i, r in enumerate(results, 1)] or ["No match."]
    return ToolOutput(data={"results": results}, text="\n".join(lines))


async def get_user_preferences(ctx: ToolContext) -> ToolOutput:
    """The preferences the user saved (category ``preference``)."""
    entries = await _store(ctx).knowledge(PREFERENCE_CATEGORY, ctx.identity)
    prefs = {e["key"]: e["value"] for e in entries}
    return ToolOutput(data={"preferences": prefs},
                      text="\n".join(f"{k}: {v}" for k, v in prefs.items()) or "No saved preferences.")


async def get_flow_templates(ctx: ToolContext, name: str | None = None) -> ToolOutput:
    """Saved flow templates: names and descriptions, or one template's flow JSON when ``name`` is given."""
    templates = await _store(ctx).knowledge(TEMPLATE_CATEGORY, ctx.identity)
    if name:
        chosen = [t for t in templates if t["metadata"].get("name") == name or t["key"] == name]
        if not chosen:
            raise ToolFailure("template_not_found", params={"name": name})
        template = chosen[0]
        return ToolOutput(data=template, text=bounded(f"{template['metadata'].get('name')}: "
                                                      f"{template['metadata'].get('description', '')}\n"
                                                      f"{template['value']}", 20_000))
    listing = [{"name": t["metadata"].get("name", t["key"]), "description": t["metadata"].get("description", ""),
                "nodes": len(json.loads(t["value"])) if t["value"].startswith("[") else None} for t in templates]
    return ToolOutput(data={"templates": listing},
                      text="\n".join(f"- {t['name']}: {t['description']}" for t in listing) or "No templates.")


class SearchMemoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=500, description="words to look for")
    category: str | None = Field(None, max_length=40, description="'message', 'template', 'note', ...")
    limit: int = Field(5, ge=1, le=20)


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TemplateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, max_length=200, description="a template name; omit to list them")


MEMORY_TOOLS: tuple[Tool, ...] = (
    Tool(name="search_memory", title="Search memory", args=SearchMemoryArgs, run=search_memory,
         description="Search the user's earlier conversations and saved knowledge (BM25 ranked)."),
    Tool(name="get_user_preferences", title="User preferences", args=NoArgs, run=get_user_preferences,
         description="Read the preferences the user saved."),
    Tool(name="get_flow_templates", title="Flow templates", args=TemplateArgs, run=get_flow_templates,
         description="List saved Node-RED flow templates, or read one by name."),
)
