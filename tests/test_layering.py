"""The layering of ``service/`` (ARCHITECTURE.md, "Import direction"): import-linter's contracts in pyproject.toml,
which ``make lint`` runs, hold for the service and fail on a throwaway package that breaks them.

Every import counts for these contracts, also one inside a function or under ``if TYPE_CHECKING:``; the throwaway
package's faults are written that way, so the test shows the check sees them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.nodered import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def contracts() -> dict:
    """``[tool.importlinter]`` of pyproject.toml (root packages and contracts)."""
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def lint_imports(cwd: Path, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` run in ``cwd`` (its packages importable from there), with ``config`` if given."""
    args = [str(LINT_IMPORTS), "--no-cache", *(["--config", str(config)] if config else [])]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(cwd)})


def test_the_service_keeps_its_contracts():
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return f'"{value}"'


def toy(tmp_path: Path) -> Path:
    """A throwaway package ``toy`` laid out like ``service`` (one empty module or package per layer), and the
    service's own contracts for it (``service`` renamed; the MCP server's contract left out: ``toy`` has none)."""
    config = contracts()
    layered = next(c for c in config["contracts"] if c["id"] == "layers")
    for layer in layered["layers"]:
        for name in (part.strip() for part in layer.replace(":", "|").split("|")):
            if name in ("web", "assist", "chat", "tools", "knowledge", "memory", "llm", "tracing", "nodered"):
                (tmp_path / "toy" / name).mkdir(parents=True)
                (tmp_path / "toy" / name / "__init__.py").write_text("")
            else:
                (tmp_path / "toy" / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / "toy" / f"{name}.py").write_text("")
    (tmp_path / "toy" / "__init__.py").write_text("")
    lines = ["[tool.importlinter]", 'root_packages = ["toy"]', ""]
    for contract in config["contracts"]:
        if contract["id"] == "mcp-server":
            continue
        lines.append("[[tool.importlinter.contracts]]")
        for key, value in contract.items():
            if isinstance(value, list):
                value = [item.replace("service", "toy") for item in value]
            elif isinstance(value, str):
                value = value.replace("service", "toy")
            lines.append(f"{key} = {_toml(value)}")
        lines.append("")
    (tmp_path / "pyproject.toml").write_text("\n".join(lines))
    return tmp_path


def test_a_package_laid_out_like_the_service_keeps_the_contracts(tmp_path):
    root = toy(tmp_path)
    (root / "toy" / "chat" / "steps.py").write_text("from toy.tools import registry\n")
    (root / "toy" / "tools" / "registry.py").write_text("import toy.nodered\n")
    done = lint_imports(root, root / "pyproject.toml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path):
    root = toy(tmp_path)
    (root / "toy" / "errors.py").write_text("def catalog():\n    from toy.web import keys\n    return keys\n")
    (root / "toy" / "web" / "keys.py").write_text("")
    done = lint_imports(root, root / "pyproject.toml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "toy.errors is not allowed to import toy.web" in done.stdout


def test_an_upward_import_from_the_core_breaks_its_contract(tmp_path):
    root = toy(tmp_path)
    (root / "toy" / "nodered" / "client.py").write_text("import toy.settings\n")
    done = lint_imports(root, root / "pyproject.toml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "toy.nodered.client -> toy.settings" in done.stdout


@pytest.mark.parametrize("guard", ["TYPE_CHECKING", "function"])
def test_a_cycle_between_two_modules_of_a_package_breaks_the_acyclic_contract(tmp_path, guard):
    """The chat's old circle in small: the orchestrator imports a path, the path imports the orchestrator back
    for type checkers only, or inside a function."""
    root = toy(tmp_path)
    (root / "toy" / "chat" / "pipeline.py").write_text("from toy.chat import agent\n")
    back = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.chat.pipeline import Result\n"
            if guard == "TYPE_CHECKING" else "def run():\n    from toy.chat import pipeline\n    return pipeline\n")
    (root / "toy" / "chat" / "agent.py").write_text(back)
    done = lint_imports(root, root / "pyproject.toml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No cycles are allowed in toy.chat" in done.stdout


MAX_MODULE_LINES = 500  # issue 32: one job per module; a longer one is split by job before it grows further


def test_no_module_of_the_service_or_the_mcp_server_passes_500_lines():
    lengths = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
               for package in ("service", "mcp_server") for path in (REPO / package).rglob("*.py")}
    assert len(lengths) > 100
    assert {path: n for path, n in lengths.items() if n > MAX_MODULE_LINES} == {}
