"""Triton traces -> per-request timelines: what each step of an ensemble did, and when.

``model`` (the timeline as data), ``parse`` (Triton's trace files; both pure and tested offline),
``capture`` (live tracing on the embedded server, :func:`traced_call`) and ``statistics`` (a remote
server's statistics deltas, start times laid out: ``source == "statistics"``).
"""

from triton_kitchen.tools.trace.capture import (
    as_target,
    capture,
    capture_many,
    trace_settings,
    traced_call,
)
from triton_kitchen.tools.trace.model import (
    COMPUTE_END,
    COMPUTE_INPUT_END,
    COMPUTE_OUTPUT_START,
    COMPUTE_START,
    INFER_RESPONSE_COMPLETE,
    NETWORK_PHASES,
    QUEUE_START,
    REQUEST_END,
    REQUEST_START,
    SOURCES,
    STEP_EVENTS,
    STEP_PHASES,
    Phase,
    RequestTimeline,
    StepTrace,
    TraceError,
    overlap_ns,
)
from triton_kitchen.tools.trace.parse import (
    assign_steps,
    merge_records,
    parse_records,
    read_json_array,
    timeline_from_dict,
    trace_files,
)
from triton_kitchen.tools.trace.statistics import (
    STAT_FIELDS,
    model_statistics,
    statistics_after,
    statistics_timeline,
)

__all__ = [
    "COMPUTE_END",
    "COMPUTE_INPUT_END",
    "COMPUTE_OUTPUT_START",
    "COMPUTE_START",
    "INFER_RESPONSE_COMPLETE",
    "NETWORK_PHASES",
    "QUEUE_START",
    "REQUEST_END",
    "REQUEST_START",
    "SOURCES",
    "STAT_FIELDS",
    "STEP_EVENTS",
    "STEP_PHASES",
    "Phase",
    "RequestTimeline",
    "StepTrace",
    "TraceError",
    "as_target",
    "assign_steps",
    "capture",
    "capture_many",
    "merge_records",
    "model_statistics",
    "overlap_ns",
    "parse_records",
    "timeline_from_dict",
    "read_json_array",
    "statistics_after",
    "statistics_timeline",
    "trace_files",
    "trace_settings",
    "traced_call",
]
