"""``python -m triton_kitchen doctor``: what a Triton server is, and where a request's time goes on it.

First the server (:mod:`.doctor_server`): its version, extensions and models, and, only when it runs on this host,
whether it takes a client's shared memory. Then a fixed battery on one model: each protocol the server offers
(HTTP JSON, HTTP binary, gRPC, and the two shared-memory ones where allowed) at concurrency 1 and near the knee
(:func:`doctor_card.search_knee`, doubling until a doubling gains less than 10 %). Each part of a request's time is
measured on its own (:mod:`.doctor_parts`: the client's (de)serialisation, the wire and the server's front end from
the trace, or a loopback echo); the server's queue and compute come from statistics deltas around the cell's
requests, used only when the delta counts exactly the doctor's requests (else another client was using the model,
and the cell says so); what none of these accounts for is ``unexplained`` (:mod:`.doctor_card`).

The load itself is :func:`triton_kitchen.tools.bench.run_bench` (a closed loop, the request encoded once, as
perf_analyzer does): the client's end-to-end time per request is its mean latency plus the (de)serialisation a
client that encodes each request pays. perf_analyzer runs the same protocol, concurrency and input where it can
(HTTP binary and gRPC) as the throughput's cross-check. Every step is bounded by the run's budget.

Progress: ``progress(key, params)`` with a ``[doctor]`` message key (``step_server``, ``step_parts``,
``step_knee``, ``step_cell``, ``step_perf_analyzer``) when a step starts, and again (the same key) every quarter of
a second while a load runs. A caller stops the run by raising from it (Streamlit's rerun does): the load in
progress halts, every region and connection is closed on the way out.
"""

from __future__ import annotations

import os
import statistics as pystats
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.endpoint import Endpoint, host_port
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
from triton_kitchen.tools.doctor_parts import (
    codec_ms,
    connect_ms,
    connect_ms_loopback,
    echo_ms,
    frontend_ms,
    traced_splits,
)
from triton_kitchen.tools.doctor_server import (
    DoctorError,
    check_address,
    client_shm,
    grpc_address,
    server_facts,
)
from triton_kitchen.tools.load import MAX_CONCURRENCY, LoadSpec
from triton_kitchen.tools.perf_analyzer import PerfAnalyzerError, cross_check
from triton_kitchen.tools.protocols import ProtocolError, make_caller, sample_inputs
from triton_kitchen.tools.trace import TraceError, capture_many

FULL_BUDGET_S = 300.0  # unattended, against the embedded server
QUICK_BUDGET_S = 25.0
PA_ROUNDS = 5  # slices of the perf_analyzer cross-check: the finer they alternate, the more alike the machine they see
PA_SECONDS = 10.0  # each side's measuring time in a full run's cross-check, all slices together
CROSS_CHECKED = ("http-binary", "grpc")  # the protocols perf_analyzer can send as the doctor does

Progress = Callable[[str, dict], None]


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
    progress: Progress | None = None
    echo: dict[str, float] = field(default_factory=dict)  # protocol -> the echo's wire ms
    trace_ok: bool = False  # the trace API is open to us and its file readable here
    # protocol -> every traced call's wire and front-end split so far
    wire_samples: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    step: tuple[str, dict] = ("step_server", {})

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def note(self, key: str, **params) -> None:
        self.report.setdefault("not_measured", []).append({"key": key, "params": params})

    def say(self, key: str, **params) -> None:
        """A step begins: ``key`` is its ``[doctor]`` message."""
        self.step = (key, params)
        self.beat()

    def beat(self, *_args) -> None:
        """The step goes on (a load's progress callback): the caller hears it again, and may stop the run."""
        if self.progress is not None:
            self.progress(*self.step)

    def bench(self, spec: LoadSpec):
        """One load, its progress heard twice a second (only when someone listens: the load shares this process)."""
        return run_bench(
            self.endpoint, spec, progress=self.beat if self.progress else None, progress_every_s=0.5
        )


def run_doctor(
    http_url: str,
    grpc_url: str | None = None,
    model: str | None = None,
    quick: bool = False,
    budget_s: float | None = None,
    timeout_s: float = 10.0,
    progress: Progress | None = None,
    headers: dict[str, str] | None = None,
) -> dict:
    """Examine the server at ``http_url`` and run the battery; returns the report (JSON-ready: ``ok``,
    ``server``, ``model``, ``knee``, ``cells``, ``targets``, ``not_measured``, ``error``). ``headers``: what every
    request carries (default: the restricted APIs' key from ``TRITON_KITCHEN_KEY``, as for any remote server)."""
    plan = Plan.of(quick, budget_s, timeout_s)
    t0 = time.perf_counter()
    report: dict = {
        "ok": False,
        "url": http_url.strip(),
        "quick": quick,
        "budget_s": plan.budget_s,
        "load_average": list(os.getloadavg()),
        "cells": [],
        "not_measured": [],
    }
    endpoint = Endpoint.remote(http_url, grpc_url or "")
    if headers is not None:
        endpoint.headers = dict(headers)
    report["url"] = endpoint.http_url
    run = Run(endpoint, plan, t0 + plan.budget_s, report=report, progress=progress)
    try:
        check_address(endpoint.http_url)
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


