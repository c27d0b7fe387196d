"""The targets of issue 10 and the printed table."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from .floor import lowest_ttft_ms
from .footprint import lines as footprint_lines


@dataclass
class Target:
    group: str
    name: str
    value: float | None
    limit: float
    unit: str
    higher_is_better: bool = False

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value >= self.limit if self.higher_is_better else self.value <= self.limit

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    def line(self) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        value = "n/a" if self.value is None else f"{self.value:.1f}"
        return f"  {'PASS' if self.passed else 'MISS'}  {self.name:<52} {value:>9} {self.unit:<3} (target {sign} " \
               f"{self.limit:g} {self.unit})"


def history_targets(results: dict[str, Any]) -> list[Target]:
    """The flow history's diff of two deploys (issue 35), when it ran."""
    found = results.get("history_diff")
    if not found or "skipped" in found:
        return []
    return [Target("history", f"diff of two deploys, {found['nodes']}-node workspace, p50", found["diff_ms"]["p50"],
                   50, "ms")]


def capture_targets(results: dict[str, Any]) -> list[Target]:
    """The flow history's storage of 200 deploys and the deploy time with the capture on (issue 35), when it ran:
    "adds no delay" is read as the p50 of ``POST /flows`` with the capture on at most 5 ms above it off."""
    found = results.get("history_capture")
    if not found or "skipped" in found:
        return []
    times = found["deploy_ms"]
    on, off = times["capture_on"]["p50"], times["capture_off"]["p50"]
    return [Target("history", f"{found['deploys']} deploys stored / {found['deploys']} full copies, "
                              f"{found['nodes']} nodes", 100 * found["storage"]["ratio"], 5, "%"),
            Target("history", f"deploy p50 added by the capture (on {on:.0f} − off {off:.0f} ms)"
                   if on is not None and off is not None else "deploy p50 added by the capture (on − off)",
                   None if on is None or off is None else on - off, 5, "ms")]


def completion_targets(results: dict[str, Any]) -> list[Target]:
    """The added latency of an inline completion (issue 39), when it ran."""
    found = results.get("completion")
    if not found or "skipped" in found:
        return []
    targets = []
    for path in ("sidebar/complete", "service/complete"):
        added = found["paths"][path]["added_ms"]
        targets.append(Target("completion", f"added latency p50, {path}", added["p50"], 15, "ms"))
        targets.append(Target("completion", f"added latency p99, {path}", added["p99"], 40, "ms"))
    typed = found.get("typing")
    if typed is not None:
        count = typed.get("keystrokes", 100)
        targets.append(Target("completion", f"model requests for {count} keystrokes at 8/s",
                              typed.get("modelRequests"), 10, "requests"))
    return targets


def footprint_targets(results: dict[str, Any]) -> list[Target]:
    """Issue 33: one worker, default settings (its MCP server in-process), idle ≤ 150 MB and ≤ 200 MB after 100
    chats with tools, service and MCP server together."""
    found = results.get("footprint")
    if not found or "skipped" in found:
        return []
    default = found["memory"]
    return [Target("footprint", "RSS idle, one worker, default settings", default["idle"]["total_mb"], 150, "MB"),
            Target("footprint", f"RSS after {default['chats']} chats with tools", default["after_chats"]["total_mb"],
                   200, "MB"),
            Target("footprint", f"MCP server tool calls in {default['chats']} chats", default["mcp_tool_calls"],
                   default["chats"], "", higher_is_better=True),
            Target("footprint", f"failed tool calls or errors in {default['chats']} chats",
                   default["tool_failed"] + default["error"], 0, "")]


