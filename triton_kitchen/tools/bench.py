"""Bounded load generation against a Triton model: the lab's load engine.

Every run is bounded three ways: a measuring duration, a request cap, and a hard wall-clock limit
(warm-up + duration + grace) that holds even when the server hangs: every call carries a timeout no
longer than the time left, workers are daemon threads, and workers still stuck at the deadline are
abandoned, not waited for. A run can be stopped at any time with a ``threading.Event``; a progress
callback, called from the caller's own thread, reports as it goes.

Timed requests always go straight to the server. Wire bytes (headers and framing included) are counted
only when asked (``count_wire``), in a separate short pass through a byte-counting proxy after the
timed run: the proxy's extra hops and pump threads would slow the very requests being timed.

What to load is one :class:`~triton_kitchen.tools.load.LoadSpec` (model, protocol, concurrency, duration, cap, rate, compression,
timeouts), checked once when it is made; :func:`run_bench` runs one, :func:`sweep` one per protocol and
concurrency, :func:`compare_load` one per protocol followed by one wire-counting pass, and
:func:`triton_kitchen.tools.stability.run_stable` repeats one until its windows agree.

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
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.bench_window import StatsWindow
from triton_kitchen.tools.load import LoadSpec, Schedule, with_inputs
from triton_kitchen.tools.protocols import (
    DEFAULT_TIMEOUT_S,
    PROTOCOLS,
    ProtocolError,
    make_caller,
    measure_protocol,
)

LATE_S = 0.001  # an open-loop request sent more than this after its time was late
# the load engine in records and reports; pages show ENGINE_NAME with its description in the reader's language
ENGINE_NAME = "triton-kitchen"
ENGINE = f"{ENGINE_NAME} (Python client)"
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
COMPARE_WIRE_CALLS = 3  # counted calls per protocol in compare_load's pass (the protocol lab's load tab)


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
    # when each successful request of the window finished, in seconds after the window's start (sorted)
    completions_s: list[float] = field(default_factory=list, repr=False)
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
    spec: LoadSpec,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
    progress_every_s: float = 0.25,
) -> BenchResult:
    """Run the load ``spec`` describes against ``endpoint`` (see :class:`LoadSpec`). A request sent after its
    open-loop time because every worker was busy counts in ``late``. With ``server_side``, ``result.server``
    holds the server's own per-request breakdown (per composing model for an ensemble).

    Ends at the first of: duration over, ``max_requests`` sent (warm-up included), ``stop`` set, or
    the hard limit ``warmup_s + duration_s + grace_s`` (measured from the call) reached. Returns by
    the hard limit whatever the server does. With ``count_wire``, wire bytes are counted afterwards in
    :func:`wire_pass`'s untimed pass (each of its calls waits at most ``grace_s``), skipped when
    the run was stopped or got no answer. ``progress`` is called every ``progress_every_s``, and once at the end."""
    run = _prepare(endpoint, spec)
    if run.result.stop_reason == "error":
        return run.result
    stop = stop or threading.Event()
    reason, window_end = _drive(run, stop, progress, progress_every_s)
    window_end, answered_ok = _finish(run, reason, window_end)
    if progress is not None:
        progress(_progress(run.records, run.warm_end, window_end, spec.duration_s))
    if spec.count_wire and answered_ok and not stop.is_set() and not run.result.abandoned:
        # a server that stopped answering leaves the wire bytes uncounted (None)
        wire = wire_pass(endpoint, run.spec, [spec.protocol], timeout_s=min(spec.timeout_s, spec.grace_s))
        if spec.protocol in wire:
            set_wire_totals(run.result, wire[spec.protocol], answered_ok)
    return run.result


@dataclass
class _Run:
    """One run's state, shared by its workers and its watcher: the spec (with the request to send), the
    clock, the tickets left, what was answered."""

    endpoint: Endpoint
    spec: LoadSpec
    result: BenchResult
    hard_deadline: float
    tickets: int
    warm_end: float = 0.0
    measure_end: float = 0.0
    schedule: Schedule | None = None
    records: list[_Record] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # ours (not the caller's stop): set when the run ends, for any reason
    halt: threading.Event = field(default_factory=threading.Event)
    stats: StatsWindow | None = None

    def take_ticket(self) -> float | None:
        """The time to send the next request at (now, in a closed loop), or None when the cap is reached."""
        with self.lock:
            if self.tickets <= 0:
                return None
            self.tickets -= 1
            return self.schedule.next() if self.schedule else 0.0

    def worker(self) -> None:
        """One connection: take a ticket, wait for its time, call, record; until the run halts or the cap."""
        spec = self.spec
        caller = make_caller(
            self.endpoint,
            spec.protocol,
            spec.model,
            spec.inputs,
            output_names=spec.output_names,
            compression=spec.compression,
            timeout_s=spec.timeout_s,
        )
        try:
            while not self.halt.is_set():
                at = self.take_ticket()
                if at is None:
                    break
                wait = at - time.perf_counter()
                if wait > 0 and self.halt.wait(wait):
                    break
                if self.schedule and wait < -LATE_S:
                    with self.lock:
                        self.result.late += 1
                left = self.hard_deadline - time.perf_counter()
                if left <= 0.05:
                    break
                self.records.append(_call(caller, min(spec.timeout_s, left)))
        finally:
            caller.close()


def _call(caller, timeout_s: float) -> _Record:
    t0 = time.perf_counter()
    try:
        r = caller.call(timeout_s=timeout_s)
        rec = _Record(t0, time.perf_counter(), True, r.latency_ms, r.request_bytes, r.response_bytes)
        rec.shm_bytes = r.shm_bytes
    except ProtocolError as exc:
        rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{exc.code}: {exc}")
    except Exception as exc:  # a client bug must not kill the run silently
        rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{type(exc).__name__}: {exc}")
    return rec


def _prepare(endpoint: Endpoint, spec: LoadSpec) -> _Run:
    """The run's hard limit and empty result, the request to send (the model's sample one unless the spec
    brings one: its metadata calls are bounded by the same hard limit), then the warm-up's and window's ends.
    A metadata failure ends the run here: ``stop_reason`` "error"."""
    t_call = time.perf_counter()
    hard_deadline = t_call + spec.warmup_s + spec.duration_s + spec.grace_s
    result = BenchResult(
        spec.protocol,
        spec.model,
        spec.concurrency,
        0,
        0,
        0.0,
        percentiles([]),
        0,
        0,
        None,
        None,
        compression=spec.compression,
        request_rate=spec.request_rate,
        distribution=spec.distribution if spec.request_rate is not None else None,
    )
    run = _Run(endpoint, spec, result, hard_deadline, tickets=spec.max_requests)
    try:
        left = max(0.1, min(spec.timeout_s, hard_deadline - time.perf_counter()))
        run.spec = with_inputs(endpoint, spec, timeout=left)
    except ProtocolError as exc:
        result.stop_reason, result.error_messages = "error", [str(exc)]
        return run
    run.warm_end = time.perf_counter() + spec.warmup_s
    run.measure_end = run.warm_end + spec.duration_s
    if spec.request_rate:
        run.schedule = Schedule(spec.request_rate, spec.distribution, time.perf_counter(), spec.seed)
    return run


def _drive(
    run: _Run,
    stop: threading.Event,
    progress: Callable[[BenchProgress], None] | None,
    progress_every_s: float,
) -> tuple[str, float]:
    """Start the workers and watch them, the clock and ``stop`` until the window ends; then halt them (waiting
    for them no later than the hard limit: those still stuck are abandoned). Returns why it ended, and when."""
    spec = run.spec
    stats = run.stats = StatsWindow(run.endpoint, spec.model, run.hard_deadline) if spec.server_side else None
    threads = [
        threading.Thread(target=run.worker, name=f"bench-{i}", daemon=True) for i in range(spec.concurrency)
    ]
    try:
        for th in threads:
            th.start()
        last_progress = 0.0
        reason = "duration"
        while True:
            now = time.perf_counter()
            if stats is not None and now >= run.warm_end:
                stats.start()
            if stop.is_set():
                reason = "stopped"
                break
            if now >= run.measure_end:
                break
            if now >= run.hard_deadline:
                reason = "deadline"
                break
            if not any(th.is_alive() for th in threads):
                reason = "requests"
                break
            if progress is not None and now - last_progress >= progress_every_s:
                last_progress = now
                progress(_progress(run.records, run.warm_end, now, spec.duration_s))
            time.sleep(min(0.02, max(0.0, run.measure_end - now)))
        window_end = time.perf_counter()
        if stats is not None:
            stats.end()
    finally:
        run.halt.set()  # also on KeyboardInterrupt, or when progress() raises (Streamlit's rerun)
        for th in threads:
            th.join(timeout=max(0.0, run.hard_deadline - time.perf_counter()))
        run.result.abandoned = sum(1 for th in threads if th.is_alive())
    return reason, window_end


def _finish(run: _Run, reason: str, window_end: float) -> tuple[float, int]:
    """The result's figures from the records: latencies and throughput over the completions inside the
    window, bytes over every answered call (warm-up included), the first error messages, the server's
    breakdown. Returns the window's end (the last answer's, when the cap ended the run) and how many calls
    were answered."""
    result, records = run.result, run.records
    if reason == "requests":  # all tickets used: the window ends with the last answer
        window_end = max((r.t_end for r in records), default=window_end)
    window_start = run.warm_end
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
    result.completions_s = sorted(r.t_end - window_start for r in ok)
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
    if run.stats is not None:
        result.server, result.server_note, result.snapshots = run.stats.breakdown()
    return window_end, sum(1 for r in answered if r.ok)


def set_wire_totals(result: BenchResult, wire: WireCount, answered: int) -> None:
    """Wire totals of ``answered`` calls from the untimed pass's bytes per call: each of the
    ``result.concurrency`` workers opened one connection (its first call costs more), the rest reused it."""
    opened = min(result.concurrency, answered)
    result.wire, result.wire_counted = wire, WIRE_SEPARATE_PASS
    result.wire_bytes_sent = round(opened * wire.first_sent + (answered - opened) * wire.sent)
    result.wire_bytes_received = round(opened * wire.first_received + (answered - opened) * wire.received)


def wire_pass(
    endpoint: Endpoint,
    spec: LoadSpec,
    protocols: list[str],
    calls: int = WIRE_PASS_CALLS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, WireCount]:
    """Bytes per request on the wire for each of ``protocols``, in an untimed pass after the timed runs:
    ``1 + calls`` calls of the spec's request on one connection through a
    :class:`~triton_kitchen.tools.protocols.CountingProxy` (asking for all of the model's outputs, as the lab's
    runs do). A protocol whose calls fail is left out (its timed run already said what went wrong)."""
    counted = {}
    for protocol in protocols:
        try:
            m = measure_protocol(
                endpoint, protocol, spec.model, spec.inputs, calls, spec.compression, timeout_s
            )
        except ProtocolError:
            continue
        counted[protocol] = WireCount(
            m.calls,
            m.request_bytes,
            m.response_bytes,
            m.wire_sent_per_call,
            m.wire_received_per_call,
            m.wire_first_call_sent,
            m.wire_first_call_received,
        )
    return counted


def _progress(records: list[_Record], warm_end: float, now: float, duration_s: float) -> BenchProgress:
    done = [r for r in list(records) if warm_end <= r.t_end <= now]
    return BenchProgress(len(done), sum(1 for r in done if not r.ok), now - warm_end, duration_s)


def sweep(
    endpoint: Endpoint,
    spec: LoadSpec,
    protocols: tuple[str, ...] = PROTOCOLS,
    concurrencies: tuple[int, ...] = (1, 4, 16),
    *,
    stop: threading.Event | None = None,
    progress: Callable[[int, int, BenchProgress], None] | None = None,
) -> list[BenchResult]:
    """Throughput and latency for every (protocol, concurrency): ``spec`` with each of them in turn (its own
    protocol and concurrency are not used); ``progress(step, steps, p)``."""
    stop = stop or threading.Event()
    spec = with_inputs(endpoint, spec, "grpc" if "grpc" in protocols else protocols[0])
    plan = [(p, c) for p in protocols for c in concurrencies]
    results = []
    for i, (p, c) in enumerate(plan):
        if stop.is_set():
            break
        cb = (lambda pr, i=i: progress(i, len(plan), pr)) if progress else None
        results.append(run_bench(endpoint, replace(spec, protocol=p, concurrency=c), stop=stop, progress=cb))
    return results


@dataclass
class LoadComparison:
    """:func:`compare_load`'s runs, one per protocol, and the bytes per request of each, counted after them."""

    results: list[BenchResult]
    wire: dict[str, WireCount]  # protocol -> bytes per call from the untimed pass; empty when stopped


def compare_load(
    endpoint: Endpoint,
    spec: LoadSpec,
    protocols: list[str],
    *,
    stop: threading.Event | None = None,
    progress_for: Callable[[str], Callable[[BenchProgress], None] | None] | None = None,
    wire_calls: int = COMPARE_WIRE_CALLS,
) -> LoadComparison:
    """The same load over each of ``protocols`` in turn (``spec`` with that protocol; wire bytes are never
    counted while timing), then, unless stopped, one untimed :func:`wire_pass` of ``wire_calls`` calls per
    protocol run. ``progress_for(protocol)`` is called as that protocol's run begins and returns its
    progress callback."""
    stop = stop or threading.Event()
    spec = with_inputs(endpoint, spec)
    out = LoadComparison([], {})
    for protocol in protocols:
        if stop.is_set():
            break
        progress = progress_for(protocol) if progress_for else None
        run_spec = replace(spec, protocol=protocol, count_wire=False)
        out.results.append(run_bench(endpoint, run_spec, stop=stop, progress=progress))
    if not stop.is_set():
        out.wire = wire_pass(endpoint, spec, [r.protocol for r in out.results], calls=wire_calls)
    return out
