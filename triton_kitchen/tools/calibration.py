"""Calibrate the batching simulator from the live server.

Compute time per batch size comes from the statistics API's ``batch_stats``: what the server has already done
when there is enough of it, else a short calibration load that sends requests of each batch size one at a time
(so every request is one execution of that size, whatever the batcher's settings). The time a request spends
outside the server (client, network, serialization) is measured at concurrency 1: the client's mean latency
minus the server's own per-request time in the same window.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.simulator import BatcherConfig, ServiceModel, simulate

MIN_EXECUTIONS = 20  # per batch size, for the statistics already there to count
CALIBRATION_S = 0.8  # per batch size of the calibration load


class CalibrationError(KitchenError):
    """The model cannot be simulated (``no_batching``: max_batch_size 0), or the server gave nothing to
    calibrate from (``no_statistics``, ``load_failed``)."""

    source = "calibration"


def batcher_config(model_config: dict) -> BatcherConfig:
    """The batcher's settings of a loaded config (JSON as Triton returns it)."""
    max_batch = int(model_config.get("max_batch_size", 0) or 0)
    if max_batch < 1:
        raise CalibrationError(
            "no_batching", f"{model_config.get('name')} has max_batch_size 0: it does not batch"
        )
    dyn = model_config.get("dynamic_batching")
    groups = model_config.get("instance_group") or [{}]
    instances = sum(int(g.get("count", 1) or 1) for g in groups)
    return BatcherConfig(
        max_batch_size=max_batch,
        dynamic_batching=dyn is not None,
        preferred_batch_sizes=tuple(int(p) for p in (dyn or {}).get("preferred_batch_size", []) or []),
        max_queue_delay_us=int((dyn or {}).get("max_queue_delay_microseconds", 0) or 0),
        instances=max(1, instances),
    )


def assumed_parallelism(model_config: dict, embedded: bool) -> float | None:
    """How many executions run at full speed at once: on the embedded CPU server, the cores over the threads one
    execution uses (the config's ``intra_op_threads`` parameter, else 1); None (no limit) for a GPU or a remote
    server whose cores we cannot see. An assumption, and labelled as one."""
    kinds = {g.get("kind", "KIND_CPU") for g in model_config.get("instance_group") or [{}]}
    if not embedded or "KIND_GPU" in kinds:
        return None
    threads = model_config.get("parameters", {}).get("intra_op_threads", {}).get("string_value", "1")
    try:
        per_execution = max(1, int(threads))
    except ValueError:
        per_execution = 1
    return max(1.0, (os.cpu_count() or 1) / per_execution)


@dataclass
class Calibration:
    model: str
    config: BatcherConfig
    batch_ms: dict[int, float]  # measured: compute (input + infer + output) per execution of each size
    executions: dict[int, int]  # how many executions each figure averages
    outside_ms: float  # measured at concurrency 1
    server_ms_at_1: float  # the server's own time per request at concurrency 1
    client_ms_at_1: float
    parallelism: float | None  # assumed (see assumed_parallelism)
    sources: dict[int, str] = field(default_factory=dict)  # batch size -> "statistics" | "calibration load"
    # assumed: the app's load engine is a Python client whose threads take turns at the GIL for their own work
    client_parallelism: int | None = 1
    outside_jitter: float = 0.0  # measured: the spread of the client's latency at concurrency 1 (std / mean)

    def service(self) -> ServiceModel:
        return ServiceModel(
            dict(self.batch_ms),
            self.outside_ms,
            self.parallelism,
            self.client_parallelism,
            self.outside_jitter,
        )

    def to_json(self) -> dict:
        return {
            "batch_ms": {int(k): v for k, v in sorted(self.batch_ms.items())},
            "executions": {int(k): v for k, v in sorted(self.executions.items())},
            "sources": {int(k): v for k, v in sorted(self.sources.items())},
            "outside_ms": self.outside_ms,
            "parallelism_assumed": self.parallelism,
            "client_parallelism_assumed": self.client_parallelism,
            "outside_jitter": self.outside_jitter,
        }


