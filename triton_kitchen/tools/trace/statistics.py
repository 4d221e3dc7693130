"""The statistics fallback (remote servers): a timeline from per-model statistics deltas.

On a remote server the trace file is out of reach: :func:`statistics_timeline` builds a timeline
from the statistics API (per-model queue/compute durations, before/after deltas). Its start times
are *laid out* from the ensemble's data dependencies, not measured: ``source == "statistics"``.
"""

from __future__ import annotations

import graphlib
import time
from collections.abc import Iterable, Sequence

from triton_kitchen.core import kserve
from triton_kitchen.tools.trace.capture import as_target
from triton_kitchen.tools.trace.model import (
    COMPUTE_END,
    COMPUTE_INPUT_END,
    COMPUTE_OUTPUT_START,
    COMPUTE_START,
    QUEUE_START,
    REQUEST_END,
    REQUEST_START,
    RequestTimeline,
    StepTrace,
)

STAT_FIELDS = {
    "queue": "queue",
    "compute_input": "compute_input",
    "infer": "compute_infer",
    "compute_output": "compute_output",
}


def model_statistics(target, models: Iterable[str]) -> dict[str, dict[str, int]]:
    """Cumulative count and ns per phase for each model (``target``: an Endpoint or ``host:port``)."""
    target = as_target(target)
    wanted = set(models)
    # one read for several models (ch1's Classify reads four per click); a model missing from it is asked
    # for by name, so an unloaded model raises Triton's own error
    every = kserve.statistics(target).get("model_stats", []) if len(wanted) > 1 else []
    out = {}
    for name in wanted:
        entries = [e for e in every if e.get("name") == name]
        if not entries:
            entries = kserve.statistics(target, name).get("model_stats", [])
        total = {"count": 0, "exec": 0, **{k: 0 for k in STAT_FIELDS}}
        for entry in entries:
            inf = entry.get("inference_stats", {})
            total["count"] += int(inf.get("success", {}).get("count", 0))
            total["exec"] += int(entry.get("execution_count", 0))
            for key, stat in STAT_FIELDS.items():
                total[key] += int(inf.get(stat, {}).get("ns", 0))
        out[name] = total
    return out


def statistics_after(
    target,
    models: Iterable[str],
    before: dict[str, dict[str, int]],
    timeout: float = 2.0,
    wait_for: Iterable[str] | None = None,
    field: str = "count",
):
    """``model_statistics`` once every model of ``wait_for`` (all of ``models`` by default) has moved its
    ``field`` ("count", or "exec" for executions) past ``before``: the request just sent is counted.

    Triton records a composing model's statistics a moment after the ensemble's response is on its
    way, so a read taken right after the response can miss the last step.
    """
    deadline = time.monotonic() + timeout
    while True:
        after = model_statistics(target, models)
        waited = after if wait_for is None else wait_for
        if all(after[m][field] > before[m][field] for m in waited) or time.monotonic() > deadline:
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
        start = max((ends.get(p, 0) for p in preds[i]), default=0)  # 0: a cycle's
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
    """Step indices, predecessors first (lowest index first among the ready); a cycle's steps last."""
    sorter = graphlib.TopologicalSorter({i: set(preds[i]) for i in range(n)})
    order: list[int] = []
    try:
        sorter.prepare()
    except graphlib.CycleError:
        return list(range(n))
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order += ready
        sorter.done(*ready)
    return order
