"""Chapter 9's live experiments on the scheduler: instance counts, priority levels, queue policies, Little's law.

Every experiment runs on the real ``classifier``. Instance counts go through :func:`batch_runs.compare_settings`
(reload with other settings, bounded load, restore). Priority and queue policy load a temporary
``dynamic_batching`` block through the repository API with a config override (:func:`override.overridden`
restores the original config afterwards, on error too), then send one :func:`burst.burst`: many requests at
once on the app's gRPC client, each answered or refused with Triton's own error text.
Little's law is read from two closed-loop runs of :func:`bench.run_bench` on the model as loaded.

Each result can say which outcome happened (``outcome()``), so a page can set it beside the student's
prediction. Numbers are measured; nothing here is simulated.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.load_refusal import logged_reason, triton_text
from triton_kitchen.core.override import MODEL, BatchingError, load_model, overridden
from triton_kitchen.tools import batch_runs
from triton_kitchen.tools.bench import BenchProgress, BenchResult, run_bench
from triton_kitchen.tools.burst import MAX_BURST, Burst, Sent, burst, warm_up
from triton_kitchen.tools.load import LoadSpec

ACTIONS = ("REJECT", "DELAY")
MAX_TIMEOUT_US = 1_000_000
HIGH = 1  # Triton's priority 1 is the highest level
LOW = 2  # with priority_levels: 2, the default level of our priority config
# A pause between answers this long (ms) in the priority run is said on the page: Triton 2.51's batcher can sleep
# its 0.5 s default wait with priority levels, max_queue_size, a queue timeout or allow_timeout_override
PAUSE_NOTE_MS = 300.0
# The priority run's trickle: one ordinary request this often (s) until the urgent ones are answered. A new request
# wakes that sleeping batcher, so the urgent ones do not wait out its half second (BATCHER_PAUSE, "with a trickle")
TRICKLE_S = 0.05

# What benchmarks/batcher_pause.py measured, shown on the page before the runs: per setting (alone in the classifier's
# dynamic_batching block), the bursts of 32 with a gap of >= 300 ms between two answers, the longest gap (ms), and
# the longest gap when one more request arrives every 50 ms. A Python model whose every execution takes 20 ms, on
# the embedded 2.51 server, 10 rounds (the first table of the command's output, and the "trickle" table's gaps).
BATCHER_PAUSE = {
    "command": "python benchmarks/batcher_pause.py --model sleep --reps 10",
    "machine": "a shared 2-core x86_64 VM, embedded Triton 2.51",
    "rows": [  # setting, bursts paused, of, longest gap (ms), longest gap with the trickle (ms)
        ("none", 0, 10, 96, 54),
        ("priority_levels: 2", 10, 10, 522, 65),
        ("max_queue_size: 64", 10, 10, 546, 110),
        ("default_timeout_microseconds: 10000000", 9, 10, 581, 103),
        ("allow_timeout_override: true", 9, 10, 522, 105),
    ],
}


class SchedulingError(BatchingError):
    """A setting outside what the chapter allows (``bad_settings``), or the repository API refused a load."""


def pause_counts() -> dict:
    """From ``BATCHER_PAUSE``: the bursts that paused with max_queue_size alone, a timeout alone and neither."""
    rows = {r[0].split(":")[0]: r for r in BATCHER_PAUSE["rows"]}
    return {
        "size_paused": rows["max_queue_size"][1],
        "timeout_paused": rows["default_timeout_microseconds"][1],
        "none_paused": rows["none"][1],
        "of": rows["none"][2],
        "command": BATCHER_PAUSE["command"],
    }


def kind_of(sent: Sent) -> str:
    """A priority run's request: "late" (sent with the high priority), "trickle" (sent meanwhile) or "early"."""
    return "late" if sent.priority == HIGH else "trickle" if sent.trickle else "early"


QUEUE_FULL = "Exceeds maximum queue size"  # Triton's words (core r24.10 scheduler_utils.cc)
TIMED_OUT = "Request timeout expired"  # (dynamic_batch_scheduler.cc)


def refusal_kind(sent: Sent) -> str:
    """A queue run's request: "answered", refused for a "full" queue, refused when it "timeout"-ed, or "other"."""
    if sent.ok:
        return "answered"
    return "full" if QUEUE_FULL in sent.error else "timeout" if TIMED_OUT in sent.error else "other"


