"""One load under a batching setting: reload the classifier with the setting (:mod:`override`), run a bounded
load (:func:`bench.run_bench`), and read how Triton batched it inside the measured window (the statistics API's
``batch_stats``). The batching lab compares batching off and on with it, chapter 9 compares instance counts.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.override import (
    MAX_INSTANCES,
    MAX_QUEUE_DELAY_US,
    MODEL,
    BatchingError,
    check_override,
    load_model,
    overridden,
)
from triton_kitchen.tools.bench import BenchProgress, run_bench
from triton_kitchen.tools.load import LoadSpec
from triton_kitchen.tools.protocols import image_tensor, sample_jpeg

SETTLE_S = 0.5

WARMUP_S = 1.0  # each setting's warm-up; its executions are left out of the histogram


@dataclass
class BatchingSettings:
    enabled: bool = True
    max_queue_delay_us: int = 2000
    # none by default: Triton's guidance is to start from ``dynamic_batching { }`` and raise the delay
    # (model_configuration.md, "Preferred batch sizes should not be used for most models")
    preferred_batch_sizes: list[int] = field(default_factory=list)
    instance_count: int = 1

    def label(self) -> str:
        if not self.enabled:
            return f"off, {self.instance_count} instance(s)"
        return (
            f"delay {self.max_queue_delay_us} us, preferred {self.preferred_batch_sizes or '-'}, "
            f"{self.instance_count} instance(s)"
        )


def config_override(base: dict, settings: BatchingSettings) -> dict:
    """``base`` (the model config as JSON) with the lab's batching settings applied."""
    max_batch = int(base.get("max_batch_size", 0) or 0)
    if max_batch < 1:
        raise BatchingError(
            f"{base.get('name')} has max_batch_size {max_batch}: it cannot batch", "bad_settings"
        )
    if not 1 <= settings.instance_count <= MAX_INSTANCES:
        raise BatchingError(f"instance count must be 1..{MAX_INSTANCES}", "bad_settings")
    if not 0 <= settings.max_queue_delay_us <= MAX_QUEUE_DELAY_US:
        raise BatchingError(f"max_queue_delay_microseconds must be 0..{MAX_QUEUE_DELAY_US}", "bad_settings")
    bad = [b for b in settings.preferred_batch_sizes if not 1 <= b <= max_batch]
    if bad:
        raise BatchingError(
            f"preferred_batch_size {bad} outside 1..max_batch_size ({max_batch})", "bad_settings"
        )
    cfg = copy.deepcopy(base)
    if settings.enabled:
        cfg["dynamic_batching"] = {
            "preferred_batch_size": sorted(set(settings.preferred_batch_sizes)),
            "max_queue_delay_microseconds": int(settings.max_queue_delay_us),
        }
    else:
        cfg.pop("dynamic_batching", None)
    groups = cfg.get("instance_group") or [{"kind": "KIND_CPU"}]
    group = {k: v for k, v in groups[0].items() if k in ("kind", "gpus")}
    group["count"] = int(settings.instance_count)
    cfg["instance_group"] = [group]
    check_override(base, cfg)
    return cfg


def batch_stats(endpoint: Endpoint, model: str = MODEL, timeout: float = 10.0) -> dict[int, int]:
    """Executions per batch size so far (``batch_stats[].compute_infer.count``)."""
    stats = kserve.statistics(endpoint, model, timeout)
    out: dict[int, int] = {}
    for entry in stats.get("model_stats", []):
        for b in entry.get("batch_stats", []):
            size = int(b["batch_size"])
            out[size] = out.get(size, 0) + int(b.get("compute_infer", {}).get("count", 0))
    return out


def stats_delta(before: dict[int, int], after: dict[int, int]) -> dict[int, int]:
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}
    return {k: v for k, v in sorted(delta.items()) if v > 0}


@dataclass
class ExperimentResult:
    settings: BatchingSettings
    concurrency: int
    throughput_rps: float
    latency_ms: dict[str, float | None]
    requests: int
    errors: int
    batch_histogram: dict[int, int]  # batch size -> executions inside the measured window (warm-up excluded)
    error_messages: list[str] = field(default_factory=list)
    server: dict | None = (
        None  # Triton's own per-request split of the window (BenchResult.analysis()["server"])
    )
    littles_law: dict | None = None  # C / throughput vs the measured mean latency
    mean_latency_ms: float | None = None
    prediction: dict | None = None  # the simulator's, calibrated on this server (simulated, not measured)
    completions_s: list[float] = field(default_factory=list, repr=False)  # each answer's time in the window
    window_s: float = 0.0  # the measured window's length

    @property
    def executions(self) -> int:
        return sum(self.batch_histogram.values())

    @property
    def images(self) -> int:
        """Requests Triton executed inside the window (sum of batch size x executions): comparable with
        ``requests``, up to the few in flight at the window's two edges."""
        return sum(k * v for k, v in self.batch_histogram.items())

    @property
    def mean_batch_size(self) -> float | None:
        n = self.executions
        return sum(k * v for k, v in self.batch_histogram.items()) / n if n else None

    def to_dict(self) -> dict:
        d = asdict(self)
        del d["completions_s"]  # hundreds of times: what they show is in the comparison's "stability"
        d["batch_histogram"] = {str(k): v for k, v in self.batch_histogram.items()}
        d.update(
            executions=self.executions,
            images=self.images,
            mean_batch_size=self.mean_batch_size,
            label=self.settings.label(),
        )
        return d