def target_of(
    typed: str, typed_grpc: str, app: Endpoint | None
) -> tuple[str, str | None, dict[str, str] | None]:
    """(HTTP address, gRPC address or None, headers or None) of the server a page examines: the typed address, or,
    left empty, the app's own server. The app's server keeps its gRPC port and its headers (the key that opens its
    trace API) also when its address is typed; another server gets the environment's key (None: the default)."""
    typed, typed_grpc = host_port(typed), host_port(typed_grpc)
    if app is not None and (not typed or typed == app.http_url):
        return app.http_url, typed_grpc or app.grpc_url, dict(app.headers)
    return typed, typed_grpc or None, None


# -- the battery ---------------------------------------------------------------------------------------------
def protocols_offered(grpc: bool, shm: str) -> list[str]:
    out = ["http-json", "http-binary"] + (["grpc"] if grpc else [])
    if shm == "allowed":
        out += ["http-shm"] + (["grpc-shm"] if grpc else [])
    return out


@dataclass
class Subject:
    """What the battery loads: the model, its request and outputs, and what the server lets us see of it."""

    model: str
    inputs: dict
    outputs: list[str]
    has_stats: bool


def _examine(run: Run, grpc_url: str | None, model: str | None) -> None:
    report = run.report
    facts, subject = _the_server(run, grpc_url, model)
    protocols = protocols_offered(facts["grpc_url"] is not None, facts["client_shm"])
    per = _the_parts(run, subject, protocols)  # drops the protocols that cannot call the model
    report["protocols"] = protocols
    base = next((p for p in CROSS_CHECKED[::-1] if p in protocols), protocols[0])
    knee, knee_gain = _the_knee(run, subject, base)
    concurrencies = [1, max(2, knee)]  # a knee at 1 (no gain from 2): 2 shows what waiting there costs
    # the protocols perf_analyzer checks first: on a busy machine the budget may run out before the last cells
    for protocol in sorted(protocols, key=lambda p: p not in CROSS_CHECKED):
        rate1: list[float] = []
        for c in concurrencies:
            cell = Cell(protocol, c)
            report["cells"].append(cell)
            _one_cell(run, subject, cell, per[protocol], rate1, knee_gain)
    report["cells"].sort(key=lambda cell: protocols.index(cell.protocol))  # the card's order: the protocols'
    if run.plan.quick:
        run.note("quick_no_perf_analyzer")
    report["ok"] = any(c.e2e_ms is not None for c in report["cells"])


def _the_server(run: Run, grpc_url: str | None, model: str | None) -> tuple[dict, Subject]:
    report, plan, endpoint = run.report, run.plan, run.endpoint
    run.say("step_server")
    facts = server_facts(endpoint, plan.timeout_s)
    report["server"] = facts
    grpc = grpc_address(endpoint.http_url, grpc_url)
    if grpc is None:
        run.note("no_grpc", url=grpc_url or "")
    else:
        endpoint.grpc_url = grpc
    facts["grpc_url"] = grpc
    state, refused, failed = client_shm(endpoint, facts, plan.timeout_s)
    facts["client_shm"] = state
    if failed:
        run.note("shm_failed", error=failed)
    if refused:
        facts["shm_message"] = refused
        run.note("shm_refused_note", message=refused)
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
    has_stats = _has_statistics(run, model)
    if not has_stats:
        run.note("no_statistics", model=model)
    return facts, Subject(model, inputs, [o.name for o in info.outputs], has_stats)


def _the_parts(run: Run, subject: Subject, protocols: list[str]) -> dict[str, dict]:
    """The client's (de)serialisation and, where the trace is usable, the wire and front end, per protocol; a
    protocol that cannot call the model is removed from ``protocols`` (and noted)."""
    per: dict[str, dict] = {}
    trace_ok = run.report["server"]["local"]
    if not trace_ok:
        run.note("trace_not_local")
    failed: list[str] = []
    for protocol in list(protocols):
        run.say("step_parts", protocol=protocol)
        try:
            ser, deser = codec_ms(run.endpoint, protocol, subject.model, subject.inputs, subject.outputs,
                                  run.plan.codec_reps, run.plan.timeout_s)  # fmt: skip
        except ProtocolError as exc:
            protocols.remove(protocol)
            failed.append(f"{protocol}: {exc}")
            run.note("protocol_failed", protocol=protocol, error=str(exc)[:200])
            continue
        per[protocol] = {"serialize": ser, "deserialize": deser}
        if trace_ok:
            try:
                split = traced_wire(run, protocol, subject)
            except (TraceError, kserve.KServeError) as exc:
                trace_ok = False
                run.note("trace_unusable", error=str(exc)[:200])
                split = None
            if split is not None:
                per[protocol].update(split, source="trace")
    if not protocols:
        raise DoctorError(
            "model_unusable", f"{subject.model}: no protocol could send it a request: {'; '.join(failed)}"
        )
    run.report["wire_source"] = "trace" if trace_ok else "echo"
    run.trace_ok = trace_ok
    return per


