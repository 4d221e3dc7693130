"""Chapter 10's perf_analyzer drill without a server: its input data and its verdict."""

from __future__ import annotations

import base64

from triton_kitchen.labs import perf_split
from triton_kitchen.tools.perf_analyzer import PerfAnalyzerResult


def _run(rps: float, server: dict) -> PerfAnalyzerResult:
    return PerfAnalyzerResult("grpc", "cache_drill", 4, 100, rps, {"p50": 1.0}, [], server=server)


def test_varied_data_is_that_many_different_fp32_inputs():
    data = perf_split.varied_data(50)["data"]
    raw = {base64.b64decode(d["x"]["b64"]) for d in data}
    assert len(data) == len(raw) == 50 and all(len(r) == 16 for r in raw)


def test_the_verdict_and_the_queue_share():
    split = {"queue_ms": 120.0, "compute_input_ms": 0.1, "compute_infer_ms": 40.0, "compute_output_ms": 0.4}
    result = perf_split.SplitResult(_run(3700, {}), _run(24, split))
    assert result.outcome() == "cache" and round(result.queue_share(), 2) == 0.75
    assert perf_split.SplitResult(_run(30, {}), _run(24, {})).outcome() == "model"
    assert perf_split.SplitResult(_run(30, {}), _run(24, {})).queue_share() is None
