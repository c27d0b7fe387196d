"""The import structure the design fixes: the MCP server loads only the Node-RED core and the knowledge package
(which itself depends only on the core), the core imports nothing else of the service, and no two of the
service's modules import each other in a circle (module-level imports; those under ``if TYPE_CHECKING:`` and
inside functions run later, so they cannot make a circle at import time)."""

from __future__ import annotations

import ast
import graphlib
import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.support.nodered import REPO


def loaded_service_modules(module: str) -> list[str]:
    """``service`` modules present in ``sys.modules`` after ``import <module>`` in a fresh interpreter."""
    script = (f"import json, sys, {module}\n"
              "print(json.dumps(sorted(m for m in sys.modules if m == 'service' or m.startswith('service.'))))")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


MCP_PACKAGES = ("service.nodered", "service.knowledge")


def outside_the_core(modules: list[str]) -> list[str]:
    return [m for m in modules if m != "service" and not any(m == p or m.startswith(p + ".") for p in MCP_PACKAGES)]


@pytest.mark.parametrize("module", [
    "mcp_server",
    "mcp_server.server",
    "mcp_server.__main__",
])
def test_the_mcp_server_loads_only_the_node_red_core_and_the_knowledge(module):
    loaded = loaded_service_modules(module)
    assert "service.nodered.tools" in loaded or module == "mcp_server"
    assert "service.knowledge.tools" in loaded or module == "mcp_server"
    assert outside_the_core(loaded) == []


def module_level_graph() -> dict[str, set[str]]:
    """``service`` and ``mcp_server`` modules → the modules of both they import at module level (grimp finds the
    imports; an import counts when one of its lines is a statement of the module's body, not of a function)."""
    graph = grimp.build_graph("service", "mcp_server", exclude_type_checking_imports=True, cache_dir=None)
    edges: dict[str, set[str]] = {}
    for importer in graph.modules:
        top_lines = _module_level_import_lines(importer)
        edges[importer] = {imported for imported in graph.find_modules_directly_imported_by(importer)
                           if any(detail["line_number"] in top_lines
                                  for detail in graph.get_import_details(importer=importer, imported=imported))}
    return edges


def _module_level_import_lines(module: str) -> set[int]:
    path = REPO / Path(*module.split("."))
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(source.read_text())
    lines: set[int] = set()
    pending = list(tree.body)
    while pending:  # module body, including top-level if/try blocks (TYPE_CHECKING ones grimp already left out)
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, (ast.If, ast.Try)):
            pending += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                        *(s for handler in getattr(node, "handlers", []) for s in handler.body)]
    return lines


def test_the_node_red_core_imports_nothing_else_of_the_service():
    graph = grimp.build_graph("service", cache_dir=None)
    core = {m for m in graph.modules if m == "service.nodered" or m.startswith("service.nodered.")}
    reaches = {imported for module in core for imported in graph.find_modules_directly_imported_by(module)}
    assert sorted(reaches - core) == []


def test_the_knowledge_package_imports_only_the_node_red_core():
    graph = grimp.build_graph("service", cache_dir=None)
    knowledge = {m for m in graph.modules if m == "service.knowledge" or m.startswith("service.knowledge.")}
    reaches = {imported for module in knowledge for imported in graph.find_modules_directly_imported_by(module)}
    assert sorted(m for m in reaches - knowledge if m != "service.nodered" and not m.startswith("service.nodered.")
                  ) == []


def test_no_import_cycle_among_the_service_modules():
    graph = module_level_graph()
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail(f"import cycle: {' -> '.join(err.args[1])}")
    assert "service.web.app" in order and "service.nodered.tooling" in order


def test_the_graph_counts_module_level_imports_only():
    """What the cycle check sees: the agent path imports agent at module level; agent names the turn's ChatResult
    only for type checkers, and the memory store reads the flow slicer inside a function: neither is an edge (the
    import-linter contracts of ``make lint`` count those too: tests/test_layering.py)."""
    graph = module_level_graph()
    assert "service.chat.agent" in graph["service.chat.agent_path"]
    assert "service.chat.context" not in graph["service.chat.agent"]
    assert "service.nodered.flows" not in graph["service.memory.store"]
