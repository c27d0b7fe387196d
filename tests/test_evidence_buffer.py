"""The runtime evidence buffer on its own: bounded per node, in time and in total whatever the rate, errors kept
apart from a chatty node's debug output, values decoded as Node-RED encodes them, shortened, and redacted when read.

Payload shapes are the ones Node-RED publishes on the comms ``debug`` topic (see :mod:`service.nodered.evidence`).
"""

from __future__ import annotations

import json
import sys
import time

from service.nodered.evidence import LEVEL_ERROR, LEVEL_WARN, VALUE_BUDGET, EvidenceBuffer, decode, shorten


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def debug(node_id: str, value, *, z: str = "tab1", format_: str = "Object", **extra) -> dict:
    encoded = json.dumps(value) if format_ == "Object" or format_.startswith("array") else value  # Object*: as is
    return {"id": node_id, "z": z, "path": z, "name": "", "topic": "", "property": "payload", "msg": encoded,
            "format": format_, **extra}


def log_entry(node_id: str, text: str, level: int = LEVEL_ERROR, z: str = "tab1") -> dict:
    return {"level": level, "id": node_id, "type": "function", "z": z, "name": "thrower", "msg": text,
            "format": f"string[{len(text)}]"}


def test_a_burst_keeps_only_the_last_messages_of_each_node_and_the_cap_in_all():
    buffer = EvidenceBuffer(per_node=20, window=900, max_entries=500)
    for number in range(20_000):
        buffer.add_debug(debug(f"node{number % 50}", {"n": number, "text": "x" * 200}))
    assert buffer.received == 20_000
    assert len(buffer) == 500
    newest = buffer.select(node_ids=["node49"])
    assert [json.loads(e.preview())["n"] for e in newest] == [19_999 - 50 * i for i in range(10)]
    # 50 nodes x 20 would be 1,000: the global cap dropped the oldest, so each node keeps its newest 10.
    assert all(len(buffer.select(node_ids=[f"node{n}"])) == 10 for n in range(50))


def test_memory_stays_bounded_whatever_the_size_of_the_values():
    buffer = EvidenceBuffer(per_node=20, window=900, max_entries=300)
    large = json.dumps({f"key{i}": "v" * 1_000 for i in range(400)})  # 400 kB, decoded
    huge = json.dumps({f"key{i}": "v" * 1_000 for i in range(2_000)})  # 2 MB, kept by type and size only
    for number in range(1_000):
        buffer.add_debug(debug(f"node{number % 30}", huge if number % 2 else large, format_="Object*"))
    entries = buffer.select()
    assert len(entries) == 300
    assert {entry.shape for entry in entries} == {"object{400 keys}", f"Object* ({len(huge)} chars, not decoded)"}
    assert all(entry.shortened for entry in entries)
    kept = max(len(json.dumps(entry.value)) for entry in entries)
    assert kept < VALUE_BUDGET * 2
    assert sum(sys.getsizeof(json.dumps(e.value)) for e in entries) < 300 * VALUE_BUDGET * 2


def test_a_chatty_node_never_pushes_its_own_errors_out():
    buffer = EvidenceBuffer(per_node=5, window=900, max_entries=1000)
    buffer.add_debug(log_entry("f1", "boom 42"))
    buffer.add_debug(log_entry("f1", "careful", level=LEVEL_WARN))
    for number in range(200):
        buffer.add_debug(debug("f1", {"n": number}))
    kinds = [entry.kind for entry in buffer.select(node_ids=["f1"])]
    assert kinds == ["error", "warning"] + ["debug"] * 5
    assert buffer.select(node_ids=["f1"])[0].preview() == "boom 42"


def test_messages_older_than_the_window_are_gone_and_since_narrows_it():
    clock = Clock()
    buffer = EvidenceBuffer(per_node=20, window=60, max_entries=1000, clock=clock)
    buffer.add_debug(debug("a", 1, format_="number"))
    clock.now += 40
    buffer.add_debug(debug("b", 2, format_="number"))
    clock.now += 30
    assert [e.node_id for e in buffer.select()] == ["b"]
    assert len(buffer) == 1
    assert buffer.select(since=10) == []
    assert [e.node_id for e in buffer.select(since=31)] == ["b"]


def test_errors_come_first_then_warnings_then_debug_newest_first_filtered_by_tab():
    buffer = EvidenceBuffer()
    buffer.add_debug(debug("d1", {"v": 1}))
    buffer.add_debug(log_entry("f1", "first error"))
    buffer.add_debug(log_entry("f2", "a warning", level=LEVEL_WARN))
    buffer.add_debug(debug("d1", {"v": 2}))
    buffer.add_debug(log_entry("f1", "second error"))
    buffer.add_debug(log_entry("x1", "elsewhere", z="tab2"))
    buffer.add_debug(debug("s1", {"v": 3}, z="subflow-instance-inner", path="tab1/sfinstance"))
    buffer.add_debug({"level": 40, "id": "f1", "msg": "info lines are not evidence"})
    shown = [(e.kind, e.preview()) for e in buffer.select(flow_id="tab1")]
    assert shown == [("error", "second error"), ("error", "first error"), ("warning", "a warning"),
                     ("debug", '{"v": 3}'), ("debug", '{"v": 2}'), ("debug", '{"v": 1}')]


