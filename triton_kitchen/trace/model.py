"""Triton traces -> per-request timelines: what each step of an ensemble did, and when.

Triton's ``triton`` trace mode writes JSON arrays of *fragments*: one object names the model of a
trace id (``{"id", "model_name", "model_version", "parent_id"?}``), the others carry one timestamp
each (``{"id", "timestamps": [{"name", "ns"}]}``). With ``log_frequency=1`` every finished request
(ensemble plus its steps) lands in its own file ``<trace_file>.0``, ``.1``, ...
Ensemble steps point at the ensemble's trace through ``parent_id``.

Timestamps are the server's steady clock in nanoseconds. On Linux that is ``CLOCK_MONOTONIC``, the
clock of Python's ``time.monotonic_ns()``: for the embedded server (same machine) the client's send
and receive instants can be placed on the same axis.

On a remote server the trace file is out of reach: :func:`statistics_timeline` builds a timeline
from the statistics API (per-model queue/compute durations, before/after deltas). Its start times
are *laid out* from the ensemble's data dependencies, not measured: ``source == "statistics"``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


class TraceError(RuntimeError):
    """No trace could be found or read for the request."""


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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestTimeline:
        """Back from :meth:`to_dict`; when Triton's own records are there, the tree is parsed from them."""
        records = list(data.get("triton_records") or [])
        parsed = parse_records(records) if records else []
        root = parsed[0].root if parsed else StepTrace.from_dict(data["root"])
        if parsed:  # keep the step assignment that was saved
            saved = {c["id"]: c.get("step") for c in data["root"].get("children", [])}
            for child in root.children:
                child.step = saved.get(child.trace_id)
        return cls(
            root=root,
            records=records,
            source=str(data.get("source", "trace")),
            protocol=data.get("protocol"),
            client_start_ns=data.get("client_start_ns"),
            client_end_ns=data.get("client_end_ns"),
            request_bytes=data.get("request_bytes"),
            response_bytes=data.get("response_bytes"),
            note=str(data.get("note", "")),
        )


# -- parsing -----------------------------------------------------------------------------------
def merge_records(records: Iterable[dict[str, Any]]) -> dict[int, StepTrace]:
    """Triton's fragments -> one StepTrace per trace id (first occurrence of each timestamp kept)."""
    traces: dict[int, StepTrace] = {}
    for rec in records:
        if not isinstance(rec, dict) or "id" not in rec:
            continue
        tid = int(rec["id"])
        node = traces.setdefault(tid, StepTrace(trace_id=tid, model=""))
        if "model_name" in rec:
            node.model = str(rec["model_name"])
            node.version = int(rec.get("model_version", -1))
            if rec.get("parent_id") is not None:
                node.parent_id = int(rec["parent_id"])
        for stamp in rec.get("timestamps", ()):
            name, ns = str(stamp["name"]), int(stamp["ns"])
            node.timestamps.setdefault(name, ns)
    return traces


def parse_records(records: Iterable[dict[str, Any]], source: str = "trace") -> list[RequestTimeline]:
    """Trace fragments -> one RequestTimeline per top-level request, children linked by ``parent_id``."""
    traces = merge_records(records)
    roots = []
    for node in traces.values():
        parent = traces.get(node.parent_id) if node.parent_id is not None else None
        if parent is not None:
            parent.children.append(node)
        elif node.parent_id is None:
            roots.append(node)
    protocol_of = {"HTTP_RECV_START": "http", "HTTP_SEND_START": "http", "GRPC_SEND_START": "grpc"}
    out = []
    for root in sorted(roots, key=lambda r: r.start_ns):
        proto = next((p for k, p in protocol_of.items() if k in root.timestamps), None)
        out.append(RequestTimeline(root=root, source=source, protocol=proto))
    return out