def _the_knee(run: Run, subject: Subject, base: str) -> tuple[int, float]:
    """The knee, cheaply, on one protocol; (its concurrency, its throughput over concurrency 1's)."""
    plan = run.plan
    run.say("step_knee", protocol=base)
    # each step a count of requests, not a time: a slow model gives whole requests per window, and a short window
    # would round its throughput to them
    per_step = 4 if plan.quick else 16
    spec0 = LoadSpec(subject.model, base, 1, 4 * plan.knee_s + 2, max_requests=per_step, inputs=subject.inputs,
                     output_names=subject.outputs, warmup_s=0.0, server_side=False, timeout_s=plan.timeout_s)  # fmt: skip

    def knee_rps(c: int) -> float:
        if run.left() < 10:
            return 0.0
        step = replace(spec0, concurrency=c, max_requests=per_step * c)
        run.bench(replace(step, max_requests=c))  # each connection opened before the count
        return run.bench(step).throughput_rps

    knee, points = search_knee(knee_rps, plan.max_concurrency)
    run.report["knee"] = {"protocol": base, "concurrency": knee, "points": points}
    one_rps = dict(points).get(1) or 1.0
    return knee, max(1.0, (dict(points).get(knee) or one_rps) / one_rps)


def _one_cell(
    run: Run, subject: Subject, cell: Cell, parts: dict, rate1: list[float], knee_gain: float
) -> None:
    """Measure one cell (``rate1``: concurrency 1's probed throughput on this protocol, filled by the first)."""
    plan, protocol, c = run.plan, cell.protocol, cell.concurrency
    if run.left() < (5 if plan.quick else 15):
        cell.notes.append("budget")
        run.note("budget", protocol=protocol, concurrency=c)
        return
    run.say("step_cell", protocol=protocol, concurrency=c)
    if not rate1:  # a short probe: warms the server and this protocol, and says how fast it goes
        probe = run.bench(LoadSpec(subject.model, protocol, 1, min(0.5, plan.cell_s / 2), inputs=subject.inputs,
                                   output_names=subject.outputs, warmup_s=0.1, server_side=False,
                                   timeout_s=plan.timeout_s))  # fmt: skip
        rate1.append(probe.throughput_rps or 1.0)
    rate = rate1[0] * (knee_gain if c > 1 else 1.0)
    n = int(max(3 if plan.quick else 20, min(rate * plan.cell_s, 20_000)))
    spec = LoadSpec(subject.model, protocol, c, min(120.0, max(1.0, 4 * plan.cell_s + 5)), max_requests=n,
                    inputs=subject.inputs, output_names=subject.outputs, warmup_s=0.0, server_side=False,
                    timeout_s=plan.timeout_s, grace_s=2.0)  # fmt: skip
    p = dict(parts)
    if run.trace_ok and "wire" in p and not plan.quick:
        # more traced calls just before the cell: the samples spread over the run, as the load varies
        try:
            near = traced_wire(run, protocol, subject)
        except (TraceError, kserve.KServeError, ProtocolError):
            near = None
        if near is not None:
            p.update(near)
    latency = measure_cell(run, cell, spec, subject.has_stats)
    if latency is not None:
        cell.e2e_ms = latency + p["serialize"] + p["deserialize"]
        cell.parts_ms.update(serialize=p["serialize"], deserialize=p["deserialize"])
        if "wire" in p:
            cell.parts_ms["wire"] = p["wire"]
            cell.parts_ms.setdefault("frontend", p["frontend"])
            cell.wire_source = "trace"
        else:
            cell.parts_ms["wire"] = _echo_wire(run, protocol, subject)
            cell.wire_source = "echo"
            cell.parts_ms.setdefault("frontend", None)
    for part in ("queue", "compute", "server_other"):
        cell.parts_ms.setdefault(part, None)
    cell.settle()
    if cell.stats_check not in (STATS_OURS, STATS_NONE):
        run.note(f"stats_{cell.stats_check}", protocol=protocol, concurrency=c)
    if plan.perf_analyzer and protocol in CROSS_CHECKED and cell.e2e_ms is not None:
        _cross_check(run, cell, subject)
    elif protocol not in CROSS_CHECKED and not plan.quick:
        cell.notes.append("perf_analyzer_no_mode")