def _batched(inputs: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
    return {name: np.repeat(a[:1], size, axis=0) for name, a in inputs.items()}


@dataclass
class _Window:
    latencies_ms: list[float]
    before: server_stats.Snapshot
    after: server_stats.Snapshot


def _run(
    endpoint: Endpoint, model: str, inputs, protocol: str, duration_s: float, warmup: int = 3
) -> _Window:
    """One request at a time for ``duration_s``, after ``warmup`` calls; the statistics snapshots bracket
    exactly the timed calls, so client and server figures cover the same requests."""
    from triton_kitchen.tools.protocols import Caller, ProtocolError

    caller = Caller(endpoint, protocol, model, inputs)
    try:
        for _ in range(warmup):
            caller.call()
        before = server_stats.snapshot(endpoint)
        latencies: list[float] = []
        end = time.perf_counter() + duration_s
        while time.perf_counter() < end and len(latencies) < 5000:
            latencies.append(caller.call().latency_ms)
        time.sleep(server_stats.SETTLE_S)
        after = server_stats.snapshot(endpoint)
    except ProtocolError as exc:
        raise CalibrationError("load_failed", str(exc)) from exc
    finally:
        caller.close()
    return _Window(latencies, before, after)


def calibrate(
    endpoint: Endpoint,
    model: str,
    protocol: str = "grpc",
    sizes: tuple[int, ...] | None = None,
    duration_s: float = CALIBRATION_S,
    use_existing: bool = True,
) -> Calibration:
    """Measure what the simulator needs; see the module's docstring. ``sizes``: batch sizes to time (default
    1, 2, 4, ... up to max_batch_size, and max_batch_size itself)."""
    from triton_kitchen.tools.protocols import sample_inputs

    try:
        cfg_json = kserve.model_config(endpoint, model)
        existing = server_stats.snapshot(endpoint)
    except kserve.KServeError as exc:
        raise CalibrationError("no_statistics", str(exc)) from exc
    config = batcher_config(cfg_json)
    if sizes is None:
        sizes = tuple(sorted({min(2**i, config.max_batch_size) for i in range(8)}))
    _, inputs = sample_inputs(endpoint, model, "http-binary" if protocol.startswith("http") else "grpc")

    # concurrency 1, batch 1: the time outside the server, and batch size 1's compute time
    one = _run(endpoint, model, _batched(inputs, 1), protocol, duration_s)
    before, after = one.before, one.after
    window = server_stats.model_delta(before, after, model)
    client_mean = float(np.mean(one.latencies_ms)) if one.latencies_ms else 0.0
    server_mean = window.server_ms or 0.0
    batch_ms: dict[int, float] = {}
    executions: dict[int, int] = {}
    sources: dict[int, str] = {}
    for size, (count, ms) in server_stats.batch_compute_ms(before, after, model).items():
        if size == 1:
            batch_ms[1], executions[1], sources[1] = ms, count, "calibration load"

    lifetime = server_stats.batch_compute_ms({}, existing, model) if use_existing else {}
    for size in sizes:
        if size in batch_ms:
            continue
        count, ms = lifetime.get(size, (0, 0.0))
        if count >= MIN_EXECUTIONS:
            batch_ms[size], executions[size], sources[size] = ms, count, "statistics"
            continue
        run = _run(endpoint, model, _batched(inputs, size), protocol, duration_s)
        measured = server_stats.batch_compute_ms(run.before, run.after, model).get(size)
        if measured:
            batch_ms[size], executions[size], sources[size] = measured[1], measured[0], "calibration load"
    if not batch_ms:
        raise CalibrationError("no_statistics", f"{model}: the statistics API reported no executions")
    return Calibration(
        model=model,
        config=config,
        batch_ms=batch_ms,
        executions=executions,
        outside_ms=max(0.0, client_mean - server_mean),
        server_ms_at_1=server_mean,
        client_ms_at_1=client_mean,
        parallelism=assumed_parallelism(cfg_json, endpoint.embedded),
        sources=sources,
        outside_jitter=min(1.0, float(np.std(one.latencies_ms) / client_mean)) if client_mean else 0.0,
    )


def batcher_for(settings, max_batch_size: int) -> BatcherConfig:
    """The simulator's config for the batching lab's settings (``batch_runs.BatchingSettings``)."""
    return BatcherConfig(
        max_batch_size=max_batch_size,
        dynamic_batching=bool(settings.enabled),
        preferred_batch_sizes=tuple(sorted(settings.preferred_batch_sizes)) if settings.enabled else (),
        max_queue_delay_us=int(settings.max_queue_delay_us) if settings.enabled else 0,
        instances=int(settings.instance_count),
    )


def predict(
    cal: Calibration,
    settings,
    concurrency: int | None = None,
    rate_rps: float | None = None,
    requests: int = 4000,
    seed: int = 0,
) -> dict:
    """What the simulator, calibrated on this server, predicts for the lab's ``settings`` (simulated)."""
    config = batcher_for(settings, cal.config.max_batch_size)
    result = simulate(
        config,
        cal.service(),
        concurrency=concurrency,
        rate_rps=rate_rps,
        requests=requests,
        distribution="poisson" if rate_rps else "constant",
        seed=seed,
    )
    return result.summary
