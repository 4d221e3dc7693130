"""``python -m triton_kitchen doctor``: what a Triton server is, and where a request's time goes on it.

First the server: its version (``GET /v2``), extensions and models, and, only when it runs on this host, whether
it takes a client's shared memory (a one-byte region registered and unregistered, :func:`shm.refusal`). Then a
fixed battery on one model: each protocol the server offers (HTTP JSON, HTTP binary, gRPC, and the two shared-
memory ones where allowed) at concurrency 1 and near the knee (:func:`doctor_card.search_knee`, doubling until a
doubling gains less than 10 %). Each part of a request's time is measured on its own:

- the client's (de)serialisation: tritonclient's encoder and decoder on the same request and answer, timed apart
  (shared memory: writing the inputs into a region and reading the outputs back);
- the wire: from Triton's trace timestamps where the trace API is open to us and its file is on this host (client
  send to ``HTTP_RECV_END``/``GRPC_WAITREAD_END``, and the answer's send to the client's receipt, on one clock),
  else a loopback echo of the same number of bytes (plus, for another host, the TCP connect time's excess);
- the server's front end (parsing the request, building the answer) from the same trace;
- the server's queue and compute from statistics deltas around the cell's requests, used only when the delta
  counts exactly the doctor's requests (else another client was using the model, and the cell says so);
- what none of these accounts for is ``unexplained``.

The load itself is :func:`triton_kitchen.tools.bench.run_bench` (a closed loop, the request encoded once, as
perf_analyzer does): the client's end-to-end time per request is its mean latency plus the (de)serialisation a
client that encodes each request pays. perf_analyzer runs the same protocol, concurrency and input where it can
(HTTP binary and gRPC) as the throughput's cross-check. Every step is bounded by the run's budget.
"""

from __future__ import annotations

import http.client
import os
import socket
import statistics as pystats
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm_memory

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.endpoint import Endpoint, host_port, split_host_port
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.versions import TritonVersion, VersionError
from triton_kitchen.tools import server_stats
from triton_kitchen.tools.bench import run_bench
from triton_kitchen.tools.doctor_card import (
    PA_TOLERANCE,
    STATS_NONE,
    STATS_OURS,
    Cell,
    check_delta,
    search_knee,
    targets,
)
from triton_kitchen.tools.load import MAX_CONCURRENCY, LoadSpec
from triton_kitchen.tools.perf_analyzer import PerfAnalyzerError, cross_check
from triton_kitchen.tools.protocols import (
    Caller,
    ProtocolError,
    make_caller,
    sample_inputs,
)
from triton_kitchen.tools.protocols import shm as shm_protocol
from triton_kitchen.tools.trace import TraceError, capture_many

FULL_BUDGET_S = 300.0  # unattended, against the embedded server
QUICK_BUDGET_S = 25.0
SHM_EXTENSION = "system_shared_memory"
PA_ROUNDS = 5  # slices of the perf_analyzer cross-check: the finer they alternate, the more alike the machine they see


class DoctorError(KitchenError):
    """The doctor could not examine the server at all: ``code`` is a ``[doctor]`` message key
    (``not_reachable``, ``not_triton``, ``slow_server``, ``no_model``, ``model_unusable``)."""

    default_code = "doctor"
    source = "doctor"  # its messages: error.doctor_<code> in ui.toml


@dataclass
class Plan:
    """How hard the battery runs: ``--quick`` (seconds, for tests) or the full one (at most 5 minutes)."""

    quick: bool
    budget_s: float
    cell_s: float  # the measuring time a cell aims at
    knee_s: float  # each step of the knee search
    max_concurrency: int
    codec_reps: int
    traced_calls: int
    perf_analyzer: bool
    timeout_s: float

    @classmethod
    def of(cls, quick: bool, budget_s: float | None = None, timeout_s: float = 10.0) -> Plan:
        if quick:
            return cls(True, budget_s or QUICK_BUDGET_S, 0.3, 0.3, 2, 1, 1, False, timeout_s)
        return cls(False, budget_s or FULL_BUDGET_S, 4.0, 1.0, MAX_CONCURRENCY, 8, 5, True, timeout_s)


