"""Small machines first (issue 33): a service started with the default settings (SQLite, one provider, no tracing,
no embedding model) does not load the optional parts: the other providers' SDKs, PostgreSQL's driver and
checkpointer, the tracing SDK's exporter, numpy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import TEST_API_KEY
from tests.support.nodered import REPO, free_port

# The service's start in a fresh interpreter: the app with its cleanup contexts started (memory database, MCP child,
# knowledge index, the configured provider's package imported in the background by service.llm.providers.preload),
# then the names of the loaded modules. langchain_openai being among them shows the start got that far.
START = """
import asyncio, json, sys
from aiohttp import web
from service.settings import Settings
from service.web.app import create_app
from service.web.keys import CHAT_STACK

async def main():
    app = create_app(Settings.from_env())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    # Until the warm-up (the chat stack, then the provider's package) is done, at most 4 minutes on a loaded machine.
    # Not until the package's name is in sys.modules (it is from the start of its import): an interpreter that ends
    # while its daemon thread still imports can abort (SIGABRT, seen in a loaded CI run).
    await asyncio.wait_for(app[CHAT_STACK].imported(), 240)
    loaded = sorted(sys.modules)
    await runner.cleanup()
    print(json.dumps(loaded))

asyncio.run(main())
"""

# Imported only when configured: AI_PROVIDER (and an ai-config node's provider), DATABASE_URL, OTEL_* variables,
# AI_SIDEBAR_EMBEDDING_MODEL.
OPTIONAL = ("langchain_anthropic", "anthropic", "langchain_google_genai", "google.genai", "langchain_deepseek",
            "psycopg", "psycopg_pool", "langgraph.checkpoint.postgres", "opentelemetry.exporter", "numpy",
            "grandalf", "pypdf")


def default_env(**extra: str) -> dict[str, str]:
    """This process's environment without what loads optional parts (OTEL_* variables, DATABASE_URL, an embedding
    model), the OpenAI provider configured with the test key, and ``extra``."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("OTEL_") and key not in ("DATABASE_URL", "AI_SIDEBAR_EMBEDDING_MODEL")}
    return {**env, "AI_PROVIDER": "openai", "OPENAI_API_KEY": TEST_API_KEY, **extra}


def run_start(script: str, env: dict[str, str]) -> dict | list:
    """Run ``script`` in a fresh interpreter in the repository (at most 5 minutes: a loaded machine's start), assert
    it ended well and return the JSON it printed last."""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_default_start_loads_the_configured_provider_and_none_of_the_optional_parts(nodered, model_server,
                                                                                        tmp_path):
    loaded = run_start(START, default_env(OPENAI_BASE_URL=model_server.base_url, NODE_RED_URL=nodered.url,
                                          MEMORY_DB_PATH=str(tmp_path / "memory.db")))
    assert "langchain_openai.chat_models" in loaded
    assert [m for m in loaded if any(m == name or m.startswith(name + ".") for name in OPTIONAL)] == []


def test_an_embedding_model_without_the_embeddings_extra_stops_the_start_and_names_the_extra(tmp_path):
    # numpy is the extra "embeddings": an interpreter where it cannot be imported stands for an install without it.
    script = "import sys; sys.modules['numpy'] = None; from service.__main__ import main; main()"
    env = {**os.environ, "AI_SIDEBAR_EMBEDDING_MODEL": "text-embedding-3-small", "OPENAI_API_KEY": TEST_API_KEY,
           "AI_SIDEBAR_PORT": str(free_port()), "MEMORY_DB_PATH": str(tmp_path / "memory.db")}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "AI_SIDEBAR_EMBEDDING_MODEL" in done.stderr
    assert "pip install 'node-red-ai-sidebar[embeddings]'" in done.stderr


# The start in a fresh interpreter, noting which thread first imports each package of the chat stack (a finder on
# sys.meta_path that finds nothing: importlib asks it first, then the others). The start itself imports none of them
# (issue 33: cold start); the warm-up's worker thread (service.web.stack) does, while the service answers.
NOTED_START = """
import asyncio, json, sys, threading
import aiohttp
from aiohttp import web

WATCHED = {"langchain", "langchain_core", "langgraph", "langsmith", "mcp", "openai", "langchain_openai"}
importers = {}

class NoteImporter:
    def find_spec(self, name, path=None, target=None):
        if name in WATCHED and name not in importers:
            importers[name] = threading.current_thread().name
        return None

sys.meta_path.insert(0, NoteImporter())

from service.settings import Settings
from service.web.app import create_app

async def main():
    runner = web.AppRunner(create_app(Settings.from_env()))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = "http://127.0.0.1:%d" % runner.addresses[0][1]
    async with aiohttp.ClientSession() as http:
        async with http.get(base + "/healthz") as answer:
            first = await answer.json()
        async with http.get(base + "/ai-sidebar/memory-stats") as answer:
            memory_status = answer.status  # a route without a model, answered at once
        for _ in range(24000):  # until the warm-up is done (at most 4 minutes on a loaded machine)
            async with http.get(base + "/healthz") as answer:
                last = await answer.json()
            if last["chat"] == "ready":
                break
            await asyncio.sleep(0.01)
    at_ready = sorted(sys.modules)
    await runner.cleanup()
    print(json.dumps({"first": first, "last": last, "memory_status": memory_status, "at_ready": at_ready,
                      "importers": importers}))

asyncio.run(main())
"""


