"""Live, bounded experiments about ensembles: every number here is measured against the server now.

- :func:`chaining` — the same three steps called one by one from the client vs one ensemble call:
  latency and the bytes that crossed the network (payload and wire bytes, via
  :class:`~triton_kitchen.tools.protocols.CountingProxy`), over HTTP and gRPC, in one run.
- :func:`parallel_branches` — ``tta_ensemble``'s two branches, overlap read from the trace, next to
  a sequential variant (the same steps one after another from the client).
- :func:`cascade` — ``cascade_ensemble`` (both stages always run) vs ``cascade_bls`` (early exit):
  latency, and how often stage two ran, from the statistics API's inference counts.
- :func:`batching_queue` — the queue wait of ``classifier`` (``max_queue_delay_microseconds`` set)
  vs ``classifier_coarse`` (no dynamic batching) in the trace, alone and in a burst.

Each takes a time budget and a request cap; none runs longer than its budget plus one request.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import (
    CASCADE_BLS,
    CASCADE_ENSEMBLE,
    CLASSIFIER,
    CLASSIFIER_COARSE,
    FUSE_LOGITS,
    HFLIP,
    IMAGE_CLASSIFIER,
    POSTPROCESS,
    PREPROCESS,
    TTA_ENSEMBLE,
)
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import trace
from triton_kitchen.tools.protocols import Caller, CountingProxy, image_tensor, sample_jpeg

CHAIN_MODEL = IMAGE_CLASSIFIER
CHAIN_STEPS = (
    (PREPROCESS, "image_bytes", "image_tensor"),
    (CLASSIFIER, "input", "logits"),
    (POSTPROCESS, "logits", None),
)
CHAIN_OUTPUTS = ["top5_labels", "top5_scores"]


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


# -- ensemble vs client-side chaining ------------------------------------------------------------
@dataclass
class ChainRow:
    """One way of getting the top-5 for a photo, over one protocol, measured."""

    protocol: str  # "http-binary" or "grpc"
    mode: str  # "ensemble" (one call) or "chain" (preprocess, classifier, postprocess from the client)
    round_trips: int  # calls per answer
    latency_ms: list[float] = field(default_factory=list)
    payload_bytes: int = 0  # request + response bodies of one answer, as encoded
    wire_sent: float = 0.0  # bytes client -> server per answer on the socket (steady state)
    wire_received: float = 0.0
    top1: str = ""

    @property
    def median_ms(self) -> float | None:
        return _median(self.latency_ms)

    @property
    def wire_bytes(self) -> float:
        return self.wire_sent + self.wire_received

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["median_ms"] = self.median_ms
        d["wire_bytes"] = self.wire_bytes
        return d


@dataclass
class ChainingResult:
    rows: list[ChainRow]
    repeats: int
    seconds: float
    same_answer: bool

    def row(self, protocol: str, mode: str) -> ChainRow:
        return next(r for r in self.rows if r.protocol == protocol and r.mode == mode)

    def ratio(self, protocol: str = "grpc") -> float | None:
        """The chain's median time over the ensemble's (above 1: the ensemble was faster)."""
        ens, chain = self.row(protocol, "ensemble").median_ms, self.row(protocol, "chain").median_ms
        return chain / ens if ens and chain else None

    def outcome(self, protocol: str = "grpc", margin: float = 1.3) -> str | None:
        """``ensemble_faster`` (the chain took ``margin`` times as long or more), ``chain_faster`` or
        ``similar``, from the medians measured; None without answers."""
        r = self.ratio(protocol)
        if r is None:
            return None
        return "ensemble_faster" if r >= margin else "chain_faster" if r <= 1 / margin else "similar"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "repeats": self.repeats,
            "seconds": self.seconds,
            "same_answer": self.same_answer,
        }


class _Chain:
    """preprocess -> classifier -> postprocess, each a separate call from the client."""

    def __init__(self, endpoint: Endpoint, protocol: str, address: str, image: bytes) -> None:
        first = {"image_bytes": np.array([[image]], dtype=object)}
        self.callers = [
            Caller(endpoint, protocol, PREPROCESS, first, output_names=["image_tensor"], address=address),
            Caller(endpoint, protocol, CLASSIFIER, {}, output_names=["logits"], address=address),
            Caller(endpoint, protocol, POSTPROCESS, {}, output_names=CHAIN_OUTPUTS, address=address),
        ]

    def call(self) -> tuple[dict[str, np.ndarray], int]:
        pre, cls, post = self.callers
        r1 = pre.call()
        cls.arrays = {"input": r1.outputs["image_tensor"]}
        r2 = cls.call()
        post.arrays = {"logits": r2.outputs["logits"]}
        r3 = post.call()
        payload = sum(r.request_bytes + r.response_bytes for r in (r1, r2, r3))
        return r3.outputs, payload

    def close(self) -> None:
        for c in self.callers:
            c.close()


def _top1(outputs: dict[str, np.ndarray]) -> str:
    v = outputs["top5_labels"].reshape(-1)[0]
    return v.decode() if isinstance(v, bytes) else str(v)


def chaining(
    endpoint: Endpoint,
    image: bytes | None = None,
    protocols: tuple[str, ...] = ("http-binary", "grpc"),
    repeats: int = 5,
    budget_s: float = 20.0,
) -> ChainingResult:
    """Ensemble vs client-side chaining, each protocol through its own counting proxy, interleaved.

    One warm-up answer per mode and protocol opens the connections; then up to ``repeats`` rounds
    (ensemble, then chain) while the budget lasts. Wire bytes are per answer, averaged over the rounds.
    """
    image = image or sample_jpeg()
    t_start = time.monotonic()
    deadline = t_start + budget_s
    rows: list[ChainRow] = []
    answers: set[str] = set()
    done = 0
    for protocol in protocols:
        target = endpoint.grpc_url if protocol == "grpc" else endpoint.http_url
        ens = ChainRow(protocol, "ensemble", 1)
        chain = ChainRow(protocol, "chain", len(CHAIN_STEPS))
        with CountingProxy(target) as proxy:
            ens_caller = Caller(
                endpoint,
                protocol,
                CHAIN_MODEL,
                {"image_bytes": np.array([[image]], dtype=object)},
                output_names=CHAIN_OUTPUTS,
                address=proxy.address,
            )
            chainer = _Chain(endpoint, protocol, proxy.address, image)
            try:
                ens_caller.call()  # warm-up: connections open, models warm
                chainer.call()
                rounds = 0
                for _ in range(repeats):
                    if time.monotonic() > deadline and rounds:
                        break
                    for row, fn in ((ens, ens_caller.call), (chain, chainer.call)):
                        time.sleep(0.01)
                        s0, r0 = proxy.snapshot()
                        t0 = time.perf_counter()
                        out = fn()
                        row.latency_ms.append((time.perf_counter() - t0) * 1000)
                        time.sleep(0.02)  # late frames (gRPC WINDOW_UPDATE) belong to this answer
                        s1, r1 = proxy.snapshot()
                        row.wire_sent += s1 - s0
                        row.wire_received += r1 - r0
                        if isinstance(out, tuple):
                            outputs, row.payload_bytes = out
                        else:
                            outputs, row.payload_bytes = out.outputs, out.request_bytes + out.response_bytes
                        row.top1 = _top1(outputs)
                        answers.add(row.top1)
                    rounds += 1
                for row in (ens, chain):
                    row.wire_sent /= max(rounds, 1)
                    row.wire_received /= max(rounds, 1)
                done = max(done, rounds)
            finally:
                ens_caller.close()
                chainer.close()
        rows += [ens, chain]
    return ChainingResult(rows, done, time.monotonic() - t_start, len(answers) == 1)


# -- parallel branches -----------------------------------------------------------------------------
PARALLEL_MODEL = TTA_ENSEMBLE
# tta_ensemble's steps (index, model, predecessor steps) as in its config.pbtxt; checked against the
# server's config in parallel_branches().
TTA_STEPS = (PREPROCESS, CLASSIFIER, HFLIP, CLASSIFIER, FUSE_LOGITS, POSTPROCESS)
TTA_PREDS = ((), (0,), (0,), (2,), (1, 3), (4,))
TTA_BRANCHES = ((1,), (2, 3))


@dataclass
class ParallelResult:
    ensemble_ms: list[float]  # REQUEST_START..REQUEST_END of the ensemble, from the trace
    overlap_ms: list[float]  # time both branches were inside Triton at once (REQUEST_START..END of steps)
    compute_overlap_ms: list[float]  # time both branches were computing at once
    branch_ms: list[tuple[float, float]]  # each branch's own span
    sum_of_steps_ms: list[float]  # what the same executions add up to back to back (computed from the trace)
    sequential_ms: list[float]  # the same steps one after another from the client (measured, gRPC)
    timelines: list[trace.RequestTimeline] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("timelines")
        for key in ("ensemble_ms", "overlap_ms", "compute_overlap_ms", "sum_of_steps_ms", "sequential_ms"):
            d[f"{key}_median"] = _median(d[key])
        return d


def ensemble_steps(endpoint: Endpoint, model: str) -> tuple[list[str], list[list[int]]]:
    """Step models and each step's predecessor steps, from the server's config of ``model``."""
    cfg = kserve.model_config(endpoint, model)
    steps = cfg.get("ensemble_scheduling", {}).get("step", [])
    producer: dict[str, int] = {}
    for i, s in enumerate(steps):
        for tensor in s.get("output_map", {}).values():
            producer[tensor] = i
    preds = []
    for s in steps:
        preds.append(sorted({producer[t] for t in s.get("input_map", {}).values() if t in producer}))
    return [s["model_name"] for s in steps], preds


def _spans(tl: trace.RequestTimeline, steps: tuple[int, ...], a: str, b: str) -> list[tuple[int, int]]:
    out = []
    for i in steps:
        for ex in tl.by_step().get(i, []):
            if a in ex.timestamps and b in ex.timestamps:
                out.append((ex.timestamps[a], ex.timestamps[b]))
    return out


def branch_overlap(tl: trace.RequestTimeline, branches=TTA_BRANCHES) -> tuple[float, float]:
    """(ms both branches were in flight at once, ms both were computing at once)."""
    a, b = branches
    inflight = trace.overlap_ns(
        _spans(tl, a, trace.REQUEST_START, trace.REQUEST_END),
        _spans(tl, b, trace.REQUEST_START, trace.REQUEST_END),
    )
    compute = trace.overlap_ns(
        _spans(tl, a, trace.COMPUTE_START, trace.COMPUTE_END),
        _spans(tl, b, trace.COMPUTE_START, trace.COMPUTE_END),
    )
    return inflight / 1e6, compute / 1e6


def parallel_branches(
    endpoint: Endpoint, image: bytes | None = None, repeats: int = 3, budget_s: float = 20.0
) -> ParallelResult:
    """tta_ensemble traced ``repeats`` times, and its steps run one after another from the client."""
    image = image or sample_jpeg()
    models, preds = ensemble_steps(endpoint, PARALLEL_MODEL)
    if tuple(models) != TTA_STEPS or tuple(tuple(p) for p in preds) != TTA_PREDS:
        raise ValueError(f"{PARALLEL_MODEL} no longer has the steps this experiment knows: {models}")
    res = ParallelResult([], [], [], [], [], [])
    deadline = time.monotonic() + budget_s
    arrays = {"image_bytes": np.array([[image]], dtype=object)}
    seq = {m: Caller(endpoint, "grpc", m, {}) for m in set(models)}
    try:
        for _ in range(repeats):
            _, tl = trace.traced_call(endpoint, PARALLEL_MODEL, arrays)
            trace.assign_steps(tl, models, preds)
            res.timelines.append(tl)
            res.ensemble_ms.append(tl.server_ms)
            inflight, compute = branch_overlap(tl)
            res.overlap_ms.append(inflight)
            res.compute_overlap_ms.append(compute)
            spans = [_spans(tl, br, trace.REQUEST_START, trace.REQUEST_END) for br in TTA_BRANCHES]
            res.branch_ms.append(tuple((max(e for _, e in s) - min(b for b, _ in s)) / 1e6 for s in spans))
            res.sum_of_steps_ms.append(sum((s.end_ns - s.start_ns) for s in tl.steps) / 1e6)
            res.sequential_ms.append(_sequential_tta(seq, image))
            if time.monotonic() > deadline:
                break
    finally:
        for c in seq.values():
            c.close()
    return res


def _sequential_tta(callers: dict[str, Caller], image: bytes) -> float:
    """tta_ensemble's six steps, strictly one after another (the tutorial's "array order"), from the client."""
    if not getattr(callers[PREPROCESS], "_warm", False):
        callers[PREPROCESS].arrays = {"image_bytes": np.array([[image]], dtype=object)}
        callers[PREPROCESS].call()
        callers[PREPROCESS]._warm = True
    t0 = time.perf_counter()
    callers[PREPROCESS].arrays = {"image_bytes": np.array([[image]], dtype=object)}
    x = callers[PREPROCESS].call().outputs["image_tensor"]
    callers[CLASSIFIER].arrays = {"input": x}
    a = callers[CLASSIFIER].call().outputs["logits"]
    callers[HFLIP].arrays = {"image": x}
    m = callers[HFLIP].call().outputs["mirrored"]
    callers[CLASSIFIER].arrays = {"input": m}
    b = callers[CLASSIFIER].call().outputs["logits"]
    callers[FUSE_LOGITS].arrays = {"logits_a": a, "logits_b": b}
    f = callers[FUSE_LOGITS].call().outputs["logits"]
    callers[POSTPROCESS].arrays = {"logits": f}
    callers[POSTPROCESS].call()
    return (time.perf_counter() - t0) * 1000


# -- cascade: ensemble vs BLS ----------------------------------------------------------------------
@dataclass
class CascadeRow:
    model: str
    requests: int
    latency_ms: list[float]
    fine_runs: int  # classifier (stage two) inference count delta, statistics API
    coarse_runs: int  # classifier_coarse inference count delta
    stage_used: dict[str, int]  # answer taken from stage 1 or 2 -> requests
    top1: dict[str, str]  # photo -> top-1 label

    @property
    def median_ms(self) -> float | None:
        return _median(self.latency_ms)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["median_ms"] = self.median_ms
        return d


def cascade(
    endpoint: Endpoint,
    images: dict[str, bytes],
    repeats: int = 2,
    protocol: str = "grpc",
    budget_s: float = 20.0,
) -> list[CascadeRow]:
    """Each photo ``repeats`` times through cascade_ensemble, then through cascade_bls.

    Stage-two runs are the statistics API's ``classifier`` success-count delta over each batch of
    requests: exact if nothing else uses the classifier meanwhile (other users' requests would add to it).
    """
    rows = []
    deadline = time.monotonic() + budget_s
    for model in (CASCADE_ENSEMBLE, CASCADE_BLS):
        callers = {
            name: Caller(endpoint, protocol, model, {"image_bytes": np.array([[img]], dtype=object)})
            for name, img in images.items()
        }
        try:
            for c in callers.values():
                c.call()  # warm-up, before the counters are read
            before = trace.model_statistics(endpoint, [CLASSIFIER, CLASSIFIER_COARSE])
            lat, stages, top1 = [], {"1": 0, "2": 0}, {}
            for _ in range(repeats):
                for name, c in callers.items():
                    r = c.call()
                    lat.append(r.latency_ms)
                    stage = str(int(r.outputs["stage_used"].reshape(-1)[0]))
                    stages[stage] = stages.get(stage, 0) + 1
                    top1[name] = _top1(r.outputs)
                if time.monotonic() > deadline:
                    break
            after = trace.model_statistics(endpoint, [CLASSIFIER, CLASSIFIER_COARSE])
        finally:
            for c in callers.values():
                c.close()
        rows.append(
            CascadeRow(
                model,
                len(lat),
                lat,
                after[CLASSIFIER]["count"] - before[CLASSIFIER]["count"],
                after[CLASSIFIER_COARSE]["count"] - before[CLASSIFIER_COARSE]["count"],
                stages,
                top1,
            )
        )
    return rows


CASCADE_TIERS = (CLASSIFIER_COARSE, CLASSIFIER)  # tier 1, tier 2


@dataclass
class CascadeCall:
    """One classification through a cascade, with how often each tier's model ran meanwhile."""

    result: Any  # classify.Classification
    tier_runs: dict[str, int]  # model -> statistics API execution-count delta over the call
    answer_tier: int | None  # the model's ``stage_used`` output: the tier whose answer was kept

    @property
    def tiers_ran(self) -> int:
        """How many tiers ran for this request, read from the statistics (not from ``stage_used``)."""
        return sum(1 for m in CASCADE_TIERS if self.tier_runs.get(m, 0) > 0)


def cascade_call(
    endpoint: Endpoint, image: bytes, model: str, protocol: str = "grpc", timeout_s: float = 2.0
) -> CascadeCall:
    """Classify ``image`` with ``model`` (a cascade) and read each tier model's execution-count delta.

    ``stage_used`` only says which tier's answer was kept; whether tier two *ran* is the statistics'
    business: in ``cascade_ensemble`` both tiers always run, ``cascade_bls`` skips tier two when tier one is
    sure. Exact when nobody else uses the two classifiers meanwhile (other requests would add to the counts).
    Statistics land just after the response, so the counts are read until every tier that must have run has
    counted it (``trace.statistics_after``; or timeout).
    """
    from triton_kitchen.core.classify import classify

    before = trace.model_statistics(endpoint, CASCADE_TIERS)
    result = classify(endpoint, image, model=model, protocol=protocol)
    # the counts that must land before reading: tier one always; tier two in the ensemble (it runs both) and
    # when the answer came from it (the two tiers' counts can land a moment apart)
    expect = CASCADE_TIERS if model == CASCADE_ENSEMBLE or result.stage_used == 2 else CASCADE_TIERS[:1]
    after = trace.statistics_after(endpoint, CASCADE_TIERS, before, timeout_s, wait_for=expect, field="exec")
    runs = {m: after[m]["exec"] - before[m]["exec"] for m in CASCADE_TIERS}
    return CascadeCall(result, runs, result.stage_used)


# -- dynamic batching queue wait ------------------------------------------------------------------
@dataclass
class QueueResult:
    model: str
    max_queue_delay_us: int | None
    alone_queue_ms: list[float]  # one request at a time: QUEUE_START..COMPUTE_START
    burst_queue_ms: list[float]  # ``burst`` requests sent at once
    burst_batches: int  # distinct COMPUTE_START instants in the burst = executions (batches)
    burst: int

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["alone_queue_ms_median"] = _median(self.alone_queue_ms)
        return d


def _queue_ms(tl: trace.RequestTimeline) -> float:
    ts = tl.root.timestamps
    return (ts[trace.COMPUTE_START] - ts[trace.QUEUE_START]) / 1e6


def batching_queue(
    endpoint: Endpoint, image: bytes | None = None, repeats: int = 3, burst: int = 4
) -> list[QueueResult]:
    """Traced direct calls to ``classifier`` (dynamic batching, max_queue_delay set) and ``classifier_coarse`` (none)."""
    x = image_tensor(image or sample_jpeg())
    out = []
    for model in (CLASSIFIER, CLASSIFIER_COARSE):
        cfg = kserve.model_config(endpoint, model)
        delay = (
            cfg.get("dynamic_batching", {}).get("max_queue_delay_microseconds")
            if "dynamic_batching" in cfg
            else None
        )
        alone = []
        for _ in range(repeats):
            time.sleep(0.05)  # let the instance finish the previous execution: "alone" means idle
            _, tl = trace.traced_call(endpoint, model, {"input": x})
            alone.append(_queue_ms(tl))
        callers = [Caller(endpoint, "grpc", model, {"input": x}) for _ in range(burst)]
        try:
            for c in callers:
                c.call()
            barrier = threading.Barrier(burst)

            def one(c: Caller, barrier: threading.Barrier = barrier) -> None:
                barrier.wait(timeout=10)
                c.call()

            def send(callers: list[Caller] = callers) -> None:
                threads = [threading.Thread(target=one, args=(c,)) for c in callers]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join(timeout=30)

            _, tls = trace.capture_many(endpoint, model, send, burst, local=endpoint.embedded)
        finally:
            for c in callers:
                c.close()
        batches = len({tl.root.timestamps.get(trace.COMPUTE_START) for tl in tls})
        out.append(
            QueueResult(
                model,
                int(delay) if delay is not None else None,
                alone,
                [_queue_ms(t) for t in tls],
                batches,
                burst,
            )
        )
    return out


def fine_model_outcome(ensemble: CascadeCall, bls: CascadeCall) -> str | None:
    """Which of the two cascades ran the fine model (tier two) for one photo: ``both``, ``ensemble_only``,
    ``bls_only`` or ``neither``. The ensemble's from the statistics; the BLS model's from its own answer (it
    answers from tier two exactly when it called it), since tier two is also ``image_classifier``'s step and
    other clients move its count. None when the coarse tier did not count exactly one request each time
    (someone else was using the cascades)."""
    coarse, fine = CASCADE_TIERS
    if ensemble.tier_runs.get(coarse) != 1 or bls.tier_runs.get(coarse) != 1:
        return None
    bls_fine = bls.answer_tier == 2 if bls.answer_tier is not None else bls.tier_runs.get(fine, 0) > 0
    ran = (ensemble.tier_runs.get(fine, 0) > 0, bls_fine)
    return {(True, True): "both", (True, False): "ensemble_only", (False, True): "bls_only"}.get(
        ran, "neither"
    )


# -- one set meal: what the server counts for one request --------------------------------------------------
SET_MEAL = (IMAGE_CLASSIFIER, PREPROCESS, CLASSIFIER, POSTPROCESS)  # the ensemble, then its steps


@dataclass
class MealCall:
    """Chapter 1's classification, with each model's success-count delta over the call (statistics API)."""

    result: Any  # classify.Classification
    counted: dict[str, int]

    def outcome(self) -> str | None:
        """How many of the ensemble and its steps counted the request: ``one``, ``three`` or ``four``
        (the number itself when it is none of these); None when the statistics could not be read."""
        if not self.counted:
            return None
        n = sum(1 for v in self.counted.values() if v > 0)
        return {1: "one", 3: "three", 4: "four"}.get(n, str(n))


def order_a_meal(endpoint: Endpoint, image: bytes, protocol: str = "grpc") -> MealCall:
    """One request to ``image_classifier``; the statistics say which models counted it (another client's
    requests meanwhile would add to the counts, not to the number of models that moved). A server whose
    statistics API is closed still classifies: ``counted`` is then empty."""
    from triton_kitchen.core.classify import classify

    try:
        before = trace.model_statistics(endpoint, SET_MEAL)
    except kserve.KServeError:
        before = None
    result = classify(endpoint, image, model=SET_MEAL[0], protocol=protocol)
    if before is None:
        return MealCall(result, {})
    try:
        after = trace.statistics_after(endpoint, SET_MEAL, before)
    except kserve.KServeError:
        return MealCall(result, {})
    return MealCall(result, {m: after[m]["count"] - before[m]["count"] for m in SET_MEAL})