# -- configs -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueuePolicy:
    """``dynamic_batching.default_queue_policy``: 0 means "no limit" for both numbers, as in Triton."""

    max_queue_size: int = 0
    timeout_us: int = 0  # default_timeout_microseconds
    action: str = "REJECT"  # timeout_action: REJECT answers with an error, DELAY moves the request back

    def check(self) -> None:
        if self.action not in ACTIONS:
            raise SchedulingError(f"timeout_action must be one of {', '.join(ACTIONS)}", "bad_settings")
        if not 0 <= self.max_queue_size <= MAX_BURST:
            raise SchedulingError(f"max_queue_size must be 0..{MAX_BURST}", "bad_settings")
        if not 0 <= self.timeout_us <= MAX_TIMEOUT_US:
            raise SchedulingError(f"the queue timeout must be 0..{MAX_TIMEOUT_US} us", "bad_settings")

    def block(self) -> dict:
        return {
            "timeout_action": self.action,
            "default_timeout_microseconds": int(self.timeout_us),
            "allow_timeout_override": False,
            "max_queue_size": int(self.max_queue_size),
        }


def _batching_block(base: dict) -> dict:
    db = base.get("dynamic_batching")
    if not isinstance(db, dict):
        raise SchedulingError(
            f"{base.get('name')} has no dynamic_batching: no queue to schedule", "bad_settings"
        )
    return copy.deepcopy(db)


def queue_config(base: dict, policy: QueuePolicy) -> dict:
    """``base`` (the loaded config as JSON) with ``policy`` as its default queue policy, no priorities."""
    policy.check()
    cfg = copy.deepcopy(base)
    db = _batching_block(base)
    db.update(priority_levels=0, default_priority_level=0, priority_queue_policy={})
    db["default_queue_policy"] = policy.block()
    cfg["dynamic_batching"] = db
    return cfg


def priority_config(base: dict, levels: int = 2) -> dict:
    """``base`` with ``levels`` priority levels, requests without a priority at the lowest (``levels``);
    ``levels`` 0 is first come, first served (the FIFO baseline)."""
    if not 0 <= levels <= 4:
        raise SchedulingError("priority_levels must be 0..4", "bad_settings")
    cfg = copy.deepcopy(base)
    db = _batching_block(base)
    db.update(priority_levels=levels, default_priority_level=levels, priority_queue_policy={})
    db["default_queue_policy"] = QueuePolicy().block()
    cfg["dynamic_batching"] = db
    return cfg


def pbtxt(cfg: dict) -> str:
    """The scheduling fields of ``cfg``'s dynamic_batching block, as they would read in config.pbtxt."""
    db = cfg.get("dynamic_batching") or {}
    lines = ["dynamic_batching {"]
    if db.get("preferred_batch_size"):
        lines.append(f"  preferred_batch_size: [ {', '.join(map(str, db['preferred_batch_size']))} ]")
    lines.append(f"  max_queue_delay_microseconds: {int(db.get('max_queue_delay_microseconds', 0))}")
    if int(db.get("priority_levels", 0) or 0):
        lines.append(f"  priority_levels: {int(db['priority_levels'])}")
        lines.append(f"  default_priority_level: {int(db.get('default_priority_level', 0))}")
    q = db.get("default_queue_policy") or {}
    if int(q.get("max_queue_size", 0) or 0) or int(q.get("default_timeout_microseconds", 0) or 0):
        lines.append("  default_queue_policy {")
        lines.append(f"    timeout_action: {q.get('timeout_action', 'REJECT')}")
        lines.append(f"    default_timeout_microseconds: {int(q.get('default_timeout_microseconds', 0))}")
        lines.append(f"    max_queue_size: {int(q.get('max_queue_size', 0))}")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


# -- a burst -------------------------------------------------------------------------------------------------


# -- the experiments -----------------------------------------------------------------------------------------
@dataclass
class PriorityResult:
    fifo: Burst
    priority: Burst
    early: int
    late: int

    def outcome(self) -> str:
        """The outcome: "overtake" when, under priorities, the late high-priority requests finished clearly ahead
        of most of the requests they could overtake (``Burst.still_waiting``: not answered and not being computed
        when they left the client), and under first come, first served they did not; else "no_change". Counted
        among those, not all: on a slow client the server answers the first batches before they are even sent."""
        behind, waiting = self.priority.ahead_of_waiting(HIGH)
        fifo_behind, fifo_waiting = self.fifo.ahead_of_waiting(HIGH)
        overtook = waiting > 0 and behind > waiting / 2
        fifo_overtook = fifo_waiting > 0 and fifo_behind > fifo_waiting / 2
        return "overtake" if overtook and not fifo_overtook else "no_change"

    def trickled(self) -> int:
        """How many ordinary requests the priority run's trickle sent while the late ones waited."""
        return sum(1 for s in self.priority.sent if s.trickle)

    def early_waiting(self) -> int:
        """How many of the early requests the late ones could overtake, under priorities (``still_waiting``)."""
        return self.priority.ahead_of_waiting(HIGH)[1]

    def early_done(self) -> int:
        """How many early requests were answered, or in the batch being computed, when the late ones left (the
        trickle sent after them is not early: with it counted, done and waiting added up to more than the burst)."""
        waiting = {id(s) for s in self.priority.still_waiting(HIGH)}
        return sum(
            1
            for s in self.priority.sent
            if s.priority != HIGH and not s.trickle and s.ok and id(s) not in waiting
        )


