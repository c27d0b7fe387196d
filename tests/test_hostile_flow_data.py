"""A hostile editor ``flowData`` (megabytes, thousands of subflows) must not stall the service's event loop."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from tests.conftest import SERVICE_TOKEN
from tests.support.sse import read_events


def many_subflows(subflows: int = 4900) -> list[dict]:
    """One tab holding an instance of each of ``subflows`` subflow definitions of two nodes each
    (~2.5 MB, 19,601 items):
    slicing that rescans every item per subflow is quadratic."""
    flows: list[dict] = [{"id": "hostile-tab", "type": "tab", "label": "hostile"}]
    for number in range(subflows):
        sub = f"sf{number:05d}"
        flows += [
            {"id": sub, "type": "subflow", "name": f"S{number}", "env": [],
             "in": [{"x": 40, "y": 40, "wires": [{"id": f"{sub}a"}]}],
             "out": [{"x": 400, "y": 40, "wires": [{"id": f"{sub}b", "port": 0}]}]},
            {"id": f"{sub}a", "type": "change", "z": sub, "x": 120, "y": 40, "rules": [], "wires": [[f"{sub}b"]]},
            {"id": f"{sub}b", "type": "function", "z": sub, "x": 280, "y": 40, "func": "return msg;",
             "wires": [[]]},
            {"id": f"i{number:05d}", "type": f"subflow:{sub}", "z": "hostile-tab", "x": 100, "y": 40,
             "wires": [[]]},
        ]
    return flows


def megabytes_of_code(nodes: int = 1200) -> list[dict]:
    """One tab small enough to be read, with ~3 MB of function code to redact and shorten."""
    code = "\n".join(f"const value{line} = msg.payload.items[{line}].value * {line}; // token = \"abc{line}\""
                     for line in range(40))
    flows: list[dict] = [{"id": "hostile-tab", "type": "tab", "label": "hostile"}]
    flows += [{"id": f"f{number:05d}", "type": "function", "z": "hostile-tab", "x": 100, "y": 40, "func": code,
               "wires": [[f"f{number + 1:05d}"]]} for number in range(nodes)]
    return flows


@pytest.mark.parametrize("flow_data, error", [(many_subflows, "flow_too_large"), (megabytes_of_code, None)],
                         ids=["thousands of subflows", "megabytes of code"])
async def test_healthz_answers_all_along_a_hostile_flow_data_request(service_process, model, flow_data, error):
    """The service as a process (as deployed); the probe is another client, as a load balancer would be."""
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "Content-Type": "application/json"}
    body = json.dumps({"message": "explain the current flow", "selectedFlow": {"id": "hostile-tab"},
                       "flowData": flow_data(), "silent": True}).encode()
    assert len(body) > 1_400_000

    async with aiohttp.ClientSession(headers=headers) as http:
        async def chat(data: bytes) -> list[dict]:
            async with http.post(f"{base}/ai-sidebar/stream-chat", data=data) as response:
                assert response.status == 200, await response.text()
                return await read_events(response)

        # A first ordinary answer, so that what a service does once (lazy imports of the model client) is behind.
        assert (await chat(json.dumps({"message": "hello", "silent": True}).encode()))[-1]["type"] == "done"
        started = time.perf_counter()
        task = asyncio.create_task(chat(body))
        latencies = []
        while not task.done():
            before = time.perf_counter()
            async with http.get(f"{base}/healthz") as health:
                assert health.status == 200 and (await health.json())["status"] == "ok"
            latencies.append(time.perf_counter() - before)
        events = await task
        elapsed = time.perf_counter() - started

    # The probe ran all along the hostile request, and never waited on it: a probe stuck behind the slicing would
    # wait about as long as the request itself (a ratio near 1). Relative, not in milliseconds: on a loaded machine
    # a correct service took 1 s for one probe (about 30 ms measured alone, 14 s before slicing was linear); a
    # millisecond target belongs in `make bench`. Half the request: a correct service stays under a tenth, but a
    # refused tab is answered in 0.16 s, where one 47 ms hiccup of a loaded machine broke a quarter.
    print(f"/healthz during the hostile request: max {max(latencies) * 1000:.0f} ms over {len(latencies)} probes")
    assert len(latencies) >= 5, (elapsed, latencies)
    assert max(latencies) < elapsed / 2, (elapsed, len(latencies), sorted(latencies)[-5:])
    # A tab too large to send whole is refused (one error, then done); the other is answered.
    assert [e["code"] for e in events if e["type"] == "error"] == ([error] if error else [])
    assert events[-1]["type"] == "done"
