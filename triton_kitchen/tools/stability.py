"""Stable measurements, perf_analyzer's way: measure windows until the last three agree.

perf_analyzer repeats its measurement window until three in a row agree within ``--stability-percentage``
(10%) on throughput and latency, and reports those three. :func:`run_stable` does the same with
:func:`triton_kitchen.tools.bench.run_bench`: a run that never settles is reported as unstable, with every window's
figures, instead of as one number that the next run would contradict.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.bench import (
    BenchProgress,
    BenchResult,
    percentiles,
    run_bench,
    set_wire_totals,
    wire_pass,
)
from triton_kitchen.tools.load import LoadSpec, with_inputs
from triton_kitchen.tools.protocols import ProtocolError

STABILITY_PCT = 10.0  # perf_analyzer's default --stability-percentage
STABLE_WINDOWS = 3  # the last three windows must agree (perf_analyzer's rule)
MAX_WINDOWS = 6


@dataclass
class Stability:
    stable: bool
    windows: list[dict]  # each window's throughput_rps and mean_latency_ms, in order
    spread: dict[str, float | None]  # over the last three: (max - min) / mean, in percent

    def to_json(self) -> dict:
        return {"stable": self.stable, "windows": self.windows, "spread_pct": self.spread}


def _spread(values: list[float]) -> float | None:
    mean = float(np.mean(values)) if values else 0.0
    return (max(values) - min(values)) / mean * 100 if mean > 0 else None


def window_spread(windows: list[BenchResult]) -> dict[str, float | None]:
    return {
        "throughput": _spread([w.throughput_rps for w in windows]),
        "latency": _spread([w.mean_latency_ms or 0.0 for w in windows]),
    }


def merge_windows(windows: list[BenchResult]) -> BenchResult:
    """One result from consecutive windows: their requests, errors and latencies pooled, throughput over
    their summed length, the server's breakdown from the first window's start to the last one's end."""
    last = windows[-1]
    merged = BenchResult(
        last.protocol,
        last.model,
        last.concurrency,
        0,
        0,
        0.0,
        percentiles([]),
        0,
        0,
        last.wire_bytes_sent,
        last.wire_bytes_received,
        compression=last.compression,
        request_rate=last.request_rate,
        distribution=last.distribution,
    )
    for w in windows:
        merged.requests += w.requests
        merged.errors += w.errors
        merged.request_bytes += w.request_bytes
        merged.response_bytes += w.response_bytes
        merged.shm_bytes += w.shm_bytes
        merged.completions_s += [merged.window_s + c for c in w.completions_s]  # the windows end to end
        merged.window_s += w.window_s
        merged.latencies_ms += w.latencies_ms
        merged.late += w.late
        merged.abandoned += w.abandoned
        merged.error_messages += [m for m in w.error_messages if m not in merged.error_messages]
    ok = len(merged.latencies_ms)
    merged.throughput_rps = ok / merged.window_s if merged.window_s > 0 else 0.0
    merged.latency_ms = percentiles(merged.latencies_ms)
    merged.stop_reason = last.stop_reason
    merged.wire, merged.wire_counted = last.wire, last.wire_counted
    first = windows[0]
    if first.snapshots and last.snapshots and first.server is not None:
        composing = list(last.server.per_model) if last.server else []
        merged.server = server_stats.breakdown(first.snapshots[0], last.snapshots[1], last.model, composing)
        merged.snapshots = (first.snapshots[0], last.snapshots[1])
    else:
        merged.server, merged.server_note = last.server, last.server_note
    return merged