# -- one cell's load and the server's statistics around it -------------------------------------------------------
def _stats_of(endpoint: Endpoint, timeout_s: float) -> server_stats.Snapshot | None:
    try:
        return server_stats.snapshot(endpoint, timeout=timeout_s)
    except (kserve.KServeError, ValueError):
        return None


def measure_cell(run: Run, cell: Cell, spec: LoadSpec, has_stats: bool) -> float | None:
    """Load the model as ``spec`` says (a request cap that normally ends the run), with statistics snapshots
    around it; fill the cell's requests, throughput, queue and compute. Returns the mean latency (ms)."""
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
    return result.mean_latency_ms


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
        return run.bench(spec), None
    box = []
    try:
        _, found = capture_many(run.endpoint, spec.model, lambda: box.append(run.bench(spec)), spec.max_requests,
                                timeout_s=3.0)  # fmt: skip
    except (TraceError, kserve.KServeError):
        return (box[0] if box else run.bench(spec)), None
    values = [v for v in (frontend_ms(tl.root.timestamps) for tl in found) if v is not None]
    return box[0], (sum(values) / len(values) if values else None)


def model_count(snap: server_stats.Snapshot, model: str) -> int:
    entry = snap.get(model, {})
    return int(entry.get("inference_stats", {}).get("success", {}).get("count", 0) or 0)


def traced_wire(run: Run, protocol: str, subject: Subject) -> dict[str, float] | None:
    """A few more traced requests over ``protocol``; the median wire and front-end time over all of this protocol's
    traced requests so far, so a burst of load at one moment is outvoted (None: no trace here)."""
    splits = traced_splits(run.endpoint, protocol, subject.model, subject.inputs, subject.outputs,
                           run.plan.traced_calls, run.plan.timeout_s, min(5.0, max(1.0, run.left())))  # fmt: skip
    if not splits:
        return None
    samples = run.wire_samples.setdefault(protocol, [])
    samples.extend(splits)
    return {k: float(pystats.median(s[k] for s in samples)) for k in ("wire", "frontend")}


def _echo_wire(run: Run, protocol: str, subject: Subject) -> float:
    """The wire for a cell without a trace: the loopback echo of the request's and answer's bytes, plus the extra
    round trip of another host (its TCP connect time less the loopback's)."""
    if protocol not in run.echo:
        caller = make_caller(
            run.endpoint, protocol, subject.model, subject.inputs, output_names=subject.outputs
        )
        try:
            r = caller.call()
        finally:
            caller.close()
        wire = echo_ms(r.request_bytes, r.response_bytes)
        if not run.report["server"]["local"]:
            wire += max(0.0, connect_ms(run.endpoint.http_url) - connect_ms_loopback())
        run.echo[protocol] = wire
    return run.echo[protocol]


def _has_statistics(run: Run, model: str) -> bool:
    try:
        stats = kserve.statistics(run.endpoint, model, timeout=min(5.0, run.plan.timeout_s))
    except kserve.KServeError:
        return False
    return any(e.get("name") == model for e in stats.get("model_stats", []) or [])


# -- the cross-check -----------------------------------------------------------------------------------------
def _cross_check(run: Run, cell: Cell, subject: Subject) -> None:
    """perf_analyzer on the cell's protocol, concurrency and input, interleaved with the doctor's own engine in
    :data:`PA_ROUNDS` slices (:func:`perf_analyzer.cross_check`), so both see the same moments of a busy machine."""
    seconds, rounds = (3.0, 3) if run.plan.quick else (PA_SECONDS, PA_ROUNDS)
    if run.left() < 3 * seconds + 10:
        cell.notes.append("budget_perf_analyzer")
        run.note("budget_perf_analyzer", protocol=cell.protocol, concurrency=cell.concurrency)
        return
    run.say("step_perf_analyzer", protocol=cell.protocol, concurrency=cell.concurrency)
    spec = LoadSpec(subject.model, cell.protocol, cell.concurrency, seconds, timeout_s=run.plan.timeout_s)
    try:
        out = cross_check(run.endpoint, spec, rounds=rounds, tolerance=PA_TOLERANCE,
                          progress=run.beat if run.progress else None)  # fmt: skip
    except PerfAnalyzerError as exc:
        cell.notes.append(f"perf_analyzer: {str(exc)[:200]}")
        run.note("perf_analyzer_failed", protocol=cell.protocol, error=str(exc)[:200])
        return
    cell.perf_analyzer_rps = out["perf_analyzer_rps"]
    cell.engine_rps = out["engine_rps"]
    cell.pa_rounds = [[r["engine_rps"], r["perf_analyzer_rps"]] for r in out["rounds"]]