@dataclass
class Run:
    """One doctor run's state: where, the clock, the report being filled."""

    endpoint: Endpoint
    plan: Plan
    deadline: float
    report: dict = field(default_factory=dict)
    progress: Callable[[str], None] | None = None
    echo: dict[str, float] = field(default_factory=dict)  # protocol -> the echo's wire ms
    trace_ok: bool = False  # the trace API is open to us and its file readable here
    wire_samples: dict[str, list[dict[str, float]]] = field(
        default_factory=dict
    )  # protocol -> traced calls' splits

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def note(self, key: str, **params) -> None:
        self.report.setdefault("not_measured", []).append({"key": key, "params": params})

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)


# -- the server ---------------------------------------------------------------------------------------------
def is_local(address: str) -> bool:
    """Whether ``host:port`` is this machine (loopback, or one of its own addresses)."""
    try:
        host, _ = split_host_port(address)
    except ValueError:
        return False
    if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
        return True
    try:
        theirs = {ai[4][0] for ai in socket.getaddrinfo(host, None)}
        ours = {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return False
    return any(a.startswith("127.") or a == "::1" for a in theirs) or bool(theirs & ours)


def server_facts(endpoint: Endpoint, timeout_s: float) -> dict:
    """Version, extensions and models of the server at ``endpoint.http_url``; raises :class:`DoctorError` when
    nothing answers, the answer is not Triton's, or it comes too late."""
    url = endpoint.http_url
    try:
        meta = kserve.server_metadata(endpoint, timeout=timeout_s)
    except kserve.KServeError as exc:
        if exc.code == "timeout":
            raise DoctorError("slow_server", f"{url} did not answer GET /v2 within {timeout_s:g} s") from None
        if exc.code == "connection":
            raise DoctorError("not_reachable", f"nothing answers HTTP at {url}: {exc.detail}") from None
        raise DoctorError("not_triton", f"{url} is not Triton's HTTP API: {exc.detail}") from None
    if not isinstance(meta, dict) or "version" not in meta or "extensions" not in meta:
        raise DoctorError("not_triton", f"{url} answers GET /v2, but not as Triton: {str(meta)[:200]}")
    try:
        version = TritonVersion.parse(str(meta["version"]))
        release = version.release
    except VersionError:
        version, release = None, "?"
    models: list[str] = []
    try:
        index = kserve.repository_index(endpoint, timeout=timeout_s)
        models = sorted({m["name"] for m in index if m.get("state") == "READY"})
    except kserve.KServeError:  # restricted repository API: the statistics list every loaded model
        try:
            stats = kserve.statistics(endpoint, timeout=timeout_s)
            models = sorted({m.get("name", "") for m in stats.get("model_stats", [])} - {""})
        except kserve.KServeError:
            models = []
    return {
        "name": meta.get("name", ""),
        "version": str(version) if version else str(meta["version"]),
        "release": release,
        "extensions": list(meta.get("extensions", [])),
        "models": models,
        "local": is_local(url),
    }


def grpc_address(http_url: str, given: str | None) -> str | None:
    """The gRPC ``host:port`` of the server at ``http_url``: ``given``, else the port above the HTTP one, else
    Triton's 8001 on its host; each checked to be the same server (their statistics agree; ``given`` is also taken
    when it answers as Triton's gRPC and the statistics cannot be compared). None: no gRPC."""
    host, port = split_host_port(http_url)
    candidates = [host_port(given)] if given else [f"{host}:{port + 1}", f"{host}:8001"]
    for cand in dict.fromkeys(candidates):
        if server_stats.statistics_address(cand, [http_url], timeout=3.0) is not None:
            return cand
    if (
        given
    ):  # named by the engineer: taken when it answers as Triton's gRPC, even without statistics to compare
        client = grpcclient.InferenceServerClient(candidates[0])
        try:
            if client.is_server_live(client_timeout=3.0):
                return candidates[0]
        except Exception:  # noqa: BLE001 - refused, unreachable, not gRPC: not this server's gRPC port
            pass
        finally:
            client.close()
    return None


def client_shm(run: Run, facts: dict) -> str:
    """``allowed``, ``refused`` (Triton's words noted), ``not_local`` or ``not_offered``."""
    if SHM_EXTENSION not in facts["extensions"]:
        return "not_offered"
    if not facts["local"]:
        return "not_local"
    try:
        refused = shm_protocol.refusal(run.endpoint, "http-shm", timeout_s=min(5.0, run.plan.timeout_s))
    except Exception as exc:  # noqa: BLE001 - any failure means we cannot use it; say why
        run.note("shm_failed", error=str(exc)[:200])
        return "refused"
    if refused:
        run.report["server"]["shm_message"] = refused
        run.note("shm_refused_note", message=refused)
        return "refused"
    return "allowed"


# -- the client's (de)serialisation -------------------------------------------------------------------------
def _median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return float(pystats.median(times))


def codec_ms(
    endpoint: Endpoint,
    protocol: str,
    model: str,
    inputs: dict[str, np.ndarray],
    outputs: list[str],
    reps: int,
    timeout_s: float,
) -> tuple[float, float]:
    """(serialize, deserialize) ms per request over ``protocol``, each timed on its own on the same request and a
    real answer. HTTP: tritonclient's body encoder and ``InferResult.from_response_body`` + ``as_numpy``; gRPC:
    building the ModelInferRequest and reading the answer into numpy (the protobuf's own (de)serialisation happens
    inside the transport: the wire's leg); shared memory: writing the inputs into a region, reading the outputs."""
    if protocol in ("http-json", "http-binary"):
        caller = Caller(endpoint, protocol, model, inputs, output_names=outputs)
        ser = _median_ms(caller.encode_http, reps)
        body, headers = caller.encode_http()
        host, port = split_host_port(endpoint.http_url)
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        try:
            conn.request("POST", f"/v2/models/{model}/infer", body=body, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            if resp.status != 200:
                raise ProtocolError(f"HTTP {resp.status}: {raw[:200]!r}", "server")
            hl = resp.getheader("Inference-Header-Content-Length")
        finally:
            conn.close()

        def decode() -> None:
            r = httpclient.InferResult.from_response_body(raw, False, int(hl) if hl else None, None)
            for o in r.get_response().get("outputs", []):
                r.as_numpy(o["name"])

        return ser, _median_ms(decode, reps)
    if protocol == "grpc":
        caller = Caller(endpoint, "grpc", model, inputs, output_names=outputs)
        ser = _median_ms(caller.encode_grpc, reps)
        client = grpcclient.InferenceServerClient(endpoint.grpc_url)
        try:
            ins, outs = caller.grpc_request()
            response = client.infer(model, ins, outputs=outs, client_timeout=timeout_s).get_response()
        except Exception as exc:  # noqa: BLE001 - tritonclient raises its own
            raise ProtocolError(str(exc), "server") from exc
        finally:
            client.close()

        def decode_grpc() -> None:
            r = grpcclient.InferResult(response)
            for o in response.outputs:
                r.as_numpy(o.name)

        return ser, _median_ms(decode_grpc, reps)
    # shared memory: the client's work is writing the region and reading it back
    arrays = list(inputs.values())
    size = sum(a.nbytes for a in arrays)
    out_arrays = [
        np.zeros(a.shape, a.dtype) for a in _sample_outputs(endpoint, model, inputs, outputs, timeout_s)
    ]
    out_size = max(1, sum(a.nbytes for a in out_arrays))
    region = f"{shm_protocol.REGION_PREFIX}{os.getpid()}_doc"
    handle = shm_memory.create_shared_memory_region(region, "/" + region, max(size, out_size))
    try:
        ser = _median_ms(lambda: shm_memory.set_shared_memory_region(handle, arrays), reps)
        shm_memory.set_shared_memory_region(handle, out_arrays)

        def read() -> None:
            offset = 0
            for a in out_arrays:
                shm_memory.get_contents_as_numpy(handle, a.dtype, a.shape, offset=offset)
                offset += a.nbytes

        return ser, _median_ms(read, reps)
    finally:
        shm_memory.destroy_shared_memory_region(handle)


def _sample_outputs(endpoint, model, inputs, outputs, timeout_s) -> list[np.ndarray]:
    caller = Caller(endpoint, "http-binary", model, inputs, output_names=outputs, timeout_s=timeout_s)
    try:
        return list(caller.call().outputs.values())
    finally:
        caller.close()


# -- the wire -----------------------------------------------------------------------------------------------
def echo_ms(request_bytes: int, response_bytes: int, calls: int = 20) -> float:
    """Median round trip of ``request_bytes`` out and ``response_bytes`` back through a loopback TCP echo (one
    connection, Nagle off): what moving the same bytes through this machine's socket stack costs."""
    request_bytes, response_bytes = max(1, int(request_bytes)), max(1, int(response_bytes))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    payload_back = b"r" * response_bytes

    def serve() -> None:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            for _ in range(calls + 1):
                got = 0
                while got < request_bytes:
                    chunk = conn.recv(min(1 << 20, request_bytes - got))
                    if not chunk:
                        return
                    got += len(chunk)
                conn.sendall(payload_back)

    th = threading.Thread(target=serve, daemon=True, name="doctor-echo")
    th.start()
    payload = b"q" * request_bytes
    times = []
    client = socket.create_connection(listener.getsockname(), timeout=10.0)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for i in range(calls + 1):
            t0 = time.perf_counter()
            client.sendall(payload)
            got = 0
            while got < response_bytes:
                chunk = client.recv(1 << 20)
                if not chunk:
                    raise OSError("echo closed")
                got += len(chunk)
            if i:  # the first opens the connection's buffers
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        client.close()
        listener.close()
        th.join(timeout=2.0)
    return float(pystats.median(times))


def connect_ms(address: str, tries: int = 5) -> float:
    """Median TCP connect time to ``host:port`` (one network round trip)."""
    host, port = split_host_port(address)
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        socket.create_connection((host, port), timeout=5.0).close()
        times.append((time.perf_counter() - t0) * 1000)
    return float(pystats.median(times))


def trace_split(timestamps: dict[str, int], client_start: int, client_end: int) -> dict[str, float] | None:
    """One traced request's wire and front-end time (ms), on the client's and the server's common clock:
    wire = client send to the request received (``HTTP_RECV_END`` / ``GRPC_WAITREAD_END``) plus the answer's
    send (after ``REQUEST_END``) to the client's receipt; frontend = received to ``REQUEST_START`` plus
    ``REQUEST_END`` to the answer's send. With ``REQUEST_START``..``REQUEST_END`` (the statistics' request time)
    they add up to the client's latency. None when a timestamp is missing."""
    recv_end = timestamps.get("HTTP_RECV_END") or timestamps.get("GRPC_WAITREAD_END")
    send_start = timestamps.get("HTTP_SEND_START") or timestamps.get("GRPC_SEND_START")
    start, end = timestamps.get("REQUEST_START"), timestamps.get("REQUEST_END")
    if None in (recv_end, send_start, start, end) or recv_end < client_start or client_end < end:
        return None
    out_from = max(send_start, end)
    return {
        "wire": ((recv_end - client_start) + (client_end - out_from)) / 1e6,
        "frontend": (max(0, start - recv_end) + max(0, send_start - end)) / 1e6,
    }


def frontend_ms(timestamps: dict[str, int]) -> float | None:
    """One traced request's time in the server's front end (ms), from its timestamps alone: received
    (``HTTP_RECV_END`` / ``GRPC_WAITREAD_END``) to ``REQUEST_START``, and ``REQUEST_END`` to the answer's send."""
    recv_end = timestamps.get("HTTP_RECV_END") or timestamps.get("GRPC_WAITREAD_END")
    send_start = timestamps.get("HTTP_SEND_START") or timestamps.get("GRPC_SEND_START")
    start, end = timestamps.get("REQUEST_START"), timestamps.get("REQUEST_END")
    if None in (recv_end, send_start, start, end):
        return None
    return (max(0, start - recv_end) + max(0, send_start - end)) / 1e6


def traced_wire(run: Run, protocol: str, model: str, inputs, outputs) -> dict[str, float] | None:
    """A few more traced requests over ``protocol``; the median wire and front-end time over all of this protocol's
    traced requests so far (None: no trace here)."""
    caller = make_caller(
        run.endpoint, protocol, model, inputs, output_names=outputs, timeout_s=run.plan.timeout_s
    )
    splits = []
    times: list[tuple[int, int]] = []

    def send() -> (
        None
    ):  # back to back, as a cell's requests go (a gap lets gRPC's flow-control window shrink)
        for _ in range(run.plan.traced_calls):
            t0 = time.monotonic_ns()  # the server's trace clock (CLOCK_MONOTONIC): one axis on this host
            caller.call()
            times.append((t0, time.monotonic_ns()))

    try:
        caller.call()  # the connection (and a shared-memory region) opened outside the traced window
        caller.call()
        _, found = capture_many(
            run.endpoint, model, send, run.plan.traced_calls, timeout_s=min(5.0, max(1.0, run.left()))
        )
        for tl, (t0, t1) in zip(found, times, strict=False):  # both in sending order
            split = trace_split(tl.root.timestamps, t0, t1)
            if split:
                splits.append(split)
    finally:
        caller.close()
    if not splits:
        return None
    samples = run.wire_samples.setdefault(protocol, [])
    samples.extend(
        splits
    )  # every traced call of this protocol so far: a burst of load at one moment is outvoted
    return {k: float(pystats.median(s[k] for s in samples)) for k in ("wire", "frontend")}


# -- one cell ------------------------------------------------------------------------------------------------
def _stats_of(endpoint: Endpoint, timeout_s: float) -> server_stats.Snapshot | None:
    try:
        return server_stats.snapshot(endpoint, timeout=timeout_s)
    except (kserve.KServeError, ValueError):
        return None


def measure_cell(run: Run, cell: Cell, spec: LoadSpec, has_stats: bool) -> tuple[float | None, float]:
    """Load the model as ``spec`` says (a request cap that normally ends the run), with statistics snapshots
    around it; fill the cell's requests, throughput, queue and compute. Returns (mean latency ms, window s)."""
    timeout = min(5.0, run.plan.timeout_s)
    before = _quiet_stats(run.endpoint, spec.model, timeout) if has_stats else None
    result, cell_frontend = _load(run, spec)
    if cell_frontend is not None:
        cell.parts_ms["frontend"] = cell_frontend
    ok = result.requests - result.errors
    cell.requests, cell.errors = result.requests, result.errors
    cell.throughput_rps = result.throughput_rps if ok else None
    if result.errors:
        cell.notes.append(f"errors: {'; '.join(result.error_messages[:2])}")
    if before is None:
        cell.stats_check = STATS_NONE
    elif result.stop_reason != "requests":
        cell.stats_check = "cut_short"  # requests still in flight when the window closed: no exact count
    else:
        after, settle_until = None, time.perf_counter() + 2.0
        while True:  # Triton counts a request just after its answer has left
            after = _stats_of(run.endpoint, timeout)
            if after is None or model_count(after, spec.model) - model_count(before, spec.model) >= ok:
                break
            if time.perf_counter() > settle_until:
                break
            time.sleep(server_stats.SETTLE_S / 2)
        if after is None or spec.model not in after:
            cell.stats_check = STATS_NONE
        else:
            delta = server_stats.model_delta(before, after, spec.model)
            cell.stats_check = check_delta(ok, result.errors, delta.requests, delta.failed)
            if cell.stats_check == STATS_OURS:
                parts = [delta.compute_input_ms, delta.compute_infer_ms, delta.compute_output_ms]
                cell.parts_ms["queue"] = delta.queue_ms
                cell.parts_ms["compute"] = None if None in parts else sum(parts)  # type: ignore[arg-type]
                cell.parts_ms["server_other"] = delta.overhead_ms
    return result.mean_latency_ms, result.window_s


def _quiet_stats(endpoint: Endpoint, model: str, timeout_s: float, within_s: float = 3.0):
    """The statistics once the model's count has stopped moving (two reads :data:`server_stats.SETTLE_S` apart
    agree): requests of an earlier run (perf_analyzer's last ones, say) are counted a moment after their answer,
    and must not land in the next cell's delta. After ``within_s`` the last read, moving or not."""
    last = _stats_of(endpoint, timeout_s)
    until = time.perf_counter() + within_s
    while last is not None and time.perf_counter() < until:
        time.sleep(server_stats.SETTLE_S)
        now = _stats_of(endpoint, timeout_s)
        if now is None or model_count(now, model) == model_count(last, model):
            return now
        last = now
    return last


def _load(run: Run, spec: LoadSpec):
    """Run the cell's load; where the trace is usable, with every request traced, so the front end's time is
    this cell's own (mean over its traced requests). Returns (the run's result, front end ms or None)."""
    if not run.trace_ok:
        return run_bench(run.endpoint, spec), None
    box = []
    try:
        _, found = capture_many(
            run.endpoint, spec.model, lambda: box.append(run_bench(run.endpoint, spec)), spec.max_requests,
            timeout_s=3.0,
        )  # fmt: skip
    except (TraceError, kserve.KServeError):
        return (box[0] if box else run_bench(run.endpoint, spec)), None
    values = [v for v in (frontend_ms(tl.root.timestamps) for tl in found) if v is not None]
    return box[0], (float(np.mean(values)) if values else None)


def model_count(snap: server_stats.Snapshot, model: str) -> int:
    entry = snap.get(model, {})
    return int(entry.get("inference_stats", {}).get("success", {}).get("count", 0) or 0)


# -- the whole battery ---------------------------------------------------------------------------------------
def protocols_offered(grpc: bool, shm: str) -> list[str]:
    out = ["http-json", "http-binary"] + (["grpc"] if grpc else [])
    if shm == "allowed":
        out += ["http-shm"] + (["grpc-shm"] if grpc else [])
    return out


def run_doctor(
    http_url: str,
    grpc_url: str | None = None,
    model: str | None = None,
    quick: bool = False,
    budget_s: float | None = None,
    timeout_s: float = 10.0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Examine the server at ``http_url`` and run the battery; returns the report (JSON-ready: ``ok``,
    ``server``, ``model``, ``knee``, ``cells``, ``targets``, ``not_measured``, ``error``)."""
    plan = Plan.of(quick, budget_s, timeout_s)
    t0 = time.perf_counter()
    endpoint = Endpoint.remote(http_url, grpc_url or "")
    run = Run(endpoint, plan, t0 + plan.budget_s, progress=progress)
    report = run.report
    report.update(
        ok=False,
        url=endpoint.http_url,
        quick=quick,
        budget_s=plan.budget_s,
        load_average=list(os.getloadavg()),
        cells=[],
        not_measured=[],
    )
    try:
        _examine(run, grpc_url, model)
    except DoctorError as exc:
        report["error"] = {"key": exc.code, "params": {"detail": exc.detail}}
    report["cells"] = [c.to_json() if isinstance(c, Cell) else c for c in report["cells"]]
    report["targets"] = targets(
        [Cell(**{k: v for k, v in c.items() if k in Cell.__dataclass_fields__}) for c in report["cells"]]
    )
    report["elapsed_s"] = round(time.perf_counter() - t0, 2)
    report["load_average_end"] = list(os.getloadavg())
    return report


def _examine(run: Run, grpc_url: str | None, model: str | None) -> None:
    report, plan, endpoint = run.report, run.plan, run.endpoint
    run.say("server")
    facts = server_facts(endpoint, plan.timeout_s)
    report["server"] = facts
    grpc = grpc_address(endpoint.http_url, grpc_url)
    if grpc is None:
        run.note("no_grpc", url=grpc_url or "")
    else:
        endpoint.grpc_url = grpc
    facts["grpc_url"] = grpc
    facts["client_shm"] = client_shm(run, facts)
    if model is None:
        if catalog.CLASSIFIER not in facts["models"]:
            raise DoctorError(
                "no_model", f"no --model given and no '{catalog.CLASSIFIER}' here: {facts['models']}"
            )
        model = catalog.CLASSIFIER
    report["model"] = model
    try:
        info, inputs = sample_inputs(endpoint, model, "http-binary", timeout=plan.timeout_s)
    except ProtocolError as exc:
        raise DoctorError("model_unusable", f"{model}: {exc}") from None
    outputs = [o.name for o in info.outputs]
    has_stats = _has_statistics(run, model)
    if not has_stats:
        run.note("no_statistics", model=model)
    protocols = protocols_offered(grpc is not None, facts["client_shm"])
    report["protocols"] = protocols

    # the client's (de)serialisation and the wire, per protocol
    per: dict[str, dict] = {}
    trace_ok = facts["local"]
    if not trace_ok:
        run.note("trace_not_local")
    failed: list[str] = []
    for protocol in list(protocols):
        run.say(f"codec and wire: {protocol}")
        try:
            ser, deser = codec_ms(endpoint, protocol, model, inputs, outputs, plan.codec_reps, plan.timeout_s)
        except ProtocolError as exc:
            protocols.remove(protocol)
            failed.append(f"{protocol}: {exc}")
            run.note("protocol_failed", protocol=protocol, error=str(exc)[:200])
            continue
        per[protocol] = {"serialize": ser, "deserialize": deser}
        if trace_ok:
            try:
                split = traced_wire(run, protocol, model, inputs, outputs)
            except (TraceError, kserve.KServeError) as exc:
                trace_ok = False
                run.note("trace_unusable", error=str(exc)[:200])
                split = None
            if split is not None:
                per[protocol].update(split, source="trace")
    if not protocols:
        raise DoctorError(
            "model_unusable", f"{model}: no protocol could send it a request: {'; '.join(failed)}"
        )
    report["wire_source"] = "trace" if trace_ok else "echo"
    run.trace_ok = trace_ok
    base = next((p for p in ("grpc", "http-binary") if p in protocols), protocols[0])

    # the knee, cheaply, on one protocol
    run.say("knee")
    # each step a count of requests, not a time: a slow model gives whole requests per window, and a short window
    # would round its throughput to them
    per_step = 4 if plan.quick else 16
    spec0 = LoadSpec(model, base, 1, 4 * plan.knee_s + 2, max_requests=per_step, inputs=inputs,
                     output_names=outputs, warmup_s=0.0, server_side=False, timeout_s=plan.timeout_s)  # fmt: skip

    def knee_rps(c: int) -> float:
        if run.left() < 10:
            return 0.0
        step = replace(spec0, concurrency=c, max_requests=per_step * c)
        run_bench(endpoint, replace(step, max_requests=c))  # each connection opened before the count
        return run_bench(endpoint, step).throughput_rps

    knee, points = search_knee(knee_rps, plan.max_concurrency)
    report["knee"] = {"protocol": base, "concurrency": knee, "points": points}
    one_rps = dict(points).get(1) or 1.0
    knee_gain = max(1.0, (dict(points).get(knee) or one_rps) / one_rps)
    concurrencies = [1, max(2, knee)]  # a knee at 1 (no gain from 2): 2 shows what waiting there costs

    cells: list[Cell] = report["cells"]
    for protocol in protocols:
        rate1 = None
        for c in concurrencies:
            cell = Cell(protocol, c)
            cells.append(cell)
            if run.left() < (5 if plan.quick else 15):
                cell.notes.append("budget")
                run.note("budget", protocol=protocol, concurrency=c)
                continue
            run.say(f"cell {protocol} x{c}")
            if rate1 is None:  # a short probe: warms the server and this protocol, and says how fast it goes
                probe = run_bench(endpoint, LoadSpec(model, protocol, 1, min(0.5, plan.cell_s / 2), inputs=inputs,
                                  output_names=outputs, warmup_s=0.1, server_side=False, timeout_s=plan.timeout_s))  # fmt: skip
                rate1 = probe.throughput_rps or 1.0
            rate = rate1 * (knee_gain if c > 1 else 1.0)
            n = int(max(3 if plan.quick else 20, min(rate * plan.cell_s, 20_000)))
            spec = LoadSpec(model, protocol, c, min(120.0, max(1.0, 4 * plan.cell_s + 5)), max_requests=n,
                            inputs=inputs, output_names=outputs, warmup_s=0.0, server_side=False,
                            timeout_s=plan.timeout_s, grace_s=2.0)  # fmt: skip
            p = dict(per[protocol])
            if run.trace_ok and "wire" in p and not plan.quick:
                # more traced calls just before the cell: the samples spread over the run, as the load varies
                try:
                    near = traced_wire(run, protocol, model, inputs, outputs)
                except (TraceError, kserve.KServeError, ProtocolError):
                    near = None
                if near is not None:
                    p.update(near)
            latency, _ = measure_cell(run, cell, spec, has_stats)
            if latency is not None:
                cell.e2e_ms = latency + p["serialize"] + p["deserialize"]
                cell.parts_ms.update(serialize=p["serialize"], deserialize=p["deserialize"])
                if "wire" in p:
                    cell.parts_ms["wire"] = p["wire"]
                    cell.parts_ms.setdefault("frontend", p["frontend"])
                    cell.wire_source = "trace"
                else:
                    cell.parts_ms["wire"] = _echo_wire(run, protocol, inputs, outputs)
                    cell.wire_source = "echo"
                    cell.parts_ms.setdefault("frontend", None)
            for part in ("queue", "compute", "server_other"):
                cell.parts_ms.setdefault(part, None)
            cell.settle()
            if cell.stats_check not in (STATS_OURS, STATS_NONE):
                run.note(f"stats_{cell.stats_check}", protocol=protocol, concurrency=c)
            if plan.perf_analyzer and protocol in ("http-binary", "grpc") and cell.e2e_ms is not None:
                _cross_check(run, cell, model, inputs, info.max_batch_size)
            elif protocol not in ("http-binary", "grpc") and not plan.quick:
                cell.notes.append("perf_analyzer_no_mode")
    if plan.quick:
        run.note("quick_no_perf_analyzer")
    report["ok"] = any(c.e2e_ms is not None for c in cells)


def _echo_wire(run: Run, protocol: str, inputs, outputs) -> float:
    """The wire for a cell without a trace: the loopback echo of the request's and answer's bytes, plus the extra
    round trip of another host (its TCP connect time less the loopback's)."""
    if protocol not in run.echo:
        caller = make_caller(run.endpoint, protocol, run.report["model"], inputs, output_names=outputs)
        try:
            r = caller.call()
        finally:
            caller.close()
        wire = echo_ms(r.request_bytes, r.response_bytes)
        if not run.report["server"]["local"]:
            wire += max(0.0, connect_ms(run.endpoint.http_url) - connect_ms_loopback())
        run.echo[protocol] = wire
    return run.echo[protocol]


def connect_ms_loopback() -> float:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        host, port = listener.getsockname()[:2]
        return connect_ms(f"{host}:{port}")
    finally:
        listener.close()


def _has_statistics(run: Run, model: str) -> bool:
    try:
        stats = kserve.statistics(run.endpoint, model, timeout=min(5.0, run.plan.timeout_s))
    except kserve.KServeError:
        return False
    return any(e.get("name") == model for e in stats.get("model_stats", []) or [])


def _cross_check(run: Run, cell: Cell, model: str, inputs, max_batch_size: int) -> None:
    """perf_analyzer on the cell's protocol, concurrency and input, interleaved with the doctor's own engine in
    :data:`PA_ROUNDS` slices of 2 s each (:func:`perf_analyzer.cross_check`), so both see the same moments of a busy
    machine."""
    seconds, rounds = (3.0, 3) if run.plan.quick else (10.0, PA_ROUNDS)
    if run.left() < 3 * seconds + 10:
        cell.notes.append("budget_perf_analyzer")
        run.note("budget_perf_analyzer", protocol=cell.protocol, concurrency=cell.concurrency)
        return
    run.say(f"perf_analyzer {cell.protocol} x{cell.concurrency}")
    spec = LoadSpec(model, cell.protocol, cell.concurrency, seconds, timeout_s=run.plan.timeout_s)
    try:
        out = cross_check(run.endpoint, spec, rounds=rounds, tolerance=PA_TOLERANCE)
    except PerfAnalyzerError as exc:
        cell.notes.append(f"perf_analyzer: {str(exc)[:200]}")
        run.note("perf_analyzer_failed", protocol=cell.protocol, error=str(exc)[:200])
        return
    cell.perf_analyzer_rps = out["perf_analyzer_rps"]
    cell.engine_rps = out["engine_rps"]
