"""A hostile editor ``flowData`` (megabytes, thousands of subflows) must not stall the service's event loop."""

from __future__ import annotations

import json

import aiohttp
import pytest

from service.nodered.flow_tools import _off_loop
from service.nodered.tooling import ToolFailure
from tests.conftest import SERVICE_TOKEN
from tests.support.hostile_flows import hostile_body, many_subflows, megabytes_of_code, probed_chat


@pytest.mark.parametrize("flow_data, error", [(many_subflows, "flow_too_large"), (megabytes_of_code, None)],
                         ids=["thousands of subflows", "megabytes of code"])
async def test_healthz_answers_all_along_a_hostile_flow_data_request(service_process, model, flow_data, error):
    """The service as a process (as deployed); the probe is another client, as a load balancer would be."""
    base = f"http://127.0.0.1:{service_process.service_port}"
    headers = {"Authorization": f"Bearer {SERVICE_TOKEN}", "Content-Type": "application/json"}
    body = hostile_body(flow_data())
    assert len(body) > 1_400_000

    async with aiohttp.ClientSession(headers=headers) as http:
        # A first ordinary answer, so that what a service does once (lazy imports of the model client) is behind.
        hello = await probed_chat(http, base, json.dumps({"message": "hello", "silent": True}).encode())
        assert hello.events[-1]["type"] == "done"
        probed = await probed_chat(http, base, body)
    events, latencies, elapsed = probed.events, probed.probes, probed.elapsed

    # The probe ran all along the hostile request and was answered each time (a loop blocked for the whole slicing
    # lets one probe through, answered only after the request). How long a probe waited is a performance figure:
    # `make bench` measures it (tests/bench/hostile.py, target: the longest probe within 50 ms);
    # a ratio asserted here failed once on a quiet CI machine (0.29 s against a 0.48 s request).
    print(f"/healthz during the hostile request: max {max(latencies) * 1000:.0f} ms over {len(latencies)} probes, "
          f"request {elapsed * 1000:.0f} ms")
    # At least one answered while the request was still running (the loop asked again); how many depends on the
    # machine (a refused tab is answered in 0.15 s).
    assert len(latencies) >= 2, (elapsed, latencies)
    # A tab too large to send whole is refused (one error, then done); the other is answered.
    assert [e["code"] for e in events if e["type"] == "error"] == ([error] if error else [])
    assert events[-1]["type"] == "done"


async def test_a_flow_nested_too_deeply_is_refused_without_the_error_it_replaces():
    """A run keeps its tool's failure while the answer goes on (and, through the router's graph, until the garbage
    collector frees its cycles): the refusal of a flow nested deeper than the interpreter can slice does not keep
    the RecursionError as its context."""
    def nest(data: list[dict]) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(ToolFailure) as caught:
        await _off_loop(nest, many_subflows(10))
    assert caught.value.key == "flow_too_large.nested"
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def test_a_detached_error_holds_no_frames_and_no_error_it_was_raised_from():
    """A caught error kept beyond its ``except`` block (a run's failure, the error middleware's, a model fault)
    is kept detached: with its traceback it held the frames between the raise and the catch, with the request's
    context and so the editor's flows, in a reference cycle through the catching frame. In `make bench`'s hostile
    phase a refused 2.5 MB flowData left 176,000 objects that one generation-1 pass freed with the GIL held, every
    stream standing still for 150-240 ms (issue 33); the phase measures it (the longest /healthz probe)."""
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise ToolFailure("flow_not_found", params={"flow_id": "x", "tabs": "none"})  # noqa: B904 - the context is the point
    except ToolFailure as failure:
        assert failure.__traceback__ is not None and failure.__context__ is not None
        raised, kept = failure, failure.detached()
    assert kept is raised
    assert (kept.__traceback__, kept.__context__, kept.__cause__) == (None, None, None)
