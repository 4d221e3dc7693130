"""The protocol lab's heavy runs, as a worker process runs them (:func:`triton_kitchen.tools.worker_process.
run_in_worker`): a bounded load over each chosen protocol, and a concurrency sweep. Each takes plain, picklable
arguments (the request is made here, in the worker, from the model's metadata and the chosen photo), sends its
progress through ``report`` and ends when ``stop`` is set. The measurements are :mod:`triton_kitchen.tools.bench`'s,
unchanged.

``report`` receives ``(protocol, None)`` as a protocol's load begins and ``(protocol, BenchProgress)`` as it goes
(:func:`load`); ``(step, steps, BenchProgress)`` for the sweep (:func:`sweep`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import bench, protocols
from triton_kitchen.tools.load import LoadSpec

INPUTS_FROM = "http-binary"  # the request's tensors are read from the model's metadata over this protocol


@dataclass(frozen=True)
class LoadAsk:
    """What the load tab asks for: the model, its photo (encoded bytes, None: the model's sample input), and
    the load."""

    model: str
    image: bytes | None
    compression: str | None
    concurrency: int = 1
    duration_s: float = 5.0
    max_requests: int | None = 10_000


def _spec(endpoint: Endpoint, ask: LoadAsk, **load) -> LoadSpec:
    info, arrays = protocols.sample_inputs(endpoint, ask.model, INPUTS_FROM, image=ask.image)
    return LoadSpec(
        ask.model,
        compression=ask.compression,
        inputs=arrays,
        output_names=[o.name for o in info.outputs],
        **load,
    )


def load(
    endpoint: Endpoint,
    ask: LoadAsk,
    chosen: list[str],
    *,
    report: Callable[[tuple], None],
    stop,
) -> bench.LoadComparison:
    """:func:`bench.compare_load` over ``chosen`` protocols, each run's progress reported as it goes."""
    spec = _spec(
        endpoint,
        ask,
        concurrency=ask.concurrency,
        duration_s=ask.duration_s,
        max_requests=ask.max_requests,
    )

    def progress_for(protocol: str):
        report((protocol, None))
        return lambda p: report((protocol, p))

    return bench.compare_load(endpoint, spec, list(chosen), stop=stop, progress_for=progress_for)


def sweep(
    endpoint: Endpoint,
    ask: LoadAsk,
    chosen: tuple[str, ...],
    levels: tuple[int, ...],
    *,
    report: Callable[[tuple], None],
    stop,
) -> list[bench.BenchResult]:
    """:func:`bench.sweep` over ``chosen`` protocols and concurrency ``levels``, ``ask.duration_s`` each."""
    spec = _spec(endpoint, ask, duration_s=ask.duration_s)
    return bench.sweep(
        endpoint, spec, tuple(chosen), tuple(levels), stop=stop, progress=lambda i, n, p: report((i, n, p))
    )
