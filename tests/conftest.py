"""Shared fixtures: a real Node-RED, the scripted model server, the service app and the service as a process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from aiohttp import web
from pydantic import SecretStr

from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import SETTINGS
from tests.support.health import START_TIMEOUT, stop_process, wait_healthy
from tests.support.model_server import ScriptedModelServer
from tests.support.nodered import (
    NODE_BINARY,
    NODERED_HOME,
    NODERED_VERSION,
    REPO,
    NodeRed,
    example_flows,
    free_port,
    hash_password,
    project_flows,
)
from tests.support.postgres import PostgresServer, postgres_bin

# Fixtures: a Node-RED of a module's own, the service's settings against it and a test client of that service.
from tests.support.writable import service, writable_nodered, write_settings  # noqa: F401

# Every service a test starts as a process runs one worker, as under `make run`, so that per-process limits are the
# tests' limits; a test that wants several sets AI_SIDEBAR_WORKERS in the environment it passes (tests/test_workers.py).
os.environ.setdefault("AI_SIDEBAR_WORKERS", "1")


def pytest_report_header(config) -> str:
    """Which Node-RED the run tests (``make test`` runs the suite once per supported version)."""
    node = subprocess.run([NODE_BINARY, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return f"Node-RED {NODERED_VERSION} ({NODERED_HOME}) on Node.js {node} ({NODE_BINARY})"


# Fixtures that start (or stand for) a Node-RED: by convention every such fixture has "nodered" in its name; the two
# below start one through another fixture. A test using one of them, directly or through its fixtures, is marked
# `nodered`; `make test` runs the whole suite on Node-RED 4.1 and only the `nodered` tests again on 5.x (the others
# cannot see which Node-RED is installed, so a second run would repeat the same check).
NODE_RED_FIXTURES = ("service_process", "auth_stack")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "nodered: the test talks to a real Node-RED (run on every supported version)")
    config.addinivalue_line("markers", "browser: the test drives the editor in Chromium (tests/test_browser_*.py)")
    config.addinivalue_line("markers", "postgres: the test starts (or shares) a real PostgreSQL server")
    config.addinivalue_line("markers", "knowledge_refresh: the test's app may refresh the knowledge index in the "
                                       "background (see the aiohttp_client fixture)")


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every test whose fixtures start a Node-RED with ``nodered`` (see :data:`NODE_RED_FIXTURES`), the
    tests of ``tests/test_browser_*.py`` with ``browser`` (``make test`` runs them as passes of their own), and
    every test with a fixture named ``postgres…`` with ``postgres`` (the PostgreSQL case of
    :data:`MEMORY_BACKENDS` carries the mark itself)."""
    for item in items:
        if item.path.name.startswith("test_browser_"):
            item.add_marker(pytest.mark.browser)
        names = getattr(item, "fixturenames", ())
        if any("nodered" in name or name in NODE_RED_FIXTURES for name in names):
            item.add_marker(pytest.mark.nodered)
        if any(name.startswith("postgres") for name in names):
            item.add_marker(pytest.mark.postgres)


TEST_API_KEY = "sk-test-key-for-scripted-server-0001"
SERVICE_TOKEN = "test-service-token-0123456789"
# The service token of the apps tests build: without one the service believes no identity header (issue 29).
SERVICE_SECRET = SecretStr(SERVICE_TOKEN)


@pytest.fixture(scope="session")
def model_server():
    server = ScriptedModelServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def model(model_server):
    """The scripted model server, emptied for this test."""
    yield from model_server.emptied()


@pytest.fixture(scope="session")
def service_port() -> int:
    return free_port()


@pytest.fixture(scope="session")
def nodered(tmp_path_factory, service_port):
    """Node-RED from npm (4.1 or 5.x, see tests/support/nodered.py) with example flows and the palette package,
    pointed at the service port."""
    instance = NodeRed(
        userdir=tmp_path_factory.mktemp("nodered"), port=free_port(),
        flows=example_flows() + project_flows(),
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN})
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def settings(nodered, model, tmp_path) -> Settings:
    """The service's settings for in-process tests; the knowledge index starts empty and is refreshed only where a
    test asks (``knowledge_refresh=0``), so what a chat retrieves never depends on a background timer."""
    return Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=nodered.url), openai_base_url=model.base_url,
                    openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False,
                    knowledge_refresh=0)