def read_json_array(path: Path | str) -> list[dict[str, Any]]:
    """One trace file's records; raises TraceError if it is not (yet) a complete JSON array."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TraceError(f"cannot read trace file {path}: {exc}") from exc
    if not isinstance(data, list):
        raise TraceError(f"trace file {path} is not a JSON array")
    return data


def trace_files(base: Path | str) -> list[Path]:
    """``base`` and its numbered siblings ``base.0``, ``base.1``, ... in index order."""
    base = Path(base)
    numbered = []
    for p in base.parent.glob(base.name + ".*"):
        suffix = p.name[len(base.name) + 1 :]
        if suffix.isdigit():
            numbered.append((int(suffix), p))
    files = [p for _, p in sorted(numbered)]
    return ([base] if base.exists() else []) + files


def load_timelines(path: Path | str, source: str = "trace") -> list[RequestTimeline]:
    """Timelines from one Triton trace file, from a base name with numbered files, or from a saved timeline."""
    path = Path(path)
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("format", "").startswith("triton-kitchen-timeline"):
            return [RequestTimeline.from_dict(data)]
        if isinstance(data, dict) and "timelines" in data:
            return [RequestTimeline.from_dict(d) for d in data["timelines"]]
        return parse_records(data, source)
    records: list[dict[str, Any]] = []
    for f in trace_files(path):
        records += read_json_array(f)
    return parse_records(records, source)


# -- matching trace executions to ensemble steps -------------------------------------------------
def assign_steps(
    timeline: RequestTimeline, step_models: Sequence[str], preds: Sequence[Sequence[int]]
) -> None:
    """Tell each traced child which ensemble step it ran (``child.step``).

    A model can appear in several steps (``tta_ensemble`` runs ``classifier`` twice), and the trace
    names only the model. Children are matched in start order; among the unmatched steps of that
    model, the one whose predecessors all finished earliest (its inputs were ready first) wins.
    """
    children = sorted(timeline.root.children, key=lambda c: (c.start_ns, c.trace_id))
    done: dict[int, StepTrace] = {}
    for child in children:
        candidates = [i for i, m in enumerate(step_models) if m == child.model and i not in done]
        if not candidates:
            continue

        def ready(i: int, child: StepTrace = child) -> tuple[int, int, int]:
            # a step's outputs are handed on from COMPUTE_OUTPUT_START (before its REQUEST_END)
            outs = [
                done[p].timestamps.get(COMPUTE_OUTPUT_START, done[p].end_ns) for p in preds[i] if p in done
            ]
            missing = sum(1 for p in preds[i] if p not in done)
            late = sum(1 for e in outs if e > child.start_ns)
            return (missing + late, max(outs, default=0), i)

        best = min(candidates, key=ready)
        child.step = best
        done[best] = child


# -- live capture from the embedded server ------------------------------------------------------
_capture_lock = threading.Lock()


def trace_settings(client, model: str | None, headers: dict[str, str] | None) -> dict[str, Any]:
    kwargs = {"model_name": model} if model else {}
    settings = client.get_trace_settings(headers=headers, **kwargs)
    if not isinstance(settings, dict):  # gRPC returns a protobuf message
        from google.protobuf.json_format import MessageToDict

        raw = MessageToDict(settings).get("settings", {})
        settings = {k: v.get("value", []) for k, v in raw.items()}
        settings = {k: (v[0] if len(v) == 1 and k != "trace_level" else v) for k, v in settings.items()}
    return settings


def capture(
    http_client,
    model: str,
    send: Callable[[], Any],
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    local: bool = True,
) -> tuple[Any, RequestTimeline]:
    """Trace one request: switch TIMESTAMPS tracing on for ``model``, call ``send()``, find its trace.

    ``http_client`` is a ``tritonclient.http`` client (trace settings go over HTTP, with the restricted
    API's ``headers``); ``send`` makes the request over any protocol and returns its result. The trace
    is switched off again afterwards, so other requests to the model are not traced. Returns
    ``(send()'s result, timeline)``; raises TraceError if the trace file is out of reach or no
    matching trace appears within ``timeout_s``. The timeline gets the client's send/receive instants.
    """
    result, found = capture_many(http_client, model, send, 1, headers, timeout_s, local)
    return result, found[0]


def capture_many(
    http_client,
    model: str,
    send: Callable[[], Any],
    expect: int,
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    local: bool = True,
) -> tuple[Any, list[RequestTimeline]]:
    """Like :func:`capture` for a ``send`` that makes ``expect`` requests to ``model`` (concurrent ones, say)."""
    with _capture_lock:
        settings = trace_settings(http_client, model, headers)
        base = Path(str(settings.get("trace_file") or ""))
        if not local or not str(base) or not base.parent.is_dir():
            raise TraceError(f"trace file {base} is not readable from here")
        known = _signatures(base)
        http_client.update_trace_settings(
            model_name=model,
            settings={
                "trace_level": ["TIMESTAMPS"],
                "trace_rate": "1",
                "log_frequency": "1",
                "trace_count": "-1",
            },
            headers=headers,
        )
        try:
            t0 = time.monotonic_ns()
            result = send()
            t1 = time.monotonic_ns()
        finally:
            http_client.update_trace_settings(
                model_name=model, settings={"trace_level": ["OFF"]}, headers=headers
            )
        deadline = time.monotonic() + timeout_s
        found: dict[int, RequestTimeline] = {}
        while True:
            for tl in _find_new(base, known, model, t0, t1):
                found.setdefault(tl.root.trace_id, tl)
            if len(found) >= expect:
                out = sorted(found.values(), key=lambda tl: tl.root.start_ns)
                if expect == 1:
                    out[0].client_start_ns, out[0].client_end_ns = t0, t1
                return result, out
            if time.monotonic() > deadline:
                raise TraceError(
                    f"{len(found)} of {expect} traces of {model} appeared in {base}.* within {timeout_s:.0f} s"
                )
            time.sleep(0.02)


def _signatures(base: Path) -> dict[str, tuple[int, int]]:
    """File name -> (mtime_ns, size) of the trace files there now."""
    out = {}
    for f in trace_files(base):
        try:
            st = f.stat()
        except OSError:
            continue
        out[f.name] = (st.st_mtime_ns, st.st_size)
    return out


def _find_new(
    base: Path, known: dict[str, tuple[int, int]], model: str, t0: int, t1: int
) -> list[RequestTimeline]:
    """Traces of ``model`` that started in [t0, t1], in files written since ``known`` was taken.

    A file counts as new when its name or its (mtime, size) changed: a server that restarts on the same
    base name writes ``.0``, ``.1``, ... again, and a name alone would hide its traces.
    """
    out = []
    for f in trace_files(base):
        try:
            st = f.stat()
        except OSError:
            continue
        if known.get(f.name) == (st.st_mtime_ns, st.st_size):
            continue
        try:
            records = read_json_array(f)
        except TraceError:
            continue  # still being written
        for tl in parse_records(records):
            if tl.model == model and t0 <= tl.root.start_ns <= t1:
                ids = _tree_ids(tl.root)
                tl.records = [r for r in records if isinstance(r, dict) and r.get("id") in ids]
                out.append(tl)
    return out


def _tree_ids(node: StepTrace) -> set[int]:
    ids = {node.trace_id}
    for c in node.children:
        ids |= _tree_ids(c)
    return ids


# -- statistics fallback (remote servers) --------------------------------------------------------
STAT_FIELDS = {
    "queue": "queue",
    "compute_input": "compute_input",
    "infer": "compute_infer",
    "compute_output": "compute_output",
}


def model_statistics(client, models: Iterable[str]) -> dict[str, dict[str, int]]:
    """Cumulative count and ns per phase for each model (HTTP client: JSON statistics)."""
    out = {}
    for name in set(models):
        stats = client.get_inference_statistics(model_name=name)
        if not isinstance(stats, dict):
            from google.protobuf.json_format import MessageToDict

            stats = MessageToDict(stats, preserving_proto_field_name=True)
        total = {"count": 0, "exec": 0, **{k: 0 for k in STAT_FIELDS}}
        for entry in stats.get("model_stats", []):
            inf = entry.get("inference_stats", {})
            total["count"] += int(inf.get("success", {}).get("count", 0))
            total["exec"] += int(entry.get("execution_count", 0))
            for key, stat in STAT_FIELDS.items():
                total[key] += int(inf.get(stat, {}).get("ns", 0))
        out[name] = total
    return out


def statistics_after(client, models: Iterable[str], before: dict[str, dict[str, int]], timeout: float = 2.0):
    """``model_statistics`` once every model has counted the request just sent.

    Triton records a composing model's statistics a moment after the ensemble's response is on its
    way, so a read taken right after the response can miss the last step.
    """
    deadline = time.monotonic() + timeout
    while True:
        after = model_statistics(client, models)
        if all(after[m]["count"] > before[m]["count"] for m in after) or time.monotonic() > deadline:
            return after
        time.sleep(0.02)


def statistics_timeline(
    model: str,
    step_models: Sequence[str],
    preds: Sequence[Sequence[int]],
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    client_ms: float | None = None,
) -> RequestTimeline:
    """A timeline from statistics deltas: per-step durations measured, start times laid out.

    Each model's delta is split evenly over the steps that use it (a model twice in one ensemble).
    A step is placed to start when its last predecessor ends: the layout assumes Triton starts a step
    as soon as its inputs are ready, which is its documented rule, but nothing here measured it.
    """
    uses: dict[str, int] = {}
    for m in step_models:
        uses[m] = uses.get(m, 0) + 1
    root = StepTrace(trace_id=0, model=model, timestamps={REQUEST_START: 0})
    ends: dict[int, int] = {}
    order = _topological(len(step_models), preds)
    for i in order:
        m = step_models[i]
        share = max(uses[m], 1)
        d = {k: max(0, after[m][k] - before[m][k]) // share for k in STAT_FIELDS}
        start = max((ends[p] for p in preds[i]), default=0)
        ts = {REQUEST_START: start, QUEUE_START: start}
        ts[COMPUTE_START] = ts[QUEUE_START] + d["queue"]
        ts[COMPUTE_INPUT_END] = ts[COMPUTE_START] + d["compute_input"]
        ts[COMPUTE_OUTPUT_START] = ts[COMPUTE_INPUT_END] + d["infer"]
        ts[COMPUTE_END] = ts[COMPUTE_OUTPUT_START] + d["compute_output"]
        ts[REQUEST_END] = ts[COMPUTE_END]
        ends[i] = ts[REQUEST_END]
        root.children.append(StepTrace(trace_id=i + 1, model=m, parent_id=0, timestamps=ts, step=i))
    root.timestamps[REQUEST_END] = max(ends.values(), default=0)
    note = "start times laid out from data dependencies; durations are statistics deltas"
    if client_ms is not None:
        note += f"; client round trip {client_ms:.2f} ms"
    return RequestTimeline(root=root, source="statistics", note=note)


def _topological(n: int, preds: Sequence[Sequence[int]]) -> list[int]:
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < n:
        progress = False
        for i in range(n):
            if i not in placed and all(p in placed for p in preds[i]):
                order.append(i)
                placed.add(i)
                progress = True
        if not progress:  # a cycle: place the rest in index order
            order += [i for i in range(n) if i not in placed]
            break
    return order


def overlap_ns(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Total time intervals of ``a`` and ``b`` run at once (each list's intervals assumed disjoint)."""
    total = 0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0, min(e1, e2) - max(s1, s2))
    return total
