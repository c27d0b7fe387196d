"""Summarisation of long conversations (issue 22): when the earlier turns no longer fit the model's context budget,
the oldest ones are folded into one summary by the model, the newest stay verbatim.

The summariser is LangChain's ``SummarizationMiddleware`` (trigger and keep in tokens, our token counter), called
as a function on the history before it goes out, so that every path of the pipeline (pure chat, a tool's answer,
the agent) sends the same condensed history. A stored session's summary is kept in memory
(:meth:`MemoryStore.save_summary`), so the next turn starts from it and summarises again only when the turns after
it outgrow the budget. A backlog larger than one summary request can hold is folded in several steps, each request
within the budget.

Within one agent turn the same middleware runs in the agent's middleware list (:class:`AgentSummarization`), with
the same budget and counter: tool results piling up over many calls of one turn are folded before the model
request that would outgrow the budget.

Room (issue 41): the history gets what the request's other parts (system prompt, question with retrieved knowledge,
tool schemas) and the answer's reserve (:func:`answer_reserve`) leave of the budget, never under a quarter of it
(:func:`history_room`). Summary requests carry the conversation as plain text (:class:`PlainSummarization`).

Budget: ``AI_SIDEBAR_CONTEXT_TOKENS`` when set, else the model's profile (``max_input_tokens``, the LangChain model
profiles), else :data:`PROVIDER_CONTEXT_TOKENS`. Counting: the OpenAI-family client's own tiktoken counter when
tiktoken's encodings are loaded (downloaded once, on a thread of their own: :class:`TiktokenLoader`), else LangChain's
``count_tokens_approximately`` (about 4 characters a token, 3.3 for Anthropic models, as the middleware uses).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately, get_buffer_string

log = logging.getLogger(__name__)

TokenCounter = Callable[[Iterable[Any]], int]

# Context windows (input tokens) when neither AI_SIDEBAR_CONTEXT_TOKENS nor the model's profile says: the providers'
# documented windows of their default models (platform.openai.com/docs/models, api-docs.deepseek.com,
# ai.google.dev/gemini-api/docs/models, docs.anthropic.com/en/docs/about-claude/models); an Azure OpenAI deployment's
# model is chosen by its owner, the GPT-4o family's 128,000 the smallest current one
# (learn.microsoft.com/azure/ai-foundry/openai/concepts/models); a local OpenAI-compatible server's model is assumed
# small.
PROVIDER_CONTEXT_TOKENS = {"openai": 128_000, "deepseek": 64_000, "google": 1_048_576, "anthropic": 200_000,
                           "azure-openai": 128_000, "openai-compatible": 8_192}
# Tokens left for the model's answer when AI_SIDEBAR_ANSWER_TOKENS is not set: an eighth of the budget, at most this
# (a local server's window holds the answer too: Ollama's num_ctx, llama.cpp's n_ctx).
ANSWER_RESERVE = 1_024
ANSWER_SHARE = 8
# The conversation's floor: at least this share of the budget is the history's, whatever else the request holds
# (system prompt, retrieved knowledge, tool schemas), so that the user's own conversation is not the first thing
# to go in a small window.
HISTORY_SHARE = 4
# The middleware's own summary prompt and the answer to it: kept out of the history's room when folding.
SUMMARY_RESERVE = 900
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
SUMMARY_PROMPT = """<role>
Conversation summariser for a Node-RED assistant
</role>
The conversation below will be replaced by your summary; everything not in it is lost. Keep every fact the user
stated (names, numbers, hosts, ports, topics, node and flow names, settings, preferences), every decision and what
is still open. If the conversation starts with an earlier summary, keep all of its facts. Write short plain lines,
no preamble.
<messages>
Messages to summarize:
{messages}
</messages>"""


@dataclass(frozen=True)
class Condensed:
    """The history as it goes to the model: ``summary`` (``None``: nothing summarised), the ``messages`` kept
    verbatim (each keeps its ``id``), and whether this call wrote a new summary (``changed``)."""

    summary: str | None
    messages: list[BaseMessage]
    changed: bool = False

    def for_model(self) -> list[BaseMessage]:
        """The summary as the first message (the middleware's own form), then the kept messages."""
        return [*summary_messages(self.summary), *self.messages]


def summary_messages(summary: str | None) -> list[BaseMessage]:
    """``[HumanMessage]`` carrying ``summary`` as ``SummarizationMiddleware`` writes it, or ``[]``."""
    if not summary:
        return []
    return [HumanMessage(SUMMARY_PREFIX + summary, additional_kwargs={"lc_source": "summarization"})]


def context_budget(model: BaseChatModel, provider: str, configured: int | None) -> int:
    """Input tokens one model request may hold: ``configured`` (``AI_SIDEBAR_CONTEXT_TOKENS``), else the model's
    profile ``max_input_tokens``, else the provider's default (:data:`PROVIDER_CONTEXT_TOKENS`, 8192 unknown)."""
    if configured:
        return configured
    profile = getattr(model, "profile", None)
    limit = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if isinstance(limit, int) and limit > 0:
        return limit
    return PROVIDER_CONTEXT_TOKENS.get(provider, 8_192)


def answer_reserve(budget: int, configured: int | None) -> int:
    """Tokens of a ``budget``-token request kept for the model's answer: ``configured``
    (``AI_SIDEBAR_ANSWER_TOKENS``), else an eighth of the budget, at most :data:`ANSWER_RESERVE` (a 4,000-token
    window keeps 500, a 128,000-token one 1,024)."""
    return configured if configured else min(budget // ANSWER_SHARE, ANSWER_RESERVE)


def history_room(budget: int, others: int, reserve: int) -> int:
    """Tokens the history (summary and verbatim turns) may take in a ``budget``-token request whose other parts
    take ``others`` tokens (system prompt, the question with any retrieved knowledge, tool schemas) and which keeps
    ``reserve`` for the answer: what is left, and never less than a quarter of the budget
    (:data:`HISTORY_SHARE`), so that in a small window the conversation keeps a share beside large tool schemas or
    retrieved knowledge."""
    return max(budget - others - reserve, budget // HISTORY_SHARE)


def token_counter(model: BaseChatModel) -> TokenCounter:
    """The counter used for budgets: tiktoken through the OpenAI-family client
    (``get_num_tokens_from_messages``) when its encodings load, else ``count_tokens_approximately`` (3.3 characters
    a token for Anthropic models, 4 otherwise). See :func:`counter_name`."""
    if _openai_family(model) and _tiktoken_ready():
        return model.get_num_tokens_from_messages  # type: ignore[return-value]
    chars = 3.3 if model._llm_type.startswith("anthropic") else 4.0  # noqa: SLF001 - LangChain's own test
    return functools.partial(count_tokens_approximately, chars_per_token=chars)


def counter_name(model: BaseChatModel) -> str:
    """``tiktoken`` or ``approximate``: which counter :func:`token_counter` picks for ``model`` (for logs)."""
    return "tiktoken" if _openai_family(model) and _tiktoken_ready() else "approximate"


def _openai_family(model: BaseChatModel) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


# The encodings LangChain's OpenAI-family client counts with (BaseChatOpenAI._get_encoding_model, langchain-openai
# 1.x): the model's own through tiktoken.encoding_for_model, else o200k_base for gpt-4o/4.1/5 names and cl100k_base
# for any other name (DeepSeek's, a local server's).
TIKTOKEN_ENCODINGS = ("o200k_base", "cl100k_base")


class TiktokenLoader:
    """tiktoken's encodings (:data:`TIKTOKEN_ENCODINGS`), loaded once a process on a daemon thread.

    tiktoken downloads an encoding the first time it is used (tiktoken 0.x ``load.read_file``: ``requests.get`` with
    no timeout) and caches it on disk. Loaded on the event loop, the first chat of a process stopped every stream for
    the download, and on a gateway whose network drops packets for the TCP connect timeout (minutes). Until the
    encodings are there (or when they cannot be loaded: offline, no cache) budgets use the approximation.
    """

    def __init__(self, encodings: Sequence[str] = TIKTOKEN_ENCODINGS):
        self.encodings = tuple(encodings)
        self.ready = False  # every encoding loaded
        self.failed = False  # a load failed: the approximation for this process
        self._started = False
        self._lock = threading.Lock()
        self.done = threading.Event()  # set once the load ended, either way

    def start(self) -> None:
        """Begin the load on a daemon thread (a stop does not wait for a download); later calls do nothing."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._load, name="tiktoken-load", daemon=True).start()

    def _load(self) -> None:
        try:
            import tiktoken

            for name in self.encodings:
                tiktoken.get_encoding(name)
        except Exception as err:  # noqa: BLE001 - not installed, offline, no cache: fall back to the approximation
            self.failed = True
            log.info("tiktoken unavailable (%s): token counts are approximate", type(err).__name__)
        else:
            self.ready = True
        finally:
            self.done.set()


TIKTOKEN = TiktokenLoader()


def _tiktoken_ready() -> bool:
    """Whether tiktoken's encodings are loaded; the first call starts their load (:class:`TiktokenLoader`) and,
    like every call before it ends, answers ``False`` at once."""
    TIKTOKEN.start()
    return TIKTOKEN.ready


def summarisation_options(room: int, counter: TokenCounter, budget: int) -> dict[str, Any]:
    """``SummarizationMiddleware`` options for messages that may take ``room`` tokens of a ``budget``-token request:
    summarise above the room, keep its newest third verbatim, and let a summary request carry at most the budget
    less its own prompt and answer (:data:`SUMMARY_RESERVE`, at most a third of a small budget), never more than the
    room."""
    room = max(room, 1)
    request_room = budget - min(SUMMARY_RESERVE, budget // 3)
    return {"trigger": ("tokens", room), "keep": ("tokens", max(room // 3, 1)), "token_counter": counter,
            "summary_prompt": SUMMARY_PROMPT, "trim_tokens_to_summarize": max(min(room, request_room), 1)}


class PlainSummarization(SummarizationMiddleware):
    """``SummarizationMiddleware`` whose summary request carries the conversation as plain text: an earlier summary
    as its own section, then each message as ``Human: …``/``AI: …``/``Tool: …`` (LangChain's
    ``get_buffer_string``), never XML-escaped. LangChain 1.5 escapes the messages as XML (``&amp;``, ``&lt;``):
    a model that copies from them writes escaped text into the summary, and each later fold escaped that summary
    again (``&amp;amp;lt;``, issue 41). A summary is text and is carried as text into the next fold."""

    def _format_summary_prompt(self, messages: list[Any]) -> str:
        return self.summary_prompt.format(messages=plain_transcript(messages)).rstrip()


def plain_transcript(messages: Sequence[BaseMessage]) -> str:
    """``messages`` as the text of a summary request: the earlier summary (a message marked ``lc_source:
    summarization``, see :func:`summary_messages`) first, under its own heading, then the others, one
    ``Role: text`` line each."""
    earlier = [str(m.content).removeprefix(SUMMARY_PREFIX).strip() for m in messages
               if m.additional_kwargs.get("lc_source") == "summarization"]
    rest = [m for m in messages if m.additional_kwargs.get("lc_source") != "summarization"]
    parts = [f"Earlier summary:\n{text}" for text in earlier]
    if rest:
        parts.append(get_buffer_string(rest))
    return "\n\n".join(parts)


class AgentSummarization(PlainSummarization):
    """``SummarizationMiddleware`` in an agent run (before each model call of the loop), for a state whose first
    message is the system prompt: that stays as it is and out of the count, since ``room`` is what the budget
    leaves after it, the tool schemas and :data:`ANSWER_RESERVE`.

    Args:
        model: the run's chat model; it writes the summaries.
        room: tokens the messages after the system prompt may take.
        counter: the token counter (:func:`token_counter`).
        budget: tokens one request may hold; a summary request is kept within it.
    """

    def __init__(self, model: BaseChatModel, room: int, counter: TokenCounter, budget: int):
        super().__init__(model, **summarisation_options(room, counter, budget))

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        head = messages[:1] if messages and isinstance(messages[0], SystemMessage) else []
        update = await super().abefore_model({**state, "messages": messages[len(head):]}, runtime)
        if update is None or not head:
            return update
        remove_all, *rest = update["messages"]
        return {"messages": [remove_all, *head, *rest]}

    def _should_summarize_based_on_reported_tokens(self, messages: Any, threshold: float) -> bool:
        # The provider's reported total counts the system prompt, the tool schemas and the answer, which the room
        # already leaves out: compared with the room it would fold turns that fit. Our own count decides.
        return False


class Summariser:
    """Folds the oldest turns of a history into a summary so that it fits ``room`` tokens.

    Args:
        model: the request's chat model; it writes the summaries.
        room: tokens the history (summary included) may take in the model's request.
        counter: the token counter (:func:`token_counter`).
        budget: tokens one request may hold; a summary request is kept within it.
    """

    def __init__(self, model: BaseChatModel, room: int, counter: TokenCounter, budget: int):
        self.room = max(room, 1)
        self.counter = counter
        self._middleware = PlainSummarization(model, **summarisation_options(self.room, counter, budget))

    async def condense(self, summary: str | None, messages: Sequence[BaseMessage]) -> Condensed:
        """``summary`` plus ``messages`` (oldest first, each with an ``id``) within :attr:`room`: unchanged when they
        fit, else the oldest folded into a new summary, in as many model calls as the backlog needs (each call
        carries at most one room of messages). Raises what the model raises (the caller decides)."""
        rest = list(messages)
        changed = False
        while rest and self.counter([*summary_messages(summary), *rest]) > self.room:
            head = summary_messages(summary)
            # The shortest prefix over the room: the middleware's trigger fires, and the request stays small.
            end = 1
            while end < len(rest) and self.counter([*head, *rest[:end]]) <= self.room:
                end += 1
            # The middleware's state is typed with the concrete message classes; these are of them, as BaseMessage.
            state: Any = {"messages": [*head, *rest[:end]]}
            update = await self._middleware.abefore_model(state, None)  # type: ignore[arg-type]
            if update is None:
                break
            written, *kept = update["messages"][1:]  # [RemoveMessage(all), summary, *kept]
            new_summary = str(written.content).removeprefix(SUMMARY_PREFIX).strip()
            if len(kept) >= end:  # nothing folded: stop rather than loop
                break
            summary, rest, changed = new_summary, [*kept, *rest[end:]], True
        return Condensed(summary, rest, changed)