def evaluate(results: dict[str, Any]) -> list[Target]:
    targets: list[Target] = []
    paths = results["latency"]["paths"]
    for path in ("sidebar/chat", "service/chat"):
        targets.append(Target("latency", f"added TTFT p50, {path}", paths[path]["added_ttft_ms"]["p50"], 5, "ms"))
        targets.append(Target("latency", f"added TTFT p99, {path}", paths[path]["added_ttft_ms"]["p99"], 20, "ms"))
    targets += concurrency_targets(results["concurrency"], results.get("cost"), results["machine"]["cpus"])
    targets += replicas_targets(results.get("replicas", {}))
    prompt = results["prompt_size"]
    # Issue 33: the fixed part of the prompt (system prompt, instructions) is counted apart; the target is the flow
    # block's (the whole prompt's ratio is printed in section 3 and compared with the README's table).
    ratio = prompt.get("flow_ratio")
    targets.append(Target("prompt", "flow block tokens / raw JSON tokens (all example tabs)",
                          None if ratio is None else 100 * ratio, 35, "%"))
    for key in ("ids", "types", "wires"):
        kept = prompt[f"{key}_kept"]
        targets.append(Target("prompt", f"node {key} recoverable from the prompt",
                              None if kept is None else 100 * kept, 100, "%", higher_is_better=True))
    targets.append(Target("memory", f"search p50 over {results['memory_search']['messages']:,} messages",
                          results["memory_search"]["search_ms"]["p50"], 10, "ms"))
    if "knowledge" in results:
        kb = results["knowledge"]
        targets.append(Target("knowledge", f"retrieval p50 at {kb['retrieval']['chunks']:,} chunks",
                              kb["retrieval"]["ms"]["p50"], 30, "ms"))
        targets.append(Target("knowledge", "labelled questions, right help in top 3 (FTS alone)",
                              100 * kb["recall_at_3"]["fts"]["rate"], 95, "%", higher_is_better=True))
    targets.append(Target("cold_start", "cold start to /healthz 200, median of runs (MCP tools on)",
                          results["cold_start"]["mcp_on"]["median_s"], 1.5, "s"))
    targets += footprint_targets(results)
    evidence = results.get("evidence")
    if evidence and "skipped" not in evidence:
        change = evidence["ttft_ms"]["change_pct"]
        targets.append(Target("evidence", "TTFT p50 change under 1,000 debug msg/s", change, 10, "%"))
        targets.append(Target("evidence", "service RSS growth after the first third of the burst",
                              evidence["rss_mb"]["growth_after_first_third"], 20, "MB"))
    traced = results.get("tracing_off")
    if traced and "skipped" not in traced:
        targets.append(Target("tracing", "tracing off: call sites' CPU share of a chat", traced["site_cost_pct"], 1,
                              "%"))
    routed = results.get("router")
    if routed and "skipped" not in routed:
        targets.append(Target("router", f"labelled requests ({routed['requests']}) answered with ≤ 2 model calls",
                              100 * routed["share_at_most_2_calls"], 80, "%", higher_is_better=True))
        targets.append(Target("router", "labelled requests off their path", len(routed["off_path"]), 0, ""))
    targets += history_targets(results) + capture_targets(results) + completion_targets(results)
    return targets + build_targets(results) + hostile_targets(results)


def hostile_targets(results: dict[str, Any]) -> list[Target]:
    """The longest /healthz probe during each hostile flowData request, median of the rounds: at most what the
    streams' inter-token gap may be (50 ms), since every stream waits as long as the probe. (A service that
    sliced on its event loop makes the probe wait about the whole request: a third of a second to seconds.)"""
    hostile = results.get("hostile")
    if not hostile or "skipped" in hostile:
        return []
    return [Target("hostile", f"longest /healthz probe during a hostile request, {case} (median of "
                              f"{figures['rounds']})", statistics.median(figures["max_probe_ms"]), 50, "ms")
            for case, figures in hostile.items()]


