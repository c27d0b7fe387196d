"""Tool search (issue 22): above ``AI_SIDEBAR_TOOL_SEARCH_THRESHOLD`` tools, LangChain's
``LLMToolSelectorMiddleware`` asks the model (a structured-output call with the last user message and every tool's
name and description) which tools the request needs, and each model call of the agent is sent only those: at most
:data:`~service.chat.history.MAX_TOOLS_PER_REQUEST` schemas, the core tools of :data:`ALWAYS_OFFERED` included."""

from __future__ import annotations

from collections.abc import Sequence

from langchain.agents.middleware import AgentMiddleware, LLMToolSelectorMiddleware

from service.chat.history import MAX_TOOLS_PER_REQUEST

# Core Node-RED tools every request keeps (they read what the editor shows: the open tab, the selected nodes, the
# installed nodes' help); they count against MAX_TOOLS_PER_REQUEST.
ALWAYS_OFFERED = ("get_flow", "get_node_info", "search_node_docs")
SELECTOR_PROMPT = ("Select the tools a Node-RED assistant needs to answer the user's message: tools of the user's "
                   "own services are named <server>__<tool>. Choose only tools that fit the request.")


def tool_selector(tools: list[str], threshold: int, always: Sequence[str] = ()) -> AgentMiddleware | None:
    """The selector for an agent offered ``tools``, or ``None`` when there are ``threshold`` or fewer. ``always``:
    more tools every request keeps (the run's pausing tools, ``ask_user`` and ``propose_plan``: not counted in
    ``tools``). A selection the model cannot give (malformed after one retry) leaves the core tools alone, never an
    error."""
    if len(tools) <= threshold:
        return None
    kept = [*(name for name in ALWAYS_OFFERED if name in tools), *always]
    return LLMToolSelectorMiddleware(system_prompt=SELECTOR_PROMPT, max_tools=MAX_TOOLS_PER_REQUEST - len(kept),
                                     always_include=kept, max_retries=1, on_parsing_failure="none")
