"""Triton's trace files -> :class:`~triton_kitchen.tools.trace.model.RequestTimeline` (pure; tested offline).

Triton's ``triton`` trace mode writes JSON arrays of *fragments*: one object names the model of a
trace id (``{"id", "model_name", "model_version", "parent_id"?}``), the others carry one timestamp
each (``{"id", "timestamps": [{"name", "ns"}]}``). With ``log_frequency=1`` every finished request
(ensemble plus its steps) lands in its own file ``<trace_file>.0``, ``.1``, ...
Ensemble steps point at the ensemble's trace through ``parent_id``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from triton_kitchen.tools.trace.model import COMPUTE_OUTPUT_START, RequestTimeline, StepTrace, TraceError


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
        raise TraceError("unreadable", f"cannot read trace file {path}: {exc}") from exc
    if not isinstance(data, list):
        raise TraceError("unreadable", f"trace file {path} is not a JSON array")
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


def timeline_from_dict(data: dict[str, Any]) -> RequestTimeline:
    """Back from :meth:`RequestTimeline.to_dict`; when Triton's own records are there, the tree is parsed from them."""
    records = list(data.get("triton_records") or [])
    parsed = parse_records(records) if records else []
    root = parsed[0].root if parsed else StepTrace.from_dict(data["root"])
    if parsed:  # keep the step assignment that was saved
        saved = {c["id"]: c.get("step") for c in data["root"].get("children", [])}
        for child in root.children:
            child.step = saved.get(child.trace_id)
    return RequestTimeline(
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