@pytest.fixture
def aiohttp_client(aiohttp_client, request):
    """pytest-aiohttp's ``aiohttp_client``, sending ``Authorization: Bearer <AI_SIDEBAR_TOKEN>`` by default to an
    app built with a token, as the plugin does; a test that passes ``headers=`` of its own (e.g. to leave the token
    out) sends those instead.

    An app whose knowledge index would refresh in the background (``knowledge_refresh`` above 0) fails the test
    unless it is marked ``knowledge_refresh``: the background build races the chat's routing (what a question
    retrieves then depends on which comes first; stop 48's CI failure). Tests build the index where they ask
    (``app[KNOWLEDGE].refresher.refresh()``)."""
    async def make(app, *args, **kwargs):
        if isinstance(app, web.Application) and SETTINGS in app:
            if app[SETTINGS].knowledge_refresh > 0 and request.node.get_closest_marker("knowledge_refresh") is None:
                pytest.fail("the app refreshes the knowledge index in the background (knowledge_refresh "
                            f"{app[SETTINGS].knowledge_refresh:g} s): pass knowledge_refresh=0 and refresh where the "
                            "test needs it, or mark the test knowledge_refresh")
            if app[SETTINGS].token is not None:
                kwargs.setdefault("headers", {"Authorization": f"Bearer {app[SETTINGS].token.get_secret_value()}"})
        return await aiohttp_client(app, *args, **kwargs)
    return make


@pytest.fixture
async def client(aiohttp_client, settings):
    """An aiohttp test client for the service app built from ``settings``."""
    return await aiohttp_client(create_app(settings))


@pytest.fixture(scope="session")
def service_process(nodered, model_server, service_port, tmp_path_factory):
    """The service started as its console script would be, on ``service_port`` behind ``SERVICE_TOKEN``."""
    log_path = tmp_path_factory.mktemp("service") / "service.log"
    env = {**os.environ, "AI_SIDEBAR_PORT": str(service_port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN,
           "NODE_RED_URL": nodered.url, "OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": TEST_API_KEY,
           "MEMORY_DB_PATH": str(log_path.parent / "memory.db"), "MCP_TOOLS_ENABLED": "false",
           "AI_SIDEBAR_WORKERS": "1",  # as make run: one process, so per-process limits are the tests' limits
           # The MCP servers the ai-config nodes of the tests name run on loopback, which the operator must allow.
           "AI_SIDEBAR_MCP_ALLOWED_HOSTS": "127.0.0.1"}
    with log_path.open("ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=REPO)
    try:
        wait_healthy(f"http://127.0.0.1:{service_port}/healthz", process, START_TIMEOUT, 0.2)
    except RuntimeError as err:
        process.kill()
        raise RuntimeError(f"service did not start ({err}):\n{log_path.read_text()}") from None
    process.log_path = log_path
    process.service_port = service_port
    yield process
    stop_process(process)


ADMIN_USER, ADMIN_PASSWORD = "admin", "admin-password-for-tests"


@pytest.fixture(scope="session")
def nodered_without_diagnostics(tmp_path_factory):
    """Node-RED with ``diagnostics.enabled: false`` and one example tab."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-nodiag"), port=free_port(), diagnostics=False,
                       flows=example_flows(("common/inject/02 - Trigger a flow at regular intervals.json",)),
                       with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(scope="session")
def nodered_with_auth(tmp_path_factory):
    """Node-RED with ``adminAuth`` (user ``admin``, permissions ``*``) and ``httpAdminRoot: "/admin"``."""
    instance = NodeRed(
        userdir=tmp_path_factory.mktemp("nodered-auth"), port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials",
                    "users": [{"username": ADMIN_USER, "password": hash_password(ADMIN_PASSWORD), "permissions": "*"}]},
        flows=example_flows(), with_palette=False)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL (Debian's ``postgresql`` package) for the session, see tests/support/postgres.py. Missing
    binaries fail the test, or skip it with ``POSTGRES_TESTS=optional``."""
    bindir = postgres_bin()
    if bindir is None:
        reason = ("PostgreSQL is not installed (/usr/lib/postgresql/<version>/bin/initdb; `make test` installs the "
                  "postgresql package)")
        if os.environ.get("POSTGRES_TESTS") == "optional":
            pytest.skip(reason + "; skipped: POSTGRES_TESTS=optional")
        pytest.fail(reason + "; set POSTGRES_TESTS=optional to skip these tests")
    server = PostgresServer(bindir)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URL of a new empty database of its own for this test."""
    return postgres_server.new_database()


# The memory's databases: a test using ``memory_backend`` (or the fixtures below) runs once on each.
MEMORY_BACKENDS = [pytest.param("sqlite", id="sqlite"),
                   pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=MEMORY_BACKENDS)
def memory_backend(request) -> str:
    return request.param


@pytest.fixture
def memory_target(memory_backend, request, tmp_path):
    """What ``MemoryStore.open`` takes for this backend: an SQLite file, or a new PostgreSQL database's URL."""
    if memory_backend == "sqlite":
        return tmp_path / "memory.db"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def backend_settings(settings, memory_backend, request) -> Settings:
    """:func:`settings` with the memory on this backend (PostgreSQL: ``DATABASE_URL`` of a new database)."""
    if memory_backend == "sqlite":
        return settings
    return settings.model_copy(update={"database_url": SecretStr(request.getfixturevalue("postgres_url"))})
