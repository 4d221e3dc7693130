"""The dynamic batching lab: reload the classifier with other batching settings, load it, and read
how Triton actually batched (the statistics API's ``batch_stats``).

Each experiment reloads ``classifier`` with a config override through the repository API
(``POST /v2/repository/models/classifier/load`` with ``parameters.config``, the restricted API's key
in the headers), runs a bounded load with :func:`triton_kitchen.bench.run_bench`, and reads the
statistics before and after. The original configuration is ALWAYS restored afterwards, on error too
(:func:`overridden`); only one experiment runs per server at a time (the model is shared by every
session of the app).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from triton_kitchen import kserve
from triton_kitchen.bench import BenchProgress, run_bench
from triton_kitchen.calibration import CalibrationError, predict
from triton_kitchen.calibration import calibrate as calibrate_server
from triton_kitchen.endpoint import Endpoint
from triton_kitchen.errors import KitchenError
from triton_kitchen.protocols import image_tensor, sample_jpeg

MODEL = "classifier"
MAX_INSTANCES = 4
MAX_QUEUE_DELAY_US = 100_000
LOAD_TIMEOUT_S = 180.0
SETTLE_S = 0.5
WARMUP_S = 1.0  # each setting's warm-up; its executions are left out of the histogram

# What a page may change, and on which models (security: nothing else of a config can be overridden,
# and the override never carries files, so no page can load a Python backend or upload code).
LAB_MODELS = (MODEL, "hflip")  # hflip: chapter 10 reloads it while it is being called (model_control)
SAFE_FIELDS = ("dynamic_batching", "instance_group")
SAFE_KINDS = {"KIND_CPU", "KIND_GPU", "KIND_AUTO"}

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class BatchingError(KitchenError):
    """The repository API refused a load (message verbatim from Triton), or the lab is busy. ``code``:
    "load_failed", "no_control_api", "busy", "restore_failed", "bad_settings"."""

    default_code = "load_failed"

    def __init__(self, message: str, code: str = "load_failed") -> None:
        super().__init__(code, message)


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


def current_config(endpoint: Endpoint, model: str = MODEL, timeout: float = 10.0) -> dict:
    """The config ``model`` is loaded with (raises kserve.KServeError)."""
    return kserve.model_config(endpoint, model, timeout)


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


def check_override(base: dict, cfg: dict) -> None:
    """Refuse an override of the loaded config ``base`` that changes anything but dynamic batching and
    the instance group (a total of at most MAX_INSTANCES CPU/GPU instances): backend, platform,
    parameters, model files, agents, inputs and outputs stay exactly as loaded from our repository."""
    changed = sorted(k for k in set(base) | set(cfg) if base.get(k) != cfg.get(k) and k not in SAFE_FIELDS)
    if changed:
        raise BatchingError(f"the lab may not change {', '.join(changed)}", "bad_settings")
    db = cfg.get("dynamic_batching")
    if db is not None:
        if not isinstance(db, dict):
            raise BatchingError("dynamic_batching must be a message", "bad_settings")
        delay = int(db.get("max_queue_delay_microseconds", 0) or 0)
        if not 0 <= delay <= MAX_QUEUE_DELAY_US:
            raise BatchingError(
                f"max_queue_delay_microseconds must be 0..{MAX_QUEUE_DELAY_US}", "bad_settings"
            )
    groups = cfg.get("instance_group") or []
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise BatchingError("instance_group must be a list of groups", "bad_settings")
    total = sum(int(g.get("count", 1) or 1) for g in groups)
    if any(g.get("kind", "KIND_CPU") not in SAFE_KINDS for g in groups) or not 1 <= total <= MAX_INSTANCES:
        raise BatchingError(
            f"instance_group: kind CPU/GPU/AUTO, 1..{MAX_INSTANCES} instances", "bad_settings"
        )


def load_model(
    endpoint: Endpoint, model: str = MODEL, config: dict | None = None, timeout: float = LOAD_TIMEOUT_S
) -> None:
    """(Re)load ``model`` through the repository API; ``config`` overrides config.pbtxt. Only the lab's
    models, only a config (never files), and only when its fields are a safe change of the loaded one."""
    if model not in LAB_MODELS:
        raise BatchingError(f"the labs only reload {', '.join(LAB_MODELS)}", "bad_settings")
    if config is not None:
        if config.get("name", model) != model:
            raise BatchingError(f"the override names {config.get('name')!r}, not {model!r}", "bad_settings")
        try:
            loaded = current_config(endpoint, model)
        except kserve.KServeError as exc:
            raise BatchingError(f"load {model}: cannot read the loaded config: {exc.detail}") from exc
        check_override(loaded, config)
    try:
        kserve.load_model(endpoint, model, config=config, timeout=timeout)
    except kserve.KServeError as exc:
        code = "no_control_api" if exc.code == "no_control_api" else "load_failed"
        raise BatchingError(f"load {model}: {exc.detail}", code) from exc


def restore(endpoint: Endpoint, original: dict, model: str = MODEL) -> None:
    """Reload ``model`` from its config.pbtxt; if that does not give back ``original`` exactly (someone loaded
    it with an override before us, or Triton kept ours), load ``original`` itself."""
    errors = []
    try:
        if current_config(endpoint, model) == original:
            return  # nothing was changed (the override was refused), or it is already back
    except kserve.KServeError as exc:
        errors.append(str(exc))
    try:
        load_model(endpoint, model)
        # the whole config, not only the batching lab's fields: a load without a config keeps the last
        # override when the files did not change (Triton 2.51), priority levels and queue policies included
        if current_config(endpoint, model) == original:
            return
    except (BatchingError, kserve.KServeError) as exc:
        errors.append(str(exc))
    try:
        load_model(endpoint, model, original)
    except BatchingError as exc:
        errors.append(str(exc))
        raise BatchingError(
            "could not restore the original config: " + "; ".join(errors), "restore_failed"
        ) from exc


@contextmanager
def overridden(endpoint: Endpoint, model: str = MODEL) -> Iterator[dict]:
    """Hold the lab for this server, yield the original config, and restore it on the way out —
    after success, error, stop, or a Streamlit rerun alike."""
    with _locks_guard:
        lock = _locks.setdefault(endpoint.http_url, threading.Lock())
    if not lock.acquire(blocking=False):
        raise BatchingError("another batching experiment is running on this server", "busy")
    try:
        original = current_config(endpoint, model)
        try:
            yield original
        finally:
            restore(endpoint, original, model)
    finally:
        lock.release()


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


def _run_one(
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
        r = run_bench(
            endpoint,
            model,
            protocol,
            concurrency,
            duration_s,
            inputs=classifier_inputs(),
            output_names=["logits"],
            warmup_s=WARMUP_S,
            count_wire=False,
            stop=stop,
            progress=progress,
        )
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
        return _run_one(
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
                _run_one(endpoint, original, s, concurrency, duration_s, protocol, stop, cb, model)
            )
    return results


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
            results[name] = _run_one(
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
    return {
        "off": off,
        "on": on,
        "throughput_ratio": ratio,
        "p99_ratio": p99_ratio,
        "concurrency": concurrency,
        "duration_s": duration_s,
        "protocol": protocol,
        "calibration": calibrated.get("cal"),
        "calibration_error": calibrated.get("error"),
    }


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
            r = run_bench(
                endpoint,
                model,
                protocol,
                workers,
                duration_s,
                inputs=inputs,
                output_names=["logits"],
                warmup_s=0.5,
                request_rate=float(rate),
                stop=stop,
                progress=cb,
                server_side=False,
            )
            sim = None
            if calibration is not None:
                sim = predict(calibration, settings, rate_rps=float(rate))
            points.append(LoadPoint(float(rate), r.throughput_rps, r.latency_ms, r.late, r.errors, sim))
    return points
