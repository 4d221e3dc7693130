"""Bounded load generation against a Triton model, and a perf_analyzer cross-check.

Every run is bounded three ways: a measuring duration, a request cap, and a hard wall-clock limit
(warm-up + duration + grace) that holds even when the server hangs: every call carries a timeout no
longer than the time left, workers are daemon threads, and workers still stuck at the deadline are
abandoned, not waited for. A run can be stopped at any time with a ``threading.Event``; a progress
callback, called from the caller's own thread, reports as it goes.

The engine is this module's Python client (one connection per worker thread, see
:class:`triton_kitchen.protocols.Caller`). :func:`cross_check` runs the same model, protocol and
concurrency with NVIDIA's C++ ``perf_analyzer`` (shipped in ``tritonclient==2.51.0``'s wheel) and
reports both throughputs and their difference.
"""

from __future__ import annotations

import argparse
import base64
import csv
import glob
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from triton_kitchen.protocols import (
    DEFAULT_TIMEOUT_S,
    PROTOCOLS,
    Caller,
    CountingProxy,
    ProtocolError,
    check_protocol,
    sample_inputs,
    serialized_bytes_tensor,
)
from triton_kitchen.server import Endpoint, host_port

MAX_CONCURRENCY = 16  # per run: one student cannot starve a class
MAX_DURATION_S = 120.0
MAX_REQUESTS = 100_000
DEFAULT_GRACE_S = 2.0
ENGINE = "triton-kitchen (Python client)"
CONTRACT_KEYS = (
    "protocol", "model", "concurrency", "requests", "errors", "throughput_rps", "latency_ms",
    "request_bytes", "response_bytes", "wire_bytes_sent", "wire_bytes_received",
)


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
    wire_bytes_sent: int | None  # counted on the socket (CountingProxy): headers and framing included
    wire_bytes_received: int | None
    window_s: float = 0.0
    stop_reason: str = ""  # "duration", "requests", "stopped", "deadline", "error"
    compression: str | None = None
    engine: str = ENGINE
    abandoned: int = 0  # workers still waiting on the server at the hard limit, left behind
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    error_messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The ``bench --json`` contract: exactly these keys."""
        d = asdict(self)
        return {k: d[k] for k in CONTRACT_KEYS}

    def to_row(self) -> dict:
        """A flat row for CSV: the contract plus how the run ended."""
        d = self.to_dict()
        lat = d.pop("latency_ms")
        d.update({f"latency_{k}_ms": v for k, v in lat.items()})
        d.update(window_s=self.window_s, stop_reason=self.stop_reason, compression=self.compression or "",
                 engine=self.engine, abandoned=self.abandoned)
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
    count_wire: bool = True,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
    progress_every_s: float = 0.25,
) -> BenchResult:
    """Load ``model`` with ``concurrency`` closed-loop workers for ``duration_s`` (after ``warmup_s``).

    Ends at the first of: duration over, ``max_requests`` sent (warm-up included), ``stop`` set, or
    the hard limit ``warmup_s + duration_s + grace_s`` (measured from the call) reached. Returns by
    the hard limit whatever the server does. With ``count_wire`` every connection goes through a
    :class:`CountingProxy`."""
    check_protocol(protocol)
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
    result = BenchResult(protocol, model, concurrency, 0, 0, 0.0, percentiles([]), 0, 0,
                         0 if count_wire else None, 0 if count_wire else None, compression=compression)

    if inputs is None:  # metadata calls are bounded by the same hard limit
        try:
            info, inputs = sample_inputs(endpoint, model, protocol,
                                         timeout=max(0.1, min(timeout_s, hard_deadline - time.perf_counter())))
            output_names = output_names or [o.name for o in info.outputs]
        except ProtocolError as exc:
            result.stop_reason, result.error_messages = "error", [str(exc)]
            return result

    proxy = None
    address = None
    if count_wire:
        proxy = CountingProxy(endpoint.grpc_url if protocol == "grpc" else endpoint.http_url).start()
        address = proxy.address

    records: list[_Record] = []
    lock = threading.Lock()
    tickets = [max_requests]
    warm_end = time.perf_counter() + warmup_s
    measure_end = warm_end + duration_s

    def take_ticket() -> bool:
        with lock:
            if tickets[0] <= 0:
                return False
            tickets[0] -= 1
            return True

    def worker() -> None:
        caller = Caller(endpoint, protocol, model, inputs, output_names=output_names, compression=compression,
                        timeout_s=timeout_s, address=address)
        try:
            while not halt.is_set() and take_ticket():
                left = hard_deadline - time.perf_counter()
                if left <= 0.05:
                    break
                t0 = time.perf_counter()
                try:
                    r = caller.call(timeout_s=min(timeout_s, left))
                    rec = _Record(t0, time.perf_counter(), True, r.latency_ms, r.request_bytes, r.response_bytes)
                except ProtocolError as exc:
                    rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{exc.kind}: {exc}")
                except Exception as exc:  # a client bug must not kill the run silently
                    rec = _Record(t0, time.perf_counter(), False, 0.0, error=f"{type(exc).__name__}: {exc}")
                records.append(rec)
        finally:
            caller.close()

    threads = [threading.Thread(target=worker, name=f"bench-{i}", daemon=True) for i in range(concurrency)]
    try:
        for th in threads:
            th.start()
        last_progress = 0.0
        reason = "duration"
        while True:
            now = time.perf_counter()
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
    finally:
        halt.set()  # also on KeyboardInterrupt, or when progress() raises (Streamlit's rerun)
        for th in threads:
            th.join(timeout=max(0.0, hard_deadline - time.perf_counter()))
        result.abandoned = sum(1 for th in threads if th.is_alive())
        if proxy is not None:
            result.wire_bytes_sent, result.wire_bytes_received = proxy.snapshot()
            proxy.stop()
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
    result.window_s = window
    result.stop_reason = reason
    seen: list[str] = []
    for r in records:
        if not r.ok and r.error not in seen:
            seen.append(r.error)
    if result.abandoned:
        seen.append(f"{result.abandoned} call(s) got no answer before the hard limit and were abandoned")
    result.error_messages = seen[:5]
    if progress is not None:
        progress(_progress(records, warm_end, window_end, duration_s))
    return result


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
        results.append(run_bench(endpoint, model, p, c, duration_s, inputs=info_inputs, output_names=output_names,
                                 stop=stop, progress=cb, **kwargs))
    return results


# -- perf_analyzer ------------------------------------------------------------------------------------
class PerfAnalyzerError(RuntimeError):
    pass


def perf_analyzer_binary() -> Path | None:
    """The ``perf_analyzer`` from tritonclient's wheel (next to this Python), or one on PATH."""
    here = Path(sys.executable).parent / "perf_analyzer"
    if here.exists():
        return here
    found = shutil.which("perf_analyzer")
    return Path(found) if found else None


