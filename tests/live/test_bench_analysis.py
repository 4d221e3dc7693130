"""bench's why layer against the real server: the server's breakdown, Little's law, open loop, stability."""

from __future__ import annotations

from dataclasses import replace

import pytest

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.server import free_port
from triton_kitchen.tools import bench as B
from triton_kitchen.tools import stability
from triton_kitchen.tools.load import LoadSpec

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)


def test_closed_loop_result_carries_the_server_breakdown_and_littles_law(server):
    r = B.run_bench(
        server.endpoint, LoadSpec("classifier", "grpc", concurrency=2, duration_s=1.5, warmup_s=0.5)
    )
    assert r.errors == 0 and r.throughput_rps > 0
    total = r.server.total
    # the statistics window brackets the client's window: the same requests, give or take those in flight
    assert abs(total.requests - len(r.latencies_ms)) <= 2 * r.concurrency + 2
    assert total.compute_infer_ms > 0 and total.queue_ms >= 0 and total.inferences >= total.executions > 0
    assert r.server.per_model == {}  # not an ensemble
    law = r.littles_law()
    assert law["in_flight"] == 2
    assert law["predicted_latency_ms"] == pytest.approx(2 / r.throughput_rps * 1000)
    assert law["measured_mean_latency_ms"] == pytest.approx(r.mean_latency_ms)
    assert abs(law["gap"]) < 0.35, law  # a sound closed-loop run: C = throughput x latency, roughly
    doc = r.analysis()
    assert doc["server"]["executions"] == total.executions and doc["littles_law"] == law


def test_open_loop_below_saturation_throughput_is_the_offered_rate(server):
    # hflip (a Python mirror) answers in milliseconds: 15 requests/s stays far below its capacity on a loaded
    # machine too, so the run measures the open-loop schedule, not the classifier's limit (about 11/s measured
    # under a parallel test run)
    open_loop = LoadSpec(
        "hflip", "grpc", concurrency=4, duration_s=2.0, warmup_s=0.3, request_rate=15, server_side=False
    )
    r = B.run_bench(server.endpoint, open_loop)
    assert r.errors == 0
    assert r.throughput_rps == pytest.approx(15, rel=0.2)
    law = r.littles_law()
    assert "arrival_rate_rps" in law and law["mean_in_flight"] < 4
    poisson = B.run_bench(server.endpoint, replace(open_loop, distribution="poisson"))
    assert poisson.throughput_rps == pytest.approx(15, rel=0.4)


def test_stable_runs_merge_their_last_three_windows(server):
    merged, st = stability.run_stable(
        server.endpoint, LoadSpec("classifier", "grpc", concurrency=2, duration_s=0.6), max_windows=4
    )
    assert 3 <= len(st.windows) <= 4 or not st.stable
    assert set(st.spread) == {"throughput", "latency"}
    tail = st.windows[-3:]
    assert merged.throughput_rps == pytest.approx(sum(w["throughput_rps"] for w in tail) / len(tail), rel=0.2)
    assert merged.server is not None and merged.server.total.requests >= len(merged.latencies_ms) * 0.8
    if st.stable:
        assert all(v <= 2 * stability.STABILITY_PCT for v in st.spread.values())


def test_without_a_statistics_api_the_run_still_measures_and_says_why(server):
    # the gRPC port answers inference; "HTTP" points at a closed port, so no statistics can be read
    ep = Endpoint(http_url=f"127.0.0.1:{free_port()}", grpc_url=server.grpc_url)
    _, inputs = __import__("triton_kitchen.tools.protocols", fromlist=["sample_inputs"]).sample_inputs(
        server.endpoint, "classifier", "grpc"
    )
    r = B.run_bench(ep, LoadSpec("classifier", "grpc", duration_s=0.5, warmup_s=0.1, inputs=inputs))
    assert r.throughput_rps > 0 and r.server is None
    assert "statistics" in r.server_note
    assert r.analysis()["server"] is None