def priority_demo(
    endpoint: Endpoint, early: int = 32, late: int = 4, gap_s: float = 0.02, trickle_s: float = TRICKLE_S
) -> PriorityResult:
    """The same burst twice: ``early`` requests at the default priority, then ``late`` at the highest, then one
    ordinary request every ``trickle_s`` until the late ones are answered (traffic keeps arriving; it also wakes
    Triton 2.51's batcher, which without payload prefetching can otherwise sleep half a second before the late
    ones' batch). First with no priority levels (first come, first served), then with two. Original config
    restored."""
    with overridden(endpoint, MODEL) as original:
        bursts = []
        for levels in (0, 2):
            cfg = priority_config(original, levels)
            load_model(endpoint, MODEL, cfg)
            time.sleep(batch_runs.SETTLE_S)
            warm_up(endpoint)
            bursts.append(
                burst(
                    endpoint,
                    early,
                    late,
                    HIGH,
                    gap_s,
                    label=f"priority_levels {levels}",
                    config_text=pbtxt(cfg),
                    trickle_s=trickle_s,
                )
            )
    return PriorityResult(bursts[0], bursts[1], early, late)


@dataclass
class QueueResult:
    burst: Burst
    policy: QueuePolicy

    def outcome(self) -> str:
        """The outcome: "all" when every request was answered, "some" when some were refused, "none" when all were."""
        if self.burst.refused == 0:
            return "all"
        return "none" if self.burst.answered == 0 else "some"


def queue_demo(endpoint: Endpoint, policy: QueuePolicy, n: int = 32) -> QueueResult:
    """One burst of ``n`` requests against the classifier with ``policy``; original config restored."""
    policy.check()
    with overridden(endpoint, MODEL) as original:
        cfg = queue_config(original, policy)
        load_model(endpoint, MODEL, cfg)
        time.sleep(batch_runs.SETTLE_S)
        warm_up(endpoint)
        return QueueResult(burst(endpoint, n, label="queue policy", config_text=pbtxt(cfg)), policy)


@dataclass
class InstanceResult:
    results: list[batch_runs.ExperimentResult]

    def ratio(self) -> float | None:
        """Throughput with the last setting over the first."""
        if len(self.results) < 2 or not self.results[0].throughput_rps:
            return None
        return self.results[-1].throughput_rps / self.results[0].throughput_rps

    def outcome(self) -> str:
        """The outcome: "more" (>= 1.2x), "less" (<= 0.9x) or "same" throughput with more instances."""
        r = self.ratio()
        if r is None:
            return "same"
        return "more" if r >= 1.2 else "less" if r <= 0.9 else "same"


def compare_instances(
    endpoint: Endpoint,
    count: int = 2,
    dynamic_batching: bool = False,
    concurrency: int = 4,
    duration_s: float = 3.0,
    stop: threading.Event | None = None,
    progress: Callable[[int, BenchProgress], None] | None = None,
) -> InstanceResult:
    """One instance, then ``count``, the same closed-loop load (the batching lab's machinery)."""
    settings = [
        batch_runs.BatchingSettings(dynamic_batching, 0, [], n) for n in (1, count)
    ]  # delay 0: the batcher never waits, so only the instance count differs
    return InstanceResult(
        batch_runs.compare_settings(endpoint, settings, concurrency, duration_s, stop=stop, progress=progress)
    )


def gpu_refusal(endpoint: Endpoint) -> str:
    """Ask Triton to load the classifier on KIND_GPU; return its refusal verbatim ("" if it loaded: a GPU is
    there). The original config is restored either way."""
    with overridden(endpoint, MODEL) as original:
        cfg = copy.deepcopy(original)
        cfg["instance_group"] = [{"kind": "KIND_GPU", "count": 1}]
        try:
            load_model(endpoint, MODEL, cfg)  # the lab's checks: KIND_GPU is an allowed kind
        except BatchingError as exc:
            if exc.code == "no_control_api":
                raise  # the repository API is closed to us: no verdict of Triton's about the GPU
            return triton_text(exc.detail)
    return ""


ORDERING_CASES = ("priority", "delay")


