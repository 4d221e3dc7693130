"""Triton's Prometheus metrics, scraped from the real embedded server's metrics port.

The tests of this topic that need no server, app or browser: tests/unit/test_metrics.py."""

from __future__ import annotations

from conftest import settled

from triton_kitchen.tools import metrics
from triton_kitchen.tools.protocols import Caller, sample_inputs


def test_scrape_counts_the_requests_we_send(server):
    ep = server.endpoint
    before = metrics.scrape(ep.metrics_url)
    _, inputs = sample_inputs(ep, "classifier", "grpc")
    caller = Caller(ep, "grpc", "classifier", inputs)
    try:
        for _ in range(6):
            caller.call()
    finally:
        caller.close()
    after = settled(
        lambda: metrics.scrape(ep.metrics_url),
        lambda now: metrics.delta(before, now).get("classifier", metrics.ModelMetrics()).success >= 6,
    )
    d = metrics.delta(before, after)["classifier"]
    assert d.success == 6 and d.inferences == 6 and 1 <= d.executions <= 6
    assert d.compute_infer_us > 0 and d.pending == 0
    assert after.gpus == {}  # the embedded CPU server reports no GPU
