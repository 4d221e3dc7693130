"""Bounded load generation against a Triton model: the lab's load engine.

Every run is bounded three ways: a measuring duration, a request cap, and a hard wall-clock limit
(warm-up + duration + grace) that holds even when the server hangs: every call carries a timeout no
longer than the time left, workers are daemon threads, and workers still stuck at the deadline are
abandoned, not waited for. A run can be stopped at any time with a ``threading.Event``; a progress
callback, called from the caller's own thread, reports as it goes.

Timed requests always go straight to the server. Wire bytes (headers and framing included) are counted
only when asked (``count_wire``), in a separate short pass through a byte-counting proxy after the
timed run: the proxy's extra hops and pump threads would slow the very requests being timed.

The engine is a Python client (one connection per worker thread, see
:class:`triton_kitchen.tools.protocols.Caller`). :mod:`triton_kitchen.tools.perf_analyzer` checks its numbers against
NVIDIA's C++ ``perf_analyzer``; :mod:`triton_kitchen.cli.main` holds the ``bench`` subcommand.
"""

from __future__ import annotations

import csv
import io
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.protocols import (
    DEFAULT_TIMEOUT_S,
    PROTOCOLS,
    ProtocolError,
    base_protocol,
    check_bench_protocol,
    make_caller,
    measure_protocol,
    sample_inputs,
)

MAX_CONCURRENCY = 16  # per run: one student cannot starve a class
MAX_DURATION_S = 120.0
MAX_REQUESTS = 100_000
MAX_REQUEST_RATE = 2000.0  # open loop, requests/s
DISTRIBUTIONS = ("constant", "poisson")
LATE_S = 0.001  # an open-loop request sent more than this after its time was late
DEFAULT_GRACE_S = 2.0
ENGINE = "triton-kitchen (Python client)"
CONTRACT_KEYS = (
    "protocol",
    "model",
    "concurrency",
    "requests",
    "errors",
    "throughput_rps",
    "latency_ms",
    "request_bytes",
    "response_bytes",
    "wire_bytes_sent",
    "wire_bytes_received",
)
WIRE_NOT_COUNTED = "not_counted"
WIRE_SEPARATE_PASS = "separate_pass"  # counted in an untimed pass after the timed run, never while timing
WIRE_PASS_CALLS = 4  # counted calls of that pass, after one that opens the connection


@dataclass
class WireCount:
    """Bytes per request from the untimed counting pass: one connection through a CountingProxy."""

    calls: int  # calls averaged, on the open connection
    request_bytes: int  # payload per call, as encoded
    response_bytes: int
    sent: float  # wire bytes per call, connection already open
    received: float
    first_sent: int  # the call that opened the connection (TCP; gRPC's HTTP/2 preface and SETTINGS)
    first_received: int


@dataclass
class BenchProgress:
    done: int  # requests finished (ok or not), warm-up excluded
    errors: int
    elapsed_s: float  # since measuring began (negative while warming up)
    duration_s: float

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, self.elapsed_s / self.duration_s)) if self.duration_s > 0 else 1.0


