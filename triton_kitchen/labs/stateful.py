"""Chapter 9's stateful drill: a running sum per sequence, kept inside the model's stub process.

- :func:`two_learners`: two sequences (two correlation IDs, as two learners would send them) interleaved, each
  step of both sent at the same moment, to ``running_sum`` (sequence batcher, direct, 1 instance) or to
  ``running_sum_plain`` (the same ``model.py`` with dynamic batching and 2 instances). Every response carries
  the total the model holds and the pid of the stub that answered; the verdict compares the totals with the
  true running sums.
- :func:`step`: one request of a learner's own sequence (start, add, end), with Triton's refusals turned into
  a code the page translates: no START for an unknown ID, no correlation ID, no free slot before the deadline.
- :func:`through_ensemble`: the same two sequences sent to ``running_sum_ensemble`` (a stateless step that
  doubles each number, 2 instances, then ``running_sum_step``, running_sum's code with a sequence batcher of its
  own). The ensemble's scheduler copies each request's correlation ID and START/END flags onto the request it
  makes for each step; every response names the pid of both steps' stubs. A ``mistake`` on learner B's side
  (another ID at step 3, ID 0 at step 3, no END) shows Triton's refusal through the ensemble, and how many times
  the first step ran meanwhile.

Nothing is reloaded: the models serve the whole class, each run with correlation IDs of its own.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient
from google.protobuf import json_format

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.catalog import (
    RUNNING_SUM,
    RUNNING_SUM_ENSEMBLE,
    RUNNING_SUM_PLAIN,
    RUNNING_SUM_SCALE,
)
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.on_demand import ensure_loaded

MODELS = (RUNNING_SUM, RUNNING_SUM_PLAIN)
LEARNERS = {"A": (1.0, 2.0, 3.0, 4.0), "B": (10.0, 20.0, 30.0, 40.0)}
STEP_TIMEOUT_S = 5.0  # a learner's request: past this the client gives up (a START waiting for a free slot)
MAX_ID = 2**63 - 1
SCALE = 2.0  # running_sum_scale: y = SCALE * clip(x, -CLIP, CLIP), then the running sum of y
CLIP = 1000.0
STATS_SETTLE_S = 1.0  # how long to wait for the statistics to count the last requests
MISTAKES = ("none", "wrong_id", "zero_id", "no_end")  # on learner B's side, in through_ensemble
MISTAKE_STEP = 3  # the step of B's that carries the wrong ID or ID 0


class SequenceError(KitchenError):
    """Triton refused a request of a sequence: ``no_start`` (an ID it does not know, without START: a wrong ID,
    or one whose sequence ended or went idle), ``no_id`` (correlation ID 0 or empty), ``no_slot`` (no answer before
    the deadline: every sequence slot was taken), ``batch`` (more than one item), ``failed`` (anything else).
    The detail is Triton's own text."""

    source = "sequence"
    default_code = "failed"


def classify(message: str) -> str:
    """Triton's refusal of a sequence request -> a SequenceError code."""
    if "must specify the START flag" in message:
        return "no_start"
    if "non-zero or non-empty correlation ID" in message:
        return "no_id"
    if "Deadline Exceeded" in message or "deadline" in message.lower():
        return "no_slot"
    if "batch-size 1" in message:
        return "batch"
    return "failed"


def parse_id(text: str) -> int | str:
    """A correlation ID as typed: digits are an unsigned integer (as most clients send it), anything else a
    string ID; leading and trailing spaces dropped. 0 and "" stay as they are: Triton says what is wrong."""
    text = (text or "").strip()
    if text.isdigit():
        value = int(text)
        if value > MAX_ID:
            raise SequenceError("failed", f"correlation ID {text} is larger than {MAX_ID}")
        return value
    return text


def new_id() -> int:
    """A correlation ID no other learner is using (random, 48 bits)."""
    return random.SystemRandom().randrange(1, 2**48)


