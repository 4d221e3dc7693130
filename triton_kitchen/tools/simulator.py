"""A dynamic-batching simulator: Triton's batcher rules as deterministic discrete-event code.

Requests arrive (closed loop with ``concurrency`` clients, a constant or Poisson ``rate``, or an explicit list),
wait in one queue, and leave it in batches that the rules of Triton's dynamic batcher form: in arrival order, up
to ``max_batch_size`` inferences; at once when the batch is full (``max_batch_size``, or the largest preferred
batch size), else when the oldest request has waited ``max_queue_delay_microseconds``, then cut to the largest
preferred size that can be formed, if any. A batch starts only on a free instance. Without dynamic batching every
request is its own execution. Service time per batch size comes from :class:`ServiceModel` (calibrated from the
live server by :mod:`triton_kitchen.tools.calibration`), plus the time spent outside the server per request.

The queue in front of the batcher follows Triton's ``PriorityQueue`` (core r24.10 scheduler_utils.cc): with
``priority_levels`` one queue per level, each batch filled from level 1 (the highest) first; a request that names
no level, or one above ``priority_levels``, gets ``default_priority_level``. The default queue policy applies to
each level: a request that finds its level's queue holding ``max_queue_size`` (delayed requests included) is
refused at once; one that waited longer than its timeout is refused (``REJECT``) or moved behind every request of
its level that has not timed out (``DELAY``). Triton looks at timeouts while it walks the queue to form a batch;
the simulator looks at every waiting request each time it forms one. The batcher's own pauses (Triton 2.51 can
sleep up to 500 ms with any of these settings: benchmarks/batcher_pause.py) are not simulated.

Everything is simulated, never measured: results say so (``"kind": "simulated"``). Same inputs, same seed, same
result.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter, deque
from dataclasses import dataclass, field

MAX_REQUESTS = 200_000
ACTIONS = ("REJECT", "DELAY")  # a queue policy's timeout_action
FULL, TIMED_OUT = "full", "timeout"  # why a request was refused: its queue was full, or it waited too long


def effective_timeout_us(default_us: int, allow_override: bool, requested_us: int) -> int:
    """A request's queue timeout as Triton's ``PolicyQueue::Enqueue`` sets it: the policy's default; the request's
    own (``timeout`` in the client's ``infer``) only where overrides are allowed and it is non-zero and shorter
    than the default. So a request can shorten a timeout, never lengthen it, and with no default (0) its own is
    ignored. 0: no timeout."""
    if allow_override and requested_us != 0 and requested_us < default_us:
        return requested_us
    return default_us


@dataclass(frozen=True)
class BatcherConfig:
    """The parts of a model config that decide how requests become executions."""

    max_batch_size: int = 8
    dynamic_batching: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_us: int = 0
    instances: int = 1
    # the queue: priority levels and the default queue policy (applied to every level), as in dynamic_batching
    priority_levels: int = 0
    default_priority_level: int = 0
    max_queue_size: int = 0  # per level; 0: no limit
    timeout_us: int = 0  # default_timeout_microseconds; 0: none
    timeout_action: str = "REJECT"
    allow_timeout_override: bool = False

    def __post_init__(self) -> None:
        if self.priority_levels < 0 or self.max_queue_size < 0 or self.timeout_us < 0:
            raise ValueError("priority_levels, max_queue_size and timeout_us must be >= 0")
        if self.priority_levels and not 1 <= self.default_priority_level <= self.priority_levels:
            raise ValueError(  # Triton's words for this config
                f"default priority level must be in range [1, {self.priority_levels}]"
            )
        if self.timeout_action not in ACTIONS:
            raise ValueError(f"timeout_action must be one of {', '.join(ACTIONS)}")
        queue_rules = (
            self.priority_levels or self.max_queue_size or self.timeout_us or self.allow_timeout_override
        )
        if queue_rules and not self.dynamic_batching:
            raise ValueError("priority levels and queue policies belong to dynamic_batching")
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1 (a model with 0 does not batch)")
        if self.instances < 1:
            raise ValueError("instances must be at least 1")
        if self.max_queue_delay_us < 0:
            raise ValueError("max_queue_delay_us must be >= 0")
        if any(p < 1 or p > self.max_batch_size for p in self.preferred_batch_sizes):
            raise ValueError("every preferred batch size must be in 1..max_batch_size")


@dataclass(frozen=True)
class ServiceModel:
    """How long an execution takes: ``batch_ms`` per batch size (compute input + infer + output), linear
    between and beyond the sizes given; ``outside_ms``: a request's round trip outside the server (client,
    network, serialization), spent by the client before the request reaches the server. ``parallelism``:
    how many executions the machine runs at once at full speed (on a 2-core CPU with a model that uses both
    cores, 1: two instances then share the cores); None means unlimited (one GPU stream per instance, say).
    ``outside_jitter``: real clients never take exactly the same time twice; a seeded spread of that fraction
    keeps a simulated closed loop from locking into one pattern. ``client_parallelism``: how many requests the
    client can prepare at once (encode, send, receive, decode take
    ``outside_ms`` each): a Python client holds the GIL for most of it, so its threads take turns (1); None means
    every client thread works at once. Answers that come back together then leave again one after another."""

    batch_ms: dict[int, float]
    outside_ms: float = 0.0
    parallelism: float | None = None
    client_parallelism: int | None = (
        None  # the client's own work (outside_ms) runs on this many slots at once
    )
    outside_jitter: float = 0.0  # each request's outside_ms varies by up to this fraction either way (seeded)

    def __post_init__(self) -> None:
        if not self.batch_ms or any(s < 1 or ms < 0 for s, ms in self.batch_ms.items()):
            raise ValueError("batch_ms needs at least one batch size >= 1 with a time >= 0")

    def service_ms(self, size: int) -> float:
        points = sorted(self.batch_ms.items())
        if size in self.batch_ms:
            return self.batch_ms[size]
        if len(points) == 1:
            ((s0, t0),) = points
            return t0 * size / s0  # one point: proportional (no fixed cost known)
        lo = [p for p in points if p[0] < size]
        hi = [p for p in points if p[0] > size]
        (s0, t0), (s1, t1) = (lo[-1], hi[0]) if lo and hi else (points[-2], points[-1]) if lo else points[:2]
        return max(0.0, t0 + (t1 - t0) * (size - s0) / (s1 - s0))


@dataclass
class SimRequest:
    id: int
    size: int  # inferences in the request (its batch dimension)
    arrival_ms: float  # when the server received it
    name: str = ""
    client: int | None = None
    sent_ms: float | None = None  # when the client began the request (before its own work); None: = arrival
    start_ms: float | None = None
    end_ms: float | None = None
    batch: int | None = None
    instance: int | None = None
    priority: int = 0  # as the client sent it; 0: none (the model's default level)
    timeout_us: int = 0  # the request's own queue timeout (used only where the policy allows an override)
    level: int = 0  # the queue it waited in (0 without priority levels)
    refused: str = ""  # FULL or TIMED_OUT: Triton answered it with an error instead of running it
    refused_ms: float | None = None
    delayed_ms: float | None = None  # DELAY: when it moved behind the requests that had not timed out

    @property
    def queue_ms(self) -> float:
        return (self.start_ms or 0.0) - self.arrival_ms

    @property
    def latency_ms(self) -> float:
        """What the client measures: from beginning the request to having the answer."""
        return (self.end_ms or 0.0) - (self.sent_ms if self.sent_ms is not None else self.arrival_ms)


@dataclass
class SimBatch:
    id: int
    instance: int
    start_ms: float
    end_ms: float
    requests: list[int]
    size: int  # inferences


@dataclass
class SimResult:
    config: BatcherConfig
    service: ServiceModel
    requests: list[SimRequest]
    batches: list[SimBatch]
    warmup: int = 0  # requests left out of the summary (closed-loop start-up)
    arrivals: str = ""
    late: int = 0  # open loop: requests sent after their time (every sender busy)
    summary: dict = field(default_factory=dict)

    def measured(self) -> list[SimRequest]:
        done = sorted((r for r in self.requests if r.end_ms is not None), key=lambda r: r.end_ms)
        return done[self.warmup :] or done


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _summarize(result: SimResult) -> dict:
    done = result.measured()
    outside = result.service.outside_ms
    latencies = [r.latency_ms for r in done]
    # a steady-state rate: answers after the window opened, over the window (it opens at the last warm-up
    # answer, or at the first answer when there is no warm-up)
    ends = sorted(r.end_ms for r in result.requests if r.end_ms is not None)
    warm = min(result.warmup, len(ends))  # refused requests have no answer time
    opened = ends[warm - 1] if warm else (ends[0] if ends else 0.0)
    counted = sum(1 for t in ends if t > opened + 1e-9)
    span = (ends[-1] - opened) if ends else 0.0
    throughput = counted / span * 1000 if span > 0 else 0.0
    batch_ids = {r.batch for r in done}
    batches = [b for b in result.batches if b.id in batch_ids]
    histogram = Counter(b.size for b in batches)
    inferences = sum(r.size for r in done)
    return {
        "kind": "simulated",
        "arrivals": result.arrivals,
        "requests": len(done),
        "throughput_rps": throughput,
        "latency_ms": {"p50": _percentile(latencies, 50), "p99": _percentile(latencies, 99)},
        "mean_latency_ms": sum(latencies) / len(latencies) if latencies else None,
        "mean_batch": inferences / len(batches) if batches else None,
        "batch_histogram": {int(k): v for k, v in sorted(histogram.items())},
        "queue_ms": sum(r.queue_ms for r in done) / len(done) if done else None,
        "compute_ms": (sum(r.end_ms - r.start_ms for r in done) / len(done)) if done else None,
        "outside_ms": outside,
        "client_wait_ms": (sum(max(0.0, r.arrival_ms - r.sent_ms - outside) for r in done) / len(done))
        if done and all(r.sent_ms is not None for r in done)
        else 0.0,
        "late": result.late,
        "refused": {why: sum(1 for r in result.requests if r.refused == why) for why in (FULL, TIMED_OUT)},
        "calibration": {int(k): v for k, v in sorted(result.service.batch_ms.items())},
    }


class _Engine:
    """The event loop: arrivals, batch completions and delay timers in time order."""

    def __init__(self, config: BatcherConfig, service: ServiceModel, seed: int = 0) -> None:
        self.config = config
        self.service = service
        self.rng = random.Random(seed)
        self.queue: list[SimRequest] = []
        self.free = list(range(config.instances))
        self.running = 0
        self.events: list[tuple[float, int, int, str, object]] = []  # (time, priority, seq, kind, payload)
        self.seq = 0
        self.requests: list[SimRequest] = []
        self.batches: list[SimBatch] = []
        self.timer_at: float | None = None
        self.on_done = None  # callback(request, now) when a request's answer is in
        self.on_scheduled = None  # callback(request, now): an open loop's scheduled time has come
        self.client_free = service.client_parallelism or math.inf
        self.client_waiting: deque[SimRequest] = deque()
        self.order: dict[int, tuple] = {}  # request id -> its place within its level (see _ordered)
        self.deadline: dict[int, float] = {}  # request id -> when its queue timeout runs out (ms)
        self.moves = 0

    def push(self, t: float, kind: str, payload: object, priority: int = 1) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, priority, self.seq, kind, payload))

    def arrive(self, req: SimRequest) -> None:
        self.requests.append(req)
        self.push(req.arrival_ms, "arrive", req)

    def send_at(self, req: SimRequest, t: float) -> None:
        """A client begins ``req`` at ``t``: its own work first (``outside_ms`` on a client slot), then the server."""
        self.requests.append(req)
        self.push(t, "send", req)

    def _client_start(self, req: SimRequest, now: float) -> None:
        self.client_free -= 1
        work = self.service.outside_ms
        if self.service.outside_jitter:
            work *= 1 + self.service.outside_jitter * self.rng.uniform(-1.0, 1.0)
        self.push(now + work, "prepared", req)

    def _enqueue(self, req: SimRequest, now: float) -> None:
        """Into its level's queue, or refused at once when that queue is full (Triton's ``Exceeds maximum queue
        size``)."""
        cfg = self.config
        p = req.priority
        req.level = (
            0
            if not cfg.priority_levels
            else cfg.default_priority_level
            if not 0 < p <= cfg.priority_levels
            else p
        )
        if cfg.max_queue_size and sum(1 for r in self.queue if r.level == req.level) >= cfg.max_queue_size:
            self._refuse(req, FULL, now)
            return
        self.moves += 1
        self.order[req.id] = (0, self.moves)
        timeout = effective_timeout_us(cfg.timeout_us, cfg.allow_timeout_override, req.timeout_us)
        if timeout:
            self.deadline[req.id] = now + timeout / 1000
        self.queue.append(req)

    def _refuse(self, req: SimRequest, why: str, now: float) -> None:
        req.refused, req.refused_ms = why, now
        if self.on_done is not None:  # the client has its answer (an error): a closed loop sends again
            self.on_done(req, now)

    def _apply_policy(self, now: float) -> None:
        """Requests whose timeout ran out: refused (REJECT) or moved behind their level's others (DELAY)."""
        for r in list(self.queue):
            deadline = self.deadline.get(r.id)
            if deadline is None or r.delayed_ms is not None or not now > deadline + 1e-9:
                continue
            if self.config.timeout_action == "DELAY":
                self.moves += 1
                r.delayed_ms = now
                self.order[r.id] = (1, self.moves)
            else:
                self.queue.remove(r)
                self._refuse(r, TIMED_OUT, now)

    def _ordered(self) -> list[SimRequest]:
        """The queue in the order the batcher takes it: level 1 first; within a level, the requests that have not
        timed out in arrival order, then the delayed ones in the order they were moved."""
        return sorted(self.queue, key=lambda r: (r.level, *self.order[r.id]))

    def _form(self, now: float) -> list[SimRequest] | None:
        """The batch to start now, or None to wait (a timer is set for when the oldest request's delay ends)."""
        cfg = self.config
        if not cfg.dynamic_batching:
            return [self.queue[0]]
        self._apply_policy(now)
        queue = self._ordered()
        if not queue:  # every waiting request timed out and was refused
            return None
        # Triton 2.51's GetDynamicBatch (core r24.10 dynamic_batch_scheduler.cc): walk the queue while the batch
        # fits max_batch_size, remembering the longest prefix that makes a preferred size (or, once the next
        # request would pass the largest preferred size, the prefix so far).
        preferred = set(cfg.preferred_batch_sizes)
        max_preferred = max(preferred) if preferred else cfg.max_batch_size
        picked, total, best = [], 0, None
        for r in queue:
            if picked:
                if total + r.size > max_preferred and best is None:
                    best = len(picked)
                if total + r.size > cfg.max_batch_size:
                    break
            picked.append(r)
            total += r.size
            if total in preferred:
                best = len(picked)
        delay_ms = cfg.max_queue_delay_us / 1000
        oldest = min(r.arrival_ms for r in queue)
        exceeded = delay_ms > 0 and now - oldest >= delay_ms - 1e-9
        if best is not None and not exceeded:  # a preferred size goes at once, while the delay lasts
            return picked[:best]
        if len(picked) < len(queue) or total >= max_preferred or exceeded or delay_ms == 0:
            return picked  # past the delay (or with none), whatever is queued goes
        deadline = oldest + delay_ms
        if self.timer_at is None or self.timer_at != deadline:
            self.timer_at = deadline
            self.push(deadline, "timer", None, priority=2)
        return None

    def dispatch(self, now: float) -> None:
        while self.free and self.queue:
            batch = self._form(now)
            if batch is None:
                return
            ids = {r.id for r in batch}
            self.queue = [r for r in self.queue if r.id not in ids]
            instance = self.free.pop(0)
            size = sum(r.size for r in batch)
            self.running += 1
            par = self.service.parallelism
            slowdown = max(1.0, self.running / par) if par else 1.0
            end = now + self.service.service_ms(size) * slowdown
            b = SimBatch(len(self.batches), instance, now, end, [r.id for r in batch], size)
            self.batches.append(b)
            for r in batch:
                r.start_ms, r.end_ms, r.batch, r.instance = now, end, b.id, instance
            self.push(end, "done", b, priority=0)

    def _handle(self, now: float, kind: str, payload: object) -> None:
        if kind == "done":
            batch: SimBatch = payload  # type: ignore[assignment]
            self.free.append(batch.instance)
            self.free.sort()
            self.running -= 1
            if self.on_done is not None:
                for rid in batch.requests:
                    self.on_done(self.requests[rid], now)
        elif kind == "arrive":
            self._enqueue(payload, now)  # type: ignore[arg-type]
        elif kind == "scheduled":
            self.on_scheduled(payload, now)
        elif kind == "send":
            req: SimRequest = payload  # type: ignore[assignment]
            req.sent_ms = now
            if self.client_free > 0:
                self._client_start(req, now)
            else:
                self.client_waiting.append(req)
        elif kind == "prepared":
            req = payload  # type: ignore[assignment]
            req.arrival_ms = now
            self._enqueue(req, now)
            self.client_free += 1
            if self.client_waiting:
                self._client_start(self.client_waiting.popleft(), now)
        elif kind == "timer":
            self.timer_at = None

    def run(self, max_requests: int) -> None:
        while self.events:
            now, _, _, kind, payload = heapq.heappop(self.events)
            self._handle(now, kind, payload)
            # everything that happens at this same instant first, then the batcher decides once
            while self.events and self.events[0][0] <= now + 1e-9:
                _, _, _, kind, payload = heapq.heappop(self.events)
                self._handle(now, kind, payload)
            self.dispatch(now)
            if len(self.requests) > max_requests + 1 and not self.queue and self.running == 0:
                break


