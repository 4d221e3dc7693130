"""Chapter 10's perf_analyzer drill: NVIDIA's perf_analyzer (from tritonclient's wheel) against ``cache_drill`` (one
instance, 40 ms a run, response cache on) at concurrency 4, twice: with one input sent over and over (what
perf_analyzer does unless given data) and with many different inputs (``--input-data`` with several entries, which
it cycles through). The first measures the response cache; the second the model, and its server-side split
(queue, compute input, compute infer, compute output) shows where the time went.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from triton_kitchen.core.catalog import CACHE_DRILL
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.on_demand import ensure_loaded
from triton_kitchen.tools.perf_analyzer import PerfAnalyzerResult, run_perf_analyzer

CONCURRENCY = 4
VARIED_INPUTS = 400  # more than a run of ~4 s at ~25 requests/s sends: every request of the run is new
WINDOW_MS = 1000


def varied_data(n: int = VARIED_INPUTS) -> dict:
    """``--input-data`` JSON with ``n`` different random inputs for cache_drill's ``x`` (FP32 [4])."""
    rng = np.random.default_rng()
    return {
        "data": [
            {"x": {"b64": base64.b64encode(rng.random(4, dtype=np.float32).tobytes()).decode()}}
            for _ in range(n)
        ]
    }


@dataclass
class SplitResult:
    same: PerfAnalyzerResult  # one input, repeated
    varied: PerfAnalyzerResult  # VARIED_INPUTS different inputs

    def outcome(self) -> str:
        """``cache`` when the repeated input ran over 5x the throughput of the varied one, else ``model``."""
        return "cache" if self.same.throughput_rps > 5 * self.varied.throughput_rps else "model"

    def queue_share(self) -> float | None:
        """The varied run's queue time as a share of its server-side total (None without a split)."""
        parts = [
            self.varied.server.get(k)
            for k in ("queue_ms", "compute_input_ms", "compute_infer_ms", "compute_output_ms")
        ]
        if any(p is None for p in parts) or not sum(parts):
            return None
        return parts[0] / sum(parts)


def same_vs_varied(endpoint: Endpoint, model: str = CACHE_DRILL) -> SplitResult:
    """Two perf_analyzer runs over gRPC (about 4 s each); raises PerfAnalyzerError."""
    ensure_loaded(endpoint, model)  # loaded on first use, not at the server's start
    one = {"x": np.random.default_rng().random(4, dtype=np.float32)}
    same = run_perf_analyzer(endpoint, model, "grpc", CONCURRENCY, one, 0, window_ms=WINDOW_MS)
    varied = run_perf_analyzer(
        endpoint, model, "grpc", CONCURRENCY, one, 0, window_ms=WINDOW_MS, input_data=varied_data()
    )
    return SplitResult(same, varied)