@dataclass
class Answer:
    total: float
    count: int
    pid: int  # the stateful model's stub (in the ensemble: running_sum_step's)
    ms: float
    scale_pid: int = 0  # through the ensemble: the stub of running_sum_scale that took the request


def _send(
    client: grpcclient.InferenceServerClient,
    model: str,
    corr_id: int | str,
    x: float,
    start: bool,
    end: bool,
    timeout_s: float = STEP_TIMEOUT_S,
) -> Answer:
    tensor = grpcclient.InferInput("x", [1, 1], "FP32")
    tensor.set_data_from_numpy(np.array([[x]], dtype=np.float32))
    t0 = time.perf_counter()
    try:
        r = client.infer(
            model,
            [tensor],
            sequence_id=corr_id,
            sequence_start=start,
            sequence_end=end,
            client_timeout=timeout_s,
        )
    except grpcclient.InferenceServerException as exc:
        message = exc.message() or str(exc)
        raise SequenceError(classify(message), message) from exc
    scale_pid = r.as_numpy("scale_pid")  # only the ensemble has it
    return Answer(
        float(r.as_numpy("total").ravel()[0]),
        int(r.as_numpy("count").ravel()[0]),
        int(r.as_numpy("pid").ravel()[0]),
        (time.perf_counter() - t0) * 1000,
        0 if scale_pid is None else int(scale_pid.ravel()[0]),
    )


def step(endpoint: Endpoint, corr_id: int | str, x: float, start: bool = False, end: bool = False) -> Answer:
    """One request of a learner's sequence to ``running_sum``; raises SequenceError with Triton's words."""
    if not np.isfinite(x):
        raise SequenceError("failed", f"x must be a finite number, not {x}")
    ensure_loaded(endpoint, RUNNING_SUM)  # loaded on first use, not at the server's start
    return _send(_client(endpoint), RUNNING_SUM, corr_id, float(x), start, end)


_clients: dict[str, grpcclient.InferenceServerClient] = {}
_clients_guard = threading.Lock()


def _client(endpoint: Endpoint) -> grpcclient.InferenceServerClient:
    """One gRPC client per address for the learners' single steps (thread-safe, kept for the app's life)."""
    with _clients_guard:
        client = _clients.get(endpoint.grpc_url)
        if client is None:
            client = _clients[endpoint.grpc_url] = grpcclient.InferenceServerClient(endpoint.grpc_url)
        return client


@dataclass
class Step:
    learner: str  # "A" or "B"
    n: int  # 1.. in the learner's sequence
    x: float
    expected: float  # the true running sum
    answer: Answer | None = None
    error: str = ""  # Triton's words
    code: str = ""  # the SequenceError code of ``error``
    sent_id: int | str | None = None  # the correlation ID this request carried, when not the learner's own
    start: bool = False
    end: bool = False

    @property
    def right(self) -> bool:
        return self.answer is not None and abs(self.answer.total - self.expected) < 1e-6


@dataclass
class TwoLearners:
    model: str
    ids: dict[str, int]
    steps: list[Step] = field(default_factory=list)

    def pids(self) -> list[int]:
        return sorted({s.answer.pid for s in self.steps if s.answer is not None})

    def pids_of(self, learner: str) -> list[int]:
        return sorted({s.answer.pid for s in self.steps if s.learner == learner and s.answer is not None})

    def wrong(self) -> int:
        return sum(1 for s in self.steps if not s.right)

    def outcome(self) -> str:
        """``kept`` when every total was the true running sum, ``lost`` otherwise (measured, never assumed)."""
        return "kept" if self.steps and not self.wrong() else "lost"

    def detail(self) -> str:
        """Which explanation fits: ``kept`` (one stub answered all), ``kept_by_chance`` (right, though two stubs
        answered: each learner happened to stay on one), ``lost``."""
        if self.outcome() == "lost":
            return "lost"
        return "kept" if len(self.pids()) <= 1 else "kept_by_chance"


