"""The Python distribution outside the checkout, and what `make test-python` needs.

A wheel built from the project (by the palette package's prepack script, which bundles it for npm) and installed
into a fresh virtual environment must start ``ai-sidebar-service`` from an unrelated folder: the scenario locales
and the example flows ship inside it. service/Dockerfile is read with dockerfile-parse (no Docker daemon here): it
builds that same wheel and runs it as a user; its health check runs for real against the installed service.
`make test-python` must not install Chromium from apt; `make test` still does.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from service.settings import Settings
from tests.support.health import START_TIMEOUT, stop_process
from tests.support.nodered import REPO, free_port

BUILD_WHEEL = REPO / "node-red-contrib-ai-sidebar" / "scripts" / "build-wheel.js"
DOCKERFILE = REPO / "service" / "Dockerfile"


def _stages() -> list[list[dict]]:
    """service/Dockerfile's instructions (dockerfile-parse's ``structure``), one list per ``FROM`` stage."""
    stages: list[list[dict]] = []
    for instruction in DockerfileParser(path=str(DOCKERFILE)).structure:
        if instruction["instruction"] == "FROM":
            stages.append([])
        if stages and instruction["instruction"] != "COMMENT":
            stages[-1].append(instruction)
    return stages


def _healthcheck_command() -> list[str]:
    """The exec-form command of the image's HEALTHCHECK."""
    (check,) = [i["value"] for i in _stages()[-1] if i["instruction"] == "HEALTHCHECK"]
    return json.loads(check[check.index("CMD") + 3:])


def test_every_python_package_is_listed_for_the_wheel():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(REPO).parts)
             for top in ("service", "mcp_server") for init in (REPO / top).rglob("__init__.py")}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"