def ordering_config(base: dict, case: str) -> dict:
    """``base`` with ``preserve_ordering: true`` and what Triton refuses beside it: two priority levels
    (``priority``), or a queue policy that DELAYs on a 50 ms timeout (``delay``)."""
    if case not in ORDERING_CASES:
        raise SchedulingError(f"case must be one of {', '.join(ORDERING_CASES)}", "bad_settings")
    cfg = (
        priority_config(base, 2)
        if case == "priority"
        else queue_config(base, QueuePolicy(0, 50_000, "DELAY"))
    )
    cfg["dynamic_batching"]["preserve_ordering"] = True
    return cfg


@dataclass
class Refusal:
    """Triton's refusal of a config: its answer to the load request (a config that fails Triton's checks gets only
    "failed to poll from model repository") and the reason it wrote in its log ("" where the log is not ours)."""

    answer: str
    logged: str = ""


def ordering_refusal(endpoint: Endpoint, case: str, log: Callable[[], str] | None = None) -> Refusal | None:
    """Ask Triton to load the classifier with ``preserve_ordering: true`` and, beside it, two priority levels or a
    DELAY timeout (``ordering_config``); Triton's refusal, or None if it loaded. ``log``: reads the server's log
    (the embedded server's), where Triton says why. Original config restored."""
    before = log() if log else ""
    with overridden(endpoint, MODEL) as original:
        try:
            load_model(endpoint, MODEL, ordering_config(original, case))
        except BatchingError as exc:
            if exc.code == "no_control_api":
                raise
            return Refusal(triton_text(exc.detail), logged_reason(before, log()) if log else "")
    return None


@dataclass
class LittleResult:
    runs: list[BenchResult]

    def rows(self) -> list[dict]:
        """Per run: L (in flight), λ (answers/s), W (mean latency, ms), λ·W, and the server's split."""
        out = []
        for r in self.runs:
            w = r.mean_latency_ms
            s = r.server.total if r.server else None
            out.append(
                {
                    "in_flight": r.concurrency,
                    "throughput_rps": r.throughput_rps,
                    "mean_latency_ms": w,
                    "little_in_flight": r.throughput_rps * w / 1000 if w else None,
                    "predicted_latency_ms": r.concurrency / r.throughput_rps * 1000
                    if r.throughput_rps
                    else None,
                    "queue_ms": s.queue_ms if s else None,
                    "compute_ms": s.compute_infer_ms if s else None,
                }
            )
        return out

    def ratios(self) -> tuple[float, float] | None:
        """Throughput and mean latency of the last run over the first (None without two usable runs)."""
        if len(self.runs) < 2:
            return None
        a, b = self.runs[0], self.runs[-1]
        if not (a.throughput_rps and b.throughput_rps and a.mean_latency_ms and b.mean_latency_ms):
            return None
        return b.throughput_rps / a.throughput_rps, b.mean_latency_ms / a.mean_latency_ms

    def outcome(self) -> str:
        """What doubling the requests in flight did, decided from the two runs: "throughput" (throughput x >= 1.6,
        latency within x 0.85..1.25), "latency" (the other way round), "both" (each rose by x 1.15..1.6), or
        "unclear" when the numbers fit none of these: throughput fell or latency shortened by more than 15 %,
        either grew more than x 2.3, or λ·W (the requests in flight the two runs imply) did not roughly double."""
        ratios = self.ratios()
        if ratios is None:
            return "unclear"
        tp, lat = ratios
        if tp < 0.85 or lat < 0.85 or tp > 2.3 or lat > 2.3 or not 1.6 <= tp * lat <= 2.5:
            return "unclear"
        if tp >= 1.6 and lat <= 1.25:
            return "throughput"
        if lat >= 1.6 and tp <= 1.25:
            return "latency"
        if 1.15 <= tp < 1.6 and 1.15 <= lat < 1.6:
            return "both"
        return "unclear"


def littles_law(
    endpoint: Endpoint,
    concurrency: int = 4,
    duration_s: float = 3.0,
    stop: threading.Event | None = None,
    progress: Callable[[int, BenchProgress], None] | None = None,
) -> LittleResult:
    """Two closed-loop runs on the classifier as loaded, with ``concurrency`` and twice that in flight."""
    runs = []
    for i, c in enumerate((concurrency, 2 * concurrency)):
        if stop is not None and stop.is_set():
            break
        cb = (lambda p, i=i: progress(i, p)) if progress else None
        spec = LoadSpec(
            MODEL,
            "grpc",
            c,
            duration_s,
            inputs=batch_runs.classifier_inputs(),
            output_names=["logits"],
            warmup_s=0.5,
        )
        runs.append(run_bench(endpoint, spec, stop=stop, progress=cb))
    return LittleResult(runs)
