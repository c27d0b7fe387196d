"""`make bench` compares each figure with the README's table of latest figures and flags every regression over 20 %
(issue 33; tests/bench/baseline.py). Pure functions over the real README and a run's results shape."""

from __future__ import annotations

from tests.bench.baseline import FIGURES, compare, lines, readme_table
from tests.support.nodered import REPO


def results_with(service_p50: float, cold_start: float, recall: float) -> dict:
    return {"latency": {"paths": {"service/chat": {"added_ttft_ms": {"p50": service_p50, "p99": 6.9}}}},
            "cold_start": {"mcp_on": {"median_s": cold_start}},
            "knowledge": {"recall_at_3": {"fts": {"rate": recall}}}}


def test_every_compared_figure_finds_its_number_in_the_readme_table():
    table = readme_table((REPO / "README.md").read_text(encoding="utf-8"))
    for figure in FIGURES:
        rows = [numbers for label, numbers in table.items() if label.startswith(figure.row)]
        assert len(rows) == 1 and len(rows[0]) > figure.index, figure.name


def test_a_figure_more_than_20_percent_worse_than_the_readme_is_flagged_and_one_within_is_not():
    table = {"added time to first token, service → model, p50 / p99": [5.0, 6.9],
             "cold start to `/healthz` (MCP child starting in the background)": [1.2],
             "labelled questions, right node's help in the top 3, FTS alone": [97.1, 98.5]}
    baseline = compare(results_with(service_p50=6.5, cold_start=1.3, recall=0.70), table)
    flagged = {f["name"]: f["regressed"] for f in baseline["figures"]}
    assert flagged == {"added TTFT p50, service": True,  # +30 %
                       "added TTFT p99, service": False,  # the same
                       "cold start to /healthz": False,  # +8 %
                       "right help in the top 3, FTS alone": True}  # 70 % instead of 97.1 %: higher is better
    assert "sidebar" in " ".join(baseline["missing"])  # not measured in this run: listed, not compared
    report = lines(baseline)
    assert report[0].startswith("Against the README's table (2 regression(s) over 20 %)")
    assert report[1].lstrip().startswith("REGRESSED")


def test_a_faster_run_is_no_regression():
    baseline = compare(results_with(service_p50=2.0, cold_start=0.5, recall=0.99),
                       {"added time to first token, service → model": [5.0, 6.9], "cold start to `/healthz`": [1.2]})
    assert not any(f["regressed"] for f in baseline["figures"])
