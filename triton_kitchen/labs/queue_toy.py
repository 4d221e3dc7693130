"""Chapter 9's drawn timelines: the batching toy's simulator (:mod:`triton_kitchen.tools.simulator`) with a priority
lane and a bounded queue, on three small scenarios a learner predicts before the real server runs anything.

Every execution takes one unit X whatever its size (as in chapter 1's guide), batches hold up to 8, one instance, no
queue delay. Each scenario simulates its cases (the same arrivals under two configs) and says which of the
prediction's answers came out (``outcome()``), from the simulated requests. Simulated, never measured.

- ``priority``: 30 ordinary requests queued at t=0 (the first 8 start at once), 2 urgent (priority 1) arrive 1 ms
  later. First come, first served against ``priority_levels: 2``: when are the urgent answered?
- ``bounded``: ``max_queue_size: 8``; 8 requests start at t=0, 20 more arrive 1 ms later, half of them urgent. One
  queue against two priority levels (each level its own queue and its own limit): how many may wait?
- ``timeout``: a 1.5 X queue timeout; 24 requests at t=0, then 8 new ones just before each batch ends, for a
  while. REJECT against DELAY: what happens to the 8 that outwait the timeout?
"""

from __future__ import annotations

from dataclasses import dataclass

from triton_kitchen.tools import simulator
from triton_kitchen.tools.simulator import BatcherConfig, SimResult

X_MS = simulator.GUIDE_X_MS  # one execution, whatever the batch size
SERVICE = simulator.ServiceModel({1: X_MS, 8: X_MS})
STEP_MS = 1.0  # "a moment later": 1 ms
TIMEOUT_X = 1.5  # the timeout scenario's default_timeout_microseconds, in X
STREAM_BATCHES = (1, 10)  # the timeout scenario: how many batches of new requests keep arriving (range)
LEVELS = dict(priority_levels=2, default_priority_level=2)

# the groups a scenario's requests belong to (a request's ``name``), and which of them the pictures mark
ORDINARY, URGENT, EARLY, NEW, FIRST = "ordinary", "urgent", "early", "new", "first"
MARKS = {
    FIRST: "",
    URGENT: "★",
    ORDINARY: "",
    EARLY: "⌛",
    NEW: "",
}  # the sign after a group's count in a batch


@dataclass
class Scenario:
    name: str
    cases: dict[str, SimResult]  # case key -> its simulated run, in the order to draw them
    configs: dict[str, BatcherConfig]
    marked: str  # the group the question is about

    def in_x(self, ms: float) -> float:
        return round(ms / X_MS, 3)

    def ends(self, case: str, group: str) -> list[float]:
        """When the requests of ``group`` were answered in ``case``, in X (refused ones left out)."""
        return sorted(self.in_x(r.end_ms) for r in self.cases[case].requests if r.name == group and r.end_ms)

    def refused(self, case: str, group: str | None = None) -> list[simulator.SimRequest]:
        return [r for r in self.cases[case].requests if r.refused and (group is None or r.name == group)]

    def accepted(self, case: str, after_ms: float = 0.0) -> int:
        """How many requests arriving after ``after_ms`` were let into the queue (not refused at once)."""
        return sum(
            1 for r in self.cases[case].requests if r.arrival_ms > after_ms and r.refused != simulator.FULL
        )

    def outcome(self) -> str:
        """Which answer of the scenario's prediction came out (the keys of ``[ch9] toy_<name>_<key>``)."""
        if self.name == "priority":  # when the urgent were answered with two levels: X, 2X or 4X
            last = max(self.ends("levels", URGENT))
            return "first" if last <= 1 else "next" if last <= 2 else "last"
        if self.name == "bounded":  # how many of the 20 could wait with two levels
            n = self.accepted("levels", after_ms=0.0)
            return {8: "eight", 16: "sixteen"}.get(n, "all")
        # timeout: what DELAY did to the requests that outwaited the timeout
        if self.refused("delay", EARLY):
            return "refused"
        late = self.ends("delay", EARLY)[-1]
        return "soon" if late <= 3 else "after"


def _run(configs: dict[str, BatcherConfig], arrivals: list[tuple]) -> dict[str, SimResult]:
    return {key: simulator.simulate_arrivals(cfg, SERVICE, arrivals) for key, cfg in configs.items()}


def priority() -> Scenario:
    arrivals = [(0.0, 1, ORDINARY)] * 30 + [(STEP_MS, 1, URGENT, 1)] * 2
    configs = {"fifo": BatcherConfig(), "levels": BatcherConfig(**LEVELS)}
    return Scenario("priority", _run(configs, arrivals), configs, URGENT)


def bounded(size: int = 8) -> Scenario:
    arrivals = [(0.0, 1, FIRST)] * 8
    for _ in range(10):  # urgent and ordinary arrive mixed
        arrivals += [(STEP_MS, 1, URGENT, 1), (STEP_MS, 1, ORDINARY)]
    configs = {
        "one": BatcherConfig(max_queue_size=size),
        "levels": BatcherConfig(max_queue_size=size, **LEVELS),
    }
    return Scenario("bounded", _run(configs, arrivals), configs, URGENT)


def timeout(stream_batches: int = 5) -> Scenario:
    lo, hi = STREAM_BATCHES
    stream_batches = max(lo, min(hi, int(stream_batches)))
    arrivals = [(0.0, 1, EARLY)] * 24
    for k in range(
        2, 2 + stream_batches
    ):  # 8 new ones just before each batch ends, from the end of the second
        arrivals += [(k * X_MS - STEP_MS, 1, NEW)] * 8
    timeout_us = int(TIMEOUT_X * X_MS * 1000)
    configs = {
        "reject": BatcherConfig(timeout_us=timeout_us, timeout_action="REJECT"),
        "delay": BatcherConfig(timeout_us=timeout_us, timeout_action="DELAY"),
    }
    return Scenario("timeout", _run(configs, arrivals), configs, EARLY)


SCENARIOS = {"priority": priority, "bounded": bounded, "timeout": timeout}
OPTIONS = {  # each scenario's prediction: the answers' keys, in the order offered
    "priority": ("first", "next", "last"),
    "bounded": ("eight", "sixteen", "all"),
    "timeout": ("soon", "after", "refused"),
}