def build_targets(results: dict[str, Any]) -> list[Target]:
    """The build loop on scripted build tasks (issue 34), when it ran: the time the service adds per check round
    beyond the model's and Node-RED's, p50, and every task's verdict done."""
    found = results.get("build_loop")
    if not found or "skipped" in found:
        return []
    tasks = len(found["tasks"])
    return [Target("build", f"added per loop round p50, {tasks} tasks ({found['model_calls_per_task']:.1f} model, "
                            f"{found['tool_calls_per_task']:.1f} tool calls a task; CPU "
                            f"{found['cpu_per_round_ms_p50']:.0f} ms)", found["added_per_round_ms_p50"], 50, "ms"),
            Target("build", f"tasks with verdict done of {tasks}", found["done"], tasks, "", higher_is_better=True)]


def router_lines(router: dict[str, Any]) -> list[str]:
    """The report's lines for the router graph's labelled requests (:func:`tests.bench.router.run`)."""
    out = [f"8. Router graph: {router['requests']} labelled requests in {router['languages']} languages; "
           f"{100 * router['share_at_most_2_calls']:.1f} % answered with ≤ 2 model calls"]
    if router.get("share_needing_tools_offered_them") is not None:
        out.append(f"   requests that need tools (tests/support/tool_requests.py) offered them: "
                   f"{100 * router['share_needing_tools_offered_them']:.1f} % (target 100 %)")
    for path, row in router["paths"].items():
        spread = ", ".join(f"{calls} calls ×{count}" for calls, count in row["model_calls"].items())
        out.append(f"   {path:<9} {row['requests']:>3} requests, model calls mean {row['model_calls_mean']:.2f} "
                   f"({spread})")
    for miss in router["off_path"]:
        out.append(f"   off path: {miss['message']!r} ({miss['language']}) labelled {miss['labelled']}, "
                   f"took {miss['taken']}")
    return out


TTFT_ALLOWANCE_MS = 250  # issue 23: time to first token at most the model's own plus this


def concurrency_targets(con: dict[str, Any], cost: dict[str, Any] | None = None,
                        cores: int | None = None) -> list[Target]:
    """Issue 33's targets. The largest level starting at once: no errors, p99 gap between token events ≤ 50 ms, p99
    time to first token ≤ 2.5 × the least the floor allows for that many chats on these cores (:func:`floor_bound_ms`;
    without the cost phase, the model's own p99 + 250 ms), peak RSS ≤ 300 MB. The paced level (chats arriving one
    after the other): no errors, p99 gap ≤ 50 ms, p99 time to first token ≤ the model's own p99 + 250 ms."""
    top = max(con["levels"], key=lambda level: level["streams"])
    model = (con.get("model_ttft_ms") or {}).get("p99")
    bound = floor_bound_ms(cost, top["streams"], cores)
    name = f"{top['streams']} streams at once"
    targets = [
        Target("concurrency", f"{name}: errors", top["errors"], 0, ""),
        Target("concurrency", f"{name}: p99 inter-token gap", top["inter_token_gap_ms"]["p99"], 50, "ms"),
        Target("concurrency", f"{name}: p99 TTFT (2.5 × floor bound {_f(bound, 0)})", top["ttft_ms"]["p99"],
               2.5 * bound, "ms") if bound is not None else
        Target("concurrency", f"{name}: p99 TTFT (model's p99 {_f(model)} + 250)", top["ttft_ms"]["p99"],
               (model or 0) + TTFT_ALLOWANCE_MS, "ms"),
        Target("concurrency", f"{name}: service peak RSS", top["service_peak_rss_mb"], 300, "MB"),
    ]
    paced = con.get("paced")
    if paced:
        name = f"{paced['streams']} streams at {paced['arrivals_per_s']:g}/s"
        targets += [
            Target("concurrency", f"{name}: errors", paced["errors"], 0, ""),
            Target("concurrency", f"{name}: p99 inter-token gap", paced["inter_token_gap_ms"]["p99"], 50, "ms"),
            Target("concurrency", f"{name}: p99 TTFT (model's p99 {_f(model)} + 250)", paced["ttft_ms"]["p99"],
                   (model or 0) + TTFT_ALLOWANCE_MS, "ms"),
        ]
    return targets