@dataclass
class BenchResult:
    protocol: str
    model: str
    concurrency: int
    requests: int  # finished inside the measuring window, ok or not
    errors: int
    throughput_rps: float  # successful requests per second of the measuring window
    latency_ms: dict[str, float | None]  # p50, p90, p99 of successful requests
    # Bytes cover the whole run, warm-up included, so payload and wire totals count the same calls:
    request_bytes: int  # payload of every answered request, as encoded (HTTP body / gRPC protobuf)
    response_bytes: int
    # Socket bytes, headers and framing included; never counted while timing. With wire_counted ==
    # WIRE_SEPARATE_PASS: the per-call bytes of ``wire`` times the answered requests, one opening per worker.
    wire_bytes_sent: int | None
    wire_bytes_received: int | None
    window_s: float = 0.0
    stop_reason: str = ""  # "duration", "requests", "stopped", "deadline", "error"
    compression: str | None = None
    engine: str = ENGINE
    abandoned: int = 0  # workers still waiting on the server at the hard limit, left behind
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    error_messages: list[str] = field(default_factory=list)
    wire_counted: str = (
        WIRE_NOT_COUNTED  # how wire bytes were counted: WIRE_NOT_COUNTED or WIRE_SEPARATE_PASS
    )
    wire: WireCount | None = None  # the counting pass's bytes per request
    request_rate: float | None = None  # open loop: the offered rate (requests/s); None: closed loop
    distribution: str | None = None  # open loop: "constant" or "poisson"
    late: int = 0  # open loop: requests sent after their scheduled time (every worker was busy)
    server: server_stats.Breakdown | None = None  # what the server says it did in the window (measured)
    server_note: str = ""  # why there is no server breakdown (statistics refused, say)
    snapshots: tuple = field(default=(), repr=False)  # statistics at the window's start and end
    shm_bytes: int = 0  # http-shm, grpc-shm: tensor bytes through shared memory, same scope as request_bytes

    @property
    def mean_latency_ms(self) -> float | None:
        return float(np.mean(self.latencies_ms)) if self.latencies_ms else None

    def littles_law(self) -> dict | None:
        """Little's law, L = λW. Closed loop: C requests always in flight predict a mean latency of C / throughput;
        open loop: the offered rate times the mean latency is how many were in flight on average."""
        mean = self.mean_latency_ms
        if not self.throughput_rps or mean is None:
            return None
        if self.request_rate is None:
            predicted = self.concurrency / self.throughput_rps * 1000
            return {
                "in_flight": self.concurrency,
                "predicted_latency_ms": predicted,
                "measured_mean_latency_ms": mean,
                "gap": mean / predicted - 1,
            }
        return {
            "arrival_rate_rps": self.throughput_rps,
            "measured_mean_latency_ms": mean,
            "mean_in_flight": self.throughput_rps * mean / 1000,
        }

    def analysis(self) -> dict:
        """The why-layer fields of ``bench --json``: the server's breakdown and Little's law."""
        out: dict = {
            "server": self.server.to_json() if self.server else None,
            "littles_law": self.littles_law(),
            "mean_latency_ms": self.mean_latency_ms,
        }
        if self.server_note:
            out["server_note"] = self.server_note
        if self.protocol.endswith("-shm"):  # the tensors went through memory, not into request_bytes
            out["shm_bytes"] = self.shm_bytes
        if (
            self.wire is not None
        ):  # the untimed pass's bytes per request (its first call opened the connection)
            out["wire_per_request"] = asdict(self.wire)
        if self.request_rate is not None:
            out.update(request_rate=self.request_rate, distribution=self.distribution, late=self.late)
        return out

    def to_dict(self) -> dict:
        """The ``bench --json`` contract: exactly these keys."""
        d = asdict(self)
        return {k: d[k] for k in CONTRACT_KEYS}

    def to_row(self) -> dict:
        """A flat row for CSV: the contract plus how the run ended."""
        d = self.to_dict()
        lat = d.pop("latency_ms")
        d.update({f"latency_{k}_ms": v for k, v in lat.items()})
        d.update(
            window_s=self.window_s,
            stop_reason=self.stop_reason,
            compression=self.compression or "",
            engine=self.engine,
            abandoned=self.abandoned,
            wire_counted=self.wire_counted,
            wire_sent_per_request=self.wire.sent if self.wire else None,
            wire_received_per_request=self.wire.received if self.wire else None,
        )
        return d


def percentiles(values: list[float], qs=(50, 90, 99)) -> dict[str, float | None]:
    if not values:
        return {f"p{q}": None for q in qs}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": float(np.percentile(arr, q)) for q in qs}


def rows_to_csv(rows: list[dict]) -> str:
    if not rows:
        return ""
    buf = io.StringIO()
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    writer = csv.DictWriter(buf, fieldnames=keys)
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


@dataclass
class _Record:
    t_start: float
    t_end: float
    ok: bool
    latency_ms: float
    request_bytes: int = 0
    response_bytes: int = 0
    error: str = ""
    shm_bytes: int = 0