def perf_analyzer_env() -> dict[str, str]:
    """Environment with ``libb64.so.0d`` and ``libcudart.so.12`` linked from ``nvidia_pytriton.libs``
    (where they live under hashed names) into a cache folder on ``LD_LIBRARY_PATH``."""
    from triton_kitchen.server import cache_root

    env = dict(os.environ)
    try:
        import pytriton

        libs = Path(pytriton.__file__).resolve().parent.parent / "nvidia_pytriton.libs"
    except ImportError:
        return env
    folder = cache_root() / "perf_analyzer_libs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, pattern in (("libb64.so.0d", "libb64-*.so.0d"), ("libcudart.so.12", "libcudart-*.so.12*")):
        matches = sorted(glob.glob(str(libs / pattern)))
        link = folder / name
        if matches and not link.exists():
            tmp = folder / f".{name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(matches[0])
            os.replace(tmp, link)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(folder), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def perf_analyzer_input_data(inputs: dict[str, np.ndarray], max_batch_size: int) -> dict:
    """``--input-data`` JSON for one request: raw tensor bytes as base64 (BYTES length-prefixed, as
    perf_analyzer expects), without the batch dimension when the model batches."""
    entry = {}
    for name, array in inputs.items():
        one = array[0] if max_batch_size > 0 else array
        raw = serialized_bytes_tensor(one) if one.dtype == object else np.ascontiguousarray(one).tobytes()
        entry[name] = {"b64": base64.b64encode(raw).decode()}
    return {"data": [entry]}