def classifier_inputs() -> dict[str, np.ndarray]:
    """The classifier's FP32 [1, 3, 224, 224] input: the sample photo, preprocessed on the client."""
    return {"input": image_tensor(sample_jpeg())}


def run_setting(
    endpoint: Endpoint,
    original: dict,
    settings: BatchingSettings,
    concurrency: int,
    duration_s: float,
    protocol: str,
    stop,
    progress,
    model: str,
    after_load: Callable[[], None] | None = None,
) -> ExperimentResult:
    load_model(endpoint, model, config_override(original, settings))
    time.sleep(SETTLE_S)  # the replaced instance shuts down in the background: let it go first
    if after_load is not None:
        after_load()
    # The histogram covers the same window as the bench's counts: statistics read when the warm-up ends
    # and when the measuring ends (timers, as run_bench times its window), not around the whole call.
    snaps: dict[str, dict[int, int]] = {}

    def snapshot(name: str) -> None:
        try:
            snaps[name] = batch_stats(endpoint, model)
        except kserve.KServeError:
            pass  # the fallbacks below

    at_call = batch_stats(endpoint, model)
    timers = [
        threading.Timer(at, snapshot, (name,))
        for name, at in (("start", WARMUP_S), ("end", WARMUP_S + duration_s))
    ]
    for timer in timers:
        timer.daemon = True
        timer.start()
    try:
        spec = LoadSpec(
            model,
            protocol,
            concurrency,
            duration_s,
            inputs=classifier_inputs(),
            output_names=["logits"],
            warmup_s=WARMUP_S,
        )
        r = run_bench(endpoint, spec, stop=stop, progress=progress)
    finally:
        for timer in timers:
            timer.cancel()
            timer.join(5.0)  # a snapshot being read right now
    after = snaps["end"] if "end" in snaps else batch_stats(endpoint, model)  # stopped early: it ended now
    if "start" in snaps:
        before = snaps["start"]
    else:  # stopped during the warm-up (nothing measured), or the read failed (warm-up counted)
        before = at_call if "end" in snaps else after
    analysis = r.analysis()
    return ExperimentResult(
        settings,
        concurrency,
        r.throughput_rps,
        r.latency_ms,
        r.requests,
        r.errors,
        stats_delta(before, after),
        r.error_messages,
        server=analysis["server"],
        littles_law=analysis["littles_law"],
        mean_latency_ms=r.mean_latency_ms,
        completions_s=r.completions_s,
        window_s=r.window_s,
    )


def run_experiment(
    endpoint: Endpoint,
    settings: BatchingSettings,
    concurrency: int = 8,
    duration_s: float = 3.0,
    protocol: str = "grpc",
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
    model: str = MODEL,
) -> ExperimentResult:
    """One setting: reload, bounded load, batch histogram; the original config is restored after."""
    with overridden(endpoint, model) as original:
        return run_setting(
            endpoint, original, settings, concurrency, duration_s, protocol, stop, progress, model
        )


def compare_settings(
    endpoint: Endpoint,
    settings: list[BatchingSettings],
    concurrency: int = 8,
    duration_s: float = 3.0,
    protocol: str = "grpc",
    stop: threading.Event | None = None,
    progress: Callable[[int, BenchProgress], None] | None = None,
    model: str = MODEL,
) -> list[ExperimentResult]:
    """The same load under each of ``settings`` in turn (chapter 9 compares instance counts this way), the
    original config restored afterwards; a stop ends the series early (the results so far)."""
    results: list[ExperimentResult] = []
    with overridden(endpoint, model) as original:
        for i, s in enumerate(settings):
            if stop is not None and stop.is_set():
                break
            cb = (lambda p, i=i: progress(i, p)) if progress else None
            results.append(
                run_setting(endpoint, original, s, concurrency, duration_s, protocol, stop, cb, model)
            )
    return results
