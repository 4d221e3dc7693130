"""A traced request as data: Triton's timestamp names, :class:`StepTrace`, :class:`RequestTimeline`.

Pure (no I/O): timelines come from :mod:`.parse` (Triton's trace files), :mod:`.capture` (live, embedded
server) or :mod:`.statistics` (a remote server's statistics deltas), and go to and from JSON here.

Timestamps are the server's steady clock in nanoseconds. On Linux that is ``CLOCK_MONOTONIC``, the
clock of Python's ``time.monotonic_ns()``: for the embedded server (same machine) the client's send
and receive instants can be placed on the same axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from triton_kitchen.core.errors import KitchenError

# Timestamp names Triton writes, in the order they happen for one request.
REQUEST_START = "REQUEST_START"
QUEUE_START = "QUEUE_START"
COMPUTE_START = "COMPUTE_START"
COMPUTE_INPUT_END = "COMPUTE_INPUT_END"
COMPUTE_OUTPUT_START = "COMPUTE_OUTPUT_START"
COMPUTE_END = "COMPUTE_END"
REQUEST_END = "REQUEST_END"
INFER_RESPONSE_COMPLETE = "INFER_RESPONSE_COMPLETE"
STEP_EVENTS = (
    REQUEST_START,
    QUEUE_START,
    COMPUTE_START,
    COMPUTE_INPUT_END,
    COMPUTE_OUTPUT_START,
    COMPUTE_END,
    REQUEST_END,
)
# (phase kind, start timestamp, end timestamp) of one model execution
STEP_PHASES = (
    ("queue", QUEUE_START, COMPUTE_START),
    ("compute_input", COMPUTE_START, COMPUTE_INPUT_END),
    ("infer", COMPUTE_INPUT_END, COMPUTE_OUTPUT_START),
    ("compute_output", COMPUTE_OUTPUT_START, COMPUTE_END),
)
# Network legs the frontends record on the top-level request. gRPC's WAITREAD_START is when the
# handler began waiting for *a* request (often long before this one was sent): only its end counts.
NETWORK_PHASES = (
    ("http_recv", "HTTP_RECV_START", "HTTP_RECV_END"),
    ("http_send", "HTTP_SEND_START", "HTTP_SEND_END"),
    ("grpc_send", "GRPC_SEND_START", "GRPC_SEND_END"),
)
SOURCES = ("trace", "statistics", "recorded")


class TraceError(KitchenError):
    """No trace could be found or read for the request."""

    default_code = "no_trace"


@dataclass(frozen=True)
class Phase:
    """One interval of a request's life: ``kind`` is a key of STEP_PHASES/NETWORK_PHASES or 'client_*'."""

    kind: str
    start_ns: int
    end_ns: int
    step: int | None = None  # DAG step index, None for network legs

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def duration_ms(self) -> float:
        return self.duration_ns / 1e6


@dataclass
class StepTrace:
    """One traced model execution: an ensemble (root) or one of its steps (child)."""

    trace_id: int
    model: str
    version: int = -1
    parent_id: int | None = None
    timestamps: dict[str, int] = field(default_factory=dict)  # first occurrence of each name
    children: list[StepTrace] = field(default_factory=list)
    step: int | None = None  # index of the ensemble step this execution belongs to (assign_steps)

    @property
    def start_ns(self) -> int:
        ts = self.timestamps
        return ts.get(REQUEST_START, min(ts.values()) if ts else 0)

    @property
    def end_ns(self) -> int:
        ts = self.timestamps
        return ts.get(REQUEST_END, max(ts.values()) if ts else 0)

    def phases(self) -> list[Phase]:
        """Queue, compute input, infer and compute output, where both ends were recorded."""
        out = []
        for kind, a, b in STEP_PHASES:
            if a in self.timestamps and b in self.timestamps:
                out.append(Phase(kind, self.timestamps[a], self.timestamps[b], self.step))
        return out

    def state_at(self, t_ns: int) -> str:
        """'idle' before it started, 'queued', 'computing', 'handoff' (request open, not in a phase), 'done'."""
        ts = self.timestamps
        if t_ns < self.start_ns:
            return "idle"
        if t_ns >= self.end_ns:
            return "done"
        if QUEUE_START in ts and COMPUTE_START in ts and ts[QUEUE_START] <= t_ns < ts[COMPUTE_START]:
            return "queued"
        if COMPUTE_START in ts and COMPUTE_END in ts and ts[COMPUTE_START] <= t_ns < ts[COMPUTE_END]:
            return "computing"
        return "handoff"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.trace_id,
            "model_name": self.model,
            "model_version": self.version,
            "parent_id": self.parent_id,
            "step": self.step,
            "timestamps": dict(self.timestamps),
            "children": [c.to_dict() for c in self.children],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTrace:
        return cls(
            trace_id=int(data["id"]),
            model=str(data["model_name"]),
            version=int(data.get("model_version", -1)),
            parent_id=data.get("parent_id"),
            timestamps={str(k): int(v) for k, v in data.get("timestamps", {}).items()},
            children=[cls.from_dict(c) for c in data.get("children", [])],
            step=data.get("step"),
        )


