"""The dynamic batching lab: the same load with batching off, then on, and latency against offered load.

Each run reloads ``classifier`` with the lab's settings (:mod:`batch_runs`, through :mod:`override`: the
repository API with a config override), runs a bounded load and reads how Triton actually batched (the
statistics API's ``batch_stats``). The original configuration is ALWAYS restored afterwards, on error too
(:func:`override.overridden`); only one experiment runs per server at a time (the model is shared by every
session of the app).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.override import MODEL, load_model, overridden
from triton_kitchen.tools.batch_runs import (
    SETTLE_S,
    BatchingSettings,
    classifier_inputs,
    config_override,
    run_setting,
)
from triton_kitchen.tools.bench import BenchProgress, run_bench
from triton_kitchen.tools.calibration import CalibrationError, predict
from triton_kitchen.tools.calibration import calibrate as calibrate_server
from triton_kitchen.tools.load import LoadSpec
from triton_kitchen.tools.stability import gain_stability


def compare_batching(
    endpoint: Endpoint,
    settings: BatchingSettings | None = None,
    concurrency: int = 8,
    duration_s: float = 3.0,
    protocol: str = "grpc",
    stop: threading.Event | None = None,
    progress: Callable[[str, BenchProgress], None] | None = None,
    model: str = MODEL,
    calibrate: bool = False,
) -> dict:
    """The same load with batching off, then on (``settings``), same instance count; the measured
    throughput ratio on/off. The original config is restored afterwards. With ``calibrate``, the batching
    simulator is calibrated on the server as loaded for this run (its instance count: instances sharing the
    machine slow each other down) and each result carries its prediction for its setting (``prediction``:
    simulated, not measured); ``calibration`` is the calibration itself, or the error that prevented it."""
    settings = settings or BatchingSettings()
    off_settings = BatchingSettings(
        False, settings.max_queue_delay_us, list(settings.preferred_batch_sizes), settings.instance_count
    )
    results: dict = {}
    calibrated: dict = {}

    def calibrate_now() -> None:
        try:
            calibrated["cal"] = calibrate_server(endpoint, model, protocol, use_existing=False)
        except (CalibrationError, kserve.KServeError) as exc:
            calibrated["error"] = exc

    with overridden(endpoint, model) as original:
        for name, s in (("off", off_settings), ("on", settings)):
            if stop is not None and stop.is_set():
                break
            cb = (lambda p, name=name: progress(name, p)) if progress else None
            hook = calibrate_now if calibrate and name == "off" else None
            results[name] = run_setting(
                endpoint, original, s, concurrency, duration_s, protocol, stop, cb, model, hook
            )
            if "cal" in calibrated:
                results[name].prediction = predict(calibrated["cal"], s, concurrency=concurrency)
    off, on = results.get("off"), results.get("on")
    ratio = on.throughput_rps / off.throughput_rps if on and off and off.throughput_rps else None
    p99_ratio = (
        on.latency_ms["p99"] / off.latency_ms["p99"]
        if on and off and on.latency_ms["p99"] and off.latency_ms["p99"]
        else None
    )
    # how far each setting's throughput moved within its own run: a gain that the windows leave open is no gain
    stable = (
        gain_stability((off.completions_s, off.window_s), (on.completions_s, on.window_s)).to_json()
        if on and off and off.window_s and on.window_s
        else None
    )
    return {
        "off": off,
        "on": on,
        "throughput_ratio": ratio,
        "stability": stable,
        "p99_ratio": p99_ratio,
        "concurrency": concurrency,
        "duration_s": duration_s,
        "protocol": protocol,
        "calibration": calibrated.get("cal"),
        "calibration_error": calibrated.get("error"),
    }


def compare_batching_reported(
    endpoint: Endpoint,
    settings: BatchingSettings,
    concurrency: int,
    duration_s: float,
    *,
    report: Callable[[tuple], None],
    stop,
) -> dict:
    """:func:`compare_batching` as a worker process runs it (``tools.worker_process``), calibrated: its progress
    goes to ``report`` as ``(setting name, BenchProgress)``."""
    return compare_batching(
        endpoint,
        settings,
        concurrency,
        duration_s,
        stop=stop,
        progress=lambda name, p: report((name, p)),
        calibrate=True,
    )


@dataclass
class LoadPoint:
    """One offered rate: what the server did (measured) and what the simulator predicts (simulated)."""

    offered_rps: float
    throughput_rps: float
    latency_ms: dict[str, float | None]
    late: int
    errors: int
    simulated: dict | None = None


def offered_load(
    endpoint: Endpoint,
    settings: BatchingSettings,
    rates: list[float],
    duration_s: float = 2.0,
    protocol: str = "grpc",
    stop: threading.Event | None = None,
    progress: Callable[[int, int, BenchProgress], None] | None = None,
    calibration=None,
    model: str = MODEL,
    workers: int = 16,
) -> list[LoadPoint]:
    """Latency against offered load, open loop (constant rate, up to ``workers`` in flight), with ``settings``
    loaded; the original config is restored afterwards. Below saturation the throughput follows the offered
    rate; near it latency climbs steeply: the knee."""
    points: list[LoadPoint] = []
    with overridden(endpoint, model) as original:
        load_model(endpoint, model, config_override(original, settings))
        time.sleep(SETTLE_S)
        inputs = classifier_inputs()
        for i, rate in enumerate(rates):
            if stop is not None and stop.is_set():
                break
            cb = (lambda p, i=i: progress(i, len(rates), p)) if progress else None
            spec = LoadSpec(
                model,
                protocol,
                workers,
                duration_s,
                inputs=inputs,
                output_names=["logits"],
                warmup_s=0.5,
                request_rate=float(rate),
                server_side=False,
            )
            r = run_bench(endpoint, spec, stop=stop, progress=cb)
            sim = None
            if calibration is not None:
                sim = predict(calibration, settings, rate_rps=float(rate))
            points.append(LoadPoint(float(rate), r.throughput_rps, r.latency_ms, r.late, r.errors, sim))
    return points
