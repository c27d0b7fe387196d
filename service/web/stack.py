"""What the service loads after it answers (issue 33: cold start): the chat stack and the approvals over it.

Importing LangChain, LangGraph, the MCP SDK and the modules of ``service.chat`` over them takes seconds of CPU on a
small machine (about 2 s of the 3.2 s the whole service took on the 2-core bench machine, ``python -X importtime``).
The process binds and answers ``/healthz``, the memory, knowledge, history and usage routes without them; the chat
stack is imported in a worker thread from the app's start on (:class:`ChatStack`), and a route that needs it waits
for that import (:meth:`ChatStack.handlers`) instead of importing on the event loop. A first chat arriving in the
first seconds then waits for the rest of the same import, never for a second one.

The worker thread holds the GIL while it runs module code, and gives it up every 5 ms (``sys.getswitchinterval``) to
the event loop's thread, so requests answered meanwhile take a few milliseconds longer, never seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.chat.approvals import Approvals

log = logging.getLogger(__name__)

# The modules a chat needs that a start does not: every route that answers with a model, plans or resumes a write
# imports its handlers from service.web.chat_routes, which imports the chat pipeline, approvals, resume and assist
# (LangChain, LangGraph); the MCP SDK's client, which the service's own MCP server and the user's servers use.
CHAT_STACK_MODULES = ("service.web.chat_routes", "mcp.client.session", "mcp.client.stdio",
                      "mcp.client.streamable_http")
# Seconds a stop waits for an import under way (ChatStack.close): about 2 s on a quiet 2-core machine, several times
# that on a loaded one.
CLOSE_WAIT = 20.0


class ChatStack:
    """The chat stack's modules, imported once in a worker thread.

    Args:
        modules: the modules to import, in order (:data:`CHAT_STACK_MODULES`).
        then: a module imported after them the same way and allowed to be missing (the configured provider's
            LangChain package, :data:`service.llm.providers.PROVIDER_PACKAGES`), or ``None``.
    """

    def __init__(self, modules: Iterable[str] = CHAT_STACK_MODULES, then: str | None = None):
        self.modules = tuple(modules)
        self.then = then
        self.seconds: float | None = None  # wall seconds the import took, once done
        self._task: asyncio.Future[None] | None = None
        self._followers: list[asyncio.Future[Any]] = []

    def follow(self, task: asyncio.Future[Any]) -> None:
        """Make :meth:`ready` also wait for ``task``, work that needs the stack and must be done before a chat
        (the approvals' opening); its failure is its own to log."""
        self._followers.append(task)

    def start(self) -> None:
        """Begin the import in a worker thread (again after a failed one; a second call while one runs does
        nothing). Needs a running event loop.

        The thread is a daemon: a service stopped while it imports exits without waiting for it (an executor's
        thread would be joined at the loop's end, and on a loaded machine the import outlasts the workers' stop
        grace, service/workers.py).
        """
        if self._task is not None:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._task = done

        def settle(error: BaseException | None) -> None:
            if not done.done():
                done.set_result(None) if error is None else done.set_exception(error)

        def run() -> None:
            error: BaseException | None = None
            try:
                self._import()
            except BaseException as err:  # handed to the loop: ImportError for ready(), anything else alike
                error = err
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                loop.call_soon_threadsafe(settle, error)

        threading.Thread(target=run, name="chat-stack-import", daemon=True).start()

    @property
    def warm(self) -> bool:
        """Whether the import is done (``/healthz``'s ``chat``: ``"ready"``, else ``"warming"``)."""
        return self._task is not None and self._task.done()

    async def imported(self) -> None:
        """Wait until the modules are imported (starting the import if nobody did).

        Raises:
            ImportError: a module of :attr:`modules` cannot be imported (a broken install): the request fails
                as it would have failed at start before issue 33, and the next one tries again.
        """
        self.start()
        assert self._task is not None
        try:
            await asyncio.shield(self._task)
        except ImportError:
            self._task = None
            raise

    async def ready(self) -> None:
        """Wait until the modules are imported (:meth:`imported`) and the work that :meth:`follow` named is done."""
        await self.imported()
        for task in self._followers:
            if not task.done():
                with contextlib.suppress(Exception):
                    await asyncio.shield(task)

    async def handlers(self) -> ModuleType:
        """The chat routes' handlers (:mod:`service.web.chat_routes`), once :meth:`ready` (at once after the first
        seconds of the service)."""
        await self.ready()
        return importlib.import_module("service.web.chat_routes")

    def _import(self) -> None:
        began = time.monotonic()
        for name in self.modules:
            importlib.import_module(name)
        if self.then is not None:
            with contextlib.suppress(ImportError):  # a missing package is the request's to report
                importlib.import_module(self.then)
        self.seconds = time.monotonic() - began
        log.info("chat stack imported in %.2f s", self.seconds)

    async def close(self, wait: float = CLOSE_WAIT) -> None:
        """Let an import under way finish, for at most ``wait`` seconds, then stop waiting for it (what it imported
        stays).

        A service stopped in its first seconds would otherwise end its interpreter while the daemon thread still
        imports, and CPython can abort then (SIGABRT at finalisation, seen in a loaded CI run); an import that
        outlasts ``wait`` (a hung file system) is left to the process's end as before.
        """
        task, self._task = self._task, None
        if task is None or task.done():
            return
        # TimeoutError, or the import's own failure: nobody waits for it now.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(task), wait)
        task.cancel()


@dataclass(eq=False)
class ApprovalSlot:
    """Where the app keeps its :class:`~service.chat.approvals.Approvals`: ``None`` until opened (once the chat stack
    is imported, before any chat: :meth:`ChatStack.follow`), and without a memory database (then write tools are
    not offered and nothing can write)."""

    approvals: Approvals | None = None


def after(stack: ChatStack, start: Callable[[], Coroutine[Any, Any, Any]]) -> asyncio.Task[Any]:
    """A task that runs ``start()`` once ``stack`` is imported (the MCP servers' starts: their first step would
    otherwise import the MCP SDK on the event loop; the approvals' opening)."""
    async def run() -> Any:
        await stack.imported()
        return await start()
    return asyncio.create_task(run())