def run_bench(
    endpoint: Endpoint,
    model: str,
    protocol: str = "grpc",
    concurrency: int = 1,
    duration_s: float = 5.0,
    max_requests: int | None = 10_000,
    inputs: dict[str, np.ndarray] | None = None,
    output_names: list[str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    warmup_s: float = 0.5,
    grace_s: float = DEFAULT_GRACE_S,
    compression: str | None = None,
    count_wire: bool = False,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
    progress_every_s: float = 0.25,
    request_rate: float | None = None,
    distribution: str = "constant",
    server_side: bool = True,
    seed: int = 0,
) -> BenchResult:
    """Load ``model`` with ``concurrency`` closed-loop workers for ``duration_s`` (after ``warmup_s``).

    With ``request_rate`` the load is open loop, as perf_analyzer's ``--request-rate-range``: requests are
    scheduled at that rate (``distribution`` constant or poisson, perf_analyzer's ``--request-distribution``)
    and sent by up to ``concurrency`` workers; a request whose worker was still busy is sent late (counted in
    ``late``). With ``server_side`` the statistics API is read at the window's start and end, and
    ``result.server`` holds the server's own per-request breakdown (per composing model for an ensemble).

    Ends at the first of: duration over, ``max_requests`` sent (warm-up included), ``stop`` set, or
    the hard limit ``warmup_s + duration_s + grace_s`` (measured from the call) reached. Returns by
    the hard limit whatever the server does. With ``count_wire``, wire bytes are counted afterwards in
    :func:`count_wire_bytes`'s untimed pass (each of its calls waits at most ``grace_s``), skipped when
    the run was stopped or got no answer."""
    check_bench_protocol(protocol)
    if request_rate is not None and not 0 < request_rate <= MAX_REQUEST_RATE:
        raise ValueError(f"request rate must be in (0, {MAX_REQUEST_RATE:g}] requests/s")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}")
    if not 0 < duration_s <= MAX_DURATION_S:
        raise ValueError(f"duration must be in (0, {MAX_DURATION_S:g}] s")
    max_requests = MAX_REQUESTS if max_requests is None else min(int(max_requests), MAX_REQUESTS)
    if max_requests < 1:
        raise ValueError("max_requests must be >= 1")
    t_call = time.perf_counter()
    hard_deadline = t_call + warmup_s + duration_s + grace_s
    stop = stop or threading.Event()
    halt = threading.Event()  # ours: set when the run ends, for any reason
    result = BenchResult(
        protocol,
        model,
        concurrency,
        0,
        0,
        0.0,
        percentiles([]),
        0,
        0,
        None,
        None,
        compression=compression,
        request_rate=request_rate,
        distribution=distribution if request_rate is not None else None,
    )

    if inputs is None:  # metadata calls are bounded by the same hard limit
        try:
            info, inputs = sample_inputs(
                endpoint,
                model,
                base_protocol(protocol),
                timeout=max(0.1, min(timeout_s, hard_deadline - time.perf_counter())),
            )
            output_names = output_names or [o.name for o in info.outputs]
        except ProtocolError as exc:
            result.stop_reason, result.error_messages = "error", [str(exc)]
            return result

    records: list[_Record] = []
    lock = threading.Lock()
    tickets = [max_requests]
    warm_end = time.perf_counter() + warmup_s
    measure_end = warm_end + duration_s

    schedule = _Schedule(request_rate, distribution, time.perf_counter(), seed) if request_rate else None

    def take_ticket() -> float | None:
        """The time to send the next request at (now, in a closed loop), or None when the cap is reached."""
        with lock:
            if tickets[0] <= 0:
                return None
            tickets[0] -= 1
            return schedule.next() if schedule else 0.0

    def worker() -> None:
        caller = make_caller(
            endpoint,
            protocol,
            model,
            inputs,
            output_names=output_names,
            compression=compression,
            timeout_s=timeout_s,
        )
        try:
            while not halt.is_set():
                at = take_ticket()
                if at is None:
                    break
                wait = at - time.perf_counter()
                if wait > 0 and halt.wait(wait):
                    break
                if schedule and wait < -LATE_S:
                    with lock:
                        result.late += 1
                left = hard_deadline - time.perf_counter()
                if left <= 0.05:
                    break
                t0 = time.perf_counter()
                try:
                    r = caller.call(timeout_s=min(timeout_s, left))
                    rec = _Record(
                        t0, time.perf_counter(), True, r.latency_ms, r.request_bytes, r.response_bytes
                    )
                    rec.shm_bytes = r.shm_bytes
                except ProtocolError as exc:
                    rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{exc.kind}: {exc}")
                except Exception as exc:  # a client bug must not kill the run silently
                    rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{type(exc).__name__}: {exc}")
                records.append(rec)
        finally:
            caller.close()

    stats = _StatsWindow(endpoint, model, hard_deadline) if server_side else None
    threads = [threading.Thread(target=worker, name=f"bench-{i}", daemon=True) for i in range(concurrency)]
    try:
        for th in threads:
            th.start()
        last_progress = 0.0
        reason = "duration"
        while True:
            now = time.perf_counter()
            if stats is not None and now >= warm_end:
                stats.start()
            if stop.is_set():
                reason = "stopped"
                break
            if now >= measure_end:
                break
            if now >= hard_deadline:
                reason = "deadline"
                break
            if not any(th.is_alive() for th in threads):
                reason = "requests"
                break
            if progress is not None and now - last_progress >= progress_every_s:
                last_progress = now
                progress(_progress(records, warm_end, now, duration_s))
            time.sleep(min(0.02, max(0.0, measure_end - now)))
        window_end = time.perf_counter()
        if stats is not None:
            stats.end()
    finally:
        halt.set()  # also on KeyboardInterrupt, or when progress() raises (Streamlit's rerun)
        for th in threads:
            th.join(timeout=max(0.0, hard_deadline - time.perf_counter()))
        result.abandoned = sum(1 for th in threads if th.is_alive())
    if reason == "requests":  # all tickets used: the window ends with the last answer
        window_end = max((r.t_end for r in records), default=window_end)
    window_start = warm_end
    answered = [r for r in list(records) if r.t_end <= window_end]
    measured = [r for r in answered if r.t_end >= window_start]  # completions inside the window
    if not measured and reason == "requests":  # the cap ran out during warm-up: count them all
        measured = answered
        window_start = min((r.t_start for r in measured), default=window_start)
    ok = [r for r in measured if r.ok]
    window = max(1e-9, window_end - window_start)
    result.requests = len(measured)
    result.errors = len(measured) - len(ok)
    result.throughput_rps = len(ok) / window if ok else 0.0
    result.latencies_ms = [r.latency_ms for r in ok]
    result.latency_ms = percentiles(result.latencies_ms)
    result.request_bytes = sum(r.request_bytes for r in answered if r.ok)  # same scope as the wire counters
    result.response_bytes = sum(r.response_bytes for r in answered if r.ok)
    result.shm_bytes = sum(r.shm_bytes for r in answered if r.ok)
    result.window_s = window
    result.stop_reason = reason
    seen: list[str] = []
    for r in records:
        if not r.ok and r.error not in seen:
            seen.append(r.error)
    if result.abandoned:
        seen.append(f"{result.abandoned} call(s) got no answer before the hard limit and were abandoned")
    result.error_messages = seen[:5]
    if stats is not None:
        result.server, result.server_note, result.snapshots = stats.breakdown()
    if progress is not None:
        progress(_progress(records, warm_end, window_end, duration_s))
    answered_ok = sum(1 for r in answered if r.ok)
    if count_wire and answered_ok and not stop.is_set() and not result.abandoned:
        try:
            wire = count_wire_bytes(endpoint, model, protocol, inputs, compression, min(timeout_s, grace_s))
        except ProtocolError:
            return result  # the server stopped answering: wire bytes stay uncounted (None)
        set_wire_totals(result, wire, answered_ok)
    return result