@dataclass
class RequestTimeline:
    """One request, end to end: the ensemble's trace, its steps, the network legs, where it came from."""

    root: StepTrace
    source: str = (
        "trace"  # "trace" (live trace file), "statistics" (deltas, start times laid out), "recorded"
    )
    protocol: str | None = None  # "http" or "grpc" when known
    client_start_ns: int | None = None  # client's monotonic clock, same axis as the trace (embedded only)
    client_end_ns: int | None = None
    request_bytes: int | None = None
    response_bytes: int | None = None
    note: str = ""
    records: list[dict[str, Any]] = field(default_factory=list, repr=False)  # Triton's own fragments

    @property
    def model(self) -> str:
        return self.root.model

    @property
    def steps(self) -> list[StepTrace]:
        """The ensemble's step executions in start order (nested ensembles flattened)."""
        out: list[StepTrace] = []

        def walk(node: StepTrace) -> None:
            for child in sorted(node.children, key=lambda c: (c.start_ns, c.trace_id)):
                out.append(child)
                walk(child)

        walk(self.root)
        return out

    @property
    def origin_ns(self) -> int:
        """Time zero of the timeline: the earliest instant recorded for this request."""
        return min(t for t, _, _ in self.events())

    @property
    def end_ns(self) -> int:
        return max(t for t, _, _ in self.events())

    @property
    def total_ms(self) -> float:
        return (self.end_ns - self.origin_ns) / 1e6

    @property
    def server_ms(self) -> float:
        """REQUEST_START to REQUEST_END of the ensemble: the time Triton spent on the request."""
        return (self.root.end_ns - self.root.start_ns) / 1e6

    def network_phases(self) -> list[Phase]:
        ts = self.root.timestamps
        out = []
        if self.client_start_ns is not None:
            recv_end = ts.get("HTTP_RECV_END") or ts.get("GRPC_WAITREAD_END") or self.root.start_ns
            if recv_end >= self.client_start_ns:
                out.append(Phase("client_send", self.client_start_ns, recv_end))
        for kind, a, b in NETWORK_PHASES:
            if a in ts and b in ts:
                out.append(Phase(kind, ts[a], ts[b]))
        if self.client_end_ns is not None:
            send_start = ts.get("HTTP_SEND_START") or ts.get("GRPC_SEND_START") or self.root.end_ns
            if self.client_end_ns >= send_start:
                out.append(Phase("client_receive", send_start, self.client_end_ns))
        return out

    def events(self) -> list[tuple[int, str, int | None]]:
        """Every recorded instant: (ns, timestamp name, step index or None for the request itself)."""
        out: list[tuple[int, str, int | None]] = []
        for name, ns in self.root.timestamps.items():
            if name == "GRPC_WAITREAD_START":
                continue
            out.append((ns, name, None))
        for child in self.steps:
            for name, ns in child.timestamps.items():
                out.append((ns, name, child.step))
        if self.client_start_ns is not None:
            out.append((self.client_start_ns, "CLIENT_SEND", None))
        if self.client_end_ns is not None:
            out.append((self.client_end_ns, "CLIENT_RECEIVE", None))
        return sorted(out, key=lambda e: e[0])

    def by_step(self) -> dict[int, list[StepTrace]]:
        out: dict[int, list[StepTrace]] = {}
        for child in self.steps:
            if child.step is not None:
                out.setdefault(child.step, []).append(child)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "triton-kitchen-timeline/1",
            "source": self.source,
            "protocol": self.protocol,
            "client_start_ns": self.client_start_ns,
            "client_end_ns": self.client_end_ns,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "note": self.note,
            "root": self.root.to_dict(),
            "triton_records": list(self.records),
        }


def overlap_ns(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Total time intervals of ``a`` and ``b`` run at once (each list's intervals assumed disjoint)."""
    total = 0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0, min(e1, e2) - max(s1, s2))
    return total
