"""A burst: many requests at once to one model on the app's gRPC client (asynchronous: no thread per request),
each one's send and answer times and Triton's own error text, and what the answers' order says.

Chapter 9 sends bursts to show priority levels and queue policies, chapter 10 to move Triton's counters.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import tritonclient.grpc as grpcclient

from triton_kitchen.core import clients
from triton_kitchen.core.catalog import CLASSIFIER
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.override import BatchingError
from triton_kitchen.tools.batch_runs import classifier_inputs

MAX_BURST = 64
MAX_TRICKLE = 40  # requests a burst's trickle may add
BURST_TIMEOUT_S = 60.0
SAME_BATCH_MS = 10.0  # answers this close (ms) came from one batch (batches of 8 take tens of ms here)


@dataclass
class Sent:
    """One request of a burst: when it left (ms after the burst began), its answer time, Triton's error."""

    index: int
    priority: int  # 0: none given (the model's default level)
    sent_ms: float
    done_ms: float | None = None
    error: str = ""  # Triton's text, verbatim ("[StatusCode.UNAVAILABLE] Request timeout expired")
    trickle: bool = False  # sent after the burst, while waiting for the late ones (``burst(trickle_s=...)``)

    @property
    def ok(self) -> bool:
        return self.done_ms is not None and not self.error

    @property
    def latency_ms(self) -> float | None:
        return None if self.done_ms is None else self.done_ms - self.sent_ms