def floor_bound_ms(cost: dict[str, Any] | None, streams: int, cores: int | None) -> float | None:
    """The least time until the last of ``streams`` chats starting at once has its first token, from the CPU the
    floor (LangChain's chat model and LangGraph's router graph alone, :mod:`tests.bench.floor`) needs per request;
    ``None`` without the cost phase's floor."""
    alone = (cost or {}).get("langchain_alone")
    if not alone or not cores:
        return None
    return lowest_ttft_ms(alone["per_request_us"] + alone["router_graph_us"], streams, cores)


def replicas_targets(rep: dict[str, Any]) -> list[Target]:
    """The concurrency targets for the streams split over replicas on PostgreSQL (none when the phase was
    skipped)."""
    if "level" not in rep:
        return []
    top, model = rep["level"], (rep.get("model_ttft_ms") or {}).get("p99")
    name = f"{top['streams']} streams on {rep['replicas']} replicas (PostgreSQL)"
    return [
        Target("replicas", f"{name}: errors", top["errors"], 0, ""),
        Target("replicas", f"{name}: p99 gap", top["inter_token_gap_ms"]["p99"], 50, "ms"),
        Target("replicas", f"{name}: p99 TTFT (model {_f(model)} + 250)", top["ttft_ms"]["p99"],
               (model or 0) + TTFT_ALLOWANCE_MS, "ms"),
    ]


def render_replicas(rep: dict[str, Any]) -> list[str]:
    """One line for the replicas phase: its level's row, or why it was skipped."""
    if "level" not in rep:
        return ["", f"2c. Replicas on PostgreSQL: skipped ({rep.get('skipped', 'not run')})"]
    top, model = rep["level"], rep.get("model_ttft_ms") or {}
    return ["", f"2c. {top['streams']} simultaneous pure chats split over {rep['replicas']} replicas on one "
                f"{rep['database']} database ({rep['words']} tokens at {rep['token_delay_ms']:.0f} ms; model's own "
                f"TTFT p99 {_f(model.get('p99'))} ms)",
            f"  completed {top['completed']}, errors {top['errors']}, gap p50 "
            f"{_f(top['inter_token_gap_ms']['p50'])} ms, p99 {_f(top['inter_token_gap_ms']['p99'])} ms, TTFT p50 "
            f"{_f(top['ttft_ms']['p50'])} ms, p99 {_f(top['ttft_ms']['p99'])} ms, replicas' CPU "
            f"{_f(top['cpu_s']['service'])} s in {_f(top['wall_s'])} s, peak RSS {_f(top['service_peak_rss_mb'])} MB"]


def render_concurrency(con: dict[str, Any]) -> list[str]:
    """The concurrency table: one row per level."""
    model = con.get("model_ttft_ms") or {}
    lines = [f"2. Concurrency: pure chats to the service starting at once (a row N@R/s: arriving R per second), "
             f"{con['words']} tokens at {con['token_delay_ms']:.0f} ms each (service RSS at start "
             f"{_f(con['service_rss_at_start_mb'])} MB; "
             f"model's own TTFT p50 {_f(model.get('p50'))} ms, p99 {_f(model.get('p99'))} ms)",
             f"  {'streams':>7} {'completed':>9} {'errors':>6} {'gap p50':>8} {'gap p99':>8} {'TTFT p50':>9} "
             f"{'TTFT p99':>9} {'events':>6} {'wall s':>7} {'svc CPU s':>9} {'svc CPU %':>9} {'model CPU s':>11} "
             f"{'peak RSS MB':>11}"]
    for level in [*con["levels"], *([con["paced"]] if con.get("paced") else [])]:
        streams = f"{level['streams']}@{level['arrivals_per_s']:g}/s" if level.get("arrivals_per_s") else \
            level["streams"]
        lines.append(f"  {streams:>7} {level['completed']:>9} {level['errors']:>6} "
                     f"{_f(level['inter_token_gap_ms']['p50']):>8} {_f(level['inter_token_gap_ms']['p99']):>8} "
                     f"{_f(level['ttft_ms']['p50']):>9} {_f(level['ttft_ms']['p99']):>9} "
                     f"{_f(level.get('token_events_per_answer'), 0):>6} {_f(level['wall_s']):>7} "
                     f"{_f(level['cpu_s']['service']):>9} "
                     f"{_f(level['service_cpu_percent_of_one_core'], 0):>9} {_f(level['cpu_s']['model']):>11} "
                     f"{_f(level['service_peak_rss_mb']):>11}")
    overflows = sum(level.get("listen_overflows", 0) for level in con["levels"])
    if overflows:
        lines.append(f"  TCP accept queue overflows during the levels: {overflows}")
    return lines