def simulate_arrivals(config: BatcherConfig, service: ServiceModel, arrivals: list[tuple]) -> SimResult:
    """Explicit arrivals at the server: (time in ms, request size, name), optionally followed by the priority the
    client asks for and the request's own timeout in µs. No clients wait on the answers. Requests that arrive at
    the same instant enter the queue in the order given."""
    eng = _Engine(config, service)
    for i, (t, size, name, *extra) in enumerate(sorted(arrivals, key=lambda a: a[0])):
        priority, timeout_us = (list(extra) + [0, 0])[:2]
        eng.arrive(
            SimRequest(i, int(size), float(t), name, priority=int(priority), timeout_us=int(timeout_us))
        )
    eng.run(len(arrivals))
    result = SimResult(config, service, eng.requests, eng.batches, arrivals="explicit")
    result.summary = _summarize(result)
    return result


def simulate(
    config: BatcherConfig,
    service: ServiceModel,
    *,
    concurrency: int | None = None,
    rate_rps: float | None = None,
    distribution: str = "constant",
    requests: int = 10_000,
    request_size: int = 1,
    warmup_fraction: float = 0.1,
    seed: int = 0,
    duration_s: float | None = None,
    max_in_flight: int = 16,
) -> SimResult:
    """``requests`` requests, closed loop (``concurrency`` clients, each sends again ``outside_ms`` after its
    answer) or open loop (``rate_rps``, ``distribution`` constant or poisson, as perf_analyzer's
    ``--request-distribution``). The first ``warmup_fraction`` of the answers is left out of the summary.
    ``duration_s``: also stop sending after that much simulated time (whichever comes first). An open loop
    sends from at most ``max_in_flight`` senders, as ``bench --request-rate`` does; beyond that, requests
    leave late (``late``) instead of piling up without end."""
    if (concurrency is None) == (rate_rps is None):
        raise ValueError("give exactly one of concurrency and rate_rps")
    if not 1 <= requests <= MAX_REQUESTS:
        raise ValueError(f"requests must be in 1..{MAX_REQUESTS}")
    if distribution not in ("constant", "poisson"):
        raise ValueError("distribution must be constant or poisson")
    eng = _Engine(config, service, seed)
    rng = random.Random(seed)
    until = duration_s * 1000 if duration_s else math.inf
    late = 0
    if concurrency is not None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")

        def send(client: int, t: float) -> None:
            if len(eng.requests) >= requests or t >= until:
                return
            eng.send_at(SimRequest(len(eng.requests), request_size, t, client=client), t)

        eng.on_done = lambda req, now: send(req.client, now)  # the answer is in: the client goes again
        for c in range(concurrency):
            send(c, c * 1e-6)  # threads start a hair apart, so the first batch is not a tie
        label = f"closed loop, concurrency {concurrency}"
    else:
        if rate_rps <= 0:
            raise ValueError("rate_rps must be > 0")
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        gap = 1000.0 / rate_rps
        in_flight = 0
        backlog: deque[SimRequest] = deque()

        def scheduled(req: SimRequest, now: float) -> None:
            nonlocal in_flight, late
            if in_flight < max_in_flight:
                in_flight += 1
                eng.push(now, "send", req)
            else:  # every sender is waiting on an answer: this one leaves late
                late += 1
                backlog.append(req)

        def on_done(req: SimRequest, now: float) -> None:
            nonlocal in_flight
            in_flight -= 1
            if backlog:
                in_flight += 1
                eng.push(now, "send", backlog.popleft())

        eng.on_done = on_done
        eng.on_scheduled = scheduled
        t = 0.0
        for i in range(requests):
            if t >= until:
                break
            req = SimRequest(i, request_size, t)
            eng.requests.append(req)
            eng.push(t, "scheduled", req)
            t += rng.expovariate(1.0 / gap) if distribution == "poisson" else gap
        label = f"open loop, {rate_rps:g} req/s ({distribution}), at most {max_in_flight} in flight"
    eng.run(requests)
    sent_total = len(eng.requests)
    result = SimResult(
        config, service, eng.requests, eng.batches, int(sent_total * warmup_fraction), label, late
    )
    result.summary = _summarize(result)
    return result


# Triton's Conceptual Guide, Part 2: five requests with batch sizes 4, 2, 2, 6, 2; every execution takes X
# whatever its size; max batch size 8; A and C arrive at 0, B at X/3, D and E at 2X/3.
GUIDE_X_MS = 30.0
GUIDE_ARRIVALS = [
    (0.0, 4, "A"),
    (GUIDE_X_MS / 3, 2, "B"),
    (0.0, 2, "C"),
    (2 * GUIDE_X_MS / 3, 6, "D"),
    (2 * GUIDE_X_MS / 3, 2, "E"),
]
GUIDE_SERVICE = ServiceModel({1: GUIDE_X_MS, 8: GUIDE_X_MS})