def two_learners(endpoint: Endpoint, model: str = RUNNING_SUM) -> TwoLearners:
    """Learners A and B each send a sequence of four numbers; step k of both leaves at the same moment (one
    thread each, one gRPC client each). The first step carries START, the last END."""
    if model not in MODELS:
        raise SequenceError("failed", f"model must be one of {', '.join(MODELS)}")
    ensure_loaded(endpoint, model)  # loaded on first use, not at the server's start
    ids = {learner: new_id() for learner in LEARNERS}
    run = TwoLearners(model, ids)
    clients = {learner: grpcclient.InferenceServerClient(endpoint.grpc_url) for learner in LEARNERS}
    try:
        totals = dict.fromkeys(LEARNERS, 0.0)
        n_steps = len(next(iter(LEARNERS.values())))
        for k in range(n_steps):
            steps = {}
            for learner, xs in LEARNERS.items():
                totals[learner] += xs[k]
                steps[learner] = Step(
                    learner, k + 1, xs[k], totals[learner], start=k == 0, end=k == n_steps - 1
                )
            _together(clients, model, {learner: (ids[learner], s) for learner, s in steps.items()})
            run.steps += [steps[learner] for learner in LEARNERS]
    finally:
        for client in clients.values():
            client.close()
    return run


def _together(clients: dict, model: str, sends: dict[str, tuple[int | str, Step]]) -> None:
    """Send each learner's step at the same moment (one thread each, past one barrier) and wait for all."""
    barrier = threading.Barrier(len(sends))

    def send(learner: str, corr_id: int | str, s: Step) -> None:
        barrier.wait(timeout=STEP_TIMEOUT_S)
        try:
            s.answer = _send(clients[learner], model, corr_id, s.x, s.start, s.end)
        except SequenceError as exc:
            s.error, s.code = exc.detail, exc.code

    threads = [
        threading.Thread(target=send, args=(learner, corr_id, s), daemon=True)
        for learner, (corr_id, s) in sends.items()
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=STEP_TIMEOUT_S * 2)


@dataclass
class EnsembleRun(TwoLearners):
    """Two sequences through ``running_sum_ensemble``; ``mistake`` is what B got wrong (``none``: nothing)."""

    mistake: str = "none"
    scale_runs: int | None = None  # running_sum_scale's successful executions of requests during the run
    sent: int = 0  # requests sent to the ensemble during the run
    closed: Step | None = (
        None  # no_end: the request the page sent afterwards, END without START, to free the slot
    )

    def scale_pids(self) -> list[int]:
        return sorted({s.answer.scale_pid for s in self.steps if s.answer is not None})

    def refused(self) -> int:
        return sum(1 for s in self.steps if s.answer is None)

    def outcome(self) -> str:
        """``kept``: every total was the true running sum of the doubled numbers; ``refused``: running_sum_step
        refused every request (no ID or no START reached it); ``lost``: anything else. Measured, never assumed."""
        if self.steps and not self.wrong():
            return "kept"
        if self.steps and all(s.code in ("no_start", "no_id") for s in self.steps):
            return "refused"
        return "lost"


def _scale_runs(endpoint: Endpoint) -> int | None:
    """running_sum_scale's successful inference count (requests), or None when the statistics cannot be read."""
    try:
        stats = kserve.statistics(endpoint, RUNNING_SUM_SCALE).get("model_stats") or []
        return sum(int(m["inference_stats"]["success"].get("count", 0) or 0) for m in stats)
    except (kserve.KServeError, KeyError, TypeError, ValueError):
        return None