def render_cost(cost: dict[str, Any], streams: int | None = None, cores: int | None = None) -> list[str]:
    """Service CPU per request start and per relayed token, in total and per layer (µs), and the floor under them;
    with ``streams`` and ``cores``, the least time to first token of that many chats starting at once that the
    floor alone allows."""
    request, token = cost["per_request_us"], cost["per_token_us"]
    lines = ["", f"   CPU per request and per relayed token ({cost['streams_at_once']} pure chats at once, "
                 f"{cost['rounds']} rounds, 1 and {cost['words']} pieces; {_f(cost['events_per_answer'], 1)} token "
                 f"events per {cost['words']}-piece answer): per request {_f(request['total'], 0)} µs, per token "
                 f"{_f(token['total'], 0)} µs",
             f"     {'layer':<50} {'µs/request':>10} {'µs/token':>9}"]
    for name, value in request["layers"].items():
        lines.append(f"     {name:<50} {_f(value, 0):>10} {_f(token['layers'].get(name), 0):>9}")
    alone = cost.get("langchain_alone")
    if alone:
        lines.append(f"     {'floor: LangChain chat model alone, same request':<50} "
                     f"{_f(alone['per_request_us'], 0):>10} {_f(alone['per_token_us'], 0):>9}   "
                     f"(tests/bench/floor.py, {alone['request_bytes']} B request)")
        lines.append(f"     {'floor: LangGraph router graph alone, no-op nodes':<50} "
                     f"{_f(alone['router_graph_us'], 0):>10}")
        least = floor_bound_ms(cost, streams or 0, cores)
        if streams and least is not None:
            lines.append(f"     {streams} chats starting at once on {cores} cores: the last first token comes "
                         f"≥ {_f(least, 0)} ms after the start from LangChain's and LangGraph's CPU alone, before "
                         "the service's own, the model server's and the client's")
    return lines


