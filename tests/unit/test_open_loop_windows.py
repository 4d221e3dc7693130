"""Open-loop windows draw fresh arrivals: a Poisson run's windows are not one realisation sent again.

With one seed for every window, every window sent the same arrivals (``default_rng(0)`` gives 14 arrivals in the
first second at 20/s), so the achieved rate sat 14-38 % below the request and the windows always agreed ("stable",
0.0 % spread). Each window is now seeded with the run's seed plus its index. No server: ``run_bench`` is replaced
by a recorder that schedules the window's arrivals as the engine does.
"""

from __future__ import annotations

import numpy as np

from triton_kitchen.tools import stability
from triton_kitchen.tools.bench import BenchResult
from triton_kitchen.tools.load import LoadSpec, Schedule

RATE, WINDOW_S = 20.0, 5.0


def _arrivals(spec: LoadSpec) -> int:
    schedule = Schedule(spec.request_rate, spec.distribution, 0.0, spec.seed)
    n = 0
    while schedule.next() < WINDOW_S:
        n += 1
    return n


def _windows(monkeypatch, seed: int = 0) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []

    def fake_run_bench(endpoint, spec, stop=None, progress=None):
        n = _arrivals(spec)
        seen.append((spec.seed, n))
        return BenchResult(
            protocol=spec.protocol,
            model=spec.model,
            concurrency=spec.concurrency,
            requests=n,
            errors=0,
            throughput_rps=n / WINDOW_S,
            latency_ms={"p50": 5.0, "p90": 5.0, "p99": 5.0},
            request_bytes=0,
            response_bytes=0,
            wire_bytes_sent=None,
            wire_bytes_received=None,
            window_s=WINDOW_S,
            stop_reason="duration",
            latencies_ms=[5.0] * n,
            request_rate=spec.request_rate,
            distribution=spec.distribution,
        )

    monkeypatch.setattr(stability, "run_bench", fake_run_bench)
    monkeypatch.setattr(stability, "with_inputs", lambda endpoint, spec: spec)
    spec = LoadSpec(
        "m", "grpc", 8, WINDOW_S, request_rate=RATE, distribution="poisson", server_side=False, seed=seed
    )
    stability.run_stable(None, spec, max_windows=8)
    return seen


def test_each_poisson_window_draws_its_own_arrivals(monkeypatch):
    seen = _windows(monkeypatch)
    seeds = [s for s, _ in seen]
    assert seeds == list(range(len(seen)))  # the run's seed plus the window's index
    counts = [n for _, n in seen]
    assert len(set(counts)) > 1, f"every window sent the same arrivals: {counts}"


def test_the_run_seed_still_makes_a_run_reproducible(monkeypatch):
    first = _windows(monkeypatch, seed=7)
    again = _windows(monkeypatch, seed=7)
    assert first == again and first[0][0] == 7


def test_fresh_windows_offer_the_requested_rate_on_average():
    # 200 windows of fresh arrivals: the mean is the requested rate (one seed gave 14/20 to 101/120 below it)
    counts = [_arrivals(LoadSpec("m", request_rate=RATE, distribution="poisson", seed=i)) for i in range(200)]
    assert abs(np.mean(counts) / WINDOW_S - RATE) < 0.05 * RATE