def through_ensemble(endpoint: Endpoint, mistake: str = "none") -> EnsembleRun:
    """A's and B's sequences interleaved through ``running_sum_ensemble``, each step of both at the same moment.

    ``mistake`` (learner B's): ``wrong_id``: step 3 carries an ID nobody started; ``zero_id``: step 3 carries
    ID 0; ``no_end``: the last step has no END; the page then sends B's ID one more request, END without START,
    which Triton accepts only while the sequence is still open, and which frees its slot."""
    if mistake not in MISTAKES:
        raise SequenceError("failed", f"mistake must be one of {', '.join(MISTAKES)}")
    ensure_loaded(endpoint, RUNNING_SUM_ENSEMBLE)  # loads its two steps with it
    ids = {learner: new_id() for learner in LEARNERS}
    run = EnsembleRun(RUNNING_SUM_ENSEMBLE, ids, mistake=mistake)
    clients = {learner: grpcclient.InferenceServerClient(endpoint.grpc_url) for learner in LEARNERS}
    before = _scale_runs(endpoint)
    try:
        totals = dict.fromkeys(LEARNERS, 0.0)
        n_steps = len(next(iter(LEARNERS.values())))
        for k in range(n_steps):
            sends = {}
            for learner, xs in LEARNERS.items():
                totals[learner] += SCALE * max(-CLIP, min(CLIP, xs[k]))
                s = Step(learner, k + 1, xs[k], totals[learner], start=k == 0, end=k == n_steps - 1)
                corr_id: int | str = ids[learner]
                if learner == "B" and k + 1 == MISTAKE_STEP and mistake in ("wrong_id", "zero_id"):
                    corr_id = s.sent_id = ids[learner] + 1 if mistake == "wrong_id" else 0
                if learner == "B" and s.end and mistake == "no_end":
                    s.end = False
                sends[learner] = (corr_id, s)
            _together(clients, RUNNING_SUM_ENSEMBLE, sends)
            run.steps += [s for _, s in sends.values()]
        run.sent = len(run.steps)
        if mistake == "no_end":
            closed = Step("B", n_steps + 1, 0.0, totals["B"], end=True)
            _together({"B": clients["B"]}, RUNNING_SUM_ENSEMBLE, {"B": (ids["B"], closed)})
            run.closed = closed
            run.sent += 1
    finally:
        for client in clients.values():
            client.close()
    after = _scale_runs(endpoint)
    # Triton counts a request in the statistics just after its response goes out: the last one can lag a moment
    deadline = time.monotonic() + STATS_SETTLE_S
    while (
        before is not None and after is not None and after - before < run.sent and time.monotonic() < deadline
    ):
        time.sleep(0.02)
        after = _scale_runs(endpoint)
    if before is not None and after is not None:
        run.scale_runs = after - before
    return run


@dataclass
class Batcher:
    """What running_sum's loaded config says: its strategy, slots and idle timeout."""

    strategy: str
    slots: int
    idle_s: float


def batcher(endpoint: Endpoint, model: str = RUNNING_SUM) -> Batcher:
    """Slots: max_batch_size (at least 1) per instance for direct, max_candidate_sequences for oldest (core
    r24.10 sequence_batch_scheduler.cc), times the instances. Read from the loaded config, or from the repository's
    ``config.pbtxt`` while the model waits for its first use (shown on the page before any request loads it)."""
    if kserve.model_ready(endpoint, model):
        cfg = kserve.model_config(endpoint, model)
    else:
        cfg = json_format.MessageToDict(catalog.models()[model].config, preserving_proto_field_name=True)
    sb = cfg.get("sequence_batching") or {}
    instances = sum(int(g.get("count", 1) or 1) for g in cfg.get("instance_group") or [{}])
    per_instance = max(1, int(cfg.get("max_batch_size", 0) or 0))
    strategy = "oldest" if sb.get("oldest") else "direct"
    if strategy == "oldest" and int(sb["oldest"].get("max_candidate_sequences", 0) or 0) > 0:
        per_instance = int(sb["oldest"]["max_candidate_sequences"])
    idle_us = int(sb.get("max_sequence_idle_microseconds", 0) or 1_000_000)
    return Batcher(strategy, per_instance * instances, idle_us / 1e6)
