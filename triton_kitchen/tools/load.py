"""What load to make: one :class:`LoadSpec`, checked once when it is made, and the engine's limits.

Every run of :mod:`triton_kitchen.tools.bench` (and :func:`triton_kitchen.tools.stability.run_stable`,
:func:`triton_kitchen.tools.perf_analyzer.cross_check`) takes a spec; a load outside the limits is refused
here, with :class:`LoadSpecError` naming the setting, before any connection is opened. An open-loop spec's
send times come from :class:`Schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools.protocols import (
    COMPRESSIONS,
    DEFAULT_TIMEOUT_S,
    SHM_PROTOCOLS,
    base_protocol,
    check_bench_protocol,
    sample_inputs,
)

MAX_CONCURRENCY = 16  # per run: one student cannot starve a class
MAX_DURATION_S = 120.0
MAX_REQUESTS = 100_000
MAX_REQUEST_RATE = 2000.0  # open loop, requests/s
DISTRIBUTIONS = ("constant", "poisson")
DEFAULT_GRACE_S = 2.0


class LoadSpecError(KitchenError, ValueError):
    """A load outside the engine's limits, refused before anything starts: ``field`` names the setting (a
    :class:`LoadSpec` field), ``str()`` says what is allowed (the CLI words it with its own flag)."""

    default_code = "bad_load"

    def __init__(self, message: str, field: str) -> None:
        super().__init__(None, message)
        self.field = field


@dataclass(frozen=True)
class LoadSpec:
    """One bounded load: what to send, how hard, for how long. Checked once, here; every run takes one.

    Closed loop: ``concurrency`` workers, each sending its next request when the last one is answered. With
    ``request_rate`` the load is open loop, as perf_analyzer's ``--request-rate-range``: requests are scheduled
    at that rate (``distribution`` constant or poisson, perf_analyzer's ``--request-distribution``, ``seed``
    for poisson) and sent by up to ``concurrency`` workers. A run measures ``duration_s`` after ``warmup_s``,
    sends at most ``max_requests`` (None: the engine's cap; warm-up included), and ends by
    ``warmup_s + duration_s + grace_s`` whatever the server does; each call waits at most ``timeout_s``.
    ``inputs`` and ``output_names``: the request (None: the model's sample request, from its metadata).
    ``count_wire``: count wire bytes afterwards, in an untimed pass; ``server_side``: read the statistics API
    at the window's start and end (the server's own breakdown)."""

    model: str
    protocol: str = "grpc"
    concurrency: int = 1
    duration_s: float = 5.0
    max_requests: int | None = 10_000
    request_rate: float | None = None
    distribution: str = "constant"
    compression: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    warmup_s: float = 0.5
    grace_s: float = DEFAULT_GRACE_S
    count_wire: bool = False
    server_side: bool = True
    seed: int = 0
    inputs: dict[str, np.ndarray] | None = field(default=None, compare=False, repr=False)
    output_names: list[str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        try:
            check_bench_protocol(self.protocol)
        except ValueError as exc:
            raise LoadSpecError(str(exc), "protocol") from None
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise LoadSpecError(f"concurrency must be 1..{MAX_CONCURRENCY}", "concurrency")
        if not 0 < self.duration_s <= MAX_DURATION_S:
            raise LoadSpecError(f"duration must be in (0, {MAX_DURATION_S:g}] s", "duration_s")
        if self.request_rate is not None and not 0 < self.request_rate <= MAX_REQUEST_RATE:
            raise LoadSpecError(
                f"request rate must be in (0, {MAX_REQUEST_RATE:g}] requests/s", "request_rate"
            )
        if self.distribution not in DISTRIBUTIONS:
            raise LoadSpecError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}", "distribution")
        cap = MAX_REQUESTS if self.max_requests is None else min(int(self.max_requests), MAX_REQUESTS)
        if cap < 1:
            raise LoadSpecError("max_requests must be >= 1", "max_requests")
        object.__setattr__(self, "max_requests", cap)  # the cap the run counts down
        if self.compression not in COMPRESSIONS:
            raise LoadSpecError(f"compression must be one of {COMPRESSIONS}", "compression")
        if self.compression and self.protocol in SHM_PROTOCOLS:
            raise LoadSpecError(
                "compression does not apply to shared memory: the tensors do not cross the socket",
                "compression",
            )
        if not self.timeout_s > 0:
            raise LoadSpecError("timeout must be > 0 s", "timeout_s")
        if self.warmup_s < 0 or self.grace_s < 0:
            raise LoadSpecError(
                "warm-up and grace must be >= 0 s", "warmup_s" if self.warmup_s < 0 else "grace_s"
            )


def with_inputs(
    endpoint: Endpoint, spec: LoadSpec, protocol: str | None = None, timeout: float = DEFAULT_TIMEOUT_S
) -> LoadSpec:
    """``spec`` with the model's sample request (its metadata read over ``protocol``, by default the spec's
    own without shared memory), unless it brings a request of its own; raises ProtocolError."""
    if spec.inputs is not None:
        return spec
    info, inputs = sample_inputs(
        endpoint, spec.model, protocol or base_protocol(spec.protocol), timeout=timeout
    )
    return replace(spec, inputs=inputs, output_names=spec.output_names or [o.name for o in info.outputs])


class Schedule:
    """Open-loop send times: every 1/rate s (constant), or exponential gaps (poisson), seeded."""

    def __init__(self, rate: float, distribution: str, t0: float, seed: int) -> None:
        self.gap = 1.0 / rate
        self.poisson = distribution == "poisson"
        self.rng = np.random.default_rng(seed)
        self.t = t0

    def next(self) -> float:
        at = self.t
        self.t += self.rng.exponential(self.gap) if self.poisson else self.gap
        return at