def run_stable(
    endpoint: Endpoint,
    spec: LoadSpec,
    max_windows: int = MAX_WINDOWS,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
) -> tuple[BenchResult, Stability]:
    """perf_analyzer's stability rule: warm up (the spec's ``warmup_s``), then measure windows of the spec's
    ``duration_s`` until the last three agree within 10% on throughput and on mean latency, at most
    ``max_windows``. Returns the last three windows merged (fewer when the run ended early) and whether they
    were stable, with every window's figures. With the spec's ``count_wire``, wire bytes are counted once,
    untimed, after every window."""
    each = replace(spec, count_wire=False)
    try:  # one request for every window (and for the wire count)
        each = with_inputs(endpoint, each)
    except ProtocolError:  # run_bench reports a dead or wrong server its own way
        r = run_bench(endpoint, each, stop=stop, progress=progress)
        return r, Stability(False, [], {"throughput": None, "latency": None})
    windows: list[BenchResult] = []
    stable = False
    for i in range(max(1, max_windows)):
        # each window starts its workers afresh: a short warm-up refills the pipeline first (requests that
        # started before the window would otherwise be missing from it, and Little's law would show the gap)
        refill = (
            spec.warmup_s if i == 0 else min(1.0, max(0.2, 2 * (windows[-1].mean_latency_ms or 0) / 1000))
        )
        # open loop: each window draws its own arrivals (the run's seed plus the window's index); one seed for
        # every window would send the same realisation each time, and the windows would agree by construction
        r = run_bench(
            endpoint, replace(each, warmup_s=refill, seed=spec.seed + i), stop=stop, progress=progress
        )
        windows.append(r)
        if r.stop_reason in ("stopped", "deadline", "error") or not r.throughput_rps or r.errors:
            break
        if len(windows) >= STABLE_WINDOWS:
            if all(_within(w, windows[-STABLE_WINDOWS:]) for w in windows[-STABLE_WINDOWS:]):
                stable = True
                break
    tail = windows[-STABLE_WINDOWS:]
    merged = merge_windows(tail)
    if spec.count_wire and merged.throughput_rps and not merged.abandoned:
        # untimed, after every window: bytes per request, as run_bench counts them
        wire = wire_pass(endpoint, each, [spec.protocol]).get(spec.protocol)
        if wire is not None:
            # every answered call of the merged windows, warm-ups included (the scope of request_bytes): each
            # carried the same request, so the payload total divided by one call's payload counts them
            answered = (
                round(merged.request_bytes / wire.request_bytes)
                if wire.request_bytes
                else len(merged.latencies_ms)
            )
            set_wire_totals(merged, wire, answered)
    summary = [{"throughput_rps": w.throughput_rps, "mean_latency_ms": w.mean_latency_ms} for w in windows]
    return merged, Stability(stable, summary, window_spread(tail))


def _within(w: BenchResult, group: list[BenchResult]) -> bool:
    """perf_analyzer's check: every window within STABILITY_PCT of the group's mean, throughput and latency."""
    for value, values in (
        (w.throughput_rps, [g.throughput_rps for g in group]),
        (w.mean_latency_ms or 0.0, [g.mean_latency_ms or 0.0 for g in group]),
    ):
        mean = float(np.mean(values))
        if mean <= 0 or abs(value - mean) / mean * 100 > STABILITY_PCT:
            return False
    return True


# -- a comparison of two settings (the batching lab): how far each setting's throughput moved within its run --
@dataclass
class GainStability:
    """Two settings' throughputs, each measured in ``parts`` equal windows of its run: each one's spread over its
    windows ((max - min) / mean, percent) and the gain (second over first) that the extreme windows allow."""

    stable: bool  # both spreads within STABILITY_PCT (perf_analyzer's rule)
    parts: int
    window_s: float
    spread_pct: tuple[float | None, float | None]  # (first setting, second)
    gain_low: float | None  # the lowest second-window rate over the highest first-window rate
    gain_high: float | None

    def to_json(self) -> dict:
        return {
            "stable": self.stable,
            "parts": self.parts,
            "window_s": self.window_s,
            "spread_pct": list(self.spread_pct),
            "gain_range": [self.gain_low, self.gain_high],
        }


def window_rates(completions_s: list[float], window_s: float, parts: int) -> list[float]:
    """Throughput (answers per second) in each of ``parts`` equal windows of a run ``window_s`` long, from
    its answers' completion times (seconds after the run's window opened)."""
    if parts < 1 or window_s <= 0:
        return []
    each = window_s / parts
    counts = [0] * parts
    for c in completions_s:
        if 0 <= c <= window_s:
            counts[min(parts - 1, int(c / each))] += 1
    return [n / each for n in counts]


def gain_stability(
    first: tuple[list[float], float], second: tuple[list[float], float], parts: int | None = None
) -> GainStability:
    """``first`` and ``second``: (completion times, window length) of two runs. ``parts``: windows per run
    (default: one a second, at least STABLE_WINDOWS)."""
    length = min(first[1], second[1])
    n = parts or max(STABLE_WINDOWS, round(length))
    a, b = window_rates(*first, n), window_rates(*second, n)
    spread = (_spread(a), _spread(b))
    stable = all(s is not None and s <= STABILITY_PCT for s in spread)
    low = min(b) / max(a) if a and b and max(a) > 0 else None
    high = max(b) / min(a) if a and b and min(a) > 0 else None
    return GainStability(stable, n, length / n if n else 0.0, spread, low, high)