@dataclass
class Burst:
    label: str
    config_text: str  # the dynamic_batching block that was loaded, as pbtxt
    sent: list[Sent] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(1 for s in self.sent if s.ok)

    @property
    def refused(self) -> int:
        return sum(1 for s in self.sent if s.error)

    def errors(self) -> dict[str, int]:
        """Each distinct error text and how many requests got it."""
        return dict(Counter(s.error for s in self.sent if s.error))

    def finish_ranks(self, priority: int) -> list[int]:
        """Where requests of ``priority`` finished among the answered (1 = first answer), sorted."""
        done = sorted((s for s in self.sent if s.ok), key=lambda s: s.done_ms)
        return sorted(n for n, s in enumerate(done, start=1) if s.priority == priority)

    def longest_pause_ms(self) -> float | None:
        """The longest time between two consecutive answers (ms): how long the server went without finishing a
        batch. None with fewer than two answers."""
        done = sorted(s.done_ms for s in self.sent if s.ok)
        return max((b - a for a, b in itertools.pairwise(done)), default=None)

    def still_waiting(self, priority: int) -> list[Sent]:
        """The answered requests that requests of ``priority`` could overtake (those of ``priority`` too), in the
        order they finished: sent no later than the first of them, not yet answered when it left the client, and not in the
        batch the server was finishing then (the first batch answered after, if it holds none of them: a running
        batch is never interrupted, and one formed before they arrived could not take them)."""
        late = [s.sent_ms for s in self.sent if s.priority == priority]
        if not late:
            return []
        first = min(late)
        after = sorted(
            (
                s
                for s in self.sent
                if s.ok and s.done_ms > first and (s.priority == priority or s.sent_ms <= first)
            ),
            key=lambda s: s.done_ms,
        )
        if after:  # one batch's answers reach the client within a few ms of each other
            batch = [s for s in after if s.done_ms <= after[0].done_ms + SAME_BATCH_MS]
            if all(s.priority != priority for s in batch):
                after = after[len(batch) :]
        return after

    def ahead_of_waiting(self, priority: int) -> tuple[int, int]:
        """How many of the other requests in ``still_waiting`` finished clearly after the median request of
        ``priority`` (more than ``SAME_BATCH_MS`` later: in the same batch is not ahead), and how many there were."""
        waiting = self.still_waiting(priority)
        mine = sorted(s.done_ms for s in waiting if s.priority == priority)
        others = [s for s in waiting if s.priority != priority]
        if not mine:
            return 0, len(others)
        median = mine[len(mine) // 2]
        return sum(1 for s in others if s.done_ms > median + SAME_BATCH_MS), len(others)

    def mean_latency_ms(self, priority: int | None = None) -> float | None:
        values = [s.latency_ms for s in self.sent if s.ok and (priority is None or s.priority == priority)]
        return sum(values) / len(values) if values else None

    def rows(self) -> list[dict]:
        return [
            {
                "index": s.index,
                "priority": s.priority,
                "sent_ms": s.sent_ms,
                "done_ms": s.done_ms,
                "latency_ms": s.latency_ms,
                "ok": s.ok,
                "error": s.error,
            }
            for s in self.sent
        ]


def _input():
    x = classifier_inputs()["input"]
    tensor = grpcclient.InferInput("input", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return tensor


def burst(
    endpoint: Endpoint,
    n: int,
    late: int = 0,
    late_priority: int = 0,
    gap_s: float = 0.02,
    label: str = "",
    config_text: str = "",
    timeout_s: float = BURST_TIMEOUT_S,
    model: str = CLASSIFIER,
    trickle_s: float = 0.0,
    trickle_max: int = MAX_TRICKLE,
) -> Burst:
    """``n`` requests to ``model`` (the classifier: its ``input`` and ``logits``) at once (no priority given), then,
    ``gap_s`` later, ``late`` more with ``late_priority``; waits for every answer (or ``timeout_s``). On the app's
    one gRPC client, asynchronous: no thread per request.

    ``trickle_s``: after the late ones, one more request (no priority given, ``Sent.trickle``) every ``trickle_s``
    until the late ones are answered (at most ``trickle_max``): traffic that keeps arriving, as real traffic does.
    It also wakes a batcher that waits for a new request (Triton 2.51 without payload prefetching)."""
    if not 1 <= n + late <= MAX_BURST:
        raise BatchingError(f"a burst is 1..{MAX_BURST} requests", "bad_settings")
    if trickle_s < 0 or not 0 <= trickle_max <= MAX_TRICKLE:
        raise BatchingError(f"a trickle is 0..{MAX_TRICKLE} requests, at least 0 s apart", "bad_settings")
    client = clients.grpc_client(endpoint)
    tensor = _input()
    outputs = [grpcclient.InferRequestedOutput("logits")]
    out = Burst(label, config_text)
    lock = threading.Lock()
    all_done, late_done = threading.Event(), threading.Event()
    sending = [True]
    t0 = time.perf_counter()

    def answered(item: Sent):
        def callback(result, error) -> None:  # tritonclient calls it with these keywords
            del result
            with lock:
                item.done_ms = (time.perf_counter() - t0) * 1000
                item.error = "" if error is None else str(error)
                if len(out.sent) >= n + late and all(s.done_ms is not None for s in out.sent[n : n + late]):
                    late_done.set()
                if not sending[0] and all(s.done_ms is not None for s in out.sent):
                    all_done.set()

        return callback

    def send(i: int, priority: int, trickle: bool = False) -> None:
        item = Sent(i, priority, (time.perf_counter() - t0) * 1000, trickle=trickle)
        with lock:
            out.sent.append(item)
        client.async_infer(
            model,
            [tensor],
            answered(item),
            outputs=outputs,
            priority=priority,
            client_timeout=timeout_s,
        )

    for i in range(n):
        send(i, 0)
    if late:
        time.sleep(gap_s)
        for i in range(n, n + late):
            send(i, late_priority)
    if trickle_s > 0 and late:
        for i in range(n + late, n + late + trickle_max):
            if late_done.wait(trickle_s) or time.perf_counter() - t0 > timeout_s:
                break
            send(i, 0, trickle=True)
    with lock:
        sending[0] = False
        if all(s.done_ms is not None for s in out.sent):
            all_done.set()
    all_done.wait(max(0.0, timeout_s + 1.0 - (time.perf_counter() - t0)))
    with lock:
        for s in out.sent:
            if s.done_ms is None:
                s.error = f"no answer within {timeout_s:g} s"
    return out


def warm_up(endpoint: Endpoint, model: str = CLASSIFIER) -> None:
    """A few calls to a freshly loaded model, whose first calls are slow: kept out of the measurement."""
    burst(endpoint, 4, model=model)