def _f(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pct(ratio: float | None) -> str:
    return _f(None if ratio is None else 100 * ratio)


def render(results: dict[str, Any], targets: list[Target]) -> str:
    machine = results["machine"]
    lines = [f"node-red-ai-sidebar benchmark {results['date']}  ({machine['cpus']} cores, {machine['cpu']}, "
             f"Python {machine['python']}, Node {machine['node']}, Node-RED {machine['node_red']})"]
    lat = results["latency"]
    lines += ["", f"1. Latency: {lat['rounds']} sequential requests per path, {lat['words']} tokens at "
                  f"{lat['token_delay_ms']:.0f} ms; pure chat = {lat['pure_chat']}",
              "  the model received: " + ", ".join(f"{path} {seen}" for path, seen in lat["paths_checked"].items()),
              f"  {'path':<15} {'TTFT p50':>9} {'p99':>7} {'added p50':>10} {'p99':>7} {'relay/token p50':>16} "
              f"{'p99':>7} {'added p50':>10} {'p99':>7} {'errors':>7}"]
    for path, row in lat["paths"].items():
        added_ttft = row.get("added_ttft_ms", {})
        added_relay = row.get("added_token_relay_ms", {})
        lines.append(f"  {path:<15} {_f(row['ttft_ms']['p50']):>9} {_f(row['ttft_ms']['p99']):>7} "
                     f"{_f(added_ttft.get('p50')):>10} {_f(added_ttft.get('p99')):>7} "
                     f"{_f(row['token_relay_ms']['p50'], 2):>16} {_f(row['token_relay_ms']['p99'], 2):>7} "
                     f"{_f(added_relay.get('p50'), 2):>10} {_f(added_relay.get('p99'), 2):>7} {row['errors']:>7}")
    lines += [""] + render_concurrency(results["concurrency"])
    if "replicas" in results:
        lines += render_replicas(results["replicas"])
    if "cost" in results:
        lines += render_cost(results["cost"], max(level["streams"] for level in results["concurrency"]["levels"]),
                             machine["cpus"])
    prompt = results["prompt_size"]
    lines += ["", f"3. Prompt size: {prompt['measured']} of {prompt['tabs']} example tabs ({prompt['nodes']} nodes), "
                  f"\"explain the current flow\", {prompt.get('tokenizer', 'cl100k_base')} tokens",
              f"  raw JSON {prompt['raw_tokens']:,} · whole prompt {prompt['prompt_tokens']:,} "
              f"({_pct(prompt['prompt_ratio'])} %, median per tab {_pct(prompt['prompt_ratio_median'])} %, "
              f"{prompt['tabs_over_35_percent']} tabs over 35 %) · flow block only {prompt['flow_tokens']:,} "
              f"({_pct(prompt['flow_ratio'])} %)",
              f"  recoverable: ids {_pct(prompt['ids_kept'])} %, types {_pct(prompt['types_kept'])} %, "
              f"wires {_pct(prompt['wires_kept'])} %, link targets {_pct(prompt['links_kept'])} %"]
    biggest = sorted((f for f in prompt["per_flow"] if "error" not in f), key=lambda f: -f["raw_tokens"])[:3]
    for flow in biggest:
        lines.append(f"    largest: {flow['source']:<58} raw {flow['raw_tokens']:>5} prompt {flow['prompt_tokens']:>5} "
                     f"({_f(100 * flow['prompt_ratio'], 0)} %) flow block {flow['flow_tokens']:>5} "
                     f"({_f(100 * flow['flow_ratio'], 0)} %)")
    for flow in prompt["failed"][:3]:
        lines.append(f"    failed: {flow['source']} ({flow['error']})")
    mem = results["memory_search"]
    cold = results["cold_start"]
    lines += ["", f"4. Memory: {mem['messages']:,} messages, {mem['users']} users, {mem['sessions']:,} sessions "
                  f"(filled in {_f(mem['fill_s'])} s, {_f(mem['save_turn_ms'], 2)} ms per save_turn, "
                  f"{_f(mem['db_mb'])} MB); search() over {mem['searches']} queries: p50 "
                  f"{_f(mem['search_ms']['p50'], 2)} ms, p99 {_f(mem['search_ms']['p99'], 2)} ms",
              f"   Cold start to /healthz 200: median {_f(cold['mcp_on']['median_s'], 2)} s with MCP tools on "
              f"(runs {', '.join(_f(t, 2) for t in cold['mcp_on']['runs_s'])}), "
              f"{_f(cold['mcp_off']['median_s'], 2)} s without; first answer's first token after spawn: median "
              f"{_f(cold['mcp_on']['first_token_median_s'], 2)} s with, "
              f"{_f(cold['mcp_off']['first_token_median_s'], 2)} s without"]
    found = results.get("footprint")
    if found and "skipped" in found:
        lines += ["", f"4b. Footprint: skipped ({found['skipped']})"]
    elif found:
        lines += ["", "4b. " + "\n    ".join(footprint_lines(found))]
    if "knowledge" in results:
        kb = results["knowledge"]
        ws, ret, rec = kb["workspace_build"], kb["retrieval"], kb["recall_at_3"]
        lines += ["", f"5. Knowledge: retrieval (router + search + grading) at {ret['chunks']:,} chunks: p50 "
                      f"{_f(ret['ms']['p50'], 2)} ms, p95 {_f(ret['ms']['p95'], 2)} ms ({ret['searches']} searches, "
                      f"filled in {_f(ret['fill_s'])} s, {_f(ret['db_mb'])} MB)",
                  f"   workspace of {ws['nodes']} nodes indexed in {_f(ws['build_s'], 2)} s ({ws['chunks']} chunks); "
                  f"refresh with nothing changed {_f(ws['unchanged_refresh_ms'], 2)} ms",
                  f"   recall@3 of {rec['fts']['questions']} labelled questions: FTS alone {_pct(rec['fts']['rate'])}, "
                  f"fused with scripted embeddings {_pct(rec['fused']['rate'])}"]
    evidence = results.get("evidence")
    if evidence and "skipped" in evidence:
        lines += ["", f"6. Runtime evidence: skipped ({evidence['skipped']})"]
    elif evidence:
        rate, ttft, rss = evidence["debug_messages_per_s"], evidence["ttft_ms"], evidence["rss_mb"]
        lines += ["", f"6. Runtime evidence: {evidence['seconds']:.0f} s of debug messages, median "
                      f"{_f(rate['median'], 0)}/s delivered ({rate['total']:,} in all); chat TTFT p50 "
                      f"{_f(ttft['baseline_p50'])} ms before, "
                      f"{_f(ttft['burst_p50'])} ms during ({_f(ttft['change_pct'])} %); service RSS "
                      f"{_f(rss['before'])} → peak {_f(rss['peak'])} MB; get_debug_messages "
                      f"{_f(evidence['get_debug_messages_ms']['ms'])} ms"]
    hostile = results.get("hostile")
    if hostile and "skipped" in hostile:
        lines += ["", f"11. Hostile flowData: skipped ({hostile['skipped']})"]
    elif hostile:
        lines += ["", "11. Hostile flowData, /healthz probed during each request: " + "; ".join(
            f"{case}: request {figures['request_ms']} ms, longest probe {figures['max_probe_ms']} ms "
            f"({figures['probes']} probes)" for case, figures in hostile.items())]
    routed = results.get("router")
    if routed and "skipped" in routed:
        lines += ["", f"8. Router graph: skipped ({routed['skipped']})"]
    elif routed:
        lines += ["", *router_lines(routed)]
    lines += ["", "Targets:"] + [t.line() for t in targets]
    breakdown = prompt.get("breakdown_tokens_per_request")
    if breakdown:
        lines += ["", "Prompt tokens per request, mean: " + ", ".join(f"{k.replace('_', ' ')} {v:.0f}"
                                                                     for k, v in breakdown.items())]
    for name, profile in (results.get("profiles") or {}).items():
        if name == "cold-start-imports":
            for part, imports in profile.items():
                lines += ["", f"Import time, {part} ({imports.get('module')}): {imports.get('total_ms')} ms; direct: " +
                          ", ".join(f"{row['import']} {row['ms']}" for row in imports.get("direct_imports", [])[:6]),
                          "    slowest own import code: " +
                          ", ".join(f"{row['import']} {row['ms']}" for row in imports.get("slowest_self", [])[:6])]
            continue
        lines += ["", f"Profile, {name} ({profile.get('samples', 0)} samples; "
                      f"{profile.get('raw_profile', '')} {profile.get('skipped', profile.get('error', ''))}):"]
        for row in profile.get("self", [])[:8]:
            lines.append(f"    self {row['percent']:5.1f} %  {row['frame']}")
        for row in profile.get("inclusive", [])[:12]:
            lines.append(f"    incl {row['percent']:5.1f} %  {row['frame']}")
    lines.append(f"\nphase times (s): {results['timings_s']}")
    return "\n".join(lines)