def test_the_service_answers_healthz_before_it_imports_the_chat_stack_then_warms_it_in_a_thread(nodered, tmp_path):
    seen = run_start(NOTED_START, default_env(NODE_RED_URL=nodered.url, MEMORY_DB_PATH=str(tmp_path / "memory.db")))
    assert seen["first"]["status"] == "ok" and seen["first"]["chat"] in ("warming", "ready"), seen["first"]
    assert seen["memory_status"] == 200
    # No package of the chat stack was imported on the event loop's thread: an eager `import langchain_core` at the
    # top of a module the start imports (service.web.app, the routes, the registry, ...) fails here.
    assert seen["importers"] and "MainThread" not in seen["importers"].values(), seen["importers"]
    assert seen["last"]["chat"] == "ready", seen["last"]
    assert {"service.web.chat_routes", "langgraph.graph", "mcp.client.session",
            "langchain_openai.chat_models"} <= set(seen["at_ready"])


# The start in a fresh interpreter with the warm-up's worker held at the beginning of its import (a finder that waits
# on the chat routes' module in that thread), and the MCP grants asked for meanwhile: the route opens the MCP
# server's sign-in database, which imports the MCP SDK the worker imports too. Two threads importing one package at
# once can meet it half-initialised (an ImportError, seen in a loaded CI run: "cannot import name
# 'StdioServerParameters' from partially initialized module 'mcp.client.stdio'").
GRANTS_WHILE_WARMING = """
import asyncio, json, sys, threading
import aiohttp
from aiohttp import web

importers = {}
release = threading.Event()

class HoldTheWarmUp:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" and name not in importers:
            importers[name] = threading.current_thread().name
        if name == "service.web.chat_routes" and threading.current_thread().name == "chat-stack-import":
            release.wait(240)
        return None

sys.meta_path.insert(0, HoldTheWarmUp())

from service.settings import Settings
from service.web.app import create_app

async def main():
    runner = web.AppRunner(create_app(Settings.from_env()))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    base = "http://127.0.0.1:%d" % runner.addresses[0][1]
    async with aiohttp.ClientSession() as http:
        async with http.get(base + "/healthz") as answer:
            health = await answer.json()
        grants = asyncio.ensure_future(http.get(base + "/ai-sidebar/mcp-grants"))
        # Half a second for the route to go ahead on its own (it must not: it waits for the warm-up), then the
        # warm-up goes on.
        done, _ = await asyncio.wait({grants}, timeout=0.5)
        release.set()
        async with await grants as answer:
            status, body = answer.status, await answer.json()
        # The warm-up done before the end: an interpreter that ends while its daemon thread imports can abort.
        for _ in range(24000):  # at most 4 minutes on a loaded machine
            async with http.get(base + "/healthz") as answer:
                if (await answer.json())["chat"] == "ready":
                    break
            await asyncio.sleep(0.01)
    await runner.cleanup()
    print(json.dumps({"health": health, "answeredWhileHeld": bool(done), "status": status, "body": body,
                      "importers": importers}))

asyncio.run(main())
"""


def test_the_mcp_grants_asked_for_while_the_chat_stack_warms_wait_for_its_import_of_the_mcp_sdk(nodered, tmp_path):
    seen = run_start(GRANTS_WHILE_WARMING, default_env(NODE_RED_URL=nodered.url,
                                                       MEMORY_DB_PATH=str(tmp_path / "memory.db"),
                                                       AI_SIDEBAR_MCP_AUTH_DB=str(tmp_path / "auth.db")))
    assert seen["health"]["chat"] == "warming", seen["health"]
    assert not seen["answeredWhileHeld"]
    assert seen["status"] == 200 and seen["body"] == {"enabled": True, "grants": []}, seen
    assert seen["importers"] == {"mcp": "chat-stack-import"}, seen["importers"]


# The start in a fresh interpreter, stopped while the warm-up's worker is held in its import (as GRANTS_WHILE_WARMING
# holds it): the stop waits for the import to end (ChatStack.close) instead of ending the interpreter under it,
# which can abort it (SIGABRT at finalisation, seen in a loaded CI run).
STOP_WHILE_WARMING = GRANTS_WHILE_WARMING.split("async def main():")[0] + """
async def main():
    runner = web.AppRunner(create_app(Settings.from_env()))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    stopping = asyncio.ensure_future(runner.cleanup())
    done, _ = await asyncio.wait({stopping}, timeout=0.5)  # the stop must not end on its own while held
    release.set()
    await stopping
    print(json.dumps({"stoppedWhileHeld": bool(done), "imported": "service.web.chat_routes" in sys.modules}))

asyncio.run(main())
"""


def test_a_service_stopped_while_it_warms_up_waits_for_the_import_and_exits_cleanly(nodered, tmp_path):
    seen = run_start(STOP_WHILE_WARMING, default_env(NODE_RED_URL=nodered.url,
                                                     MEMORY_DB_PATH=str(tmp_path / "memory.db")))
    assert seen == {"stoppedWhileHeld": False, "imported": True}
