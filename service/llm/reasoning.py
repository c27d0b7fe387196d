"""LangChain's ``ChatOpenAI`` keeping the reasoning an OpenAI-compatible server streams beside the answer.

Servers that run reasoning models (vLLM and SGLang with a reasoning parser, LM Studio, llama.cpp's ``llama-server``
with ``--reasoning-format deepseek``, DeepSeek's own API; OpenRouter as ``reasoning``) send it in each chunk's
``delta.reasoning_content``, a field of no OpenAI API, which ``ChatOpenAI`` drops. langchain-deepseek's
``ChatDeepSeek`` keeps it in ``additional_kwargs["reasoning_content"]``; this class does the same, so that the chat
relays it as ``thinking`` events (:mod:`service.chat.thinking`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI


class ReasoningChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose streamed chunks carry ``delta.reasoning_content`` (or ``delta.reasoning``) as
    ``additional_kwargs["reasoning_content"]``."""

    def _convert_chunk_to_generation_chunk(self, chunk: dict, default_chunk_class: type,
                                           base_generation_info: dict | None) -> ChatGenerationChunk | None:
        generation = super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)
        choices = chunk.get("choices")
        if generation is None or not choices or not isinstance(generation.message, AIMessageChunk):
            return generation
        delta: dict[str, Any] = choices[0].get("delta") or {}
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            generation.message.additional_kwargs["reasoning_content"] = reasoning
        return generation