def _shape_flags(inputs: dict[str, np.ndarray], max_batch_size: int) -> list[str]:
    """``--shape name:d1,d2`` for every input (needed when the model has variable dimensions)."""
    flags = []
    for name, array in inputs.items():
        dims = array.shape[1:] if max_batch_size > 0 else array.shape
        if dims:
            flags += ["--shape", f"{name}:{','.join(str(d) for d in dims)}"]
    return flags


@dataclass
class PerfAnalyzerResult:
    protocol: str
    model: str
    concurrency: int
    requests: int
    throughput_rps: float
    latency_ms: dict[str, float | None]
    command: list[str]
    window_s: float = 0.0  # the measured windows together
    engine: str = "perf_analyzer (C++)"


def run_perf_analyzer(
    endpoint: Endpoint,
    model: str,
    protocol: str,
    concurrency: int,
    inputs: dict[str, np.ndarray],
    max_batch_size: int = 1,
    window_ms: int = 1000,
    timeout_s: float = 60.0,
    retry_larger_window: bool = True,
) -> PerfAnalyzerResult:
    """One bounded perf_analyzer run: three measurement windows of ``window_ms`` (the stability
    threshold is set wide open so three windows normally end it; perf_analyzer reports over them),
    killed after ``timeout_s``. ``http-json`` has no perf_analyzer equivalent (it sends binary tensors).

    (``--request-count`` mode is not used: it rounds its measuring time to whole seconds, so short
    runs under-report throughput by up to half.)"""
    if check_protocol(protocol) == "http-json":
        raise PerfAnalyzerError("perf_analyzer has no JSON-tensor mode; cross-check http-binary instead")
    binary = perf_analyzer_binary()
    if binary is None:
        raise PerfAnalyzerError("perf_analyzer not found (it ships in tritonclient==2.51.0's wheel)")
    with tempfile.TemporaryDirectory(prefix="pa-") as tmp:
        data = Path(tmp) / "input.json"
        data.write_text(json.dumps(perf_analyzer_input_data(inputs, max_batch_size)))
        report = Path(tmp) / "report.csv"
        cmd = [
            str(binary), "-m", model,
            "-u", endpoint.grpc_url if protocol == "grpc" else endpoint.http_url,
            "-i", "grpc" if protocol == "grpc" else "http",
            "--concurrency-range", f"{concurrency}:{concurrency}",
            "--measurement-interval", str(int(window_ms)), "--stability-percentage", "1000",
            "--max-trials", "6",
            "--input-data", str(data), "-f", str(report),
            *_shape_flags(inputs, max_batch_size),
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=perf_analyzer_env(),
                                cwd=tmp, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise PerfAnalyzerError(f"perf_analyzer did not finish in {timeout_s:g} s") from None
        text = out.decode(errors="replace")
        if proc.returncode != 0 and retry_larger_window and ("time window" in text or "stable" in text):
            # the server is slower than the window (latency > window), or so busy that windows hold a
            # request or two: once more with 3x the window
            return run_perf_analyzer(endpoint, model, protocol, concurrency, inputs, max_batch_size,
                                     window_ms * 3, timeout_s, retry_larger_window=False)
        if proc.returncode != 0 or not report.exists():
            tail = "\n".join(text.strip().splitlines()[-6:])
            raise PerfAnalyzerError(f"perf_analyzer failed (exit {proc.returncode}):\n{tail}")
        row = next(csv.DictReader(report.read_text().splitlines()))
    lat = {q: float(row[f"{q} latency"]) / 1000 for q in ("p50", "p90", "p99") if row.get(f"{q} latency")}
    rps = float(row["Inferences/Second"])
    return PerfAnalyzerResult(protocol, model, concurrency, round(rps * 3 * window_ms / 1000), rps, lat, cmd,
                              window_s=3 * window_ms / 1000)


def cross_check(
    endpoint: Endpoint,
    model: str,
    protocol: str = "grpc",
    concurrency: int = 4,
    duration_s: float = 6.0,
    rounds: int = 3,
    tolerance: float = 0.10,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
) -> dict:
    """Our engine and perf_analyzer on the same model, protocol, concurrency and input.

    The two alternate in ``rounds`` slices (``duration_s`` of each engine in all: perf_analyzer
    measures three windows of a third of a slice), so both see the same machine (other work on a
    shared machine moves throughput a lot from one second to the next). Throughputs are averages
    over all slices, weighted by measuring time."""
    info, inputs = sample_inputs(endpoint, model, protocol)
    outputs = [o.name for o in info.outputs]
    ours: list[BenchResult] = []
    theirs: list[PerfAnalyzerResult] = []
    slice_s = duration_s / max(1, rounds)
    for _ in range(max(1, rounds)):
        if stop is not None and stop.is_set():
            break
        r = run_bench(endpoint, model, protocol, concurrency, slice_s, inputs=inputs, output_names=outputs,
                      warmup_s=0.3, count_wire=False, stop=stop, progress=progress)
        if r.errors or not r.throughput_rps:
            raise PerfAnalyzerError(f"the bench run failed: {r.error_messages}")
        ours.append(r)
        theirs.append(run_perf_analyzer(endpoint, model, protocol, concurrency, inputs, info.max_batch_size,
                                        window_ms=max(500, int(slice_s * 1000 / 3)),
                                        timeout_s=max(30.0, 10 * slice_s)))
    if not ours:
        raise PerfAnalyzerError("stopped before the first round")
    ours_rps = sum(r.requests - r.errors for r in ours) / sum(r.window_s for r in ours)
    pa_rps = sum(p.throughput_rps * p.window_s for p in theirs) / sum(p.window_s for p in theirs)
    diff = (ours_rps - pa_rps) / pa_rps if pa_rps else float("inf")
    return {
        "model": model, "protocol": protocol, "concurrency": concurrency,
        "engine": ENGINE, "check": "perf_analyzer (C++, tritonclient 2.51.0 wheel)",
        "engine_rps": ours_rps, "perf_analyzer_rps": pa_rps, "difference": diff,
        "agree": abs(diff) <= tolerance, "tolerance": tolerance,
        "engine_p99_ms": float(np.percentile([x for r in ours for x in r.latencies_ms], 99)),
        "perf_analyzer_p99_ms": float(np.median([p.latency_ms.get("p99", np.nan) for p in theirs])),
        "rounds": [{"engine_rps": a.throughput_rps, "perf_analyzer_rps": b.throughput_rps}
                   for a, b in zip(ours, theirs, strict=False)],
        "perf_analyzer_command": " ".join(theirs[-1].command) if theirs else "",
    }


# -- CLI ----------------------------------------------------------------------------------------------
def add_bench_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bench", help="bounded load on one model over one protocol",
                              description="Closed-loop load with N concurrent clients for a bounded time; "
                                          "latency percentiles, throughput, payload and wire bytes.")
    p.add_argument("--model", required=True)
    p.add_argument("--protocol", required=True, choices=PROTOCOLS)
    p.add_argument("--concurrency", type=int, default=1, help=f"1..{MAX_CONCURRENCY} (default: %(default)s)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds of measuring (default: %(default)s)")
    p.add_argument("--url", help="host:port of a running server for this protocol (default: start the "
                                 "embedded server on free ports)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--max-requests", type=int, default=10_000, help="request cap (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per-request timeout in seconds")
    p.add_argument("--compression", choices=("gzip",), default=None)
    p.add_argument("--perf-analyzer", action="store_true",
                   help="also run perf_analyzer on the same settings and print both throughputs (to stderr with --json)")
    p.set_defaults(func=cmd_bench)
    return p


