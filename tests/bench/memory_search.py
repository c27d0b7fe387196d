"""Memory search latency over 100,000 stored messages, through :class:`service.memory.store.MemoryStore` itself.

The store is filled through ``save_turn`` (its one write path: a question and an answer per turn) with generated
Node-RED questions and answers of realistic length, for several users and many sessions; then ``search()`` runs
the queries a user would type in the sidebar, each for one of the users, and every call is timed.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from service.identity import Identity
from service.memory.store import MemoryStore

from .client import percentile

USERS = [Identity("user", f"user{i}") for i in range(8)]
TURNS_PER_SESSION = 25
QUERIES = ("mqtt broker", "function node return", "http request timeout", "influxdb write", "dashboard chart",
           "split join", "environment variable", "flow context", "catch node error", "adminAuth settings.js",
           "delay rate limit", "modbus", "websocket", "JSON parse", "file append", "msg.payload",
           "node.warn", "subflow", "link call", "serial port", "msg.topic switch", "inject cron", "email attachment",
           "sqlite insert", "credentialSecret", "trigger timeout", "template mustache", "exec command")

NODES = ("mqtt in", "mqtt out", "function", "http request", "http in", "change", "switch", "delay", "trigger",
         "split", "join", "template", "json", "csv", "file", "exec", "inject", "debug", "catch", "status",
         "link call", "websocket in", "tcp request", "udp out", "ui_chart", "ui_gauge", "influxdb out",
         "modbus-read", "sqlite", "e-mail", "serial in", "rbe", "sort", "batch")
TOPICS = ("sensors/kitchen/temperature", "factory/line2/pressure", "home/garage/door", "plc/tank1/level",
          "energy/meter/power", "greenhouse/humidity", "fleet/truck17/gps")
PROBLEMS = ("keeps showing connecting", "sends the message twice", "times out after 120 seconds",
            "outputs undefined", "stops after a deploy", "uses too much memory", "loses messages on restart",
            "gives ECONNREFUSED", "returns a string instead of a number", "never reaches the debug node")
QUESTIONS = (
    "Why does my {node} node {problem} when the topic is {topic}?",
    "How do I configure the {node} node so that msg.payload from {topic} is stored every {n} seconds?",
    "My {node} node {problem}. I use Node-RED {version} on a Raspberry Pi. What should I check?",
    "Can you explain how the {node} and {node2} nodes work together in my flow \"{name}\"?",
    "What is the best way to rate limit {topic} before the {node} node, say {n} messages per minute?",
    "How can I read the environment variable {env} in a {node} node and keep it out of the flow file?",
)
ANSWERS = (
    "The {node} node {problem} most often because the msg.payload it gets is not what it expects. Add a debug "
    "node set to show the complete msg object right before it, deploy, and compare msg.topic ({topic}) and "
    "msg.payload with the node's settings. If the payload is a string, put a json node in between; if it is an "
    "object, use a change node to move msg.payload.value to msg.payload.",
    "Set the {node} node's properties in its edit dialog, then wire a catch node scoped to it so errors are "
    "logged. For {topic}, a delay node in rate limit mode ({n} msg per minute, drop intermediate messages) keeps "
    "the downstream {node2} node from being flooded. Remember to deploy with \"Modified nodes\" only.",
    "In a function node you can write:\n\nconst value = Number(msg.payload);\nif (Number.isNaN(value)) {{\n    "
    "node.warn(\"not a number: \" + msg.payload);\n    return null;\n}}\nmsg.payload = value * {n};\nreturn msg;"
    "\n\nThis avoids the classic mistake of adding strings. Use flow.get/flow.set for values shared within the "
    "flow \"{name}\" and global context only when several flows need them.",
    "Store secrets in environment variables: start Node-RED with {env}=... and reference it as ${{{env}}} in the "
    "{node} node's field, or env.get(\"{env}\") in a function node. In settings.js set credentialSecret and "
    "adminAuth so the flow file and the editor are protected. Node-RED {version} reads .env only through your "
    "service manager.",
    "The {node} node and the {node2} node pass one msg object along the wire. Messages from {topic} arrive about "
    "every {n} seconds; a split node turns an array into a sequence, and a join node in automatic mode puts it "
    "back together with msg.parts. A trigger node can raise an alarm when nothing arrives within the timeout.",
)


def _fill(template: str, rng: random.Random) -> str:
    node, node2 = rng.sample(NODES, 2)
    return template.format(node=node, node2=node2, topic=rng.choice(TOPICS), problem=rng.choice(PROBLEMS),
                           n=rng.choice((5, 10, 30, 60, 120)), version=rng.choice(("3.1.9", "4.0.9", "4.1.15")),
                           name=rng.choice(("Boiler control", "Line 2 monitoring", "Alarms", "Energy report")),
                           env=rng.choice(("INFLUX_TOKEN", "MQTT_PASSWORD", "API_KEY", "SMTP_PASS")))


def turn(rng: random.Random) -> tuple[str, str]:
    """One question and answer, of the length a sidebar conversation has (about 100 and 400–900 characters)."""
    question = _fill(rng.choice(QUESTIONS), rng)
    answer = "\n\n".join(_fill(t, rng) for t in rng.sample(ANSWERS, rng.choice((1, 1, 2))))
    return question, answer


async def fill(store: MemoryStore, messages: int, time_limit: float, rng: random.Random) -> tuple[int, float]:
    """Save turns until ``messages`` messages are stored or ``time_limit`` seconds passed."""
    started = time.monotonic()
    saved = 0
    index = 0
    while saved < messages and time.monotonic() - started < time_limit:
        session_number = index // TURNS_PER_SESSION
        user = USERS[session_number % len(USERS)]
        question, answer = turn(rng)
        await store.save_turn(f"bench-session-{session_number}", user, question, answer,
                              {"scenario": "general", "tools": [], "language": "en-US"}, "general")
        saved += 2
        index += 1
    return saved, time.monotonic() - started


async def _search_all(store: MemoryStore, searches: int, time_limit: float) -> tuple[list[float], dict, dict]:
    timings: list[float] = []
    per_query: dict[str, list[float]] = {}
    hits: dict[str, int] = {}
    started = time.monotonic()
    for number in range(searches):
        if time.monotonic() - started > time_limit:
            break
        query = QUERIES[number % len(QUERIES)]
        user = USERS[number % len(USERS)]
        begin = time.perf_counter()
        found = await store.search(user, query)
        elapsed = (time.perf_counter() - begin) * 1000
        timings.append(elapsed)
        per_query.setdefault(query, []).append(elapsed)
        hits[query] = len(found)
    return timings, per_query, hits


async def run(*, messages: int, searches: int, fill_limit: float, search_limit: float, target_p50_ms: float,
              profile_to: Path | None = None) -> dict[str, Any]:
    """Fill, search, and when the p50 misses ``target_p50_ms``, search again under py-spy (``profile_to``)."""
    rng = random.Random(7)
    folder = Path(tempfile.mkdtemp(prefix="bench-memory-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    store = await MemoryStore.open(folder / "memory.db")
    try:
        stored, fill_seconds = await fill(store, messages, fill_limit, rng)
        timings, per_query, hits = await _search_all(store, searches, search_limit)
        slowest = sorted(((percentile(v, 50), q) for q, v in per_query.items()), reverse=True)[:5]
        size = (folder / "memory.db").stat().st_size
        result = {
            "messages": stored, "users": len(USERS), "sessions": stored // 2 // TURNS_PER_SESSION + 1,
            "fill_s": fill_seconds, "save_turn_ms": 1000 * fill_seconds / max(1, stored // 2),
            "db_mb": size / 2**20, "database_on": "tmpfs" if str(folder).startswith("/dev/shm") else "disk",
            "searches": len(timings),
            "search_ms": {"p50": percentile(timings, 50), "p99": percentile(timings, 99), "max": max(timings or [0])},
            "slowest_queries_p50_ms": [{"query": q, "p50_ms": ms, "results": hits[q]} for ms, q in slowest],
        }
        if profile_to is not None and (result["search_ms"]["p50"] or 0) > target_p50_ms:
            from .profiling import profile_pid

            # SQLite runs in C on aiosqlite's thread: native frames show where the time goes.
            result["profile"] = await profile_pid(os.getpid(), profile_to,
                                                  lambda: _search_all(store, searches, search_limit / 2), native=True)
            result["profile"].pop("scenario", None)
            result["profile"]["raw_profile"] = str(profile_to)
        return result
    finally:
        await store.close()
        for path in folder.glob("*"):
            path.unlink()
        folder.rmdir()