def set_wire_totals(result: BenchResult, wire: WireCount, answered: int) -> None:
    """Wire totals of ``answered`` calls from the untimed pass's bytes per call: each of the
    ``result.concurrency`` workers opened one connection (its first call costs more), the rest reused it."""
    opened = min(result.concurrency, answered)
    result.wire, result.wire_counted = wire, WIRE_SEPARATE_PASS
    result.wire_bytes_sent = round(opened * wire.first_sent + (answered - opened) * wire.sent)
    result.wire_bytes_received = round(opened * wire.first_received + (answered - opened) * wire.received)


class _Schedule:
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


class _StatsWindow:
    """Statistics snapshots at the measuring window's start and end, each taken on a thread of its own so a
    slow or hanging statistics API can never hold the run past its hard limit."""

    def __init__(self, endpoint: Endpoint, model: str, deadline: float) -> None:
        self.endpoint, self.model, self.deadline = endpoint, model, deadline
        self.snaps: dict[str, server_stats.Snapshot | None] = {}
        self.composing: list[str] = []
        self.note = ""
        self.threads: dict[str, threading.Thread] = {}

    def _take(self, which: str) -> None:
        timeout = max(0.1, min(2.0, self.deadline - time.perf_counter()))
        try:
            if which == "before":
                # bounded like the snapshot: against a hanging server this thread ends by the run's limit too
                self.composing = server_stats.composing_models(self.endpoint, self.model, timeout=timeout)
            self.snaps[which] = server_stats.snapshot(self.endpoint, timeout=timeout)
        except (kserve.KServeError, ValueError) as exc:
            self.note = f"the statistics API did not answer: {exc}"

    def _spawn(self, which: str) -> None:
        if which not in self.threads:
            th = threading.Thread(target=self._take, args=(which,), name=f"bench-stats-{which}", daemon=True)
            self.threads[which] = th
            th.start()

    def start(self) -> None:
        self._spawn("before")

    def end(self) -> None:
        if "before" in self.threads:
            self.threads["before"].join(timeout=max(0.0, self.deadline - time.perf_counter()))
            if self.snaps.get("before") is not None:
                self._spawn("after")

    def breakdown(self):
        for th in self.threads.values():
            th.join(timeout=max(0.0, self.deadline - time.perf_counter()))
        before, after = self.snaps.get("before"), self.snaps.get("after")
        if before is None or after is None:
            return None, self.note or "the run ended before its measuring window opened", ()
        bd = server_stats.breakdown(before, after, self.model, self.composing)
        return bd, "", (before, after)