def _url_hint(url: str, protocol: str) -> str | None:
    """Why ``url`` cannot serve ``protocol`` when something answers there in the other protocol
    (the commonest slip: 8000 vs 8001). A dead address is left to the run, which counts its errors."""
    import socket

    from triton_kitchen.server import probe_kserve

    answers_http = probe_kserve(url, timeout=2.0)
    if protocol == "grpc" and answers_http:
        return f"{url} answers Triton's HTTP API; --protocol grpc needs the gRPC port (Triton's default is 8001)"
    if protocol != "grpc" and not answers_http:
        host, _, port = url.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0).close()
        except (OSError, ValueError):
            return None
        return f"{url} listens but is not Triton's HTTP API (the gRPC port? Triton's default HTTP port is 8000)"
    return None


def cmd_bench(args: argparse.Namespace) -> int:
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        print(f"error: --concurrency must be 1..{MAX_CONCURRENCY}", file=sys.stderr)
        return 2
    if not 0 < args.duration <= MAX_DURATION_S:
        print(f"error: --duration must be in (0, {MAX_DURATION_S:g}]", file=sys.stderr)
        return 2
    server = None
    if args.url:
        url = host_port(args.url)
        endpoint = Endpoint(http_url=url, grpc_url=url)
        hint = _url_hint(url, args.protocol)
        if hint:
            print(f"error: {hint}", file=sys.stderr)
            return 1
    else:
        from triton_kitchen.server import EmbeddedServer, ServerStartError

        server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
        if not args.json:
            print("starting the embedded tritonserver ...", file=sys.stderr, flush=True)
        try:
            endpoint = server.start(timeout=180)
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    try:
        result = run_bench(endpoint, args.model, args.protocol, args.concurrency, args.duration,
                           max_requests=args.max_requests, timeout_s=args.timeout, compression=args.compression)
        check = None
        if args.perf_analyzer and result.throughput_rps:
            try:
                check = cross_check(endpoint, args.model, args.protocol, args.concurrency, args.duration)
            except PerfAnalyzerError as exc:
                print(f"perf_analyzer: {exc}", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        lat = result.latency_ms
        fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        print(f"{result.model} over {result.protocol}, concurrency {result.concurrency}, "
              f"{result.window_s:.1f} s ({result.stop_reason})")
        print(f"  requests {result.requests}  errors {result.errors}  throughput {result.throughput_rps:.1f}/s")
        print(f"  latency ms  p50 {fmt(lat['p50'])}  p90 {fmt(lat['p90'])}  p99 {fmt(lat['p99'])}")
        print(f"  payload bytes  sent {result.request_bytes}  received {result.response_bytes}")
        print(f"  wire bytes     sent {result.wire_bytes_sent}  received {result.wire_bytes_received}")
    for message in result.error_messages:
        print(f"error: {message}", file=sys.stderr)
    if check is not None:
        print(f"cross-check: engine {check['engine_rps']:.1f}/s, perf_analyzer {check['perf_analyzer_rps']:.1f}/s, "
              f"difference {check['difference'] * 100:+.1f}% ({'agree' if check['agree'] else 'DISAGREE'} "
              f"within {check['tolerance'] * 100:.0f}%)", file=sys.stderr if args.json else sys.stdout)
    return 0 if result.requests and not result.errors else 1