def test_secrets_in_values_are_redacted_when_read():
    buffer = EvidenceBuffer()
    entry = buffer.add_debug(debug("d1", {"temperature": 21.5, "password": "hunter2",
                                          "apiKey": "sk-proj-Zq3xW9vL2mN8kP4rT6yB1cD5fG7hJ0aS",
                                          "headers": {"Authorization": "Bearer abcdefghijklmnop0123456789"},
                                          "note": "token=ghp_1234567890abcdefghijABCDEFGHIJ123456 in text"}))
    text = entry.preview()
    assert "21.5" in text
    for secret in ("hunter2", "sk-proj-Zq3x", "abcdefghijklmnop0123456789", "ghp_1234567890"):
        assert secret not in text
    assert text.count("[redacted]") >= 4


def test_node_red_encodings_are_decoded_with_their_shape():
    buffer = EvidenceBuffer()
    error = {"__enc__": True, "type": "error",
             "data": {"name": "TypeError", "message": "Cannot read properties of undefined (reading 'temp')",
                      "stack": "TypeError: Cannot read ...\n    at Function node:f1:3:20\n    at more"}}
    entry = buffer.add_debug({"level": LEVEL_ERROR, "id": "f1", "z": "t", "msg": json.dumps(error),
                              "format": "error"})
    assert entry.preview().startswith("TypeError: Cannot read properties of undefined (reading 'temp')")
    assert "at Function node:f1:3:20" in entry.preview()
    long_array = {"__enc__": True, "type": "array", "data": list(range(1000)), "length": 5000}
    entry = buffer.add_debug(debug("d", long_array, format_="array[5000]"))
    assert entry.shape == "array[5000]" and entry.shortened
    assert buffer.add_debug(debug("d", "hello", format_="string[5]")).shape == "string(5 chars)"
    assert buffer.add_debug(debug("d", "42", format_="number")).preview() == "42"
    assert decode('{"not json', "Object") == ('{"not json', 10)


def test_shortening_marks_what_it_cut():
    value, cut = shorten({"text": "y" * 2_000, "items": list(range(100))})
    assert cut and value["text"].endswith("…[+1500 chars]") and value["items"][-1] == "…[+80 more]"
    assert shorten({"a": 1}) == ({"a": 1}, False)


def test_status_is_the_last_per_node_and_an_empty_one_clears_it():
    clock = Clock()
    buffer = EvidenceBuffer(max_entries=3, clock=clock)
    buffer.add_status("m1", {"fill": "green", "shape": "dot", "text": "connected"})
    clock.now += 1
    buffer.add_status("m1", {"fill": "red", "shape": "ring", "text": "disconnected"})
    buffer.add_status("m2", {"fill": "yellow", "shape": "ring", "text": "connecting"})
    assert [(s.node_id, s.text) for s in buffer.statuses()] == [("m1", "disconnected"), ("m2", "connecting")]
    buffer.add_status("m2", {})
    assert [s.node_id for s in buffer.statuses(["m1", "m2"])] == ["m1"]
    for number in range(10):
        buffer.add_status(f"n{number}", {"text": "x"})
    assert len(buffer.statuses()) == 3


def test_a_burst_of_a_thousand_messages_is_taken_in_far_less_than_a_second():
    buffer = EvidenceBuffer()
    payloads = [debug(f"node{n % 20}", {"temperature": n / 10, "sensor": "north-3", "ts": 1712345678901 + n})
                for n in range(10_000)]
    started = time.perf_counter()
    for payload in payloads:
        buffer.add_debug(payload)
    per_thousand = (time.perf_counter() - started) / 10
    assert per_thousand < 0.25, f"{per_thousand:.3f} s per 1,000 messages"


def test_undefined_null_and_numbers_read_as_the_debug_sidebar_shows_them():
    # util.js encodeObject sends undefined and null as the text "(undefined)", numbers as text, the type in format.
    buffer = EvidenceBuffer()
    shown = [buffer.add_debug({"id": "d1", "msg": text, "format": format_, "property": "payload"})
             for text, format_ in (("(undefined)", "undefined"), ("(undefined)", "null"), ("42", "number"),
                                   ("true", "boolean"), ("42", "string[2]"))]
    assert [(entry.shape, entry.preview()) for entry in shown if entry is not None] == [
        ("undefined", "undefined"), ("null", "null"), ("number", "42"), ("boolean", "true"),
        ("string(2 chars)", "42")]


def test_the_buffer_at_its_default_bounds_holds_a_few_mb_whatever_arrives():
    # README, AI_SIDEBAR_EVIDENCE_*: "memory stays bounded (a few MB) whatever the rate". Every debug message, error
    # and status as large as can be, on more nodes than the caps keep; Python's own allocations are traced.
    import tracemalloc

    large = json.dumps({f"key{i}": "v" * 1_000 for i in range(400)})
    tracemalloc.start()
    try:
        buffer = EvidenceBuffer()
        before = tracemalloc.get_traced_memory()[0]
        for number in range(10_000):
            node = f"node{number % 500}"
            if number % 3:
                buffer.add_debug(debug(node, large))
            else:
                buffer.add_debug(debug(node, "s" * 100_000, format_="string[100000]"))
            if number % 5 == 0:
                buffer.add_debug(log_entry(node, "e" * 50_000))
            buffer.add_status(f"status{number}", {"fill": "red", "shape": "dot", "text": "t" * 10_000})
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(buffer) == buffer.max_entries == 2000
    assert held < 8 * 2**20, f"{held / 2**20:.1f} MB"