def count_wire_bytes(
    endpoint: Endpoint,
    model: str,
    protocol: str,
    inputs: dict[str, np.ndarray],
    compression: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    calls: int = WIRE_PASS_CALLS,
) -> WireCount:
    """Bytes per request on the wire, from ``1 + calls`` untimed calls on one connection through a
    :class:`~triton_kitchen.tools.protocols.CountingProxy` (asking for all of the model's outputs, as the lab's runs
    do); raises ProtocolError when a call fails."""
    m = measure_protocol(endpoint, protocol, model, inputs, calls, compression, timeout_s)
    return WireCount(
        m.calls,
        m.request_bytes,
        m.response_bytes,
        m.wire_sent_per_call,
        m.wire_received_per_call,
        m.wire_first_call_sent,
        m.wire_first_call_received,
    )


def _progress(records: list[_Record], warm_end: float, now: float, duration_s: float) -> BenchProgress:
    done = [r for r in list(records) if warm_end <= r.t_end <= now]
    return BenchProgress(len(done), sum(1 for r in done if not r.ok), now - warm_end, duration_s)


def sweep(
    endpoint: Endpoint,
    model: str,
    protocols: tuple[str, ...] = PROTOCOLS,
    concurrencies: tuple[int, ...] = (1, 4, 16),
    duration_s: float = 3.0,
    stop: threading.Event | None = None,
    progress: Callable[[int, int, BenchProgress], None] | None = None,
    **kwargs,
) -> list[BenchResult]:
    """Throughput and latency for every (protocol, concurrency); ``progress(step, steps, p)``."""
    stop = stop or threading.Event()
    info_inputs = kwargs.pop("inputs", None)
    output_names = kwargs.pop("output_names", None)
    if info_inputs is None:
        info, info_inputs = sample_inputs(endpoint, model, "grpc" if "grpc" in protocols else protocols[0])
        output_names = output_names or [o.name for o in info.outputs]
    plan = [(p, c) for p in protocols for c in concurrencies]
    results = []
    for i, (p, c) in enumerate(plan):
        if stop.is_set():
            break
        cb = (lambda pr, i=i: progress(i, len(plan), pr)) if progress else None
        results.append(
            run_bench(
                endpoint,
                model,
                p,
                c,
                duration_s,
                inputs=info_inputs,
                output_names=output_names,
                stop=stop,
                progress=cb,
                **kwargs,
            )
        )
    return results
