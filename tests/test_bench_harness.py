"""`make bench` is not part of `make test`, so its harness can rot unseen (2026-12-03: its tracing phase patched
``service.web.routes.describe_caller`` after the chat routes had moved to ``service.web.chat_routes``, and the
whole run stopped there). These check what the harness reaches into in the service."""

from __future__ import annotations

import importlib

import service.chat.retrieval_path as retrieval
import service.tools.registry as registry
import service.web.chat_routes as chat_routes
from tests.bench.tracing import site_cost_us, tracing_absent
from tests.support.nodered import REPO


def test_the_tracing_phase_replaces_the_call_sites_the_chat_route_uses_and_puts_them_back():
    sites = (registry.tool_span, retrieval.search_span, chat_routes.describe_caller)
    with tracing_absent():
        assert chat_routes.describe_caller is not sites[2] and registry.tool_span is not sites[0]
        assert retrieval.search_span is not sites[1]
    assert (registry.tool_span, retrieval.search_span, chat_routes.describe_caller) == sites
    assert site_cost_us(repeat=10) > 0


def test_every_bench_module_imports():
    # A module of the harness that no longer imports (a renamed service module) would stop `make bench` midway.
    modules = sorted(path.stem for path in (REPO / "tests" / "bench").glob("*.py") if path.stem != "__init__")
    assert "run" in modules and "tracing" in modules
    for name in modules:
        importlib.import_module(f"tests.bench.{name}")
