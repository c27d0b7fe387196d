"""Each figure of a bench run against the one the README's table of latest figures shows (issue 33: the service got
heavier and slower in a wave without anyone deciding it). A figure more than :data:`TOLERANCE` worse than the
README's is a regression, flagged in the printed report and in the results' ``baseline``.

The README's table (section "Benchmarks", the first Markdown table after "Latest figures") is read as it stands: a
row's first cell names the measure, its second the figures (``5.0 / 6.9 ms``: the numbers in order, words and units
ignored). :data:`FIGURES` says which number of which row is which figure of the results; a row the README no longer
has, or a figure the run did not produce (a phase skipped, a quick run without that level), is left out and listed.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOLERANCE = 0.20  # a figure this much worse than the README's (relative) is a regression

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Figure:
    """One number of a README row: the ``index``-th of its result cell, and where the run has it."""

    row: str  # the start of the row's first cell
    index: int
    name: str
    value: Callable[[dict[str, Any]], float | None]
    higher_is_better: bool = False


def _path(results: dict[str, Any], *keys: str | int) -> float | None:
    node: Any = results
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return None if node is None else float(node)


def _level(results: dict[str, Any], streams: int, *keys: str) -> float | None:
    for level in (results.get("concurrency") or {}).get("levels", []):
        if level.get("streams") == streams:
            return _path(level, *keys)
    return None


def _path_list(results: dict[str, Any], *keys: str) -> list[float] | None:
    node: Any = results
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, list) and node else None


def _median(values: list[float] | None) -> float | None:
    return None if values is None else float(statistics.median(values))


def _percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def _latency(path: str, key: str, quantile: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda results: _path(results, "latency", "paths", path, key, quantile)


FIGURES: tuple[Figure, ...] = (
    *(Figure(row, index, f"added TTFT {quantile}, {who}", _latency(f"{who}/chat", "added_ttft_ms", quantile))
      for row, who in (("added time to first token, service → model", "service"),
                       ("added time to first token, sidebar route", "sidebar"))
      for index, quantile in enumerate(("p50", "p99"))),
    # One row, "service / sidebar, p50": the service's number first.
    *(Figure("added relay delay per token", index, f"added relay per token p50, {who}",
             _latency(f"{who}/chat", "added_token_relay_ms", "p50"))
      for index, who in enumerate(("service", "sidebar"))),
    *(Figure("… p99 gap between tokens", index, f"{streams} streams: p99 gap between tokens",
             lambda results, streams=streams: _level(results, streams, "inter_token_gap_ms", "p99"))
      for index, streams in enumerate((50, 100, 200))),
    *(Figure("… service peak RSS", index, f"{streams} streams: service peak RSS",
             lambda results, streams=streams: _level(results, streams, "service_peak_rss_mb"))
      for index, streams in enumerate((50, 100, 200))),
    Figure("200 streams arriving at 100 per second", 0, "200 streams at 100/s: p99 gap between tokens",
           lambda results: _path(results, "concurrency", "paced", "inter_token_gap_ms", "p99")),
    Figure("200 streams arriving at 100 per second", 1, "200 streams at 100/s: p99 time to first token",
           lambda results: _path(results, "concurrency", "paced", "ttft_ms", "p99")),
    Figure("prompt tokens / raw pretty-printed JSON tokens", 0, "prompt / raw JSON tokens",
           lambda results: _percent(_path(results, "prompt_size", "prompt_ratio"))),
    Figure("prompt tokens / raw pretty-printed JSON tokens", 1, "flow block / raw JSON tokens",
           lambda results: _percent(_path(results, "prompt_size", "flow_ratio"))),
    Figure("memory search over", 0, "memory search p50",
           lambda results: _path(results, "memory_search", "search_ms", "p50")),
    Figure("memory search over", 1, "memory search p99",
           lambda results: _path(results, "memory_search", "search_ms", "p99")),
    Figure("knowledge retrieval", 0, "knowledge retrieval p50",
           lambda results: _path(results, "knowledge", "retrieval", "ms", "p50")),
    Figure("knowledge retrieval", 1, "knowledge retrieval p95",
           lambda results: _path(results, "knowledge", "retrieval", "ms", "p95")),
    Figure("labelled questions, right node's help in the top 3", 0, "right help in the top 3, FTS alone",
           lambda results: _percent(_path(results, "knowledge", "recall_at_3", "fts", "rate")),
           higher_is_better=True),
    Figure("labelled questions, right node's help in the top 3", 1, "right help in the top 3, among the chunks",
           lambda results: _percent(_path(results, "knowledge", "recall_at_3", "fts_at_retrieval_chunks", "rate")),
           higher_is_better=True),
    Figure("cold start to `/healthz`", 0, "cold start to /healthz",
           lambda results: _path(results, "cold_start", "mcp_on", "median_s")),
    Figure("service RSS, one worker, default settings", 0, "RSS idle, one worker",
           lambda results: _path(results, "footprint", "memory", "idle", "total_mb")),
    Figure("service RSS, one worker, default settings", 1, "RSS after 100 chats with tools, one worker",
           lambda results: _path(results, "footprint", "memory", "after_chats", "total_mb")),
    *(Figure("inline completion: added latency", index, f"completion added {quantile}, {path}",
             lambda results, path=path, quantile=quantile: _path(results, "completion", "paths", path, "added_ms",
                                                                   quantile))
      for index, (quantile, path) in enumerate((("p50", "service/complete"), ("p50", "sidebar/complete"),
                                                ("p99", "service/complete"), ("p99", "sidebar/complete")))),
    Figure("inline completion: added latency", 4, "completion model requests for 100 keystrokes",
           lambda results: _path(results, "completion", "typing", "modelRequests")),
    *(Figure("longest `/healthz` probe during a hostile", index, f"longest /healthz probe, {case}",
             lambda results, case=case: _median(_path_list(results, "hostile", case, "max_probe_ms")))
      for index, case in enumerate(("thousands of subflows", "megabytes of code"))),
)


def readme_table(readme: str) -> dict[str, list[float]]:
    """The README's latest figures: each row's first cell → the numbers of its second cell, in order.

    Raises:
        ValueError: the README has no table after a line starting "Latest figures".
    """
    lines = readme.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Latest figures")), None)
    if start is None:
        raise ValueError("README.md has no 'Latest figures' paragraph")
    rows: dict[str, list[float]] = {}
    in_table = False
    for line in lines[start + 1:]:
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= {"-", ":"} or cells[0] == "measure":
            continue
        rows[cells[0]] = [float(number.replace(",", "")) for number in NUMBER.findall(cells[1])]
    if not rows:
        raise ValueError("README.md has no table after 'Latest figures'")
    return rows


def compare(results: dict[str, Any], table: dict[str, list[float]]) -> dict[str, Any]:
    """Each figure of :data:`FIGURES` the run and the README both have: ``{"name", "readme", "now", "change_pct",
    "regressed"}`` (``change_pct`` positive when worse); ``missing`` names those left out and why."""
    compared, missing = [], []
    for figure in FIGURES:
        row = next((numbers for label, numbers in table.items() if label.startswith(figure.row)), None)
        now = figure.value(results)
        if row is None or len(row) <= figure.index:
            missing.append(f"{figure.name}: not in the README's table")
            continue
        if now is None:
            missing.append(f"{figure.name}: not measured in this run")
            continue
        readme = row[figure.index]
        if readme == 0:
            missing.append(f"{figure.name}: the README's figure is 0")
            continue
        change = (now - readme) / readme * (-1 if figure.higher_is_better else 1)
        compared.append({"name": figure.name, "readme": readme, "now": round(now, 2),
                         "change_pct": round(100 * change, 1), "regressed": change > TOLERANCE})
    return {"tolerance_pct": 100 * TOLERANCE, "figures": compared, "missing": missing}


def compare_with_readme(results: dict[str, Any], readme_path: Path) -> dict[str, Any]:
    """:func:`compare` against the README at ``readme_path``; ``{"skipped": why}`` when its table cannot be read."""
    try:
        return compare(results, readme_table(readme_path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as err:
        return {"skipped": str(err)}


def lines(baseline: dict[str, Any]) -> list[str]:
    """The report's lines: every figure against the README's, regressions first."""
    if "skipped" in baseline:
        return [f"Against the README's table: skipped ({baseline['skipped']})"]
    figures = sorted(baseline["figures"], key=lambda f: not f["regressed"])
    regressed = sum(f["regressed"] for f in figures)
    out = [f"Against the README's table ({regressed} regression(s) over {baseline['tolerance_pct']:g} %):"]
    for figure in figures:
        flag = "REGRESSED" if figure["regressed"] else "ok"
        out.append(f"  {flag:<9}  {figure['name']:<44} README {figure['readme']:g}  now {figure['now']:g}  "
                   f"({figure['change_pct']:+.1f} % {'worse' if figure['change_pct'] > 0 else 'better'})")
    out += [f"  not compared: {reason}" for reason in baseline["missing"]]
    return out