async def _listed_tools(command: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    """The tool names an MCP stdio server started as ``command`` lists to a real SDK client."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return {tool.name for tool in (await session.list_tools()).tools}


def _get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError):
        return None


def test_a_wheel_installed_outside_the_checkout_starts_and_serves_scenarios_in_two_languages(tmp_path):
    # The script `npm pack` runs (prepack) to bundle the wheel into the palette package: the wheel tested here is the
    # one a palette user gets. pip's own isolated build (setuptools from pip's cache or PyPI), as `pip install .` does.
    subprocess.run(["node", str(BUILD_WHEEL), str(tmp_path / "dist")], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "PYTHON": sys.executable})
    wheel = next((tmp_path / "dist").glob("node_red_ai_sidebar-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    data_files = {f"service/{path.relative_to(REPO).as_posix()}" for top in ("locales", "examples")
                  for path in (REPO / top).rglob("*") if path.is_file()}
    assert data_files and data_files <= shipped, sorted(data_files - shipped)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, timeout=120)
    # The dependencies come from this test's own environment (no download); added only after the install, so pip
    # never sees the checkout's editable install there.
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip())
    (target / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "AI_SIDEBAR_TOKEN", "AI_SIDEBAR_LOCALES_DIR", "AI_SIDEBAR_CONFIG")}
    located = subprocess.run([str(python), "-c", "import service, mcp_server; from service.settings import Settings; "
                              "s = Settings(); print(service.__file__); print(mcp_server.__file__); "
                              "print(s.locales_dir); print(s.templates_path)"],
                             check=True, capture_output=True, text=True, cwd=elsewhere, env=env).stdout.split()
    assert all(Path(path).is_relative_to(target) and Path(path).exists() for path in located), located

    port = free_port()
    env.update(AI_SIDEBAR_PORT=str(port), MEMORY_DB_PATH=str(tmp_path / "memory.db"), MCP_TOOLS_ENABLED="false",
               NODE_RED_URL=f"http://127.0.0.1:{free_port()}")
    log = tmp_path / "service.log"
    with log.open("wb") as output:
        process = subprocess.Popen([str(venv / "bin" / "ai-sidebar-service")], cwd=elsewhere, env=env,
                                   stdout=output, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while (health := _get_json(f"{base}/healthz")) is None:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        assert health["status"] == "ok"
        english = _get_json(f"{base}/ai-sidebar/scenarios?lang=en-US")
        german = _get_json(f"{base}/ai-sidebar/scenarios?lang=de")
        assert english["language"] == "en-US" and german["language"] == "de"
        assert set(english["scenarios"]) == set(german["scenarios"]) and english["scenarios"]
        assert [s["name"] for s in english["scenarios"].values()] != [s["name"] for s in german["scenarios"].values()]
        # The example tabs were seeded as shared flow templates from the packaged examples/flows.json.
        templates = _get_json(f"{base}/ai-sidebar/templates")
        assert templates["templates"], log.read_text(errors="replace")
        # The container's health check, run by the Python the wheel is installed in, as the image runs it.
        healthcheck = [str(python), *_healthcheck_command()[1:]]
        assert subprocess.run(healthcheck, cwd=elsewhere, env=env, capture_output=True, timeout=30).returncode == 0
    finally:
        stop_process(process)
    assert subprocess.run(healthcheck, cwd=elsewhere, env=env, capture_output=True, timeout=30).returncode != 0
    # The same tools as the checkout's own MCP server lists.
    expected = asyncio.run(_listed_tools([sys.executable, "-m", "mcp_server"], REPO, env))
    assert expected and asyncio.run(_listed_tools([str(venv / "bin" / "nodered-mcp")], elsewhere, env)) == expected


def test_the_container_image_installs_the_wheel_and_runs_the_service_as_a_user_on_the_default_port():
    build, final = _stages()
    # The build stage copies exactly what the wheel is made of (the sources the palette's prepack copies), all of
    # which exist in the build context (the repository root).
    copied = [source for i in build if i["instruction"] == "COPY" for source in i["value"].split()[:-1]]
    assert copied == json.loads(re.search(r"const SOURCES = (\[.*?\]);", BUILD_WHEEL.read_text()).group(1))
    assert all((REPO / source).exists() for source in copied)
    assert [i["value"] for i in build if i["instruction"] == "RUN"] == [
        "pip wheel --no-deps --no-cache-dir --wheel-dir /wheels ."]
    # The run stage copies nothing from the context, only the built wheel, and installs it.
    assert [i["value"] for i in final if i["instruction"] == "COPY"] == ["--from=wheel /wheels /wheels"]
    # The built wheel with the extra "embeddings" (numpy): an image that set AI_SIDEBAR_EMBEDDING_MODEL keeps starting.
    assert any("wheel=$(ls /wheels/*.whl)" in i["value"] and 'pip install --no-cache-dir "${wheel}[embeddings]"'
               in i["value"] for i in final if i["instruction"] == "RUN")
    assert all(i["value"].startswith("python:") and i["value"].split()[0].endswith("-slim")
               for stage in (build, final) for i in stage if i["instruction"] == "FROM")

    (user,) = [i["value"] for i in final if i["instruction"] == "USER"]
    assert user.split(":")[0] not in ("root", "0")
    (command,) = [json.loads(i["value"]) for i in final if i["instruction"] == "CMD"]
    assert command == ["ai-sidebar-service"]
    assert command[0] in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]

    env = DockerfileParser(path=str(DOCKERFILE)).envs
    default_port = Settings.model_fields["port"].default
    assert [i["value"] for i in final if i["instruction"] == "EXPOSE"] == [str(default_port)]
    assert env["AI_SIDEBAR_PORT"] == str(default_port) and env["AI_SIDEBAR_HOST"] == "0.0.0.0"
    # The service refuses that bind without a token: the image must not carry one (it is given at `docker run`).
    assert "AI_SIDEBAR_TOKEN" not in env and "-e AI_SIDEBAR_TOKEN=" in DOCKERFILE.read_text()
    (volume,) = [i["value"] for i in final if i["instruction"] == "VOLUME"]
    assert Path(env["MEMORY_DB_PATH"]).parent == Path(volume)
    assert _healthcheck_command()[0] == "python" and "/healthz" in _healthcheck_command()[-1]


def _dry_run(target: str) -> str:
    """The commands `make <target>` would run, every prerequisite treated as out of date; nothing is run."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    return subprocess.run(["make", "--dry-run", "--always-make", target], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_make_test_python_needs_no_chromium_and_make_test_installs_it():
    assert "chromium" not in _dry_run("test-python")
    assert "BROWSER_TESTS=optional" in _dry_run("test-python")
    assert "apt-get install -y -qq chromium" in _dry_run("test")


def test_make_run_installs_neither_the_test_extra_nor_the_devdependencies_and_make_test_and_lint_add_them():
    # Issue 31/33: `make run` installed pytest, the linters, mocha, eslint and Node-RED's test helper (about 345 MB).
    run = _dry_run("run")
    assert "pip install --quiet -e .\n" in run and "[test]" not in run
    assert "npm install --omit=dev" in run and "cd node-red-contrib-ai-sidebar && npm install --no-audit" not in run
    for target in ("test", "lint"):
        commands = _dry_run(target)
        assert "pip install --quiet -e '.[test]'" in commands
        assert "cd node-red-contrib-ai-sidebar && npm install --no-audit" in commands


def test_browser_tests_skip_without_chromium_only_when_optional():
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
               "tests/test_browser_sidebar.py", "-k", "streams_the_answer_into_the_sidebar"]
    env = {**os.environ, "CHROMIUM": "/nonexistent/chromium"}
    optional = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                              env={**env, "BROWSER_TESTS": "optional"})
    assert optional.returncode == 0 and "1 skipped" in optional.stdout, optional.stdout
    assert "/nonexistent/chromium not installed: `make test-python` runs without a browser" in optional.stdout
    required = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in env.items() if k != "BROWSER_TESTS"})
    assert required.returncode == 1 and "`make test` installs Debian's chromium" in required.stdout, required.stdout
