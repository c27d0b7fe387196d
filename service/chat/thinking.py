"""Reasoning output of a model kept apart from its answer (issue 38): what it streams between ``<think>`` and
``</think>`` in its text (Qwen3, DeepSeek-R1 distills and other local models), in a ``reasoning_content`` delta
(DeepSeek's reasoner, vLLM and LM Studio's reasoning parsers; OpenRouter's ``reasoning``) or in Anthropic's
``thinking`` content blocks becomes ``thinking`` events (``{type: "thinking", text}``): shown by the sidebar as a
collapsible block, never added to the answer's text, never stored (service/chat/view.py keeps no such event) and
never counted: the provider's usage already counts reasoning tokens as output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPEN, CLOSE = "<think>", "</think>"


@dataclass
class ThinkSplitter:
    """Splits streamed text into answer and ``<think>`` parts across chunk boundaries: a tag cut between two chunks
    is held back until the next chunk says whether it is one, and the line breaks between ``</think>`` and the
    answer are dropped. One per answer (its model calls follow each other)."""

    thinking: bool = False
    _held: str = field(default="", repr=False)
    _after_close: bool = field(default=False, repr=False)

    def feed(self, text: str) -> list[tuple[bool, str]]:
        """The parts of the held text and ``text`` that are decided: ``[(is_thinking, text)]`` in order, empty
        parts left out; a trailing prefix of the next tag is held back."""
        text = self._held + text
        self._held = ""
        parts: list[tuple[bool, str]] = []
        while text:
            tag = CLOSE if self.thinking else OPEN
            index = text.find(tag)
            cut = index if index >= 0 else len(text) - _partial_tag(text, tag)
            self._add(parts, text[:cut])
            if index < 0:
                self._held = text[cut:]
                break
            self.thinking = not self.thinking
            self._after_close = not self.thinking
            text = text[index + len(tag):]
        return parts

    def flush(self) -> list[tuple[bool, str]]:
        """What is held back once the stream ended (a ``<thi`` that never became a tag is text)."""
        held, self._held = self._held, ""
        parts: list[tuple[bool, str]] = []
        self._add(parts, held)
        return parts

    def _add(self, parts: list[tuple[bool, str]], text: str) -> None:
        if not self.thinking and self._after_close:
            text = text.lstrip("\n")
            self._after_close = not text
        if text:
            parts.append((self.thinking, text))


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` begin ``tag`` (0: none)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def without_thinking(text: str) -> str:
    """``text`` without its ``<think>`` parts (a short model call's answer: a query rewrite, a routing word)."""
    splitter = ThinkSplitter()
    parts = splitter.feed(text) + splitter.flush()
    return "".join(part for thinking, part in parts if not thinking)


def reasoning_of(chunk: Any) -> str:
    """The reasoning a chunk carries outside its text: ``additional_kwargs.reasoning_content`` (langchain-deepseek,
    and :class:`service.llm.reasoning.ReasoningChatOpenAI` for OpenAI-compatible servers) or Anthropic's
    ``thinking`` blocks in its content."""
    extra = getattr(chunk, "additional_kwargs", None) or {}
    reasoning = extra.get("reasoning_content")
    text = reasoning if isinstance(reasoning, str) else ""
    content = getattr(chunk, "content", None)
    if isinstance(content, list):
        text += "".join(block.get("thinking", "") for block in content
                        if isinstance(block, dict) and block.get("type") == "thinking"
                        and isinstance(block.get("thinking"), str))
    return text
